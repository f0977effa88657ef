"""Tile linear algebra (kernels/native/tile_linalg.h): tile_cholesky, tile_cholesky_solve, tile_lower_solve,
tile_upper_solve and their in-place forms. Values against numpy; float64 gradients against central finite
differences (autodiff.gradcheck) for sizes 1, 3, 7 and 16, vector and matrix right-hand sides; the articulated-body
pattern (per-articulation mass matrix H, qdd = H^-1 tau) over many articulations; non-SPD and singular input.

Every kernel is created at import time (module level), so the file compiles into one native library and
tests/test_ptx.py compiles the same kernels to PTX.
"""

import types

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape, gradcheck

SIZES = (1, 3, 7, 16)
RHS_COLUMNS = 3  # columns of a matrix right-hand side
DOF = 6  # degrees of freedom of the articulations whose gradients are checked
DOF_LARGE = 64  # the largest articulation the Featherstone solver expects
F64 = wp.float64


def _named(pyfunc, name, **options):
    pyfunc.__name__ = pyfunc.__qualname__ = name
    return wp.kernel(pyfunc, **options)


def _rhs_annotation(rhs_shape):
    return wp.array(dtype=F64) if len(rhs_shape) == 1 else wp.array2d(dtype=F64)


# ------------------------------------------------------------------------------------------------------------
# Kernels: one set per matrix size n and right-hand side shape (n,) or (n, RHS_COLUMNS)


def _factor_kernel(n):
    def factor(a: wp.array2d(dtype=F64), lower: wp.array2d(dtype=F64), upper: wp.array2d(dtype=F64)):
        # L from A's lower triangle, U from its upper triangle
        t = wp.tile_load(a, shape=(n, n))
        wp.tile_store(lower, wp.tile_cholesky(t))
        wp.tile_store(upper, wp.tile_cholesky(t, fill_mode="upper"))

    return _named(factor, f"factor_{n}")


def _solve_kernels(n, rhs_shape, tag):
    rhs_type = _rhs_annotation(rhs_shape)

    def solves(m: wp.array2d(dtype=F64), y: rhs_type, out: wp.array2d(dtype=F64)):
        # m's lower triangle is L (or the lower solve's matrix), its upper triangle U: each solve reads one
        f = wp.tile_load(m, shape=(n, n))
        rhs = wp.tile_load(y, shape=rhs_shape)
        wp.tile_store(out[0], wp.tile_reshape(wp.tile_cholesky_solve(f, rhs), shape=-1))
        wp.tile_store(out[1], wp.tile_reshape(wp.tile_cholesky_solve(f, rhs, fill_mode="upper"), shape=-1))
        wp.tile_store(out[2], wp.tile_reshape(wp.tile_lower_solve(f, rhs), shape=-1))
        wp.tile_store(out[3], wp.tile_reshape(wp.tile_upper_solve(f, rhs), shape=-1))

    def factor_then_solve(a: wp.array2d(dtype=F64), y: rhs_type, x: rhs_type):
        ell = wp.tile_cholesky(wp.tile_load(a, shape=(n, n)))
        wp.tile_store(x, wp.tile_cholesky_solve(ell, wp.tile_load(y, shape=rhs_shape)))

    def in_place(a: wp.array2d(dtype=F64), y: rhs_type, out: wp.array2d(dtype=F64)):
        f = wp.tile_load(a, shape=(n, n))
        rhs = wp.tile_load(y, shape=rhs_shape)
        wp.tile_cholesky_inplace(f)
        wp.tile_cholesky_solve_inplace(f, rhs)
        wp.tile_store(out[0], wp.tile_reshape(rhs, shape=-1))
        wp.tile_lower_solve_inplace(f, rhs)
        wp.tile_store(out[1], wp.tile_reshape(rhs, shape=-1))
        wp.tile_upper_solve_inplace(f, rhs)
        wp.tile_store(out[2], wp.tile_reshape(rhs, shape=-1))

    return types.SimpleNamespace(
        solves=_named(solves, f"solves_{tag}"), factor_then_solve=_named(factor_then_solve, f"factor_solve_{tag}"),
        in_place=_named(in_place, f"in_place_{tag}", enable_backward=False))


