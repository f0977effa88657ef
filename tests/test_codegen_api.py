"""Warp's code-generation API surface: the compile-error classes (`wp.WarpCodegenError` and its typed kinds, each
also the Python exception of its kind), and the refusal of kernels that return a value."""

import types

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck


def test_compile_errors_are_runtime_errors_and_typed_kinds_are_their_python_kind():
    assert wp.WarpCodegenError is wp.CompileError
    assert issubclass(wp.CompileError, RuntimeError)
    for kind, base in ((wp.WarpCodegenTypeError, TypeError), (wp.WarpCodegenAttributeError, AttributeError),
                       (wp.WarpCodegenIndexError, IndexError), (wp.WarpCodegenKeyError, KeyError),
                       (wp.WarpCodegenValueError, ValueError)):
        assert issubclass(kind, wp.CompileError) and issubclass(kind, base)
    assert str(wp.WarpCodegenKeyError("no such key")) == "no such key"


def _returns_value(x: float):
    return x


def _annotated_float(x: float) -> float:
    return


def _annotated_none(x: float) -> None:
    return


def _annotated_none_type(x: float) -> types.NoneType:
    return


@pytest.mark.parametrize("fn", [_returns_value, _annotated_float])
def test_a_kernel_returning_a_value_is_a_type_error(fn):
    k = wp.kernel(fn, module="unique")
    with pytest.raises(wp.WarpCodegenTypeError, match="kernels cannot return values"):
        wp.launch(k, dim=1, inputs=[1.0])


@pytest.mark.parametrize("fn", [_annotated_none, _annotated_none_type])
def test_a_kernel_annotated_to_return_none_runs(fn):
    wp.launch(wp.kernel(fn, module="unique"), dim=1, inputs=[1.0])


i = 42  # a module global with the name of a loop index below: wp.static must not read it


@wp.kernel
def static_of_loop_index(out: wp.array(dtype=int)):
    for i in range(3):  # noqa: F402
        out[i] = wp.static(i * 10)


@wp.kernel
def static_of_runtime_local(out: wp.array(dtype=int), n: int):
    i = n  # noqa: F841
    out[0] = wp.static(i)


def test_static_of_a_constant_loop_index_takes_each_value():
    # before: wp.static(i) read the module global i (42) in every iteration
    out = wp.zeros(3, dtype=int)
    wp.launch(static_of_loop_index, dim=1, inputs=[out])
    assert list(out.numpy()) == [0, 10, 20]


def test_static_of_a_runtime_local_is_an_error_not_the_global():
    with pytest.raises(wp.CompileError, match="'i' is a run-time variable"):
        wp.launch(static_of_runtime_local, dim=1, inputs=[wp.zeros(1, dtype=int), 3])


@wp.func
def cube(x: float):
    return x * x * x


@wp.func_grad(cube)
def adj_cube(x: float, adj_ret: float):
    # calls the function it is the adjoint of (before: endless recursion in the compiler)
    wp.adjoint[x] += 3.0 * cube(x) / x * adj_ret


@wp.kernel
def cube_all(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = cube(x[i])


def test_a_custom_adjoint_may_call_its_own_function():
    from autodiff import Tape
    x = wp.array([2.0, -1.0], dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch(cube_all, dim=2, inputs=[x, y])
    tape.backward(grads={y: wp.ones(2, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), [12.0, 3.0])


@wp.kernel
def subtract_transforms(x: wp.array(dtype=wp.transform), y: wp.array(dtype=wp.transform)):
    i = wp.tid()
    y[i] -= x[i]


def test_subtracting_into_a_transform_array_compiles_and_is_differentiable():
    # before: the generated C++ negated a transform with an operator it does not have
    rng = np.random.default_rng(3)
    x = wp.array(rng.uniform(-1, 1, (2, 7)), dtype=wp.transformd)

    @wp.kernel
    def subtract_d(x: wp.array(dtype=wp.transformd), y: wp.array(dtype=wp.transformd)):
        i = wp.tid()
        y[i] -= x[i] * wp.float64(2.0)

    def fn(x):
        y = wp.zeros(2, dtype=wp.transformd, requires_grad=True)
        wp.launch(subtract_d, dim=2, inputs=[x, y])
        return y

    gradcheck(fn, [x])
    y = wp.array(np.ones((1, 7)), dtype=wp.transform)
    wp.launch(subtract_transforms, dim=1, inputs=[wp.array(np.full((1, 7), 0.5), dtype=wp.transform), y])
    np.testing.assert_array_equal(y.numpy(), np.full((1, 7), 0.5))


def _fill_one(x: wp.array(dtype=float)):
    x[0] = 1.0


def _fill_two(x: wp.array(dtype=float)):
    x[0] = 2.0


def test_a_kernel_failing_unexpectedly_does_not_poison_its_module(monkeypatch):
    # before: the batch was dropped and its other kernels failed with "'NoneType' object is not callable"
    bad = wp.kernel(_fill_one, module="codegen_api_poison")
    good = wp.kernel(_fill_two, module="codegen_api_poison")

    def broken():
        raise ValueError("compiler bug stand-in")

    monkeypatch.setattr(bad, "compile_ir", broken)
    x = wp.zeros(1, dtype=float)
    with pytest.raises(ValueError, match="stand-in"):
        wp.launch(bad, dim=1, inputs=[x])
    wp.launch(good, dim=1, inputs=[x])
    assert x.numpy()[0] == 2.0
    with pytest.raises(ValueError, match="stand-in"):
        wp.launch(bad, dim=1, inputs=[x])


@wp.func
def twice(x: int):
    return x * 2


@wp.func
def twice(x: float):  # noqa: F811  (an overload)
    return x * 2.0


@wp.func
def halve_double(x: wp.float64):
    return x / wp.float64(2.0)


@wp.func
def length_of(a: wp.array(dtype=float)):
    return len(a)


def test_a_func_called_from_python_runs_the_overload_taking_the_values():
    assert twice(3) == 6 and isinstance(twice(3), int)
    assert twice(1.5) == 3.0
    assert length_of(wp.zeros(4, dtype=float)) == 4
    with pytest.raises(RuntimeError, match=r"no overload found for arguments \(1.0,\)"):
        halve_double(1.0)


@wp.struct
class OneField:
    a: float


@wp.kernel
def read_missing_field(s: OneField):
    _ = s.missing


def test_a_missing_struct_field_is_an_attribute_error():
    wp.init()  # Warp's explicit start: nothing to do
    with pytest.raises(AttributeError, match="has no field 'missing'"):
        wp.launch(read_missing_field, dim=1, inputs=[OneField()])


def test_warp_grid_stride_option_is_accepted_and_gives_the_same_result():
    """`@wp.kernel(grid_stride=False)` (Warp's switch for a CUDA grid-stride loop) changes no result."""

    def double(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = x[i] * 2.0

    for grid_stride in (False, True):
        x = wp.array(np.arange(5, dtype=np.float32), device="cpu")
        wp.launch(wp.kernel(double, module="unique", grid_stride=grid_stride), dim=5, inputs=[x], device="cpu")
        np.testing.assert_array_equal(x.numpy(), 2.0 * np.arange(5))
