"""Which @wp.func overload a call takes (kernels/compiler/function.py, Func._by_preference): the one whose
annotations are the arguments' own types, before a generic one or one reached by converting a literal, whatever
the declaration order; the same choices as real Warp's."""

import numpy as np

import _warp_reference

_PROGRAM = '''
from typing import Any


@wp.func
def pick(a: float, b: float):
    return a * b


@wp.func
def pick(a: float, b: float, c: float):
    return a * b * c


@wp.func
def pick(a: Any, b: Any):
    return a + b


@wp.func
def pick(a: Any, b: Any, c: Any):
    return a + b + c


@wp.func
def pick(a: int, b: int):
    return a - b


@wp.func
def pick(a: int, b: int, c: int):
    return a - b - c


@wp.kernel
def calls(out: wp.array(dtype=float), outi: wp.array(dtype=int), v: wp.array(dtype=wp.vec3)):
    outi[0] = pick(17, 25)
    outi[1] = pick(17, 25, 10)
    out[0] = pick(7.0, 10.0)
    out[1] = pick(7.0, 10.0, 2.0)
    v[0] = pick(wp.vec3(1.0, 2.0, 3.0), wp.vec3(10.0, 20.0, 30.0))


def run(wp, Tape):
    out, outi, v = wp.zeros(2, dtype=float), wp.zeros(2, dtype=int), wp.zeros(1, dtype=wp.vec3)
    wp.launch(calls, 1, inputs=[out, outi, v])
    return {"float": out.numpy(), "int": outi.numpy(), "vec": v.numpy()}
'''


def test_exact_overload_wins_as_in_warp(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "overload_preference")
    np.testing.assert_array_equal(ours["int"], [-8, -18])  # the int overloads, declared after Any and float
    np.testing.assert_array_equal(ours["float"], [70.0, 140.0])
    np.testing.assert_array_equal(ours["vec"], [[11.0, 22.0, 33.0]])  # no concrete overload: the generic one
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)