def _rhs_shape(n, kind):
    return (n,) if kind == "vector" else (n, RHS_COLUMNS)


FACTOR = {n: _factor_kernel(n) for n in SIZES}
SOLVE = {(n, kind): _solve_kernels(n, _rhs_shape(n, kind), f"{n}_{kind}") for n in SIZES
         for kind in ("vector", "matrix")}


# The articulated-body pattern: H per articulation (3-d array, or rows of a 2-d array), qdd = H^-1 tau.
def _articulation_kernels(dof):
    def qdd_from_3d(H: wp.array3d(dtype=F64), tau: wp.array2d(dtype=F64), qdd: wp.array2d(dtype=F64)):
        i = wp.tid()
        ell = wp.tile_cholesky(wp.tile_load(H[i], shape=(dof, dof)))
        wp.tile_store(qdd[i], wp.tile_cholesky_solve(ell, wp.tile_load(tau[i], shape=dof)))

    def qdd_from_2d(H: wp.array2d(dtype=F64), tau: wp.array(dtype=F64), qdd: wp.array(dtype=F64)):
        i = wp.tid()
        ell = wp.tile_cholesky(wp.tile_load(H, shape=(dof, dof), offset=(i * dof, 0)))
        qdd_tile = wp.tile_cholesky_solve(ell, wp.tile_load(tau, shape=dof, offset=i * dof))
        wp.tile_store(qdd, qdd_tile, offset=i * dof)

    return types.SimpleNamespace(from_3d=_named(qdd_from_3d, f"qdd_from_3d_{dof}"),
                                 from_2d=_named(qdd_from_2d, f"qdd_from_2d_{dof}"))


ARTICULATION = {dof: _articulation_kernels(dof) for dof in (DOF, DOF_LARGE)}


@wp.kernel
def factor_float32(a: wp.array2d(dtype=wp.float32), y: wp.array(dtype=wp.float32), ell: wp.array2d(dtype=wp.float32),
                   x: wp.array(dtype=wp.float32)):
    t = wp.tile_cholesky(wp.tile_load(a, shape=(7, 7)))
    wp.tile_store(ell, t)
    wp.tile_store(x, wp.tile_cholesky_solve(t, wp.tile_load(y, shape=7)))


# ------------------------------------------------------------------------------------------------------------
# Helpers


def _rng(seed=0):
    return np.random.default_rng(seed)


def _spd(n, seed=0):
    m = _rng(seed).uniform(-1, 1, (n, n))
    return m @ m.T / n + np.eye(n)


def _triangles(n, seed=0):
    """A matrix whose lower and upper triangles are both well-conditioned triangular factors."""
    m = _rng(seed).uniform(-0.5, 0.5, (n, n)) / np.sqrt(n)
    np.fill_diagonal(m, _rng(seed + 1).uniform(1.5, 2.5, n))
    return m


def _f64(values, device):
    return wp.array(np.asarray(values, dtype=np.float64), dtype=F64, device=device)


def _out(shape, device):
    return wp.zeros(shape, dtype=F64, device=device, requires_grad=True)


def _run_factor(a, n, device):
    lower, upper = _out((n, n), device), _out((n, n), device)
    wp.launch_tiled(FACTOR[n], dim=1, inputs=[a, lower, upper], block_dim=32, device=device)
    return lower, upper


def _run_solves(m, y, n, kind, device):
    out = _out((4, int(np.prod(_rhs_shape(n, kind)))), device)
    wp.launch_tiled(SOLVE[n, kind].solves, dim=1, inputs=[m, y, out], block_dim=32, device=device)
    return out


def _run_factor_then_solve(a, y, n, kind, device):
    x = _out(_rhs_shape(n, kind), device)
    wp.launch_tiled(SOLVE[n, kind].factor_then_solve, dim=1, inputs=[a, y, x], block_dim=32, device=device)
    return x


size_param = pytest.mark.parametrize("n", SIZES)
rhs_param = pytest.mark.parametrize("kind", ("vector", "matrix"))


# ------------------------------------------------------------------------------------------------------------
# Values


