"""`@wp.struct`: members of every kind, structs in kernels and functions, arrays of structs, gradients through
struct members (gradcheck and a Jacobian built row by row with the tape)."""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck


@wp.struct
class Inner:
    weight: float
    count: int


@wp.struct
class Everything:
    scale: float
    offset: wp.float64
    flags: int
    direction: wp.vec3
    rotation: wp.mat33
    values: wp.array(dtype=float)
    inner: Inner


@wp.struct
class Particle:
    mass: float
    position: wp.vec3
    alive: int


@wp.struct
class Pair:
    first: float
    second: float


@wp.struct
class Problem:
    inputs: wp.array(dtype=wp.float64)
    output: wp.array(dtype=wp.float64)
    gain: wp.float64


# ---------------------------------------------------------------------------------------------------------------
# A struct passed to a kernel


@wp.kernel
def read_everything(p: Everything, out: wp.array(dtype=float)):
    i = wp.tid()
    d = p.rotation * p.direction
    out[i] = p.values[i] * p.scale + float(p.offset) + float(p.flags) + d[i] + p.inner.weight * float(p.inner.count)


@wp.kernel
def write_through_struct(p: Everything):
    i = wp.tid()
    p.values[i] = p.values[i] * 2.0 + p.inner.weight


def _make_everything(device):
    p = Everything()
    p.scale = 3.0
    p.offset = 0.25
    p.flags = 7
    p.direction = wp.vec3(1.0, 2.0, 3.0)
    p.rotation = wp.mat33(0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 2.0)
    p.values = wp.array(np.array([1.0, -2.0, 0.5], dtype=np.float32), dtype=float, device=device)
    inner = Inner()
    inner.weight = 0.5
    inner.count = 4
    p.inner = inner
    return p


def test_struct_members_read_in_kernel(device):
    p = _make_everything(device)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(read_everything, dim=3, inputs=[p, out], device=device)
    rotated = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 2]], dtype=np.float32) @ np.array([1, 2, 3], dtype=np.float32)
    expect = np.array([1.0, -2.0, 0.5]) * 3.0 + 0.25 + 7 + rotated + 0.5 * 4
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-6)


def test_struct_array_member_written_in_kernel(device):
    p = _make_everything(device)
    wp.launch(write_through_struct, dim=3, inputs=[p], device=device)
    np.testing.assert_allclose(p.values.numpy(), [2.5, -3.5, 1.5])


def test_struct_sees_members_as_they_are_at_launch(device):
    p = _make_everything(device)
    out = wp.zeros(3, dtype=float, device=device)
    p.scale = 0.0
    p.inner.count = 0
    p.values = wp.array(np.array([9.0, 9.0, 9.0], dtype=np.float32), dtype=float, device=device)
    wp.launch(read_everything, dim=3, inputs=[p, out], device=device)
    np.testing.assert_allclose(out.numpy(), 0.25 + 7 + np.array([2.0, 1.0, 6.0]), rtol=1e-6)


def test_struct_python_side_checks():
    p = Everything()
    assert p.scale == 0.0 and p.flags == 0 and p.values is None
    with pytest.raises(AttributeError):
        p.no_such_field = 1.0
    with pytest.raises(TypeError):
        p.values = wp.zeros(3, dtype=wp.int32)
    with pytest.raises(TypeError):
        p.inner = Pair()


def test_wrong_struct_type_at_launch_raises(device):
    out = wp.zeros(3, dtype=float, device=device)
    with pytest.raises(wp.LaunchError, match="read_everything"):
        wp.launch(read_everything, dim=3, inputs=[Pair(), out], device=device)


# ---------------------------------------------------------------------------------------------------------------
# Structs built in kernels, passed to and returned from functions


@wp.func
def pair_sum(p: Pair):
    return p.first + p.second


@wp.func
def make_pair(a: float, b: float):
    p = Pair()
    p.first = a * b
    p.second = a - b
    return p


@wp.func
def swap_pair(p: Pair):
    q = Pair()
    q.first = p.second
    q.second = p.first
    return q


@wp.kernel
def structs_in_kernel(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float),
                      firsts: wp.array(dtype=float)):
    i = wp.tid()
    s = Pair()
    s.first = a[i]
    s.second = 10.0
    total = pair_sum(s)
    made = swap_pair(make_pair(a[i], b[i]))
    made.second += 1.0
    out[i] = total + pair_sum(made)
    firsts[i] = made.first


