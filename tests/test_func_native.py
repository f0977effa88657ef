"""`@wp.func_native` (C++ snippets) and `wp.address_of`, as Warp 1.19 defines them.

A snippet is compiled as written, for the CPU (here) and CUDA (tests/test_ptx.py compiles this module's kernels
to PTX). wp.ref[T] parameters are C++ references in the snippet; `adj_snippet` is the adjoint (a gradient checked
by central differences); a function without one that could carry a gradient makes a kernel's backward refused.
`wp.address_of(x)` passes the address of x's storage to a call. Values are compared with real Warp's.
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

import _warp_child
import _warp_reference


@wp.func_native("return a * b + 1.0f;")
def mul_add_one(a: float, b: float) -> float: ...


@wp.func_native("return x * x * 3.0f;", adj_snippet="adj_x += 6.0f * x * adj_ret;")
def three_x_squared(x: float) -> float: ...


@wp.func_native("x = y * 2.0f;", adj_snippet="adj_y += 2.0f * adj_x;\nadj_x = 0.0f;")
def store_double(x: wp.ref[wp.float32], y: wp.float32): ...


@wp.func_native("x = x * y;", adj_snippet="adj_y += x / y * adj_x;\nadj_x = adj_x * y;")
def scale_in_place(x: wp.ref[wp.float32], y: wp.float32): ...


@wp.kernel
def square_kernel(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = three_x_squared(x[i]) + 1.0


@wp.kernel
def scale_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i] + 1.0
    scale_in_place(v, y[i])
    store_double(out[i], v)


def test_a_snippet_runs_and_its_adjoint_is_the_gradient():
    x = wp.array(np.array([0.5, -1.25, 2.0], dtype=np.float32))
    out = wp.zeros(3, dtype=float)
    wp.launch(square_kernel, 3, [x, out])
    np.testing.assert_allclose(out.numpy(), 3.0 * x.numpy() ** 2 + 1.0, rtol=1e-6)

    def fn(x):
        out = wp.zeros(3, dtype=float, requires_grad=True)
        wp.launch(square_kernel, 3, [x, out])
        return out

    gradcheck(fn, [x])


def test_a_reference_parameter_adjoint_flows_through_locals_and_array_elements():
    x = wp.array(np.array([0.5, -1.5, 2.0], dtype=np.float32))
    y = wp.array(np.array([1.5, 0.75, -2.0], dtype=np.float32))

    def fn(x, y):
        out = wp.zeros(3, dtype=float, requires_grad=True)
        wp.launch(scale_kernel, 3, [x, y, out])
        return out

    np.testing.assert_allclose(fn(x, y).numpy(), 2.0 * (x.numpy() + 1.0) * y.numpy(), rtol=1e-6)
    gradcheck(fn, [x, y])


@wp.struct
class Pose:
    xform: wp.transformf


@wp.kernel
def pose_kernel(x: wp.array(dtype=float), poses: wp.array(dtype=Pose), out: wp.array(dtype=float)):
    i = wp.tid()
    store_double(poses[i].xform.p.x, x[i])
    poses[i].xform.q.w = x[i] * x[i]
    out[i] = poses[i].xform.p.x * 3.0 + poses[i].xform.q.w


def test_a_snippet_writes_a_component_of_a_transform_in_an_array_element():
    """The component write reads the element's transform and builds it again from its parts: copies, whose
    adjoints need no value the write overwrites (so the backward is not refused)."""
    x = wp.array(np.array([0.5, -1.5], dtype=np.float32))

    def fn(x):
        out = wp.zeros(2, dtype=float, requires_grad=True)
        wp.launch(pose_kernel, 2, [x, wp.zeros(2, dtype=Pose, requires_grad=True), out])
        return out

    np.testing.assert_allclose(fn(x).numpy(), 6.0 * x.numpy() + x.numpy() ** 2)
    gradcheck(fn, [x])


@wp.func_native("x = x + 5;")
def add_five(x: wp.ref[wp.int32]): ...


@wp.kernel
def no_adjoint_kernel(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = mul_add_one(x[i], 2.0)


@wp.kernel
def reference_without_adjoint(a: wp.array(dtype=wp.int32)):
    add_five(a[wp.tid()])


@wp.func_native("*(int32_t*)ptr = *(int32_t*)ptr + 42;")
def add_via_pointer(ptr: wp.uint64): ...


@wp.kernel(enable_backward=False)
def address_kernel(a: wp.array(dtype=wp.int32)):
    i = wp.tid()
    v = wp.int32(1)
    add_via_pointer(wp.address_of(v))
    add_via_pointer(wp.address_of(a[i]))
    a[i] = a[i] + v


@wp.func_native("out[tid] = x[tid] + 1;")
def increment_into(x: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32), tid: int): ...


@wp.kernel(enable_backward=False)
def increment_kernel(x: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    increment_into(x, out, wp.tid())


def test_a_snippet_indexes_arrays_as_in_warp():
    x = wp.array(np.arange(4, dtype=np.int32))
    out = wp.zeros(4, dtype=wp.int32)
    wp.launch(increment_kernel, 4, [x, out])
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, 4])


def test_an_address_is_the_storage_the_snippet_writes():
    a = wp.array(np.array([1, 2], dtype=np.int32))
    wp.launch(address_kernel, 2, [a])
    np.testing.assert_array_equal(a.numpy(), [1 + 42 + 43, 2 + 42 + 43])


def test_a_snippet_without_adjoint_refuses_the_backward_and_a_reference_one_the_build():
    x = wp.array(np.array([1.0], dtype=np.float32), requires_grad=True)
    out = wp.zeros(1, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(no_adjoint_kernel, 1, [x, out])
    np.testing.assert_allclose(out.numpy(), [3.0])
    with pytest.raises(wp.CompileError, match="has no adj_snippet"):
        tape.backward(grads={out: wp.ones_like(out)})
    # Warp's rule: a wp.ref[T] function without a manual adjoint in a backward-enabled kernel fails its build
    with pytest.raises(wp.CompileError, match=r"Cannot call '\S*add_five' with wp\.ref\[T\] parameters"):
        wp.launch(reference_without_adjoint, 1, [wp.zeros(1, dtype=wp.int32)])


_PROGRAM = '''
@wp.struct
class Inner:
    value: wp.float32


@wp.struct
class Outer:
    inner: Inner
    v: wp.vec3


@wp.func_native("return a * b + 1.0f;")
def mul_add_one(a: float, b: float) -> float: ...


@wp.func_native("x = x + 5;")
def add_five(x: wp.ref[wp.int32]): ...


@wp.func_native("float old = x; x = y * 2.0f; return old;", adj_snippet="adj_y += 2.0f * adj_x; adj_x = adj_ret;")
def store_double(x: wp.ref[wp.float32], y: wp.float32) -> wp.float32: ...


@wp.func_native("*(int32_t*)ptr = 42;")
def set_via_ptr(ptr: wp.uint64): ...


@wp.func_native("*(float*)ptr = *(float*)ptr + 1.0f;")
def increment_via_ptr(ptr: wp.uint64): ...


@wp.func
def forward_to_native(o: wp.ref[Outer], y: wp.float32):
    store_double(o.inner.value, y)


@wp.kernel(enable_backward=False)
def forward_kernel(ints: wp.array(dtype=wp.int32), floats: wp.array(dtype=wp.float32),
                   outers: wp.array(dtype=Outer), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    local = wp.int32(10)
    add_five(local)
    ints[3 * i] = local
    add_five(ints[3 * i + 1])
    val = wp.int32(0)
    set_via_ptr(wp.address_of(val))
    ints[3 * i + 2] = val
    increment_via_ptr(wp.address_of(floats[i]))
    v = wp.vec3(1.0, 2.0, 3.0)
    increment_via_ptr(wp.address_of(v.y))
    old = store_double(v[2], floats[i])
    increment_via_ptr(wp.address_of(outers[i].inner.value))
    forward_to_native(outers[i], floats[i] + 1.0)
    outers[i].v = v
    out[4 * i] = mul_add_one(v.y, v.z)
    out[4 * i + 1] = old
    o = Outer()
    increment_via_ptr(wp.address_of(o.inner.value))
    out[4 * i + 2] = o.inner.value
    out[4 * i + 3] = outers[i].inner.value


@wp.kernel
def backward_kernel(x: wp.array(dtype=wp.float32), dst: wp.array2d(dtype=wp.float32),
                    out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    tmp = wp.float32(1.0)
    old = store_double(tmp, x[i])
    store_double(dst[i, 0], x[i] * 3.0)
    out[i] = tmp + dst[i, 0] + old * x[i]


def run(wp, Tape):
    ints = wp.zeros(6, dtype=wp.int32, device="cpu")
    floats = wp.array([1.0, 2.5], dtype=wp.float32, device="cpu")
    outers = wp.zeros(2, dtype=Outer, device="cpu")
    out = wp.zeros(8, dtype=wp.float32, device="cpu")
    wp.launch(forward_kernel, dim=2, inputs=[ints, floats, outers, out], device="cpu")
    x = wp.array([1.0, 2.0, -0.5], dtype=wp.float32, device="cpu", requires_grad=True)
    dst = wp.zeros((3, 1), dtype=wp.float32, device="cpu", requires_grad=True)
    out2 = wp.zeros(3, dtype=wp.float32, device="cpu", requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(backward_kernel, dim=3, inputs=[x, dst, out2], device="cpu")
    tape.backward(grads={out2: wp.ones_like(out2)})
    return {"ints": ints.numpy(), "floats": floats.numpy(), "out": out.numpy(), "out2": out2.numpy(),
            "x_grad": x.grad.numpy(), "dst_grad": dst.grad.numpy(), "dst": dst.numpy(),
            "outer_v": np.array([o.v for o in outers.list()])}
'''


def _ours(tmp_path):
    path = tmp_path / "func_native_program.py"
    path.write_text("import numpy as np\nimport kernels as wp\n\n\n" + _PROGRAM)
    return _warp_child.load_module(str(path), "func_native_program").run(wp, Tape)


def test_snippets_references_and_addresses_give_the_expected_values(tmp_path):
    out = _ours(tmp_path)
    np.testing.assert_array_equal(out["ints"], [15, 5, 42] * 2)
    np.testing.assert_array_equal(out["floats"], [2.0, 3.5])
    # v = (1, 3, 2 * floats[i]); old = 3; o.inner.value 0 + 1; outers[i].inner.value = 2 * (floats[i] + 1)
    np.testing.assert_allclose(out["out"], [3.0 * 4.0 + 1.0, 3.0, 1.0, 6.0, 3.0 * 7.0 + 1.0, 3.0, 1.0, 9.0])
    np.testing.assert_array_equal(out["outer_v"], [[1.0, 3.0, 4.0], [1.0, 3.0, 7.0]])
    # out2 = 2x + 6x + 1 * x; d/dx = 2 + 6 + 1; dst's gradient: its element is overwritten (adj_x = 0 -> adj_ret)
    np.testing.assert_allclose(out["out2"], 9.0 * np.array([1.0, 2.0, -0.5]))
    np.testing.assert_allclose(out["x_grad"], [9.0, 9.0, 9.0])


def test_snippets_references_and_addresses_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both("import numpy as np\n\n\n" + _PROGRAM, str(tmp_path), "func_native")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)


@pytest.mark.parametrize("body, message", [
    ("x = wp.int32(1)\n    y = wp.int32(2)\n    result[0] = wp.address_of(x + y)", "addressable expression"),
    ("result[0] = wp.address_of(wp.vec3f(1.0, 2.0, 3.0).x)", "addressable expression"),
    ("x = 0\n    set_via_ptr(wp.address_of(x))", r"x = wp\.int32\(0\)"),
    ("x = 1.0\n    set_via_ptr(wp.address_of(x))", r"x = wp\.float32\(1\.0\)"),
    ("x = wp.int32(1)\n    result[0] = wp.address_of(x)", "as an argument of a function call only"),
])
def test_what_has_no_storage_has_no_address(tmp_path, body, message):
    source = ("import kernels as wp\n\n\n@wp.func_native('*(int*)ptr = 1;')\n"
              "def set_via_ptr(ptr: wp.uint64): ...\n\n\n"
              f"@wp.kernel(enable_backward=False)\ndef k(result: wp.array(dtype=wp.uint64)):\n    {body}\n")
    path = tmp_path / "address_refusal.py"
    path.write_text(source)
    module = _warp_child.load_module(str(path), f"address_refusal_{abs(hash(body))}")
    with pytest.raises(wp.CompileError, match=message):
        wp.launch(module.k, 1, [wp.zeros(1, dtype=wp.uint64)])
