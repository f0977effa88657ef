"""Vector and matrix builtins (kernels/builtins/vector.py): values against numpy, gradients against finite differences.

Every kernel is created at import time, so the whole file compiles into one native library.
"""

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

FLOATS = (wp.float32, wp.float64)
RTOL = {wp.float16: 2e-3, wp.float32: 2e-5, wp.float64: 1e-12}
ATOL = {wp.float16: 2e-3, wp.float32: 2e-5, wp.float64: 1e-12}
COUNT = 5  # elements per launch


# ------------------------------------------------------------------------------------------------------------
# Types of the test cases, as functions of the scalar type


def vec(n):
    return lambda d: wp.types.vector(n, d)


def mat(rows, cols):
    return lambda d: wp.types.matrix((rows, cols), d)


def scalar(d):
    return d


def index(_d):
    return wp.uint32


# Input samplers: (rng, shape) -> float64 values
def normal(rng, shape):
    return rng.standard_normal(shape)


def away_from_zero(rng, shape):
    """Denominators: |x| >= 0.5."""
    x = rng.standard_normal(shape)
    return np.sign(x) * (0.5 + np.abs(x))


def invertible(rng, shape):
    """Square matrices dominated by 3 * identity, safely invertible."""
    return rng.standard_normal(shape) + 3.0 * np.eye(shape[-1])


def _skew(a):
    z = np.zeros(a.shape[:-1])
    x, y, w = a[..., 0], a[..., 1], a[..., 2]
    return np.stack([np.stack([z, -w, y], -1), np.stack([w, z, -x], -1), np.stack([-y, x, z], -1)], -2)


def _spatial_cross(a, b):
    wa, va, wb, vb = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([np.cross(wa, wb), np.cross(va, wb) + np.cross(wa, vb)], 1)


def _spatial_cross_dual(a, b):
    wa, va, wb, vb = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([np.cross(wa, wb) + np.cross(va, vb), np.cross(wa, vb)], 1)


def _col(s, ndim=1):
    """A per-element scalar broadcast against vectors (ndim=1) or matrices (ndim=2)."""
    return s.reshape(s.shape + (1,) * ndim)


class PerDtype:
    """A callee that depends on the scalar type, such as a vector type used as a constructor."""

    def __init__(self, make):
        self.make = make