def test_struct_constructed_in_kernel_and_through_functions(device):
    a_np = np.array([1.0, 2.0, -3.0], dtype=np.float32)
    b_np = np.array([0.5, 4.0, 2.0], dtype=np.float32)
    a = wp.array(a_np, device=device)
    b = wp.array(b_np, device=device)
    out = wp.zeros(3, dtype=float, device=device)
    firsts = wp.zeros(3, dtype=float, device=device)
    wp.launch(structs_in_kernel, dim=3, inputs=[a, b, out, firsts], device=device)
    np.testing.assert_allclose(out.numpy(), a_np + 10.0 + a_np * b_np + a_np - b_np + 1.0, rtol=1e-6)
    np.testing.assert_allclose(firsts.numpy(), a_np - b_np, rtol=1e-6)


@wp.kernel
def default_struct_is_zero(out: wp.array(dtype=float)):
    s = Particle()
    out[0] = s.mass + s.position[0] + s.position[1] + s.position[2] + float(s.alive)


def test_struct_constructed_in_kernel_starts_at_zero(device):
    out = wp.full(1, 5.0, dtype=float, device=device)
    wp.launch(default_struct_is_zero, dim=1, inputs=[out], device=device)
    assert out.numpy()[0] == 0.0


# ---------------------------------------------------------------------------------------------------------------
# Arrays of structs


@wp.kernel
def particle_momentum(particles: wp.array(dtype=Particle), velocity: wp.vec3, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = particles[i]
    if p.alive != 0:
        out[i] = p.mass * (p.position + velocity)
    else:
        out[i] = wp.vec3(0.0, 0.0, 0.0)


@wp.kernel
def particle_update(particles: wp.array(dtype=Particle), dt: float):
    i = wp.tid()
    p = particles[i]
    p.position = p.position + wp.vec3(dt, 0.0, 0.0)
    p.mass = p.mass * 2.0
    p.alive = 1 - p.alive
    particles[i] = p


def test_array_of_structs_zeros_and_fields(device):
    n = 4
    particles = wp.zeros(n, dtype=Particle, device=device)
    assert particles.shape == (n,)
    assert particles.dtype is Particle
    out = wp.full(n, wp.vec3(7.0, 7.0, 7.0), dtype=wp.vec3, device=device)
    wp.launch(particle_momentum, dim=n, inputs=[particles, wp.vec3(1.0, 2.0, 3.0), out], device=device)
    np.testing.assert_array_equal(out.numpy(), np.zeros((n, 3)))

    records = particles.numpy()
    records["mass"] = [1.0, 2.0, 3.0, 4.0]
    records["alive"] = [1, 0, 1, 1]
    records["position"] = np.arange(12, dtype=np.float32).reshape(n, 3)
    particles.assign(records)  # on the CPU `records` is the array's memory; on a GPU a copy
    wp.launch(particle_momentum, dim=n, inputs=[particles, wp.vec3(1.0, 2.0, 3.0), out], device=device)
    expect = records["mass"][:, None] * (records["position"] + [1.0, 2.0, 3.0]) * records["alive"][:, None]
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-6)

    wp.launch(particle_update, dim=n, inputs=[particles, 0.5], device=device)
    records = particles.numpy()
    np.testing.assert_allclose(records["mass"], [2.0, 4.0, 6.0, 8.0])
    np.testing.assert_array_equal(records["alive"], [0, 1, 0, 0])
    np.testing.assert_allclose(records["position"][:, 0], np.arange(0, 12, 3) + 0.5)


@wp.kernel(enable_backward=False)
def particle_fields_forward_only(particles: wp.array(dtype=Particle), out: wp.array(dtype=float)):
    i = wp.tid()
    p = particles[i]
    out[i] = p.mass * 100.0 + p.position[2] * 10.0 + float(p.alive)


def test_array_of_structs_layout_matches_numpy_records(device):
    # forward only, so that this checks the record layout independently of adjoint code generation
    particles = wp.zeros(3, dtype=Particle, device=device)
    records = particles.numpy()
    records["mass"] = [1.0, 2.0, 3.0]
    records["position"] = [[0.0, 0.0, 0.5], [0.0, 0.0, 0.25], [9.0, 9.0, 0.0]]
    records["alive"] = [1, 0, 7]
    particles.assign(records)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(particle_fields_forward_only, dim=3, inputs=[particles, out], device=device)
    np.testing.assert_allclose(out.numpy(), [106.0, 202.5, 307.0])


def test_array_of_structs_filled_from_python(device):
    p = Particle()
    p.mass = 2.0
    p.position = wp.vec3(1.0, 0.0, -1.0)
    p.alive = 1
    particles = wp.zeros(3, dtype=Particle, device=device)
    particles.fill_(p)
    out = wp.zeros(3, dtype=wp.vec3, device=device)
    wp.launch(particle_momentum, dim=3, inputs=[particles, wp.vec3(0.0, 0.0, 1.0), out], device=device)
    np.testing.assert_allclose(out.numpy(), np.tile([2.0, 0.0, 0.0], (3, 1)))


# ---------------------------------------------------------------------------------------------------------------
# Gradients through struct members


