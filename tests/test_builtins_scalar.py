"""Scalar math builtins (kernels/builtins/scalar_math.py): values against numpy, gradients against finite differences.

Every kernel is created at import time, so the whole file compiles into one native library.
"""

import math

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

FLOATS = (wp.float16, wp.float32, wp.float64)
INTS = (wp.int8, wp.int32, wp.int64, wp.uint8, wp.uint32)
RTOL = {wp.float16: 2e-3, wp.float32: 2e-6, wp.float64: 1e-13}
ATOL = {wp.float16: 2e-3, wp.float32: 1e-6, wp.float64: 1e-13}


# ------------------------------------------------------------------------------------------------------------
# Kernel factories: one kernel per (builtin, argument dtype), named uniquely so they do not replace each other.


def _named(pyfunc, name):
    pyfunc.__name__ = pyfunc.__qualname__ = name
    return wp.kernel(pyfunc)


def _unary_kernel(fn, dtype, out_dtype):
    def k(x: wp.array(dtype=dtype), y: wp.array(dtype=out_dtype)):
        i = wp.tid()
        y[i] = fn(x[i])

    return _named(k, f"unary_{fn.__name__}_{dtype.__name__}")


def _binary_kernel(fn, dtype):
    def k(a: wp.array(dtype=dtype), b: wp.array(dtype=dtype), y: wp.array(dtype=dtype)):
        i = wp.tid()
        y[i] = fn(a[i], b[i])

    return _named(k, f"binary_{fn.__name__}_{dtype.__name__}")


def _ternary_kernel(fn, dtype):
    def k(a: wp.array(dtype=dtype), b: wp.array(dtype=dtype), c: wp.array(dtype=dtype),
          y: wp.array(dtype=dtype)):
        i = wp.tid()
        y[i] = fn(a[i], b[i], c[i])

    return _named(k, f"ternary_{fn.__name__}_{dtype.__name__}")


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _smoothstep(a, b, x):
    s = np.clip((x - a) / (b - a), 0.0, 1.0)
    return s * s * (3.0 - 2.0 * s)


GENERAL = [-2.3, -0.7, -0.1, 0.2, 0.9, 1.7, 3.1]
POSITIVE = [0.05, 0.3, 1.0, 2.5, 7.0]
UNIT = [-0.95, -0.4, 0.0, 0.3, 0.9]
# Halfway cases (exact in every float type) and points between integers.
ROUNDING = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -2.3, -0.7, 0.2, 1.7, 3.6]

# name -> (numpy reference, inputs for values, inputs for gradients: away from kinks and jumps)
UNARY = {
    "sin": (np.sin, GENERAL, GENERAL),
    "cos": (np.cos, GENERAL, GENERAL),
    "tan": (np.tan, UNIT, UNIT),
    "asin": (np.arcsin, UNIT, UNIT),
    "acos": (np.arccos, UNIT, UNIT),
    "atan": (np.arctan, GENERAL, GENERAL),
    "sinh": (np.sinh, GENERAL, GENERAL),
    "cosh": (np.cosh, GENERAL, GENERAL),
    "tanh": (np.tanh, GENERAL, GENERAL),
    "exp": (np.exp, GENERAL, GENERAL),
    "log": (np.log, POSITIVE, POSITIVE),
    "log2": (np.log2, POSITIVE, POSITIVE),
    "log10": (np.log10, POSITIVE, POSITIVE),
    "sqrt": (np.sqrt, POSITIVE + [0.0], POSITIVE),
    "cbrt": (np.cbrt, GENERAL + [0.0], GENERAL),
    "floor": (np.floor, ROUNDING, GENERAL),
    "ceil": (np.ceil, ROUNDING, GENERAL),
    "round": (_round_half_away, ROUNDING, GENERAL),
    "rint": (np.rint, ROUNDING, GENERAL),
    "trunc": (np.trunc, ROUNDING, GENERAL),
    "frac": (lambda x: x - np.trunc(x), ROUNDING, GENERAL),
    "abs": (np.abs, GENERAL + [0.0], GENERAL),
    "sign": (lambda x: np.where(x < 0, -1.0, 1.0), GENERAL + [0.0, -0.0], GENERAL),
    "step": (lambda x: np.where(x < 0, 1.0, 0.0), GENERAL + [0.0, -0.0], GENERAL),
    "degrees": (np.degrees, GENERAL, GENERAL),
    "radians": (np.radians, GENERAL, GENERAL),
    "erf": (np.vectorize(math.erf), GENERAL, GENERAL),
    "erfc": (np.vectorize(math.erfc), GENERAL, GENERAL),
    "erfinv": (None, UNIT, UNIT),  # checked by round trip through math.erf
    "erfcinv": (None, [0.05, 0.5, 1.0, 1.3, 1.95], [0.05, 0.5, 1.0, 1.3, 1.95]),
}