# name -> (builtin, [(input type, sampler)], output type, numpy reference, differentiable)
N, A, I = normal, away_from_zero, invertible
CASES = {
    "dot": (wp.dot, [(vec(3), N), (vec(3), N)], scalar, lambda a, b: np.sum(a * b, -1), True),
    "dot6": (wp.dot, [(vec(6), N), (vec(6), N)], scalar, lambda a, b: np.sum(a * b, -1), True),
    "cross": (wp.cross, [(vec(3), N), (vec(3), N)], vec(3), np.cross, True),
    "length": (wp.length, [(vec(4), N)], scalar, lambda a: np.linalg.norm(a, axis=-1), True),
    "length_sq": (wp.length_sq, [(vec(3), N)], scalar, lambda a: np.sum(a * a, -1), True),
    "normalize": (wp.normalize, [(vec(3), N)], vec(3), lambda a: a / np.linalg.norm(a, axis=-1, keepdims=True),
                  True),
    "cw_mul": (wp.cw_mul, [(vec(3), N), (vec(3), N)], vec(3), lambda a, b: a * b, True),
    "cw_div": (wp.cw_div, [(vec(3), N), (vec(3), A)], vec(3), lambda a, b: a / b, True),
    "cw_mul_mat": (wp.cw_mul, [(mat(2, 3), N), (mat(2, 3), N)], mat(2, 3), lambda a, b: a * b, True),
    "cw_div_mat": (wp.cw_div, [(mat(2, 3), N), (mat(2, 3), A)], mat(2, 3), lambda a, b: a / b, True),
    "min": (wp.min, [(vec(4), N), (vec(4), N)], vec(4), np.minimum, True),
    "max": (wp.max, [(vec(4), N), (vec(4), N)], vec(4), np.maximum, True),
    "min_reduce": (wp.min, [(vec(5), N)], scalar, lambda a: np.min(a, -1), True),
    "max_reduce": (wp.max, [(vec(5), N)], scalar, lambda a: np.max(a, -1), True),
    "argmin": (wp.argmin, [(vec(5), N)], index, lambda a: np.argmin(a, -1), False),
    "argmax": (wp.argmax, [(vec(5), N)], index, lambda a: np.argmax(a, -1), False),
    "abs": (wp.abs, [(vec(3), N)], vec(3), np.abs, True),
    "sign": (wp.sign, [(vec(3), N)], vec(3), lambda a: np.where(a < 0, -1.0, 1.0), True),
    "mod": (wp.mod, [(vec(3), N), (vec(3), A)], vec(3), np.fmod, True),
    "lerp": (wp.lerp, [(vec(3), N), (vec(3), N), (scalar, N)], vec(3), lambda a, b, t: a + (b - a) * _col(t), True),
    "lerp_mat": (wp.lerp, [(mat(2, 2), N), (mat(2, 2), N), (scalar, N)], mat(2, 2),
                 lambda a, b, t: a + (b - a) * _col(t, 2), True),
    "outer": (wp.outer, [(vec(2), N), (vec(3), N)], mat(2, 3), lambda a, b: np.einsum("ni,nj->nij", a, b), True),
    "diag": (wp.diag, [(vec(3), N)], mat(3, 3), lambda a: np.einsum("ni,ij->nij", a, np.eye(3)), True),
    "get_diag": (wp.get_diag, [(mat(4, 4), N)], vec(4), lambda a: np.diagonal(a, axis1=1, axis2=2), True),
    "skew": (wp.skew, [(vec(3), N)], mat(3, 3), _skew, True),
    "transpose": (wp.transpose, [(mat(2, 3), N)], mat(3, 2), lambda a: np.swapaxes(a, 1, 2), True),
    "trace": (wp.trace, [(mat(3, 3), N)], scalar, lambda a: np.trace(a, axis1=1, axis2=2), True),
    "ddot": (wp.ddot, [(mat(3, 2), N), (mat(3, 2), N)], scalar, lambda a, b: np.sum(a * b, (1, 2)), True),
    "determinant2": (wp.determinant, [(mat(2, 2), N)], scalar, np.linalg.det, True),
    "determinant3": (wp.determinant, [(mat(3, 3), N)], scalar, np.linalg.det, True),
    "determinant4": (wp.determinant, [(mat(4, 4), N)], scalar, np.linalg.det, True),
    "inverse2": (wp.inverse, [(mat(2, 2), I)], mat(2, 2), np.linalg.inv, True),
    "inverse3": (wp.inverse, [(mat(3, 3), I)], mat(3, 3), np.linalg.inv, True),
    "inverse4": (wp.inverse, [(mat(4, 4), I)], mat(4, 4), np.linalg.inv, True),
    "add_vec": (wp.add, [(vec(3), N), (vec(3), N)], vec(3), lambda a, b: a + b, True),
    "sub_vec": (wp.sub, [(vec(3), N), (vec(3), N)], vec(3), lambda a, b: a - b, True),
    "neg_vec": (wp.neg, [(vec(3), N)], vec(3), lambda a: -a, True),
    "add_mat": (wp.add, [(mat(2, 3), N), (mat(2, 3), N)], mat(2, 3), lambda a, b: a + b, True),
    "sub_mat": (wp.sub, [(mat(2, 3), N), (mat(2, 3), N)], mat(2, 3), lambda a, b: a - b, True),
    "neg_mat": (wp.neg, [(mat(2, 3), N)], mat(2, 3), lambda a: -a, True),
    "mul_vec_scalar": (wp.mul, [(vec(3), N), (scalar, N)], vec(3), lambda a, s: a * _col(s), True),
    "mul_scalar_vec": (wp.mul, [(scalar, N), (vec(3), N)], vec(3), lambda s, a: _col(s) * a, True),
    "div_vec_scalar": (wp.div, [(vec(3), N), (scalar, A)], vec(3), lambda a, s: a / _col(s), True),
    "div_scalar_vec": (wp.div, [(scalar, N), (vec(3), A)], vec(3), lambda s, a: _col(s) / a, True),
    "mul_mat_scalar": (wp.mul, [(mat(2, 3), N), (scalar, N)], mat(2, 3), lambda a, s: a * _col(s, 2), True),
    "mul_scalar_mat": (wp.mul, [(scalar, N), (mat(2, 3), N)], mat(2, 3), lambda s, a: _col(s, 2) * a, True),
    "div_mat_scalar": (wp.div, [(mat(2, 3), N), (scalar, A)], mat(2, 3), lambda a, s: a / _col(s, 2), True),
    "div_scalar_mat": (wp.div, [(scalar, N), (mat(2, 3), A)], mat(2, 3), lambda s, a: _col(s, 2) / a, True),
    "mul_mat_vec": (wp.mul, [(mat(2, 3), N), (vec(3), N)], vec(2), lambda m, v: np.einsum("nij,nj->ni", m, v), True),
    "mul_vec_mat": (wp.mul, [(vec(2), N), (mat(2, 3), N)], vec(3), lambda v, m: np.einsum("ni,nij->nj", v, m), True),
    "mul_mat_mat": (wp.mul, [(mat(2, 3), N), (mat(3, 4), N)], mat(2, 4), lambda a, b: a @ b, True),
    "mul_mat_mat_square": (wp.mul, [(mat(3, 3), N), (mat(3, 3), N)], mat(3, 3), lambda a, b: a @ b, True),
    "matrix_from_rows": (wp.matrix_from_rows, [(vec(3), N), (vec(3), N)], mat(2, 3),
                         lambda a, b: np.stack([a, b], 1), True),
    "matrix_from_cols": (wp.matrix_from_cols, [(vec(3), N), (vec(3), N)], mat(3, 2),
                         lambda a, b: np.stack([a, b], 2), True),
    "spatial_vector": (PerDtype(vec(6)), [(vec(3), N), (vec(3), N)], vec(6),
                       lambda a, b: np.concatenate([a, b], 1), True),
    "spatial_top": (wp.spatial_top, [(vec(6), N)], vec(3), lambda a: a[:, :3], True),
    "spatial_bottom": (wp.spatial_bottom, [(vec(6), N)], vec(3), lambda a: a[:, 3:], True),
    "spatial_dot": (wp.spatial_dot, [(vec(6), N), (vec(6), N)], scalar, lambda a, b: np.sum(a * b, -1), True),
    "spatial_cross": (wp.spatial_cross, [(vec(6), N), (vec(6), N)], vec(6), _spatial_cross, True),
    "spatial_cross_dual": (wp.spatial_cross_dual, [(vec(6), N), (vec(6), N)], vec(6), _spatial_cross_dual, True),
}