@size_param
def test_cholesky_lower_and_upper_factors(device, n):
    a = _spd(n)
    lower, upper = _run_factor(_f64(a, device), n, device)
    expected = np.linalg.cholesky(a)
    np.testing.assert_allclose(lower.numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(upper.numpy(), expected.T, rtol=1e-12, atol=1e-12)


def test_cholesky_reads_only_the_selected_triangle(device):
    a, garbage = _spd(7), _rng(3).uniform(5, 9, (7, 7))
    lower, _ = _run_factor(_f64(np.tril(a) + np.triu(garbage, 1), device), 7, device)
    _, upper = _run_factor(_f64(np.triu(a) + np.tril(garbage, -1), device), 7, device)
    np.testing.assert_allclose(lower.numpy(), np.linalg.cholesky(a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(upper.numpy(), np.linalg.cholesky(a).T, rtol=1e-12, atol=1e-12)


@size_param
@rhs_param
def test_solves(device, n, kind):
    m, y = _triangles(n), _rng(1).uniform(-1, 1, _rhs_shape(n, kind))
    out = _run_solves(_f64(m, device), _f64(y, device), n, kind, device).numpy()
    lower, upper = np.tril(m), np.triu(m)
    expected = [np.linalg.solve(lower @ lower.T, y), np.linalg.solve(upper.T @ upper, y),
                np.linalg.solve(lower, y), np.linalg.solve(upper, y)]
    for k, e in enumerate(expected):
        np.testing.assert_allclose(out[k], e.reshape(-1), rtol=1e-10, atol=1e-12, err_msg=f"solve {k}")


@size_param
@rhs_param
def test_in_place_forms(device, n, kind):
    a, y = _spd(n), _rng(1).uniform(-1, 1, _rhs_shape(n, kind))
    out = _out((3, y.size), device)
    wp.launch_tiled(SOLVE[n, kind].in_place, dim=1, inputs=[_f64(a, device), _f64(y, device), out], block_dim=32,
                    device=device)
    ell = np.linalg.cholesky(a)
    x = np.linalg.solve(a, y)
    z = np.linalg.solve(ell, x)
    # the upper solve reads the factor's upper triangle: L's diagonal, zeros above it
    for k, e in enumerate((x, z, np.linalg.solve(np.diag(np.diag(ell)), z))):
        np.testing.assert_allclose(out.numpy()[k], e.reshape(-1), rtol=1e-10, atol=1e-12)


def test_float32(device):
    a, y = _spd(7), _rng(1).uniform(-1, 1, 7)
    ell, x = wp.zeros((7, 7), dtype=float, device=device), wp.zeros(7, dtype=float, device=device)
    wp.launch_tiled(factor_float32, dim=1, inputs=[wp.array(a.astype(np.float32), device=device),
                                                   wp.array(y.astype(np.float32), device=device), ell, x],
                    block_dim=32, device=device)
    np.testing.assert_allclose(ell.numpy(), np.linalg.cholesky(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, y), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------------------------
# Gradients against finite differences


@size_param
def test_cholesky_gradient(device, n):
    """dA lands on the triangle each factor reads: the lower one for L, the upper one for U."""
    gradcheck(lambda a: _run_factor(a, n, device), [_f64(_spd(n), device)])


@size_param
@rhs_param
def test_solves_gradient(device, n, kind):
    m, y = _f64(_triangles(n), device), _f64(_rng(1).uniform(-1, 1, _rhs_shape(n, kind)), device)
    gradcheck(lambda m, y: _run_solves(m, y, n, kind, device), [m, y])


@size_param
@rhs_param
def test_factor_then_solve_gradient(device, n, kind):
    """The composite in one kernel: x = A^-1 y through L = chol(A), gradients to A's entries and to y."""
    a, y = _f64(_spd(n), device), _f64(_rng(1).uniform(-1, 1, _rhs_shape(n, kind)), device)
    gradcheck(lambda a, y: _run_factor_then_solve(a, y, n, kind, device), [a, y])


def _solve_gradients(a, y, seed):
    """The gradients of sum(seed * x), x = A^-1 y, for symmetric A: -w x^T with w = A^-1 seed, on the
    lower-triangle parameterisation (an off-diagonal entry carries both mirrored terms), and w for y."""
    w = np.linalg.solve(a, seed)
    full = -np.outer(w, np.linalg.solve(a, y))
    return np.tril(full + full.T) - np.diag(np.diag(full)), w


def test_factor_then_solve_gradient_matches_symmetric_formula(device):
    n = 7
    a_np, y_np, seed = _spd(n), _rng(1).uniform(-1, 1, n), _rng(2).uniform(-1, 1, n)
    a, y = _f64(a_np, device), _f64(y_np, device)
    a.requires_grad = y.requires_grad = True
    tape = Tape()
    with tape:
        x = _run_factor_then_solve(a, y, n, "vector", device)
    tape.backward(grads={x: _f64(seed, device)})
    grad_a, grad_y = _solve_gradients(a_np, y_np, seed)
    np.testing.assert_allclose(a.grad.numpy(), grad_a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), grad_y, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------------------------
# The articulated-body pattern


def _articulations(count, dof, seed=0):
    h = np.stack([_spd(dof, seed + k) for k in range(count)])
    tau = _rng(seed + 100).uniform(-1, 1, (count, dof))
    return h, tau


def _run_qdd_3d(h, tau, dof, device):
    qdd = _out(tau.shape, device)
    wp.launch_tiled(ARTICULATION[dof].from_3d, dim=h.shape[0], inputs=[h, tau, qdd], block_dim=64, device=device)
    return qdd


def _run_qdd_2d(h, tau, dof, device):
    qdd = _out(tau.shape, device)
    wp.launch_tiled(ARTICULATION[dof].from_2d, dim=h.shape[0] // dof, inputs=[h, tau, qdd], block_dim=64,
                    device=device)
    return qdd


@pytest.mark.parametrize("dof", (DOF, DOF_LARGE))
def test_articulation_qdd(device, dof):
    count = 40
    h, tau = _articulations(count, dof)
    expected = np.linalg.solve(h, tau[..., None])[..., 0]
    qdd = _run_qdd_3d(_f64(h, device), _f64(tau, device), dof, device)
    np.testing.assert_allclose(qdd.numpy(), expected, rtol=1e-9, atol=1e-10)
    qdd_flat = _run_qdd_2d(_f64(h.reshape(count * dof, dof), device), _f64(tau.reshape(-1), device), dof, device)
    np.testing.assert_allclose(qdd_flat.numpy(), expected.reshape(-1), rtol=1e-9, atol=1e-10)


def test_articulation_qdd_gradient_of_the_largest_articulations(device):
    """Backward at 64 degrees of freedom (too many entries for finite differences): the closed form."""
    h_np, tau_np = _articulations(4, DOF_LARGE)
    seed = _rng(7).uniform(-1, 1, tau_np.shape)
    h, tau = _f64(h_np, device), _f64(tau_np, device)
    h.requires_grad = tau.requires_grad = True
    tape = Tape()
    with tape:
        qdd = _run_qdd_3d(h, tau, DOF_LARGE, device)
    tape.backward(grads={qdd: _f64(seed, device)})
    for k in range(len(h_np)):
        grad_h, grad_tau = _solve_gradients(h_np[k], tau_np[k], seed[k])
        np.testing.assert_allclose(h.grad.numpy()[k], grad_h, rtol=1e-8, atol=1e-11)
        np.testing.assert_allclose(tau.grad.numpy()[k], grad_tau, rtol=1e-8, atol=1e-11)


def test_articulation_qdd_gradient(device):
    h, tau = _articulations(3, DOF)
    gradcheck(lambda h, tau: _run_qdd_3d(h, tau, DOF, device), [_f64(h, device), _f64(tau, device)])
    gradcheck(lambda h, tau: _run_qdd_2d(h, tau, DOF, device),
              [_f64(h.reshape(-1, DOF), device), _f64(tau.reshape(-1), device)])


# ------------------------------------------------------------------------------------------------------------
# Input outside the builtins' domain: NaN or inf, never an error and never a plausible number


NAN = np.nan
# Matrices that are not positive definite (indefinite; singular) and the factor warp-lang 1.19 gives for each on its
# CPU: nothing is clamped, a negative pivot's square root is NaN and a zero pivot divides by zero, and NaN spreads
# to every later column. The solve with such a factor is NaN throughout.
NOT_POSITIVE_DEFINITE = [
    (np.diag([1.0, -1.0, 1.0]), [[1, 0, 0], [0, NAN, 0], [0, NAN, NAN]]),
    ([[1.0, 2, 0], [2, 1, 0], [0, 0, 1]], [[1, 0, 0], [2, NAN, 0], [0, NAN, NAN]]),
    (np.diag([1.0, 0.0, 1.0]), [[1, 0, 0], [0, 0, 0], [0, NAN, NAN]]),
    ([[4.0, 2, 0], [2, 1, 0], [0, 0, 1]], [[2, 0, 0], [1, 0, 0], [0, NAN, NAN]]),
]


@pytest.mark.parametrize("a, warp_factor", NOT_POSITIVE_DEFINITE, ids=("indefinite-diagonal", "indefinite",
                                                                        "singular-diagonal", "singular"))
def test_cholesky_of_a_matrix_that_is_not_positive_definite_gives_nan_as_warp_does(device, a, warp_factor):
    lower, upper = _run_factor(_f64(a, device), 3, device)
    np.testing.assert_array_equal(lower.numpy(), warp_factor)
    np.testing.assert_array_equal(upper.numpy(), np.transpose(warp_factor))
    x = _run_factor_then_solve(_f64(a, device), _f64(np.ones(3), device), 3, "vector", device)
    assert np.isnan(x.numpy()).all()


def test_triangular_solve_with_a_zero_on_the_diagonal_is_not_finite(device):
    m = _triangles(3)
    m[2, 2] = 0.0
    out = _run_solves(_f64(m, device), _f64(np.ones(3), device), 3, "vector", device).numpy()
    assert not np.isfinite(out[2]).all()  # lower solve
    assert not np.isfinite(out[3]).all()  # upper solve


# ------------------------------------------------------------------------------------------------------------
# Compile-time checks


def _misuses():
    """(kernel, message) pairs: each kernel misuses a builtin in a way type inference refuses."""

    @wp.kernel(module="unique")
    def not_square(a: wp.array2d(dtype=F64)):
        wp.tile_store(a, wp.tile_cholesky(wp.tile_load(a, shape=(2, 3))))

    @wp.kernel(module="unique")
    def bad_fill_mode(a: wp.array2d(dtype=F64)):
        wp.tile_store(a, wp.tile_cholesky(wp.tile_load(a, shape=(3, 3)), fill_mode="diagonal"))

    @wp.kernel(module="unique")
    def rows_differ(a: wp.array2d(dtype=F64)):
        wp.tile_store(a, wp.tile_cholesky_solve(wp.tile_load(a, shape=(3, 3)), wp.tile_load(a, shape=(2, 3))))

    @wp.kernel(module="unique")
    def dtypes_differ(a: wp.array2d(dtype=F64), b: wp.array2d(dtype=wp.float32)):
        wp.tile_store(a, wp.tile_lower_solve(wp.tile_load(a, shape=(3, 3)), wp.tile_load(b, shape=(3, 1))))

    @wp.kernel(module="unique")
    def half_precision(b: wp.array2d(dtype=wp.float16)):
        wp.tile_store(b, wp.tile_cholesky(wp.tile_load(b, shape=(3, 3))))

    @wp.kernel(module="unique")
    def no_right_hand_side(a: wp.array2d(dtype=F64)):
        wp.tile_store(a, wp.tile_upper_solve(wp.tile_load(a, shape=(3, 3))))

    return [(no_right_hand_side, r"tile_upper_solve\(\) missing argument 'z'"),
            (not_square, "must be a square 2-d tile"), (bad_fill_mode, 'fill_mode must be "lower" or "upper"'),
            (rows_differ, "must have 3 rows"), (dtypes_differ, "the same dtype"),
            (half_precision, "float32 or float64")]


def test_shape_dtype_and_fill_mode_errors():
    for kernel, message in _misuses():
        with pytest.raises(wp.CompileError, match=message):
            kernel.compile_ir()