BINARY = {  # name -> (numpy reference, a values, b values)
    "atan2": (np.arctan2, [0.7, -0.4, 1.5, -1.2, 0.0, 2.0], [1.3, 2.0, -0.3, -0.8, -1.0, 2.5]),
    "pow": (np.power, [0.3, 1.2, 2.5, 0.8, 4.0, 1.0], [1.3, -0.5, 2.0, 0.0, 0.5, 7.0]),
    "copysign": (np.copysign, [0.7, -0.4, 1.5, -1.2, 3.0, -2.0], [1.3, 2.0, -0.3, -0.8, 1.0, -1.0]),
    "min": (np.fmin, [0.7, -0.4, 1.5, -1.2, 2.0, 5.0], [1.3, 2.0, -0.3, -0.8, 2.5, -5.0]),
    "max": (np.fmax, [0.7, -0.4, 1.5, -1.2, 2.0, 5.0], [1.3, 2.0, -0.3, -0.8, 2.5, -5.0]),
}

TERNARY = {  # name -> (numpy reference, a, b, c); clamp rows cover below, inside and above the range
    "clamp": (lambda x, lo, hi: np.minimum(np.maximum(lo, x), hi),
              [0.5, -2.0, 3.0, 0.2, 1.5], [-1.0, -1.0, -1.0, 0.1, -0.5], [1.0, 1.0, 1.0, 0.4, 0.9]),
    "lerp": (lambda a, b, t: a * (1 - t) + b * t,
             [0.5, -2.0, 3.0, 0.2, 1.5], [-1.0, 4.0, -1.0, 0.7, -0.5], [0.3, 0.9, -0.2, 1.4, 0.5]),
    "smoothstep": (_smoothstep,
                   [0.0, -1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 0.5, 1.0, 1.0], [0.3, 1.2, 1.1, -0.5, 1.5]),
}

CLASSIFY = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
INT_UNARY = {
    "abs": lambda x: np.where(x < 0, -x, x),
    "sign": lambda x: np.where(x < 0, -1, 1),
    "step": lambda x: np.where(x < 0, 1, 0),
}

UNARY_KERNELS = {(n, d): _unary_kernel(getattr(wp, n), d, d) for n in UNARY for d in FLOATS}
BINARY_KERNELS = {(n, d): _binary_kernel(getattr(wp, n), d) for n in BINARY for d in FLOATS}
TERNARY_KERNELS = {(n, d): _ternary_kernel(getattr(wp, n), d) for n in TERNARY for d in FLOATS}
CLASSIFY_KERNELS = {(n, d): _unary_kernel(getattr(wp, n), d, wp.bool) for n in CLASSIFY for d in FLOATS}
INT_UNARY_KERNELS = {(n, d): _unary_kernel(getattr(wp, n), d, d) for n in INT_UNARY for d in INTS}
INT_BINARY_KERNELS = {(n, d): _binary_kernel(getattr(wp, n), d) for n in ("min", "max") for d in INTS}
INT_CLAMP_KERNELS = {d: _ternary_kernel(wp.clamp, d) for d in INTS}
BIT_COUNT_KERNELS = {d: _unary_kernel(wp.bit_count, d, wp.int32) for d in INTS}


