"""`@wp.func` instances (issue 34): each closure made by a factory and each redefinition is a function of its own.

Warp relates a definition to an earlier one only through the name bound in the defining scope: a redefinition
with the same annotations makes a new function (references to the old one keep the old body), one with other
annotations adds an overload; each call of a factory makes new functions with their own closure values.
"""

import importlib.util

import numpy as np
import pytest

import kernels as wp

import _warp_reference


def _make_closure(value):
    @wp.func
    def f():
        return value

    return f


def _make_overloaded_closure(value):
    @wp.func
    def f():
        return value

    @wp.func
    def f(x: int):  # noqa: F811  (an overload, as in Warp)
        return f() * x

    return f


def _make_typed(dtype, value):
    @wp.func
    def f(x: dtype):
        return x * value

    return f


closure_a, closure_b = _make_closure(17), _make_closure(42)
overloaded_a, overloaded_b = _make_overloaded_closure(2), _make_overloaded_closure(3)
typed_int_2, typed_float_2 = _make_typed(int, 2), _make_typed(float, 2.0)
typed_int_3 = _make_typed(int, 3)


@wp.func
def redefined():
    return 1


redefined_first = redefined


@wp.func
def redefined():  # noqa: F811  (same annotations: a new function; redefined_first keeps its body)
    return 2


@wp.func
def primary(x: int):
    return x * 10


@wp.func
def primary(x: float):  # noqa: F811  (other annotations: an overload of the function bound to the name)
    return x * 100.0


primary_first = primary


@wp.func
def primary(x: int):  # noqa: F811  (redefines the int overload; the float one is kept)
    return x * 20


@wp.kernel
def instances_kernel(out: wp.array(dtype=int), outf: wp.array(dtype=float)):
    out[0] = closure_a()
    out[1] = closure_b()
    out[2] = overloaded_a()
    out[3] = overloaded_a(5)
    out[4] = overloaded_b()
    out[5] = overloaded_b(5)
    out[6] = typed_int_2(7)
    out[7] = typed_int_3(7)
    out[8] = redefined_first()
    out[9] = redefined()
    out[10] = primary_first(1)
    out[11] = primary(1)
    outf[0] = typed_float_2(1.5)
    outf[1] = primary(1.0)
    outf[2] = primary_first(1.0)


def test_each_closure_and_redefinition_keeps_its_own_body():
    out, outf = wp.zeros(12, dtype=int), wp.zeros(3, dtype=float)
    wp.launch(instances_kernel, dim=1, inputs=[out, outf])
    np.testing.assert_array_equal(out.numpy(), [17, 42, 2, 10, 3, 15, 14, 21, 1, 2, 10, 20])
    np.testing.assert_array_equal(outf.numpy(), [3.0, 100.0, 100.0])


def test_a_factory_kernel_calls_its_own_closure():
    def make(a, b):
        @wp.func
        def f():
            return a

        @wp.kernel
        def k(out: wp.array(dtype=int)):
            out[0] = f() + b

        return k

    k1, k2 = make(10, 7), make(40, 2)
    out = wp.zeros(1, dtype=int)
    wp.launch(k1, dim=1, inputs=[out])
    assert out.numpy()[0] == 17
    wp.launch(k2, dim=1, inputs=[out])
    assert out.numpy()[0] == 42


_PROGRAM = '''
def make(value):
    @wp.func
    def f():
        return value

    @wp.func
    def f(x: int):
        return f() * x

    return f


def make_cond(flag):
    if flag:
        @wp.func
        def g(x: float):
            return x * 2.0
    else:
        @wp.func
        def g(x: float):
            return x * 3.0
    return g


f2, f3 = make(2), make(3)
g2, g3 = make_cond(True), make_cond(False)


@wp.func
def h():
    return 17


h_first = h


@wp.func
def h():
    return 42


@wp.kernel
def k(out: wp.array(dtype=int), outf: wp.array(dtype=float)):
    out[0] = f2()
    out[1] = f2(4)
    out[2] = f3()
    out[3] = f3(4)
    out[4] = h_first()
    out[5] = h()
    outf[0] = g2(1.25)
    outf[1] = g3(1.25)


def run(wp, Tape):
    out, outf = wp.zeros(6, dtype=int, device="cpu"), wp.zeros(2, dtype=float, device="cpu")
    wp.launch(k, dim=1, inputs=[out, outf], device="cpu")
    return {"out": out.numpy(), "outf": outf.numpy()}
'''


def test_instances_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "func_instances")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