@wp.kernel
def problem_forward(p: Problem):
    # thread k computes output[k] of [x0 * x1, sin(x0) + x2^2, gain * x0 * x1 * x2]
    k = wp.tid()
    x0 = p.inputs[0]
    x1 = p.inputs[1]
    x2 = p.inputs[2]
    v = x0 * x1
    if k == 1:
        v = wp.sin(x0) + x2 * x2
    elif k == 2:
        v = p.gain * x0 * x1 * x2
    p.output[k] = v


@wp.kernel
def problem_forward_one_thread(p: Problem):
    # the same function, every output stored by one thread through the struct
    x0 = p.inputs[0]
    x1 = p.inputs[1]
    x2 = p.inputs[2]
    p.output[0] = x0 * x1
    p.output[1] = wp.sin(x0) + x2 * x2
    p.output[2] = p.gain * x0 * x1 * x2


def _jacobian(x, gain):
    x0, x1, x2 = x
    return np.array([[x1, x0, 0.0],
                     [np.cos(x0), 0.0, 2.0 * x2],
                     [gain * x1 * x2, gain * x0 * x2, gain * x0 * x1]])


X0 = np.array([0.7, -1.3, 0.4])


def _problem(device, inputs, gain=1.5):
    p = Problem()
    p.inputs = inputs
    p.output = wp.zeros(3, dtype=wp.float64, device=device)
    p.gain = gain
    return p


def test_struct_gradcheck_requires_grad_before_struct(device):
    x = wp.array(X0, dtype=wp.float64, device=device, requires_grad=True)
    p = _problem(device, x)

    def fn(x):
        p.output = wp.zeros(3, dtype=wp.float64, device=device)
        wp.launch(problem_forward, dim=3, inputs=[p], device=device)
        return p.output

    gradcheck(fn, [x])


def test_struct_gradcheck_requires_grad_after_struct(device):
    x = wp.array(X0, dtype=wp.float64, device=device)
    p = _problem(device, x)
    x.requires_grad = True

    def fn(x):
        p.output = wp.zeros(3, dtype=wp.float64, device=device)
        wp.launch(problem_forward, dim=3, inputs=[p], device=device)
        return p.output

    gradcheck(fn, [x])


def test_struct_gradcheck_set_by_gradcheck_itself(device):
    # the array goes into the struct without requires_grad; gradcheck turns it on afterwards
    x = wp.array(X0, dtype=wp.float64, device=device)
    p = _problem(device, x)

    def fn(x):
        p.output.zero_()
        wp.launch(problem_forward, dim=3, inputs=[p], device=device)
        return p.output

    gradcheck(fn, [x])


@pytest.mark.parametrize("kernel, threads", [(problem_forward, 3), (problem_forward_one_thread, 1)],
                         ids=["thread_per_output", "several_stores"])
@pytest.mark.parametrize("requires_grad_first", [True, False], ids=["before", "after"])
def test_struct_jacobian_rows_with_tape(device, requires_grad_first, kernel, threads):
    x = wp.array(X0, dtype=wp.float64, device=device, requires_grad=requires_grad_first)
    p = _problem(device, x, gain=2.0)  # p.output has no gradient array: backward(grads=...) makes one
    if not requires_grad_first:
        x.requires_grad = True
    assert p.output.grad is None
    tape = Tape()
    with tape:
        wp.launch(kernel, dim=threads, inputs=[p], device=device)
    expect = _jacobian(X0, 2.0)
    for repeat in range(2):  # a second sweep checks that zero() leaves nothing behind
        rows = []
        for k in range(3):
            onehot = np.zeros(3)
            onehot[k] = 1.0
            tape.backward(grads={p.output: onehot})
            rows.append(x.grad.numpy().copy())
            tape.zero()
            np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
        np.testing.assert_allclose(np.array(rows), expect, rtol=1e-12, atol=1e-14)


@wp.struct
class Layer:
    weights: wp.array(dtype=wp.float64)
    bias: wp.float64


@wp.struct
class Network:
    first: Layer
    second: Layer