# ------------------------------------------------------------------------------------------------------------
# Running kernels


def _run(kernel, args, out_dtype, device):
    arrays = [wp.array(np.asarray(a), dtype=d, device=device) for a, d in args]
    out = wp.zeros(len(args[0][0]), dtype=out_dtype, device=device)
    wp.launch(kernel, dim=len(out), inputs=arrays + [out], device=device)
    return out.numpy()


def _as(values, dtype):
    """The values as `dtype` would store them, widened to float64 for the reference computation."""
    return np.asarray(values, dtype=dtype._np_).astype(np.float64)


def _assert_close(got, want, dtype):
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=RTOL[dtype], atol=ATOL[dtype])


# ------------------------------------------------------------------------------------------------------------
# Values


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", [n for n in UNARY if UNARY[n][0] is not None])
def test_unary_values(name, dtype, device):
    ref, values, _ = UNARY[name]
    got = _run(UNARY_KERNELS[name, dtype], [(values, dtype)], dtype, device)
    want = ref(_as(values, dtype))
    _assert_close(got, _as(want, dtype) if dtype is wp.float16 else want, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_erfinv_round_trip(dtype, device):
    values = _as(UNARY["erfinv"][1], dtype)
    got = _run(UNARY_KERNELS["erfinv", dtype], [(values, dtype)], dtype, device).astype(np.float64)
    _assert_close(np.vectorize(math.erf)(got), values, dtype)
    values = _as(UNARY["erfcinv"][1], dtype)
    got = _run(UNARY_KERNELS["erfcinv", dtype], [(values, dtype)], dtype, device).astype(np.float64)
    _assert_close(np.vectorize(math.erfc)(got), values, dtype)


def test_erfinv_tails_and_limits(device):
    y = np.array([-5.0, -3.0, 3.0, 5.0, 8.0, 15.0, 26.0])
    got = _run(UNARY_KERNELS["erfcinv", wp.float64], [(np.vectorize(math.erfc)(y), wp.float64)], wp.float64, device)
    np.testing.assert_allclose(got, y, rtol=1e-5)
    got = _run(UNARY_KERNELS["erfinv", wp.float64], [([1.0, -1.0, 0.0, 1.5], wp.float64)], wp.float64, device)
    assert got[0] == np.inf and got[1] == -np.inf and got[2] == 0.0 and np.isnan(got[3])
    got = _run(UNARY_KERNELS["erfcinv", wp.float64], [([0.0, 2.0, 1.0], wp.float64)], wp.float64, device)
    assert got[0] == np.inf and got[1] == -np.inf and got[2] == 0.0


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_values(name, dtype, device):
    ref, a, b = BINARY[name]
    got = _run(BINARY_KERNELS[name, dtype], [(a, dtype), (b, dtype)], dtype, device)
    want = ref(_as(a, dtype), _as(b, dtype))
    _assert_close(got, _as(want, dtype) if dtype is wp.float16 else want, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", list(TERNARY))
def test_ternary_values(name, dtype, device):
    ref, a, b, c = TERNARY[name]
    got = _run(TERNARY_KERNELS[name, dtype], [(a, dtype), (b, dtype), (c, dtype)], dtype, device)
    want = ref(_as(a, dtype), _as(b, dtype), _as(c, dtype))
    _assert_close(got, _as(want, dtype) if dtype is wp.float16 else want, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", list(CLASSIFY))
def test_classification(name, dtype, device):
    big = 6.0e4 if dtype is wp.float16 else 1e30
    values = np.array([0.0, -1.5, big, -np.inf, np.inf, np.nan], dtype=np.float64)
    got = _run(CLASSIFY_KERNELS[name, dtype], [(values, dtype)], wp.bool, device)
    np.testing.assert_array_equal(got, CLASSIFY[name](values.astype(dtype._np_)))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_min_max_clamp_ignore_nan(dtype, device):
    nan = np.nan
    a, b = [nan, 1.0, nan], [2.0, nan, nan]
    got_min = _run(BINARY_KERNELS["min", dtype], [(a, dtype), (b, dtype)], dtype, device)
    got_max = _run(BINARY_KERNELS["max", dtype], [(a, dtype), (b, dtype)], dtype, device)
    np.testing.assert_array_equal(got_min[:2], [2.0, 1.0])
    np.testing.assert_array_equal(got_max[:2], [2.0, 1.0])
    assert np.isnan(got_min[2]) and np.isnan(got_max[2])
    # Warp: clamp(nan, low, high) == min(max(low, nan), high) == low
    got = _run(TERNARY_KERNELS["clamp", dtype], [([nan], dtype), ([-1.0], dtype), ([1.0], dtype)], dtype, device)
    np.testing.assert_array_equal(got, [-1.0])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_inverse_trig_clamps_input(dtype, device):
    got = _run(UNARY_KERNELS["asin", dtype], [([2.0, -3.0], dtype)], dtype, device)
    _assert_close(got, [np.pi / 2, -np.pi / 2], dtype)
    got = _run(UNARY_KERNELS["acos", dtype], [([2.0, -3.0], dtype)], dtype, device)
    _assert_close(got, [0.0, np.pi], dtype)


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", list(INT_UNARY))
def test_int_unary(name, dtype, device):
    info = np.iinfo(dtype._np_)
    values = np.array([v for v in (-100, -3, -1, 0, 1, 7, 100, info.max) if info.min <= v <= info.max],
                      dtype=dtype._np_)
    got = _run(INT_UNARY_KERNELS[name, dtype], [(values, dtype)], dtype, device)
    np.testing.assert_array_equal(got, INT_UNARY[name](values).astype(dtype._np_))


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: d.__name__)
def test_int_min_max_clamp(dtype, device):
    signed = np.iinfo(dtype._np_).min < 0
    a = np.array([-5, 3, 10, 0, -1] if signed else [5, 3, 10, 0, 200], dtype=dtype._np_)
    b = np.array([2, -3, 10, 9, -7] if signed else [2, 30, 10, 9, 7], dtype=dtype._np_)
    c = np.array([4, 1, 12, 9, 0] if signed else [4, 31, 12, 9, 100], dtype=dtype._np_)
    got = _run(INT_BINARY_KERNELS["min", dtype], [(a, dtype), (b, dtype)], dtype, device)
    np.testing.assert_array_equal(got, np.minimum(a, b))
    got = _run(INT_BINARY_KERNELS["max", dtype], [(a, dtype), (b, dtype)], dtype, device)
    np.testing.assert_array_equal(got, np.maximum(a, b))
    got = _run(INT_CLAMP_KERNELS[dtype], [(a, dtype), (b, dtype), (c, dtype)], dtype, device)
    np.testing.assert_array_equal(got, np.minimum(np.maximum(b, a), c))


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: d.__name__)
def test_bit_count(dtype, device):
    info = np.iinfo(dtype._np_)
    values = np.array([0, 1, 7, info.max] + ([-1, info.min] if info.min < 0 else []), dtype=dtype._np_)
    got = _run(BIT_COUNT_KERNELS[dtype], [(values, dtype)], wp.int32, device)
    bits = 8 * values.dtype.itemsize
    want = [bin(int(v) & ((1 << bits) - 1)).count("1") for v in values]
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------------------------------------
# Gradients (float64, against central finite differences)


def _launcher(kernel, device):
    def fn(*inputs):
        out = wp.zeros(len(inputs[0]), dtype=wp.float64, device=device, requires_grad=True)
        wp.launch(kernel, dim=len(out), inputs=list(inputs) + [out], device=device)
        return out

    return fn


def _f64(values, device):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=wp.float64, device=device)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_gradient(name, device):
    gradcheck(_launcher(UNARY_KERNELS[name, wp.float64], device), [_f64(UNARY[name][2], device)])


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_gradient(name, device):
    _, a, b = BINARY[name]
    if name == "pow":  # away from y == 0, where the d/dx guard applies
        b = [1.3, -0.5, 2.0, 0.4, 0.5, 7.0]
    if name == "atan2":  # away from the branch cut (y == 0, x < 0)
        a = [0.7, -0.4, 1.5, -1.2, 0.3, 2.0]
    gradcheck(_launcher(BINARY_KERNELS[name, wp.float64], device), [_f64(a, device), _f64(b, device)])


