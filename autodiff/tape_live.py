"""Which gradients may be non-zero when a Tape's backward reaches a record: what lets backward skip the
adjoints that would only add zeros."""

from __future__ import annotations

import numpy as np

import kernels as wp
from kernels.tape_interface import recorder


def grad_key(g) -> int:
    """The id of the array whose memory gradient `g` views (g's own for an array that views nothing)."""
    owner = g._owner
    while owner.__class__ is wp.array:
        g, owner = owner, owner._owner
    return id(g)


class LiveGradients:
    """Which gradients may be non-zero when Tape.backward reaches a record, as its schedule is planned from the
    last record to the first before any adjoint runs: the seeded ones, those of arrays read by an adjoint
    scheduled to run before (it adds into them), and those not known to be zero now (on the CPU: any non-zero
    element; inside a capture: anything but a gradient the capture zeroed and nothing wrote since, which is zero
    there at every replay). After a record_func callback, every gradient.

    `ids` holds gradient keys (grad_key): views of one array share their gradient memory, so an adjoint that
    adds into one view's gradient makes every view of that array live."""

    def __init__(self, grads, loss):
        self.ids: set = set()
        self.zero: dict = {}  # id(array) -> whether its gradient was found zero
        self.opaque = False
        for a in list(grads or ()) + ([loss] if loss is not None else []):
            self.add(a)

    def add(self, a):
        if a._grad is not None:
            self.ids.add(grad_key(a._grad))

    def may_carry(self, a) -> bool:
        g = a._grad
        if g is None:
            return False
        if self.opaque or (id(g) if g._owner is None else grad_key(g)) in self.ids:
            return True
        known = self.zero.get(id(a))
        if known is None:
            rec = recorder(a.device)
            if rec is not None:
                known = rec.is_fresh(g)
            elif g.is_cuda:
                known = not device_any_nonzero(g)
            else:
                known = not any_nonzero(g.numpy())
            self.zero[id(a)] = known
        return not known


@wp.kernel(enable_backward=False)
def _flag_nonzero_words(words: wp.array(dtype=wp.uint32), flag: wp.array(dtype=wp.int32)):
    i = wp.tid()
    if words[i] != wp.uint32(0):
        flag[0] = 1


def device_any_nonzero(g) -> bool:
    """Whether CUDA gradient `g` may hold anything but zeros: checked on the device (one small launch and a
    four-byte read) for a contiguous gradient of whole 32-bit words; True (may carry) inside a capture, where
    nothing can be read, and where the words cannot be seen (a strided view is read whole on the host)."""
    if wp.is_capturing(g.device):
        return True
    if not g.is_contiguous:
        return any_nonzero(g.numpy())
    nbytes = g._buf.nbytes  # the layout's size: nothing is read
    if nbytes == 0:
        return False
    if nbytes % 4:
        return any_nonzero(g.numpy())
    words = wp.array(ptr=g.ptr, shape=(nbytes // 4,), dtype=wp.uint32, device=g.device)
    words._owner = g  # keeps the gradient's memory alive while the view is used
    flag = wp.zeros(1, dtype=wp.int32, device=g.device)
    wp.launch(_flag_nonzero_words, dim=nbytes // 4, inputs=[words, flag], device=g.device, record_tape=False)
    return bool(flag.numpy()[0])


def any_nonzero(buf) -> bool:
    """Whether a gradient buffer holds anything but zeros (structured dtypes: any non-zero byte)."""
    if buf.dtype.fields is not None:
        return bool(np.ascontiguousarray(buf).view(np.uint8).any())
    return np.count_nonzero(buf) != 0  # a few times faster than buf.any() on the small arrays of a step
