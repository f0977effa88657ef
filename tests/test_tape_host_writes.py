"""A write from the host into an array that a launch or copy recorded on the recording tape wrote is refused,
naming the array and both operations: backward would hand the recorded write's gradient on as if its values had
survived (Warp does so silently; e.g. States made inside `with tape:` whose initial velocities are then assigned
got a zero gradient for them)."""

import numpy as np
import pytest

import kernels as wp
import sim
from autodiff import Tape
from autodiff.tape import HostWriteError


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


WRITES = {
    "zero_()": lambda a: a.zero_(),
    "fill_()": lambda a: a.fill_(1.0),
    "assign() of host data": lambda a: a.assign(np.ones(a.shape, np.float32)),
    "an item assignment": lambda a: a.__setitem__(0, 3.0),
}


@pytest.mark.parametrize("operation", list(WRITES))
def test_a_host_write_after_a_recorded_launch_wrote_the_array_is_refused(device, operation):
    x = wp.array(np.arange(3, dtype=np.float32), device=device, requires_grad=True)
    y = wp.zeros(3, dtype=float, device=device, requires_grad=True)
    with Tape():
        wp.launch(double, dim=3, inputs=[x], outputs=[y], device=device)
        with pytest.raises(HostWriteError, match=rf"{operation.split(' ')[0]}.*shape \(3,\).*kernel 'double'"):
            WRITES[operation](y)
        with pytest.raises(HostWriteError):
            WRITES[operation](y[1:])  # a view of it: the same memory
        WRITES[operation](x)  # only read by the launch: allowed
    WRITES[operation](y)  # the tape no longer records: allowed


def test_a_host_write_after_a_recorded_copy_is_refused(device):
    x = wp.array(np.arange(3, dtype=np.float32), device=device, requires_grad=True)
    with Tape():
        y = wp.clone(x)
        with pytest.raises(HostWriteError, match="recorded copy"):
            y.fill_(5.0)


def test_states_made_inside_the_tape_cannot_be_overwritten_from_the_host(device):
    b = sim.ModelBuilder()
    b.add_particle(pos=(0.0, 1.0, 0.0), vel=(0.0, 0.0, 0.0), mass=1.0)
    model = b.finalize(device, requires_grad=True)
    with Tape():
        state = model.state()  # copies the model's initial state: recorded
        with pytest.raises(HostWriteError, match="assign"):
            state.particle_qd.assign(np.array([[1.0, 0.0, 0.0]], np.float32))
    # the supported way: set the initial velocity on the model (or the state) before recording
    model.particle_qd.assign(np.array([[1.0, 0.0, 0.0]], np.float32))
    with Tape():
        state = model.state()
    np.testing.assert_array_equal(state.particle_qd.numpy(), [[1.0, 0.0, 0.0]])