@pytest.mark.parametrize("name", list(TERNARY))
def test_ternary_gradient(name, device):
    _, a, b, c = TERNARY[name]
    gradcheck(_launcher(TERNARY_KERNELS[name, wp.float64], device),
              [_f64(a, device), _f64(b, device), _f64(c, device)])


def _tape_gradients(kernel, inputs, device):
    """Gradients of sum(kernel(*inputs)) with respect to each input."""
    arrays = [_f64(v, device) for v in inputs]
    for a in arrays:
        a.requires_grad = True
    tape = Tape()
    with tape:
        out = _launcher(kernel, device)(*arrays)
    tape.backward(grads={out: np.ones(len(out))})
    return [a.grad.numpy() for a in arrays]


def test_gradient_at_degenerate_points(device):
    """Infinite or undefined derivatives contribute 0 (see kernels/builtins/scalar_math.py)."""
    (g,) = _tape_gradients(UNARY_KERNELS["sqrt", wp.float64], [[0.0, 4.0]], device)
    np.testing.assert_allclose(g, [0.0, 0.25])
    (g,) = _tape_gradients(UNARY_KERNELS["cbrt", wp.float64], [[0.0, 8.0]], device)
    np.testing.assert_allclose(g, [0.0, 1.0 / 12.0])
    (g,) = _tape_gradients(UNARY_KERNELS["asin", wp.float64], [[1.0, -2.0, 0.0]], device)
    np.testing.assert_allclose(g, [0.0, 0.0, 1.0])
    (g,) = _tape_gradients(UNARY_KERNELS["acos", wp.float64], [[-1.0, 3.0, 0.0]], device)
    np.testing.assert_allclose(g, [0.0, 0.0, -1.0])
    gx, gy = _tape_gradients(BINARY_KERNELS["pow", wp.float64], [[0.0, -2.0, 5.0], [2.0, 3.0, 0.0]], device)
    np.testing.assert_allclose(gx, [0.0, 12.0, 0.0])
    np.testing.assert_allclose(gy, [0.0, 0.0, np.log(5.0)])
    gy, gx = _tape_gradients(BINARY_KERNELS["atan2", wp.float64], [[0.0], [0.0]], device)
    np.testing.assert_allclose([gy[0], gx[0]], [0.0, 0.0])


