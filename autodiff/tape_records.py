"""What a Tape records: kernel launches, copies between toolkit arrays and record_func callbacks, each with
what its adjoint needs."""

from __future__ import annotations

import numpy as np

from kernels.tape_interface import copy_window, cuda_memory, recorder


class LaunchRecord:
    """A recorded launch: `kernel` ran over `bounds` on `device` with arguments `values` (in parameter order, the
    first `n_in` its inputs; struct arguments as the launch saw them), packed as `params` (their native bytes,
    which its adjoint reads again); `arrays`: the arrays it touches (see KernelSignature.tracked). Few objects per
    record (no Launch, bytes rather than a ctypes struct): a long tape gives the garbage collector little to walk."""

    __slots__ = ("kernel", "n_in", "values", "bounds", "params", "device", "arrays")

    def __init__(self, kernel, n_in, values, bounds, params, device, arrays):
        self.kernel, self.n_in, self.values, self.bounds = kernel, n_in, values, bounds
        self.params, self.device, self.arrays = params, device, arrays

    def __getitem__(self, index):
        """Warp's layout of a recorded launch, `[kernel, dim, max_blocks, inputs, outputs, device, block_dim,
        metadata]` (a Warp program reading `tape.launches[k][6]`): dim is the launch dims, block_dim the effective
        one (the bounds'), max_blocks 0 and metadata {} (neither is kept here)."""
        fields = [self.kernel, self.bounds.launch_dims, 0, self.inputs, self.outputs, self.device,
                  self.bounds.block_dim, {}]
        return fields[index]

    @property
    def inputs(self) -> list:
        return self.values[:self.n_in]

    @property
    def outputs(self) -> list:
        return self.values[self.n_in:]


class CallbackRecord:
    """A `record_func` backward closure and the device of the arrays it works on."""

    __slots__ = ("fn", "device")

    def __init__(self, fn, device):
        self.fn, self.device = fn, device

    def run(self):
        rec = recorder(self.device)
        if rec is not None:  # backward inside a capture: the closure runs at each replay, in its place
            rec.host(self.fn)
        else:
            self.fn()


class CopyRecord:
    """A recorded copy (wp.copy, wp.clone, array.assign): `count` elements of `src` at `src_offset` went to `dest`
    at `dest_offset` (`whole`: every element of two same-shaped strided views).

    Its adjoint adds the copied window of dest's gradient into src's, then zeroes that window of dest's gradient:
    the copy overwrote those elements, so whatever gradient reached them belongs to this copy alone, not to
    earlier writes of dest (unless dest has `retain_grad`)."""

    __slots__ = ("dest", "src", "dest_offset", "src_offset", "count", "whole")

    def __init__(self, dest, src, dest_offset, src_offset, count, whole):
        self.dest, self.src = dest, src
        self.dest_offset, self.src_offset, self.count, self.whole = dest_offset, src_offset, count, whole

    def run(self):
        dest, src = self.dest, self.src
        if dest.grad is None or self.count == 0:
            return
        g_dest = copy_window(dest.grad, self.dest_offset, self.count, self.whole)
        g_src = copy_window(src.grad, self.src_offset, self.count, self.whole) if src.grad is not None else None
        keep = dest.retain_grad

        def adjoint():
            if dest.grad.is_cuda or (src.grad is not None and src.grad.is_cuda):
                device_copy_adjoint(dest.grad, src.grad, g_dest, g_src, keep)
                return
            if g_src is not None:
                g_src[...] += g_dest
            if not keep:
                g_dest[...] = 0

        rec = recorder(dest.device)
        if rec is not None:
            rec.host(adjoint)
        else:
            adjoint()




def device_copy_adjoint(g_dest_array, g_src_array, g_dest, g_src, keep: bool):
    """CopyRecord's adjoint where a gradient is in device memory (`g_dest`, `g_src`: the windows' layouts, see
    wp.copy_window): src's window += dest's window, then dest's window = 0 unless kept. Through the host, in
    order with the device's work."""
    dest_o, src_o = g_dest_array._ordinal, g_src_array._ordinal if g_src_array is not None else -1
    if g_src is not None:
        moved = cuda_memory.read(g_dest, dest_o) if dest_o >= 0 else np.array(g_dest)
        if src_o >= 0:
            cuda_memory.write(g_src, src_o, cuda_memory.read(g_src, src_o) + moved)
        else:
            g_src[...] += moved
    if not keep:
        if dest_o >= 0:
            cuda_memory.fill(g_dest, dest_o, np.zeros((), dtype=np.uint8))
        else:
            g_dest[...] = 0