# ------------------------------------------------------------------------------------------------------------
# Kernel factories: y[i] = fn(a[i], ...), one kernel per (case, dtype), named uniquely.


def _named(pyfunc, name):
    pyfunc.__name__ = pyfunc.__qualname__ = name
    return wp.kernel(pyfunc)


def _map_kernel(fn, in_types, out_type, name):
    if len(in_types) == 1:
        (ta,) = in_types

        def k(a: wp.array(dtype=ta), y: wp.array(dtype=out_type)):
            i = wp.tid()
            y[i] = fn(a[i])

    elif len(in_types) == 2:
        ta, tb = in_types

        def k(a: wp.array(dtype=ta), b: wp.array(dtype=tb), y: wp.array(dtype=out_type)):
            i = wp.tid()
            y[i] = fn(a[i], b[i])

    else:
        ta, tb, tc = in_types

        def k(a: wp.array(dtype=ta), b: wp.array(dtype=tb), c: wp.array(dtype=tc), y: wp.array(dtype=out_type)):
            i = wp.tid()
            y[i] = fn(a[i], b[i], c[i])

    return _named(k, name)


def _case_kernel(name, d):
    fn, inputs, out, _, _ = CASES[name]
    if isinstance(fn, PerDtype):
        fn = fn.make(d)
    return _map_kernel(fn, [t(d) for t, _ in inputs], out(d), f"{name}_{d.__name__}")


CASE_KERNELS = {(name, d): _case_kernel(name, d) for name in CASES for d in FLOATS}


def _sample(name, seed=0):
    """float64 inputs of a case: one array per argument, shaped (COUNT, *element shape)."""
    rng = np.random.default_rng(seed)
    _, inputs, _, _, _ = CASES[name]
    return [sampler(rng, (COUNT,) + wp.types.type_shape(t(wp.float64))) for t, sampler in inputs]


def _launch(kernel, values, in_types, out_type, device, requires_grad=False):
    arrays = [wp.array(np.asarray(v, dtype=t._np_ if wp.types.is_scalar(t) else wp.types.numpy_dtype(t)),
                       dtype=t, device=device) for v, t in zip(values, in_types)]
    out = wp.zeros(COUNT, dtype=out_type, device=device, requires_grad=requires_grad)
    wp.launch(kernel, dim=COUNT, inputs=arrays + [out], device=device)
    return out


# ------------------------------------------------------------------------------------------------------------
# Values of every case, float32 and float64, against numpy (computed in float64 from the rounded inputs)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", list(CASES))
def test_values(name, dtype, device):
    _, inputs, out_t, ref, _ = CASES[name]
    values = [v.astype(wp.types.numpy_dtype(dtype)) for v in _sample(name)]
    in_types = [t(dtype) for t, _ in inputs]
    got = _launch(CASE_KERNELS[name, dtype], values, in_types, out_t(dtype), device).numpy()
    want = ref(*[v.astype(np.float64) for v in values])
    if out_t is index:
        np.testing.assert_array_equal(got, want)
        return
    scale = 10.0 if name.startswith(("inverse", "determinant")) and dtype is wp.float32 else 1.0
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=RTOL[dtype] * scale, atol=ATOL[dtype] * scale)


# ------------------------------------------------------------------------------------------------------------
# Gradients of every differentiable case (float64, against central finite differences)


@pytest.mark.parametrize("name", [n for n in CASES if CASES[n][4]])
def test_gradient(name, device):
    _, inputs, out_t, _, _ = CASES[name]
    in_types = [t(wp.float64) for t, _ in inputs]
    arrays = [wp.array(v, dtype=t, device=device) for v, t in zip(_sample(name, seed=1), in_types)]

    def fn(*xs):
        out = wp.zeros(COUNT, dtype=out_t(wp.float64), device=device, requires_grad=True)
        wp.launch(CASE_KERNELS[name, wp.float64], dim=COUNT, inputs=list(xs) + [out], device=device)
        return out

    gradcheck(fn, arrays)