@wp.kernel
def nested_struct_forward(net: Network, x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    h = wp.tanh(net.first.weights[i] * x[i] + net.first.bias)
    y[i] = net.second.weights[i] * h * h + net.second.bias


def test_nested_struct_array_gradients(device):
    rng = np.random.default_rng(3)
    n = 5
    w1 = wp.array(rng.uniform(-1, 1, n), dtype=wp.float64, device=device)
    w2 = wp.array(rng.uniform(-1, 1, n), dtype=wp.float64, device=device)
    x = wp.array(rng.uniform(-1, 1, n), dtype=wp.float64, device=device)
    net = Network()
    net.first.weights = w1
    net.first.bias = 0.3
    net.second.weights = w2
    net.second.bias = -0.1

    def fn(w1, w2, x):
        y = wp.zeros(n, dtype=wp.float64, device=device)
        wp.launch(nested_struct_forward, dim=n, inputs=[net, x, y], device=device)
        return y

    h = np.tanh(w1.numpy() * x.numpy() + 0.3)
    np.testing.assert_allclose(fn(w1, w2, x).numpy(), w2.numpy() * h * h - 0.1, rtol=1e-12)
    gradcheck(fn, [w1, w2, x])


def test_struct_with_string_annotations_in_a_package_submodule(tmp_path, monkeypatch):
    """`from __future__ import annotations` makes annotations strings; they resolve in the defining module."""
    pkg = tmp_path / "structpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "defs.py").write_text("from __future__ import annotations\nimport kernels as wp\n\n"
                                 "@wp.struct\nclass Body:\n    mass: float\n    pos: wp.vec3\n"
                                 "    samples: wp.array(dtype=float)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from structpkg.defs import Body
    fields = Body._wp_struct_.fields
    assert fields["mass"] is wp.float32 and fields["pos"] is wp.vec3
    assert fields["samples"].ndim == 1


class _NotAKernelType:
    """A class kernels have no layout for."""


@wp.struct
class HoldsUnsupported:
    ok: float
    bad: _NotAKernelType


@wp.struct
class NestsUnsupported:
    inner: HoldsUnsupported


@wp.kernel
def takes_nested_unsupported(s: NestsUnsupported, out: wp.array(dtype=float)):
    out[0] = s.inner.ok


def test_a_struct_with_an_unsupported_field_fails_when_used_not_when_defined():
    # defining and instantiating it works, so a module that defines such a struct still imports
    s = NestsUnsupported()
    with pytest.raises(wp.CompileError, match="field 'bad' has unsupported type"):
        wp.launch(takes_nested_unsupported, dim=1, inputs=[s, wp.zeros(1, dtype=float)])
    with pytest.raises(TypeError, match="field 'inner' is unusable"):
        s._to_ctype()


@wp.struct
class NoFields:
    pass


@wp.struct
class AfterEmptyFields:
    a: NoFields
    b: NoFields
    z: int


@wp.kernel
def read_after_empty_fields(s: AfterEmptyFields, out: wp.array(dtype=int)):
    out[0] = s.z


def test_fields_after_empty_struct_members_are_read_at_their_native_offset():
    # before: an empty member took 0 bytes on the Python side and 1 in C++, so z read as 0
    s = AfterEmptyFields()
    s.z = 42
    out = wp.zeros(1, dtype=int)
    wp.launch(read_after_empty_fields, dim=1, inputs=[s, out])
    assert out.numpy()[0] == 42


@wp.struct
class CompositeFields:
    v: wp.vec3
    m: wp.mat22


def test_a_composite_field_refuses_one_number_and_none_zeroes_it():
    # before: 123 filled every component silently and None gave NaNs
    s = CompositeFields()
    with pytest.raises(TypeError, match="expects vec3f but got a single value"):
        s.v = 123
    s.v = (1.0, 2.0, 3.0)
    s.v = None
    np.testing.assert_array_equal(np.array(s.v), np.zeros(3))
    s.m = [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_array_equal(np.array(s.m).reshape(2, 2), [[1.0, 2.0], [3.0, 4.0]])


@wp.struct
class Spring:
    stiffness: float
    rest: wp.vec3
    count: int


@wp.kernel
def build_spring(k: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = Spring(k[i] * 2.0, wp.vec3(k[i], 1.0, 2.0))
    out[i] = s.stiffness + s.rest[0] + float(s.count)


def test_a_struct_constructed_in_a_kernel_from_positional_field_values():
    k = wp.array(np.array([0.5, 1.5]), dtype=float)

    def fn(k):
        out = wp.zeros(2, dtype=float, requires_grad=True)
        wp.launch(build_spring, dim=2, inputs=[k, out])
        return out

    np.testing.assert_allclose(fn(k).numpy(), [1.5, 4.5])
    gradcheck(fn, [k])


@wp.struct
class Buffers:
    src: wp.array(dtype=float)
    dst: wp.array(dtype=float)


@wp.kernel
def square_through_local_struct(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    b = Buffers(src, dst)
    b.dst[i] = b.src[i] * b.src[i]


def test_arrays_of_a_struct_built_in_the_kernel_keep_their_gradients():
    # a field read back from a struct built here is the array that was set, whose gradient array is known
    x = wp.array(np.array([0.5, -2.0, 1.5]), dtype=float)

    def fn(x):
        y = wp.zeros(3, dtype=float, requires_grad=True)
        wp.launch(square_through_local_struct, dim=3, inputs=[x, y])
        return y

    gradcheck(fn, [x])
