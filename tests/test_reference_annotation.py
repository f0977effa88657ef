"""`wp.ref[T]`, Warp 1.19's pass-by-reference parameters of @wp.func.

Functions take and return values here: a reference parameter's final value is returned after the function's own
results and the call writes it back to the argument (a variable, an array element, a struct field, a component,
or a path of these). What has no storage is refused; a backward-enabled kernel calling such a function fails its
build (as in Warp), and wp.ref of an array is an ordinary array parameter. The same program runs on real Warp for
its values.
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from kernels.reference import Reference

import _warp_child
import _warp_reference


def test_the_annotation_object():
    r = wp.ref[wp.int32]
    assert isinstance(r, Reference)
    assert r.dtype is wp.int32 and r.value_type is wp.int32
    assert repr(r) == "wp.ref[int32]"
    assert r == wp.ref[wp.int32] and hash(r) == hash(wp.ref[wp.int32])
    assert r != wp.ref[wp.float32]


_PROGRAM = '''
@wp.struct
class Box:
    value: float
    v: wp.vec3


@wp.func
def add_one(x: wp.ref[wp.float32]):
    x += 1.0


@wp.func
def scale(x: wp.ref[wp.float32], s: float) -> float:
    old = x
    if s > 0.0:
        x = x * s
        return old
    x = -x
    return old


@wp.func
def twice(x: wp.ref[wp.float32]):
    add_one(x)
    add_one(x)


@wp.func
def swap(a: wp.ref[wp.float32], b: wp.ref[wp.float32]):
    a, b = b, a


@wp.kernel(enable_backward=False)
def k(a: wp.array(dtype=float), out: wp.array(dtype=float), boxes: wp.array(dtype=Box)):
    i = wp.tid()
    add_one(a[i])
    y = wp.float32(2.0)
    add_one(y)
    old = scale(y, 3.0)
    old2 = scale(y, -1.0)
    b = Box()
    b.value = 1.0
    add_one(b.value)
    v = wp.vec3(1.0, 2.0, 3.0)
    twice(v[1])
    add_one(boxes[i].v[2])
    swap(v[0], v[2])
    out[i * 6 + 0] = y
    out[i * 6 + 1] = old
    out[i * 6 + 2] = old2
    out[i * 6 + 3] = b.value
    out[i * 6 + 4] = v[1]
    out[i * 6 + 5] = v[0] * 10.0 + v[2]


def run(wp, Tape):
    a = wp.array([1.0, 5.0], dtype=float, device="cpu")
    out = wp.zeros(12, dtype=float, device="cpu")
    boxes = wp.zeros(2, dtype=Box, device="cpu")
    wp.launch(k, dim=2, inputs=[a, out, boxes], device="cpu")
    return {"a": a.numpy(), "out": out.numpy(), "box_v": np.array([bx.v for bx in boxes.list()])}
'''


def _ours(tmp_path, source, name):
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\nimport kernels as wp\n\n\n" + source)
    return _warp_child.load_module(str(path), name)


def test_reference_arguments_are_written_back(tmp_path):
    from autodiff import Tape

    out = _ours(tmp_path, _PROGRAM, "reference_program").run(wp, Tape)
    np.testing.assert_array_equal(out["a"], [2.0, 6.0])
    # y: 2 -> 3 -> 9 -> -9; old 3, old2 9; b.value 2; v[1] 2 -> 4; v[0], v[2] swapped: 3 * 10 + 1
    np.testing.assert_array_equal(out["out"], [-9.0, 3.0, 9.0, 2.0, 4.0, 31.0] * 2)
    np.testing.assert_array_equal(out["box_v"], [[0.0, 0.0, 1.0]] * 2)


def test_reference_arguments_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both("import numpy as np\n\n\n" + _PROGRAM, str(tmp_path), "reference")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)


_FUNCTION_FIRST = '''
@wp.func
def double_it(x: wp.float32):
    return x * 2.0


@wp.func
def triple_it(x: wp.float32):
    return x * 3.0


@wp.func
def apply_into(g: wp.Function, dst: wp.ref[wp.float32], x: wp.float32):
    dst = g(x)


@wp.kernel(enable_backward=False)
def function_first(out: wp.array(dtype=wp.float32)):
    apply_into(double_it, out[0], wp.float32(3.0))
    apply_into(triple_it, out[1], wp.float32(4.0))


def run(wp, Tape):
    out = wp.zeros(2, dtype=wp.float32, device="cpu")
    wp.launch(function_first, dim=1, outputs=[out], device="cpu")
    return {"out": out.numpy()}
'''


def test_a_reference_after_a_function_parameter_gets_the_value_it_was_given(tmp_path):
    """A `wp.Function` parameter is no run-time parameter: the reference after it is still the one written back
    (it wrote back `x` before, 3 and 4)."""
    from autodiff import Tape

    out = _ours(tmp_path, _FUNCTION_FIRST, "reference_after_function").run(wp, Tape)
    np.testing.assert_array_equal(out["out"], [6.0, 12.0])
    if importlib.util.find_spec("warp") is not None:
        warp, ours = _warp_reference.both("import numpy as np\n\n\n" + _FUNCTION_FIRST, str(tmp_path), "ref_fn")
        np.testing.assert_array_equal(ours["out"], warp["out"])


_REFUSED = '''
@wp.func
def add_one(x: wp.ref[wp.int32]):
    x += 1


@wp.func
def make() -> wp.int32:
    return wp.int32(1)


@wp.kernel(enable_backward=False)
def literal():
    add_one(wp.int32(5))


@wp.kernel(enable_backward=False)
def call_result():
    add_one(make())


@wp.kernel(enable_backward=False)
def constant_local():
    x = 0
    add_one(x)


@wp.func
def add_half(x: wp.ref[wp.float32]):
    x += 0.5


@wp.kernel
def with_backward(a: wp.array(dtype=float)):
    add_half(a[0])
'''


@pytest.mark.parametrize("kernel, message", [
    ("literal", "pass a variable, an array element"),
    ("call_result", "pass a variable, an array element"),
    ("constant_local", r"declare it with its type, e\.g\. x = wp\.int32\(0\)"),
])
def test_arguments_without_storage_are_refused(tmp_path, kernel, message):
    module = _ours(tmp_path, _REFUSED, f"reference_refused_{kernel}")
    with pytest.raises(wp.CompileError, match=message):
        wp.launch(getattr(module, kernel), dim=1)


def test_a_kernel_calling_a_reference_function_with_a_backward_is_refused_when_built(tmp_path):
    """As in Warp 1.19: a derived adjoint cannot go through references, so a backward-enabled kernel calling such
    a function fails its build (its launch), naming the function; enable_backward=False kernels run."""
    module = _ours(tmp_path, _REFUSED, "reference_refused_backward")
    a = wp.zeros(1, dtype=float, requires_grad=True)
    with pytest.raises(wp.CompileError, match=r"In kernel 'with_backward': Cannot call '\S*add_half' with "
                                              r"wp\.ref\[T\] parameters from a backward-enabled kernel"):
        wp.launch(module.with_backward, dim=1, inputs=[a])
    assert a.numpy()[0] == 0.0  # nothing ran


def test_overloads_differing_only_in_references_are_refused():
    @wp.func
    def refness(x: wp.int32) -> wp.int32:
        return x

    with pytest.raises(RuntimeError, match="differ only in which parameters are wp.ref"):
        @wp.func
        def refness(x: wp.ref[wp.int32]):  # noqa: F811  (the redefinition is the test)
            x += 1


_ALIASING = '''
@wp.func
def bump(x: wp.ref[wp.float32], y: wp.ref[wp.float32]):
    x += 1.0
    y += 10.0


@wp.func
def bump_and_read(x: wp.ref[wp.float32], a: wp.array(dtype=float)) -> float:
    x += 1.0
    return a[0]


@wp.kernel(enable_backward=False)
def same_local():
    v = wp.vec3(0.0)
    bump(v[0], v[0])


@wp.kernel(enable_backward=False)
def negative_index():
    v = wp.vec3(0.0)
    bump(v[-1], v[2])


@wp.kernel(enable_backward=False)
def two_elements(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    bump(a[0], b[0])


@wp.kernel(enable_backward=False)
def element_and_array(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    out[0] = bump_and_read(a[0], a)
'''


@pytest.mark.parametrize("kernel, message", [
    ("same_local", "may name the same storage"),
    ("negative_index", "may name the same storage"),
    ("two_elements", "may be the same element"),
    ("element_and_array", "an array \\(or holds arrays\\) that may contain it"),
])
def test_references_that_may_alias_are_refused(tmp_path, kernel, message):
    """Written back after the call, aliased references would not give Warp's in-place numbers: refused."""
    module = _ours(tmp_path, _ALIASING, f"reference_alias_{kernel}")
    a, b = wp.zeros(1, dtype=float), wp.zeros(1, dtype=float)
    inputs = {"same_local": [], "negative_index": [], "two_elements": [a, b], "element_and_array": [a, b]}[kernel]
    with pytest.raises(wp.CompileError, match=message):
        wp.launch(getattr(module, kernel), dim=1, inputs=inputs)


_USER_ADD = '''
@wp.func
def add(x: wp.float32, y: wp.float32) -> wp.int32:
    return wp.int32(1)


@wp.func
def bump(x: wp.ref[wp.float32]):
    x += wp.float32(1.0)


@wp.kernel(enable_backward=False)
def k(out: wp.array(dtype=wp.float32)):
    x = wp.float32(0.0)
    bump(x)
    out[0] = x
'''


def test_an_update_of_a_reference_keeps_its_type(tmp_path):
    """A user-defined `add` giving an int32 for `x += 1.0` of a wp.ref[float32] parameter is refused (Warp's
    WarpCodegenTypeError), not converted on the way back to the caller."""
    module = _ours(tmp_path, _USER_ADD, "reference_user_add")
    assert module.bump.func.__name__ == "bump"  # Warp's Function.func: the Python function
    with pytest.raises(wp.CompileTypeError, match="augmented assignment to ref parameter 'x'"):
        wp.launch(module.k, dim=1, outputs=[wp.zeros(1, dtype=wp.float32)])
