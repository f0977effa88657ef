"""Warp's code-generation API surface: the compile-error classes (`wp.WarpCodegenError` and its typed kinds, each
also the Python exception of its kind), and the refusal of kernels that return a value."""

import types

import pytest

import kernels as wp


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
