"""Warp's scalar semantics in every pass (issue 30): literals and `wp.constant`s fold as the native code computes,
comparisons of mixed types convert as C does, and what has no value is a CompileError, never a raw exception.

The expected numbers are real Warp 1.19's on the CPU (tests/test_warp_differential.py checks many more against
warp-lang itself)."""

import numpy as np
import pytest

import kernels as wp
from kernels.compiler import scalar_semantics as S

N = wp.constant(7)
GRID_WIDTH = wp.constant(9)


@wp.kernel
def folded_literals(y: wp.array(dtype=wp.float64)):
    i = wp.int32(5)
    d = wp.float64(0.1000000001)
    u = wp.uint32(5)
    y[0] = wp.float64(N / 2)
    y[1] = wp.float64(-7 / 2)
    y[2] = wp.float64(-7 % 3)
    y[3] = wp.float64(-7.5 % 2.0)
    y[4] = wp.float64(-7 // 2)
    y[5] = wp.float64(i - GRID_WIDTH / 2)
    y[6] = wp.float64(1.0 / 3.0)
    y[7] = wp.float64((5 / 3) << 2)
    y[8] = wp.float64(0.1 + 0.2 == 0.3)
    y[9] = wp.float64(d < 0.1)
    y[10] = wp.float64(u < -1)
    y[11] = wp.float64(i < 5.5)
    y[12] = wp.float64(wp.int8(-1) < wp.uint32(3))
    y[13] = wp.float64(wp.int64(-1) < wp.uint32(3))
    y[14] = wp.float64(1 << 31)
    y[15] = wp.float64(-7.5 // 2.0)


WARP_VALUES = [3, -3, -1, -1.5, -4, 1, float(np.float32(1.0 / 3.0)), 4, 1, 1, 1, 1, 0, 1, -2147483648, -4]


def test_folded_literals_match_warp(device):
    y = wp.zeros(len(WARP_VALUES), dtype=wp.float64, device=device)
    wp.launch(folded_literals, dim=1, inputs=[y], device=device)
    np.testing.assert_array_equal(y.numpy(), WARP_VALUES)


K_INT8_MIN = wp.constant(wp.int8(-128))
K_INT8_THREE = wp.constant(wp.int8(3))
K_UINT8 = wp.constant(wp.uint8(7))


@wp.kernel
def folded_typed_constants(y: wp.array(dtype=wp.float64)):
    y[0] = wp.float64(K_INT8_MIN / K_INT8_THREE)
    y[1] = wp.float64(K_INT8_MIN % K_INT8_THREE)
    y[2] = wp.float64(-K_UINT8)
    y[3] = wp.float64(K_INT8_MIN / wp.int8(3))


def test_typed_constants_fold_as_promoted_c(device):
    """Folding reads a typed constant as a Python number: int8 -128 / 3 is -42 as in C (and Warp), not what
    int8 arithmetic that wraps at its width gives (43)."""
    y = wp.zeros(4, dtype=wp.float64, device=device)
    wp.launch(folded_typed_constants, dim=1, inputs=[y], device=device)
    np.testing.assert_array_equal(y.numpy(), [-42, -2, 249, -42])


@pytest.mark.parametrize("a, b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (0, -5)])
def test_c_division_and_remainder(a, b):
    assert S.c_div(a, b) == int(np.trunc(a / b))
    assert S.c_mod(a, b) == int(np.fmod(a, b))
    assert S.c_div(a, b) * b + S.c_mod(a, b) == a


@pytest.mark.parametrize("expr, message", [
    ("1.5 << 2", "not defined for floats"),
    ("1 / 0", "division by zero"),
    ("7 % 0", "division by zero"),
    ("1 << -1", "shift count"),
    ("0 ** -1", "negative power"),
    ("2 ** 100", "64 bits"),
    ("1 >> 70", "shift count"),
    ("'a' < 1", "cannot compare"),
    ("int(1e30)", "out of the range of int32"),
    ("wp.uint8(-1.5)", "out of the range of uint8"),
])
def test_literal_expression_without_value_is_a_compile_error(tmp_path, expr, message):
    """Each is a CompileError naming the file and the line of the expression (never Python's own exception)."""
    path = tmp_path / "bad_literal.py"
    path.write_text("import kernels as wp\n\n\n@wp.kernel\ndef k(y: wp.array(dtype=float)):\n"
                    f"    y[0] = wp.float64({expr})\n")
    namespace = {"__name__": "bad_literal"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(wp.errors.CompileError, match=message) as info:
        namespace["k"].compile_ir()
    assert f"{path}:6" in str(info.value) and expr in str(info.value)


def test_comparison_type_follows_c():
    T = wp.types
    assert S.comparison_type(T.int32, T.uint32) is T.uint32
    assert S.comparison_type(T.int64, T.uint32) is T.int64
    assert S.comparison_type(T.int8, T.uint8) is T.int32
    assert S.comparison_type(T.float32, T.int64) is T.float32
    assert S.comparison_type(T.float16, T.float64) is T.float64
    assert S.comparison_type(T.bool_, T.uint16) is T.int32