# ------------------------------------------------------------------------------------------------------------
# Python operators (+ - * / @, unary -, +, ==, !=), literals, where


def _operator_kernel(d):
    V = wp.types.vector(3, d)
    M = wp.types.matrix((3, 3), d)

    def k(a: wp.array(dtype=V), b: wp.array(dtype=V), m: wp.array(dtype=M), s: wp.array(dtype=d),
          out_v: wp.array2d(dtype=V), out_m: wp.array2d(dtype=M), out_b: wp.array2d(dtype=wp.bool)):
        i = wp.tid()
        out_v[i, 0] = a[i] + b[i]
        out_v[i, 1] = a[i] - b[i]
        out_v[i, 2] = a[i] * s[i]
        out_v[i, 3] = s[i] * a[i]
        out_v[i, 4] = a[i] / s[i]
        out_v[i, 5] = s[i] / a[i]
        out_v[i, 6] = -a[i]
        out_v[i, 7] = +a[i]
        out_v[i, 8] = m[i] @ a[i]
        out_v[i, 9] = m[i] * a[i]
        out_v[i, 10] = a[i] * m[i]
        out_v[i, 11] = a[i] * 2.0 + 1.5 * b[i]
        out_v[i, 12] = wp.where(s[i] > 0.0, a[i], b[i])
        out_m[i, 0] = m[i] + m[i]
        out_m[i, 1] = m[i] - 2.0 * m[i]
        out_m[i, 2] = m[i] * m[i]
        out_m[i, 3] = m[i] @ m[i]
        out_m[i, 4] = m[i] * s[i]
        out_m[i, 5] = m[i] / s[i]
        out_m[i, 6] = -m[i]
        out_m[i, 7] = s[i] / m[i]
        out_b[i, 0] = a[i] == a[i]
        out_b[i, 1] = a[i] == b[i]
        out_b[i, 2] = a[i] != b[i]
        out_b[i, 3] = m[i] == m[i]
        out_b[i, 4] = m[i] != m[i]

    return _named(k, f"operators_{d.__name__}")


OPERATOR_KERNELS = {d: _operator_kernel(d) for d in FLOATS}


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_operators(dtype, device):
    rng = np.random.default_rng(2)
    npd = wp.types.numpy_dtype(dtype)
    a, b = rng.standard_normal((COUNT, 3)).astype(npd), away_from_zero(rng, (COUNT, 3)).astype(npd)
    m = rng.standard_normal((COUNT, 3, 3)).astype(npd) + 0.5  # no zero elements (s / m)
    s = away_from_zero(rng, COUNT).astype(npd)
    V, M = wp.types.vector(3, dtype), wp.types.matrix((3, 3), dtype)
    out_v = wp.zeros((COUNT, 13), dtype=V, device=device)
    out_m = wp.zeros((COUNT, 8), dtype=M, device=device)
    out_b = wp.zeros((COUNT, 5), dtype=wp.bool, device=device)
    wp.launch(OPERATOR_KERNELS[dtype], dim=COUNT, device=device,
              inputs=[wp.array(a, dtype=V, device=device), wp.array(b, dtype=V, device=device),
                      wp.array(m, dtype=M, device=device), wp.array(s, dtype=dtype, device=device),
                      out_v, out_m, out_b])
    a, b, m, s = (x.astype(np.float64) for x in (a, b, m, s))
    sv, sm = s[:, None], s[:, None, None]
    mv = np.einsum("nij,nj->ni", m, a)
    want_v = [a + b, a - b, a * sv, sv * a, a / sv, sv / a, -a, a, mv, mv, np.einsum("ni,nij->nj", a, m),
              2.0 * a + 1.5 * b, np.where(sv > 0, a, b)]
    want_m = [2 * m, -m, m @ m, m @ m, m * sm, m / sm, -m, sm / m]
    tol = dict(rtol=RTOL[dtype], atol=ATOL[dtype])
    np.testing.assert_allclose(out_v.numpy().astype(np.float64), np.stack(want_v, 1), **tol)
    np.testing.assert_allclose(out_m.numpy().astype(np.float64), np.stack(want_m, 1), **tol)
    np.testing.assert_array_equal(out_b.numpy(), np.tile([True, False, True, True, False], (COUNT, 1)))


# ------------------------------------------------------------------------------------------------------------
# Constructors


