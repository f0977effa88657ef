"""Warp's `warp.optim.linear` for dense systems (warp_shim/optim_linear.py): each solver's answer against
numpy.linalg.solve, with and without the Jacobi preconditioner and through a user LinearOperator; Warp's result
tuple and tolerance rule; batched systems (each subproblem to its own tolerance, inactive unknowns untouched),
restart cycles, pre-allocated functors and device-style runs (check_every=0); the refusals (sparse matrices);
and the same solutions as real Warp's, batched ones included."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from warp_shim import optim_linear as la

N = 24


def _systems(seed=7):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-10, 10, (N, N))
    spd = c @ c.T + N * np.eye(N)
    general = spd @ np.diag(rng.uniform(0.1, 10, N))
    return spd, general, rng.uniform(-1, 1, N)


@pytest.mark.parametrize("name", ["cg", "cr", "bicgstab", "gmres"])
def test_solutions_match_numpy(name):
    spd, general, b_np = _systems()
    matrix = spd if name in ("cg", "cr") else general
    reference = np.linalg.solve(matrix, b_np)
    solver = getattr(la, name)
    for dtype, rtol in ((wp.float64, 1e-7), (wp.float32, 2e-3)):
        A, b = wp.array(matrix, dtype=dtype), wp.array(b_np, dtype=dtype)
        for M in (None, la.preconditioner(A, "diag")):
            x = wp.zeros_like(b)
            iterations, err, atol = solver(A, b, x, maxiter=500, M=M)
            assert err <= atol and 0 < iterations <= 500
            # Warp's default tolerance: max(tol |b|, atol), both eps^(3/4) of the dtype
            eps = 1e-16 if dtype is wp.float64 else 1e-8
            assert atol == pytest.approx(max(eps ** 0.75 * np.linalg.norm(b_np), eps ** 0.75), rel=1e-6)
            np.testing.assert_allclose(x.numpy(), reference, rtol=rtol, atol=rtol * np.abs(reference).max())
            again, _, _ = solver(A, b, x, maxiter=500, M=M)  # a warm start from the solution: no iteration
            assert again < iterations


def test_operators_diagonals_and_callbacks():
    spd, _, b_np = _systems(3)
    dense = la.aslinearoperator(wp.array(spd, dtype=wp.float64))
    calls = []

    @wp.kernel
    def matvec_kernel(A: wp.array2d(dtype=wp.float64), x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64),
                      z: wp.array(dtype=wp.float64), alpha: wp.float64, beta: wp.float64):
        i = wp.tid()
        s = wp.float64(0.0)
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        z[i] = alpha * s + beta * y[i]

    A = wp.array(spd, dtype=wp.float64)
    user = la.LinearOperator((N, N), wp.float64, A.device,
                             lambda x, y, z, alpha, beta: wp.launch(matvec_kernel, N, inputs=[A, x, y, z, alpha, beta]))
    x = wp.zeros(N, dtype=wp.float64)
    la.cg(user, wp.array(b_np, dtype=wp.float64), x, maxiter=200, check_every=5,
          callback=lambda i, err, atol: calls.append(i))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(spd, b_np), rtol=1e-7)
    assert calls and all(i % 5 == 0 for i in calls)
    assert la.aslinearoperator(dense) is dense and la.aslinearoperator(None) is None
    d = np.linspace(1.0, 3.0, N)
    x = wp.zeros(N, dtype=wp.float64)
    la.cg(wp.array(d, dtype=wp.float64), wp.array(b_np, dtype=wp.float64), x)  # a 1-d array is a diagonal
    np.testing.assert_allclose(x.numpy(), b_np / d, rtol=1e-9)
    assert la.preconditioner(A, "id") is None


def test_refusals_are_one_clear_error():
    A = wp.array(np.eye(4), dtype=wp.float64)
    b, x = wp.ones(4, dtype=wp.float64), wp.zeros(4, dtype=wp.float64)
    with pytest.raises(TypeError, match="warp.sparse matrices are outside the kernel layer"):
        la.cg(object(), b, x)
    with pytest.raises(NotImplementedError, match="needs a warp.sparse matrix"):
        la.preconditioner(A, "block_jacobi_direct")
    with pytest.raises(ValueError, match="Unsupported preconditioner type 'lu'"):
        la.preconditioner(A, "lu")
    with pytest.raises(ValueError, match="requires batch_offsets"):
        la.aslinearoperator(A, max_batch_length=2)
    for bad, error in ((True, TypeError), (1.5, TypeError), (0, ValueError)):
        with pytest.raises(error, match="restart must be"):
            la.cg(A, b, x, restart=bad)
    state = la.bicgstab(A, b, x, run=False)
    with pytest.raises(ValueError, match="consistently provided"):
        state(M=la.preconditioner(A, "diag"))
    with pytest.raises(ValueError, match="Incompatible b.shape"):
        state(b=wp.ones(5, dtype=wp.float64))


def _batched_system(seed=5, sizes=(6, 9, 4), tail=3):
    """A block-diagonal SPD system of `sizes` blocks plus `tail` inactive unknowns (coupled to nothing)."""
    rng = np.random.default_rng(seed)
    n = sum(sizes) + tail
    matrix = np.eye(n)
    start = 0
    for size in sizes:
        c = rng.uniform(-1, 1, (size, size))
        matrix[start:start + size, start:start + size] = c @ c.T + size * np.eye(size)
        start += size
    b = rng.uniform(-1, 1, n) * np.repeat([1.0, 100.0, 0.01, 1.0], list(sizes) + [tail])
    return matrix, b, np.concatenate([[0], np.cumsum(sizes)])


@pytest.mark.parametrize("name", ["cg", "cr", "bicgstab", "gmres"])
def test_batched_subproblems_meet_their_own_tolerance(name):
    matrix, b_np, offsets = _batched_system()
    A = la.aslinearoperator(wp.array(matrix), batch_offsets=wp.array(offsets, dtype=wp.int32))
    assert A.batch_count == 3
    initial = np.full(b_np.size, 7.0)
    x = wp.array(initial)
    iterations, err, atol = getattr(la, name)(A, wp.array(b_np), x, tol=1e-10, maxiter=200, check_every=1)
    assert err <= atol
    result = x.numpy()
    np.testing.assert_array_equal(result[offsets[-1]:], initial[offsets[-1]:])  # inactive: untouched
    for s, e in zip(offsets[:-1], offsets[1:]):
        # each subproblem to 1e-10 of its own right-hand side (scales 1, 100, 0.01)
        residual = np.linalg.norm(matrix[s:e, s:e] @ result[s:e] - b_np[s:e])
        assert residual <= 2e-10 * np.linalg.norm(b_np[s:e])


def test_restart_cycles_functors_and_device_style_runs():
    spd, _, b_np = _systems(9)
    A, b = wp.array(spd), wp.array(b_np)
    seen = []
    x = wp.zeros_like(b)
    iterations, err, atol = la.cg(A, b, x, tol=1e-10, restart=4, check_every=1, maxiter=400,
                                  callback=lambda i, e, t: seen.append(i))
    assert err <= atol and iterations % 4 == 0 and all(i % 4 == 0 for i in seen) and seen[-1] == iterations
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(spd, b_np), rtol=1e-8)
    for make, klass in ((la.cg, la.CG), (la.cr, la.CR), (la.bicgstab, la.BiCGSTAB), (la.gmres, la.GMRES)):
        x = wp.zeros_like(b)
        state = make(A, b, x, run=False, maxiter=300)
        assert isinstance(state, klass)
        b2 = wp.array(b_np[::-1].copy())
        x2 = wp.zeros_like(b2)
        _, err, atol = state(b=b2, x=x2)  # a substituted right-hand side and solution vector
        assert err <= atol
        np.testing.assert_allclose(x2.numpy(), np.linalg.solve(spd, b_np[::-1]), rtol=1e-6)
        assert not x.numpy().any()  # the construction's x was not used
    x = wp.zeros_like(b)
    count, r_sq, atol_sq = la.cr(A, b, x, maxiter=7, check_every=0, restart=3)
    assert count.numpy()[0] == 9  # three cycles of three, as Warp counts on a device without conditional graphs
    assert r_sq.shape == (1,) and atol_sq.shape == (1,)
    np.testing.assert_allclose(np.sqrt(r_sq.numpy()[0]), np.linalg.norm(b_np - spd @ x.numpy()), rtol=1e-6)


_PROGRAM = '''
import importlib


def run(wp, Tape):
    import numpy as np
    la = importlib.import_module("warp.optim.linear" if wp.__name__ == "warp" else "warp_shim.optim_linear")
    rng = np.random.default_rng(11)
    c = rng.uniform(-10, 10, (12, 12))
    spd = c @ c.T + 12 * np.eye(12)
    general = spd @ np.diag(rng.uniform(0.1, 10, 12))
    b = wp.array(rng.uniform(-1, 1, 12), dtype=wp.float64)
    out = {}
    for name, matrix in (("cg", spd), ("cr", spd), ("bicgstab", general), ("gmres", general)):
        A = wp.array(matrix, dtype=wp.float64)
        x = wp.zeros(12, dtype=wp.float64)
        _, err, atol = getattr(la, name)(A, b, x, maxiter=500, M=la.preconditioner(A, "diag"), tol=1e-12,
                                          use_cuda_graph=False)
        out[name] = x.numpy()
        out[name + "_atol"] = np.array([atol])
        # two independent subproblems of 5 and 7 unknowns (the off-block entries zeroed), solved together
        blocks = matrix.copy()
        blocks[:5, 5:] = 0.0
        blocks[5:, :5] = 0.0
        offsets = wp.array(np.array([0, 5, 12], dtype=np.int32), dtype=wp.int32)
        batched = la.aslinearoperator(wp.array(blocks, dtype=wp.float64), batch_offsets=offsets, max_batch_length=7)
        x = wp.zeros(12, dtype=wp.float64)
        kwargs = {"restart": 7} if name == "gmres" else {}
        _, _, atol = getattr(la, name)(batched, b, x, maxiter=500, tol=1e-12, use_cuda_graph=False, **kwargs)
        out[name + "_batched"] = x.numpy()
        out[name + "_batched_atol"] = np.array([atol])
    return out
'''


def test_solutions_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "optim_linear")
    for key, value in warp.items():
        # both solve to |r| <= 1e-12 |b|: the solutions agree far below the system's conditioning
        np.testing.assert_allclose(ours[key], value, rtol=1e-8, atol=1e-12, err_msg=key)