def test_gradient_routing_of_min_max_clamp_abs(device):
    ga, gb = _tape_gradients(BINARY_KERNELS["min", wp.float64], [[1.0, 3.0, 2.0], [2.0, 1.0, 2.0]], device)
    np.testing.assert_array_equal(ga, [1.0, 0.0, 0.0])  # ties go to b
    np.testing.assert_array_equal(gb, [0.0, 1.0, 1.0])
    ga, gb = _tape_gradients(BINARY_KERNELS["max", wp.float64], [[1.0, 3.0, 2.0], [2.0, 1.0, 2.0]], device)
    np.testing.assert_array_equal(ga, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(gb, [1.0, 0.0, 1.0])
    gx, glo, ghi = _tape_gradients(TERNARY_KERNELS["clamp", wp.float64],
                                   [[-2.0, 0.5, 3.0], [-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]], device)
    np.testing.assert_array_equal(gx, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(glo, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(ghi, [0.0, 0.0, 1.0])
    (g,) = _tape_gradients(UNARY_KERNELS["abs", wp.float64], [[-2.0, 0.0, 3.0]], device)
    np.testing.assert_array_equal(g, [-1.0, 1.0, 1.0])
    (g,) = _tape_gradients(UNARY_KERNELS["frac", wp.float64], [[-2.3, 1.7]], device)
    np.testing.assert_array_equal(g, [1.0, 1.0])