def _constructor_kernel(d):
    V = wp.types.vector(3, d)
    M = wp.types.matrix((3, 3), d)
    other = wp.float32 if d is wp.float64 else wp.float64
    V_other, M_other = wp.types.vector(3, other), wp.types.matrix((3, 3), other)
    M23 = wp.types.matrix((2, 3), d)

    def k(x: wp.array(dtype=d), a: wp.array(dtype=V), m: wp.array(dtype=M), out_v: wp.array2d(dtype=V),
          out_m: wp.array2d(dtype=M), out_cast_v: wp.array(dtype=V_other), out_cast_m: wp.array(dtype=M_other),
          out_m23: wp.array(dtype=M23)):
        i = wp.tid()
        s = x[i]
        out_v[i, 0] = V()
        out_v[i, 1] = V(s)
        out_v[i, 2] = V(s, 2.0, 3)
        out_v[i, 3] = V(a[i])
        out_m[i, 0] = M()
        out_m[i, 1] = M(s)
        out_m[i, 2] = M(s, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
        out_m[i, 3] = M(m[i])
        out_cast_v[i] = V_other(a[i])
        out_cast_m[i] = M_other(m[i])
        out_m23[i] = M23(1.0, 2.0, 3.0, 4.0, 5.0, s)

    return _named(k, f"constructors_{d.__name__}")


CONSTRUCTOR_KERNELS = {d: _constructor_kernel(d) for d in FLOATS}


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_constructors(dtype, device):
    rng = np.random.default_rng(3)
    npd = wp.types.numpy_dtype(dtype)
    other = wp.float32 if dtype is wp.float64 else wp.float64
    x = rng.standard_normal(COUNT).astype(npd)
    a = rng.standard_normal((COUNT, 3)).astype(npd)
    m = rng.standard_normal((COUNT, 3, 3)).astype(npd)
    V, M = wp.types.vector(3, dtype), wp.types.matrix((3, 3), dtype)
    out_v = wp.zeros((COUNT, 4), dtype=V, device=device)
    out_m = wp.zeros((COUNT, 4), dtype=M, device=device)
    out_cv = wp.zeros(COUNT, dtype=wp.types.vector(3, other), device=device)
    out_cm = wp.zeros(COUNT, dtype=wp.types.matrix((3, 3), other), device=device)
    out_m23 = wp.zeros(COUNT, dtype=wp.types.matrix((2, 3), dtype), device=device)
    wp.launch(CONSTRUCTOR_KERNELS[dtype], dim=COUNT, device=device,
              inputs=[wp.array(x, dtype=dtype, device=device), wp.array(a, dtype=V, device=device),
                      wp.array(m, dtype=M, device=device), out_v, out_m, out_cv, out_cm, out_m23])
    ones = np.ones((COUNT, 3))
    want_v = [0 * ones, x[:, None] * ones, np.stack([x, 2 + 0 * x, 3 + 0 * x], 1), a]
    np.testing.assert_array_equal(out_v.numpy(), np.stack(want_v, 1).astype(npd))
    filled = np.concatenate([x[:, None], np.tile(np.arange(1.0, 9.0), (COUNT, 1))], 1).reshape(COUNT, 3, 3)
    want_m = [np.zeros_like(m), x[:, None, None] * np.ones((COUNT, 3, 3)), filled, m]
    np.testing.assert_array_equal(out_m.numpy(), np.stack(want_m, 1).astype(npd))
    np.testing.assert_array_equal(out_cv.numpy(), a.astype(wp.types.numpy_dtype(other)))
    np.testing.assert_array_equal(out_cm.numpy(), m.astype(wp.types.numpy_dtype(other)))
    want23 = np.concatenate([np.tile(np.arange(1.0, 6.0), (COUNT, 1)), x[:, None]], 1).reshape(COUNT, 2, 3)
    np.testing.assert_array_equal(out_m23.numpy(), want23.astype(npd))


def _identity_kernel():
    def k(out3: wp.array(dtype=wp.mat33d), out2: wp.array(dtype=wp.mat22)):
        i = wp.tid()
        out3[i] = wp.identity(n=3, dtype=wp.float64)
        out2[i] = wp.identity(2, wp.float32)

    return _named(k, "identity_kernel")


IDENTITY_KERNEL = _identity_kernel()


def test_identity(device):
    out3 = wp.zeros(2, dtype=wp.mat33d, device=device)
    out2 = wp.zeros(2, dtype=wp.mat22, device=device)
    wp.launch(IDENTITY_KERNEL, dim=2, inputs=[out3, out2], device=device)
    np.testing.assert_array_equal(out3.numpy(), np.tile(np.eye(3), (2, 1, 1)))
    np.testing.assert_array_equal(out2.numpy(), np.tile(np.eye(2), (2, 1, 1)))


# ------------------------------------------------------------------------------------------------------------
# Component access and functional updates: v.x, v[i], v[-1], m[i, j], m[i], v[i] = x, v.z = x, m[i, j] = x,
# m[i] = row, augmented assignment, loops over components


def _access_kernel(d):
    V = wp.types.vector(3, d)
    M = wp.types.matrix((3, 3), d)
    V5 = wp.types.vector(5, d)

    def k(a: wp.array(dtype=V), m: wp.array(dtype=M), idx: wp.array(dtype=int), out_s: wp.array2d(dtype=d),
          out_v: wp.array2d(dtype=V), out_m: wp.array2d(dtype=M), out_v5: wp.array(dtype=V5)):
        i = wp.tid()
        v = a[i]
        j = idx[i]
        out_s[i, 0] = v.x
        out_s[i, 1] = v.y
        out_s[i, 2] = v.z
        out_s[i, 3] = v[j]
        out_s[i, 4] = v[-1]
        out_s[i, 5] = m[i][1, 2]
        out_s[i, 6] = m[i][j, 0]
        out_s[i, 7] = m[i][2][1]
        total = d(0.0)
        for c in range(3):
            total += v[c]
        out_s[i, 8] = total
        w = v
        w[1] = 7.0
        out_v[i, 0] = w
        out_s[i, 9] = v[1]  # v keeps its value: vectors are values
        w2 = v
        w2.z = 3.0
        out_v[i, 1] = w2
        w3 = v
        w3[j] += 2.0
        out_v[i, 2] = w3
        out_v[i, 3] = m[i][j]
        mm = m[i]
        mm[0, 1] = 9.0
        out_m[i, 0] = mm
        mm2 = m[i]
        mm2[2] = v
        out_m[i, 1] = mm2
        mm3 = m[i]
        mm3[1, 1] *= 3.0
        out_m[i, 2] = mm3
        u = V5()
        u[4] = v.x
        u[0] = 1.0
        out_v5[i] = u

    return _named(k, f"access_{d.__name__}")


ACCESS_KERNELS = {d: _access_kernel(d) for d in FLOATS}


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_component_access(dtype, device):
    rng = np.random.default_rng(4)
    npd = wp.types.numpy_dtype(dtype)
    a = rng.standard_normal((COUNT, 3)).astype(npd)
    m = rng.standard_normal((COUNT, 3, 3)).astype(npd)
    j = np.arange(COUNT) % 3
    V, M = wp.types.vector(3, dtype), wp.types.matrix((3, 3), dtype)
    out_s = wp.zeros((COUNT, 10), dtype=dtype, device=device)
    out_v = wp.zeros((COUNT, 4), dtype=V, device=device)
    out_m = wp.zeros((COUNT, 3), dtype=M, device=device)
    out_v5 = wp.zeros(COUNT, dtype=wp.types.vector(5, dtype), device=device)
    wp.launch(ACCESS_KERNELS[dtype], dim=COUNT, device=device,
              inputs=[wp.array(a, dtype=V, device=device), wp.array(m, dtype=M, device=device),
                      wp.array(j.astype(np.int32), dtype=wp.int32, device=device), out_s, out_v, out_m, out_v5])
    r = np.arange(COUNT)
    want_s = np.stack([a[:, 0], a[:, 1], a[:, 2], a[r, j], a[:, 2], m[:, 1, 2], m[r, j, 0], m[:, 2, 1],
                       a.sum(1, dtype=npd), a[:, 1]], 1)
    np.testing.assert_allclose(out_s.numpy(), want_s, rtol=RTOL[dtype], atol=ATOL[dtype])
    w, w2, w3 = a.copy(), a.copy(), a.copy()
    w[:, 1] = 7.0
    w2[:, 2] = 3.0
    w3[r, j] += npd.type(2.0)
    np.testing.assert_array_equal(out_v.numpy(), np.stack([w, w2, w3, m[r, j]], 1))
    mm, mm2, mm3 = m.copy(), m.copy(), m.copy()
    mm[:, 0, 1] = 9.0
    mm2[:, 2] = a
    mm3[:, 1, 1] *= npd.type(3.0)
    np.testing.assert_array_equal(out_m.numpy(), np.stack([mm, mm2, mm3], 1))
    want5 = np.zeros((COUNT, 5), dtype=npd)
    want5[:, 0], want5[:, 4] = 1.0, a[:, 0]
    np.testing.assert_array_equal(out_v5.numpy(), want5)


def _access_gradient_kernel():
    V, M = wp.vec3d, wp.mat33d

    def k(x: wp.array(dtype=wp.float64), a: wp.array(dtype=V), m: wp.array(dtype=M), out: wp.array(dtype=V)):
        i = wp.tid()
        v = a[i]
        v[1] = x[i] * v.z
        c = V(x[i], v[0] * 2.0, a[i].y) + V(v.x) + V(v)
        mm = m[i]
        mm[0, 2] = c.z
        mm[1] = v
        f = M(x[i]) + M(mm) + M(x[i], 1.0, 2.0, c.x, 0.0, 0.0, 0.0, v.y, 1.0)
        out[i] = mm[2] + mm[0] * mm[1, 1] + c + mm @ v + f[0] + f[2]

    return _named(k, "access_gradient")


ACCESS_GRADIENT_KERNEL = _access_gradient_kernel()


def test_access_and_constructor_gradient(device):
    rng = np.random.default_rng(5)
    inputs = [wp.array(rng.standard_normal(COUNT), dtype=wp.float64, device=device),
              wp.array(rng.standard_normal((COUNT, 3)), dtype=wp.vec3d, device=device),
              wp.array(rng.standard_normal((COUNT, 3, 3)), dtype=wp.mat33d, device=device)]

    def fn(x, a, m):
        out = wp.zeros(COUNT, dtype=wp.vec3d, device=device, requires_grad=True)
        wp.launch(ACCESS_GRADIENT_KERNEL, dim=COUNT, inputs=[x, a, m, out], device=device)
        return out

    gradcheck(fn, inputs)


# ------------------------------------------------------------------------------------------------------------
# Every length and shape; other scalar types


LENGTHS = (2, 4, 5, 6, 8, 16)
SHAPES = ((2, 2), (4, 4), (6, 6), (3, 2), (3, 4), (4, 3))


def _length_kernel(n):
    V = wp.types.vector(n, wp.float32)

    def k(a: wp.array(dtype=V), b: wp.array(dtype=V), out: wp.array(dtype=V), s: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.normalize(a[i] + b[i] * 2.0)
        s[i] = wp.dot(a[i], b[i]) + wp.max(a[i])

    return _named(k, f"length_{n}")


def _shape_kernel(rows, cols):
    Mt = wp.types.matrix((rows, cols), wp.float32)
    MtT = wp.types.matrix((cols, rows), wp.float32)
    Mout = wp.types.matrix((rows, rows), wp.float32)

    def k(a: wp.array(dtype=Mt), b: wp.array(dtype=MtT), out: wp.array(dtype=Mout), tr: wp.array(dtype=MtT)):
        i = wp.tid()
        out[i] = a[i] @ b[i] + a[i] @ wp.transpose(a[i])
        tr[i] = wp.transpose(a[i]) * 2.0

    return _named(k, f"shape_{rows}x{cols}")


LENGTH_KERNELS = {n: _length_kernel(n) for n in LENGTHS}
SHAPE_KERNELS = {s: _shape_kernel(*s) for s in SHAPES}


@pytest.mark.parametrize("n", LENGTHS)
def test_vector_lengths(n, device):
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal((COUNT, n)).astype(np.float32) for _ in range(2))
    V = wp.types.vector(n, wp.float32)
    out = wp.zeros(COUNT, dtype=V, device=device)
    s = wp.zeros(COUNT, dtype=float, device=device)
    wp.launch(LENGTH_KERNELS[n], dim=COUNT, device=device,
              inputs=[wp.array(a, dtype=V, device=device), wp.array(b, dtype=V, device=device), out, s])
    c = a.astype(np.float64) + 2.0 * b
    np.testing.assert_allclose(out.numpy(), c / np.linalg.norm(c, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.numpy(), np.sum(a * b.astype(np.float64), 1) + a.max(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_matrix_shapes(shape, device):
    rows, cols = shape
    rng = np.random.default_rng(rows * 10 + cols)
    a = rng.standard_normal((COUNT, rows, cols)).astype(np.float32)
    b = rng.standard_normal((COUNT, cols, rows)).astype(np.float32)
    out = wp.zeros(COUNT, dtype=wp.types.matrix((rows, rows), wp.float32), device=device)
    tr = wp.zeros(COUNT, dtype=wp.types.matrix((cols, rows), wp.float32), device=device)
    wp.launch(SHAPE_KERNELS[shape], dim=COUNT, device=device,
              inputs=[wp.array(a, dtype=wp.types.matrix(shape, wp.float32), device=device),
                      wp.array(b, dtype=wp.types.matrix((cols, rows), wp.float32), device=device), out, tr])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(out.numpy(), a64 @ b64 + a64 @ np.swapaxes(a64, 1, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(tr.numpy(), 2.0 * np.swapaxes(a, 1, 2))


def _int_kernel():
    def k(a: wp.array(dtype=wp.vec3i), b: wp.array(dtype=wp.vec3i), out: wp.array2d(dtype=wp.vec3i),
          s: wp.array2d(dtype=wp.int32)):
        i = wp.tid()
        out[i, 0] = a[i] + b[i] * 2
        out[i, 1] = wp.cw_mul(a[i], b[i]) - a[i]
        out[i, 2] = wp.min(a[i], b[i])
        out[i, 3] = wp.abs(a[i])
        out[i, 4] = wp.cross(a[i], b[i])
        out[i, 5] = a[i] / 2
        s[i, 0] = wp.dot(a[i], b[i])
        s[i, 1] = wp.int32(wp.argmax(a[i]))
        s[i, 2] = wp.max(b[i])

    return _named(k, "int_vectors")


def _half_kernel():
    def k(a: wp.array(dtype=wp.vec3h), b: wp.array(dtype=wp.vec3h), out: wp.array(dtype=wp.vec3h),
          s: wp.array(dtype=wp.float16), m: wp.array(dtype=wp.mat22h), mo: wp.array(dtype=wp.mat22h)):
        i = wp.tid()
        out[i] = wp.normalize(wp.cross(a[i], b[i]) + a[i] * wp.float16(0.5))
        s[i] = wp.dot(a[i], b[i]) + wp.length(b[i])
        mo[i] = wp.inverse(m[i]) @ m[i]

    return _named(k, "half_vectors")


INT_KERNEL = _int_kernel()
HALF_KERNEL = _half_kernel()


def test_int_vectors(device):
    a = np.array([[1, -2, 3], [-4, 5, 6], [0, 7, -8]], dtype=np.int32)
    b = np.array([[2, 2, -1], [3, -1, 0], [5, 5, 5]], dtype=np.int32)
    out = wp.zeros((3, 6), dtype=wp.vec3i, device=device)
    s = wp.zeros((3, 3), dtype=wp.int32, device=device)
    wp.launch(INT_KERNEL, dim=3, device=device,
              inputs=[wp.array(a, dtype=wp.vec3i, device=device), wp.array(b, dtype=wp.vec3i, device=device), out, s])
    want = [a + 2 * b, a * b - a, np.minimum(a, b), np.abs(a), np.cross(a, b), np.trunc(a / 2).astype(np.int32)]
    np.testing.assert_array_equal(out.numpy(), np.stack(want, 1))
    np.testing.assert_array_equal(s.numpy(), np.stack([np.sum(a * b, 1), np.argmax(a, 1), b.max(1)], 1))


def test_half_vectors(device):
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((COUNT, 3)).astype(np.float16) for _ in range(2))
    m = (rng.standard_normal((COUNT, 2, 2)) + 2 * np.eye(2)).astype(np.float16)
    out = wp.zeros(COUNT, dtype=wp.vec3h, device=device)
    s = wp.zeros(COUNT, dtype=wp.float16, device=device)
    mo = wp.zeros(COUNT, dtype=wp.mat22h, device=device)
    wp.launch(HALF_KERNEL, dim=COUNT, device=device,
              inputs=[wp.array(a, dtype=wp.vec3h, device=device), wp.array(b, dtype=wp.vec3h, device=device), out, s,
                      wp.array(m, dtype=wp.mat22h, device=device), mo])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    c = np.cross(a64, b64) + 0.5 * a64
    np.testing.assert_allclose(out.numpy(), c / np.linalg.norm(c, axis=1, keepdims=True), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(s.numpy(), np.sum(a64 * b64, 1) + np.linalg.norm(b64, axis=1), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(mo.numpy(), np.tile(np.eye(2), (COUNT, 1, 1)), atol=2e-2)


# ------------------------------------------------------------------------------------------------------------
# Warp's choices at degenerate points


def test_degenerate_points(device):
    V3, M33 = wp.vec3d, wp.mat33d
    zero = [np.zeros((COUNT, 3))]
    got = _launch(CASE_KERNELS["normalize", wp.float64], zero, [V3], V3, device).numpy()
    np.testing.assert_array_equal(got, 0.0)  # normalize(0) == 0
    singular = [np.tile(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 0.0]]), (COUNT, 1, 1))]
    got = _launch(CASE_KERNELS["inverse3", wp.float64], singular, [M33], M33, device).numpy()
    np.testing.assert_array_equal(got, 0.0)  # inverse of a singular matrix == 0
    nan = np.nan
    v5 = wp.types.vector(5, wp.float64)
    values = [np.tile([nan, 3.0, -1.0, 7.0, -1.0], (COUNT, 1))]
    assert (_launch(CASE_KERNELS["argmin", wp.float64], values, [v5], wp.uint32, device).numpy() == 2).all()
    assert (_launch(CASE_KERNELS["argmax", wp.float64], values, [v5], wp.uint32, device).numpy() == 3).all()
    got = _launch(CASE_KERNELS["min_reduce", wp.float64], values, [v5], wp.float64, device).numpy()
    np.testing.assert_array_equal(got, -1.0)  # NaN components are skipped


def test_gradient_at_zero_length(device):
    """length and normalize pass no gradient at the zero vector (Warp), instead of NaN."""
    for name in ("length", "normalize"):
        _, inputs, out_t, _, _ = CASES[name]
        t = inputs[0][0](wp.float64)
        a = wp.array(np.zeros((COUNT,) + wp.types.type_shape(t)), dtype=t, device=device, requires_grad=True)
        tape = Tape()
        with tape:
            out = _launch_arrays(CASE_KERNELS[name, wp.float64], [a], out_t(wp.float64), device)
        tape.backward(grads={out: np.ones(out.numpy().shape)})
        np.testing.assert_array_equal(a.grad.numpy(), 0.0)


def _launch_arrays(kernel, arrays, out_type, device):
    out = wp.zeros(COUNT, dtype=out_type, device=device, requires_grad=True)
    wp.launch(kernel, dim=COUNT, inputs=arrays + [out], device=device)
    return out
