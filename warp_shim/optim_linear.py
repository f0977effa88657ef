"""Warp's `warp.optim.linear` for dense systems: the iterative solvers `cg`, `cr`, `bicgstab`, `gmres` (and their
pre-allocated functors `CG`, `CR`, `BiCGSTAB`, `GMRES`), the Jacobi `preconditioner`, `LinearOperator` and
`aslinearoperator`, with Warp's signatures, batching and results.

A matrix is a 2-d array (dense), a 1-d array (a diagonal, of scalars or vectors) or a `LinearOperator` whose
`matvec(x, y, z, alpha, beta)` computes z = alpha A x + beta y. An operator's `batch_offsets` splits the unknowns
into independent subproblems, each with its own tolerance (warp_shim/linear_iterations.py). The iterations run on
the host in float64 (the solution is written back to `x` in its dtype), so iteration counts may differ from
Warp's device kernels while the result meets the same tolerance: the absolute tolerance is max(atol, tol |b|)
per subproblem with Warp's dtype-dependent defaults, convergence is checked every `check_every` iterations (and
before the first), and a call returns (iterations, worst residual norm, worst absolute tolerance) as Warp's does;
with `check_every=0` every iteration up to `maxiter` runs and the three come back as arrays, as on a Warp device
without conditional graphs. `warp.sparse` matrices and the block-Jacobi/FSAI preconditioners are refused with one
clear error each.
"""

from __future__ import annotations

import operator
from typing import Callable

import numpy as np

import kernels as wp

from . import linear_iterations as iterations_

__all__ = ["LinearOperator", "aslinearoperator", "preconditioner", "cg", "cr", "bicgstab", "gmres", "CG", "CR",
           "BiCGSTAB", "GMRES", "FSAI", "LinearSolverState"]

_SPARSE = ("warp.optim.linear here takes dense matrices (2-d arrays), diagonals (1-d arrays) and LinearOperator; "
           "warp.sparse matrices are outside the kernel layer (not provided by the kernels shim)")


class LinearOperator:
    """A linear map for the solvers (Warp's class): `shape` (rows, cols), `dtype`, `device` and
    `matvec(x, y, z, alpha, beta)` computing z = alpha A x + beta y (arrays of `dtype`)."""

    def __init__(self, shape, dtype, device, matvec: Callable, batch_offsets=None, max_batch_length=None):
        if max_batch_length is not None:
            if batch_offsets is None:
                raise ValueError("max_batch_length requires batch_offsets")
            if max_batch_length < 0:
                raise ValueError("max_batch_length must be non-negative")
        self._shape, self._dtype, self._device, self._matvec = tuple(shape), dtype, device, matvec
        self._batch_offsets, self._max_batch_length = batch_offsets, max_batch_length

    @property
    def batch_offsets(self):
        """Array of shape (B+1,) splitting the scalar unknowns into B independent subproblems, or None; unknowns
        at or past the last offset are inactive."""
        return self._batch_offsets

    @property
    def batch_count(self) -> int:
        return 1 if self._batch_offsets is None else self._batch_offsets.shape[0] - 1

    @property
    def max_batch_length(self):
        return self._max_batch_length

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def matvec(self) -> Callable:
        return self._matvec

    @property
    def scalar_type(self):
        return wp.types.scalar_type(self._dtype)

    def _apply(self, x: np.ndarray) -> np.ndarray:
        """A x for a float64 host vector (flat scalars)."""
        host = getattr(self, "_host", None)
        if host is not None:
            return host(x)
        n = self._shape[0]
        xs = wp.array(x.astype(np.dtype(self.scalar_type._np_)).reshape(self._layout(self._shape[1])),
                      dtype=self._dtype, device=self._device)
        y = wp.zeros(self._layout(n)[0], dtype=self._dtype, device=self._device)
        z = wp.zeros_like(y)
        self._matvec(xs, y, z, self.scalar_type(1), self.scalar_type(0))
        return np.asarray(z.numpy(), dtype=np.float64).reshape(-1)

    def _apply_like(self, x: np.ndarray, like) -> np.ndarray:
        """A x for a float64 host vector of flat scalars laid out as the array `like` (the right-hand side)."""
        host = getattr(self, "_host", None)
        if host is not None:
            return host(x)
        scalar = wp.types.scalar_type(like.dtype)
        xs = wp.array(x.astype(np.dtype(scalar._np_)).reshape(like.numpy().shape), dtype=like.dtype,
                      device=self._device)
        y = wp.zeros_like(xs)
        z = wp.zeros_like(xs)
        self._matvec(xs, y, z, scalar(1), scalar(0))
        return np.asarray(z.numpy(), dtype=np.float64).reshape(-1)

    def _layout(self, scalars: int) -> tuple:
        width = int(np.prod(getattr(self._dtype, "_shape_", ()) or (1,)))
        return (scalars // width, width) if width > 1 else (scalars,)


def _host_operator(shape, dtype, device, host: Callable, batch_offsets=None,
                   max_batch_length=None) -> LinearOperator:
    """A LinearOperator of a matrix known on the host: `host(x)` gives A x in float64; matvec works on arrays."""

    def matvec(x, y, z, alpha, beta):
        ax = host(np.asarray(x.numpy(), dtype=np.float64).reshape(-1))
        out = float(alpha) * ax + float(beta) * np.asarray(y.numpy(), dtype=np.float64).reshape(-1)
        z.assign(out.reshape(z.numpy().shape).astype(z.numpy().dtype))

    op = LinearOperator(shape, dtype, device, matvec, batch_offsets, max_batch_length)
    op._host = host
    return op


def aslinearoperator(A, batch_offsets=None, max_batch_length=None) -> LinearOperator | None:
    """`A` as a LinearOperator: a 2-d array is a dense matrix, a 1-d array a diagonal (of scalars, or of vectors
    componentwise); a LinearOperator or None is returned as it is (batch arguments ignored, as in Warp).
    `batch_offsets`, `max_batch_length`: see LinearOperator.

    Raises:
        TypeError: `A` is a warp.sparse matrix or another type.
    """
    if A is None or isinstance(A, LinearOperator):
        return A
    batch = (batch_offsets, max_batch_length)
    if not isinstance(A, wp.array) or A.ndim not in (1, 2):
        raise TypeError(f"{_SPARSE}; got {type(A).__name__}")
    values = np.asarray(A.numpy(), dtype=np.float64)
    if A.ndim == 2:
        if wp.types.is_composite(A.dtype):
            raise TypeError("a dense matrix here is a 2-d array of scalars")
        return _host_operator(A.shape, A.dtype, A.device, lambda x: values @ x, *batch)
    diagonal = values.reshape(-1)
    return _host_operator(A.shape, A.dtype, A.device, lambda x: diagonal * x, *batch)


def preconditioner(A, ptype: str = "diag") -> LinearOperator | None:
    """Warp's preconditioners of a dense (or diagonal) matrix: "diag" (Jacobi: the inverse of the diagonal, 1
    where a diagonal entry is 0), "diag_abs" (the same with |diagonal|), "id" (None).

    Raises:
        ValueError: an unknown `ptype`; NotImplementedError: the block-Jacobi and FSAI preconditioners, which
            need warp.sparse matrices.
    """
    if ptype == "id":
        return None
    if ptype in ("fsai",) or ptype.startswith("block_jacobi"):
        raise NotImplementedError(f"preconditioner '{ptype}' needs a warp.sparse matrix: {_SPARSE}")
    if ptype not in ("diag", "diag_abs"):
        raise ValueError(f"Unsupported preconditioner type '{ptype}'")
    op = aslinearoperator(A)
    if isinstance(A, wp.array) and A.ndim == 2:
        diagonal = np.diag(np.asarray(A.numpy(), dtype=np.float64)).copy()
    elif isinstance(A, wp.array):
        diagonal = np.asarray(A.numpy(), dtype=np.float64).reshape(-1).copy()
    else:
        diagonal = np.array([op._apply(np.eye(op.shape[1])[j])[j] for j in range(op.shape[1])])
    if ptype == "diag_abs":
        diagonal = np.abs(diagonal)
    inverse = np.where(diagonal != 0.0, 1.0 / np.where(diagonal != 0.0, diagonal, 1.0), 1.0)
    return _host_operator(op.shape, op.dtype, op.device, lambda x: inverse * x)


def _tolerances(dtype, tol, atol) -> tuple:
    """Warp's defaults: relative and absolute tolerance from the scalar type's epsilon."""
    eps = {wp.float64: 1.0e-16, wp.float16: 1.0e-4}.get(dtype, 1.0e-8)
    if tol is None and atol is None:
        tol = atol = eps ** 0.75
    elif tol is None:
        tol = atol
    elif atol is None:
        atol = tol
    return tol, max(atol, eps ** 2.25)


class LinearSolverState:
    """Warp's pre-allocated solver: holds the problem (A, b, x, M) and its settings; calling it runs the solver,
    optionally on substituted operands of the same shape, dtype, device and batch layout. Made by the solver
    functions with `run=False` or by the subclasses CG, CR, BiCGSTAB, GMRES."""

    def __init__(self, A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10,
                 use_cuda_graph=True):
        if type(self) is LinearSolverState:
            raise TypeError("LinearSolverState is not directly constructible: use CG, CR, BiCGSTAB or GMRES")
        self._A, self._M = aslinearoperator(A), aslinearoperator(M)
        self._b, self._x = b, x
        self._tol, self._atol = tol, atol
        self._callback, self._check_every = callback, check_every
        self._use_cuda_graph = use_cuda_graph
        self._device = self._A.device
        self._scalar_type = self._A.scalar_type
        self._batch_count = self._A.batch_count
        if maxiter is None or maxiter == 0:
            maxiter = int(np.asarray(b.numpy()).size) // self._batch_count
        self._maxiter = int(maxiter)
        self._cur_iter_and_condition = wp.empty((2,), dtype=wp.int32, device=self._device)
        self._configure()

    def _configure(self):
        """Settings that depend on maxiter (restart lengths)."""

    def _check_compatible(self, A, b, x, M):
        """Warp's checks of substituted operands (same words)."""
        if A is not self._A:
            for what in ("shape", "dtype", "device", "batch_count"):
                if getattr(A, what) != getattr(self._A, what):
                    raise ValueError(f"Incompatible A.{what}: expected {getattr(self._A, what)}, "
                                     f"got {getattr(A, what)}")
            if A.batch_offsets is not self._A.batch_offsets:
                raise ValueError("A.batch_offsets must be the same array as at construction")
            if A.max_batch_length != self._A.max_batch_length:
                raise ValueError("For batched systems, A.max_batch_length must match the value used at construction")
        for name, new, old in (("b", b, self._b), ("x", x, self._x)):
            if new is not old:
                for what in ("shape", "dtype"):
                    if getattr(new, what) != getattr(old, what):
                        raise ValueError(f"Incompatible {name}.{what}: expected {getattr(old, what)}, "
                                         f"got {getattr(new, what)}")
        if M is not None and self._M is not None and M is not self._M:
            for what in ("shape", "dtype"):
                if getattr(M, what) != getattr(self._M, what):
                    raise ValueError(f"Incompatible M.{what}: expected {getattr(self._M, what)}, "
                                     f"got {getattr(M, what)}")

    def __call__(self, A=None, b=None, x=None, M=None):
        """Run the solver (A, b, x, M: substitutes for the construction's operands). Returns (iterations,
        residual norm, absolute tolerance); with check_every=0 the three as device arrays (Warp's)."""
        A = aslinearoperator(A) if A is not None else self._A
        M = aslinearoperator(M) if M is not None else self._M
        b = b if b is not None else self._b
        x = x if x is not None else self._x
        self._check_compatible(A, b, x, M)
        problem = self._problem(A, b, x, M)
        iterations = self._iterations(problem)
        if self._check_every > 0:
            result = iterations_.run_loop(iterations, problem, self._maxiter, self._callback, self._check_every)
        else:
            result = self._run_device_style(iterations, problem)
        x.assign(problem.x.reshape(x.numpy().shape).astype(x.numpy().dtype))
        return result

    def _problem(self, A, b, x, M) -> iterations_.Problem:
        b_host = np.asarray(b.numpy(), dtype=np.float64).reshape(-1)
        x_host = np.asarray(x.numpy(), dtype=np.float64).reshape(-1).copy()
        offsets = None if A.batch_offsets is None else np.asarray(A.batch_offsets.numpy())
        batches = iterations_.Batches(offsets, b_host.size)
        rtol, atol = _tolerances(self._scalar_type, self._tol, self._atol)
        atol_sq = np.maximum(rtol * np.sqrt(batches.dot(b_host, b_host)), atol) ** 2
        apply_m = None if M is None else (lambda v: M._apply_like(v, b))
        return iterations_.Problem(lambda v: A._apply_like(v, b), apply_m, b_host, x_host, batches, atol_sq)

    def _run_device_style(self, iterations, problem) -> tuple:
        """check_every=0: every iteration up to maxiter, the results as arrays (Warp's, on a CPU device)."""
        done = iterations_.run_fixed(iterations, self._maxiter)
        if self._callback is not None:
            raise NotImplementedError("a callback with check_every=0 is a Warp kernel launched on the device; "
                                      "the kernels shim's warp.optim.linear calls Python callbacks only: use "
                                      "check_every > 0")
        self._cur_iter_and_condition.assign(np.array([done, 0], dtype=np.int32))
        scalar = self._scalar_type
        return (self._cur_iter_and_condition[0:1],
                wp.array(problem.r_norm_sq.astype(np.dtype(scalar._np_)), dtype=scalar, device=self._device),
                wp.array(problem.atol_sq.astype(np.dtype(scalar._np_)), dtype=scalar, device=self._device))


class _Restartable(LinearSolverState):
    """CG and CR: Warp's optional `restart` (a positive integer; a cycle of that many iterations ending with the
    true residual)."""

    def __init__(self, A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10,
                 use_cuda_graph=True, *, restart=None):
        if restart is not None:
            if isinstance(restart, bool):
                raise TypeError("restart must be an integer or None")
            try:
                restart = operator.index(restart)
            except TypeError as error:
                raise TypeError("restart must be an integer or None") from error
            if restart < 1:
                raise ValueError("restart must be positive")
        self._restart = restart
        super().__init__(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph)

    def _configure(self):
        if self._restart is not None:
            self._restart = max(1, min(self._restart, self._maxiter))
            if self._check_every > 0:
                self._check_every = max(self._check_every, self._restart)


class CG(_Restartable):
    """Warp's pre-allocated conjugate gradient solver (see `cg`)."""

    def _iterations(self, problem):
        return iterations_.CGIterations(problem, self._restart)


class CR(_Restartable):
    """Warp's pre-allocated conjugate residual solver (see `cr`)."""

    def _iterations(self, problem):
        return iterations_.CRIterations(problem, self._restart)


class BiCGSTAB(LinearSolverState):
    """Warp's pre-allocated BiCGSTAB solver (see `bicgstab`)."""

    def __init__(self, A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10,
                 use_cuda_graph=True, is_left_preconditioner=False):
        self._is_left_preconditioner = is_left_preconditioner
        super().__init__(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph)

    def _check_compatible(self, A, b, x, M):
        super()._check_compatible(A, b, x, M)
        if (M is None) != (self._M is None):  # Warp allocates by the construction's M
            raise ValueError("BiCGSTAB requires M to be consistently provided between construction and call "
                             "(both None or both non-None)")

    def _iterations(self, problem):
        return iterations_.BiCGSTABIterations(problem, self._is_left_preconditioner)


class GMRES(LinearSolverState):
    """Warp's pre-allocated restarted GMRES solver (see `gmres`)."""

    def __init__(self, A, b, x, tol=None, atol=None, restart=31, maxiter=0, M=None, callback=None,
                 check_every=31, use_cuda_graph=True, is_left_preconditioner=False):
        self._restart = restart
        self._is_left_preconditioner = is_left_preconditioner
        super().__init__(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph)

    def _configure(self):
        self._restart = min(int(self._restart), self._maxiter)  # Warp caps the cycle at maxiter
        if self._check_every > 0:
            self._check_every = max(self._restart, self._check_every)

    def _iterations(self, problem):
        return iterations_.GMRESIterations(problem, max(1, self._restart), self._is_left_preconditioner)


def cg(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10, use_cuda_graph=True,
       run=True, *, restart=None):
    """Conjugate gradients for a symmetric positive definite A (M: a preconditioner); x is the initial guess and
    receives the solution. `restart`: iterations per restart cycle (convergence checked at cycle ends). Returns
    (iterations, residual norm, absolute tolerance), or with `run=False` a CG functor."""
    state = CG(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph, restart=restart)
    return state() if run else state


def cr(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10, use_cuda_graph=True,
       run=True, *, restart=None):
    """Conjugate residuals for a symmetric (possibly indefinite) A; arguments and result as `cg`."""
    state = CR(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph, restart=restart)
    return state() if run else state


def bicgstab(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10, use_cuda_graph=True,
             is_left_preconditioner=False, run=True):
    """Biconjugate gradients stabilised for a general A (M right-preconditions, or left with
    `is_left_preconditioner`, as Warp uses it); arguments and result as `cg`."""
    state = BiCGSTAB(A, b, x, tol, atol, maxiter, M, callback, check_every, use_cuda_graph, is_left_preconditioner)
    return state() if run else state


def gmres(A, b, x, tol=None, atol=None, restart=31, maxiter=0, M=None, callback=None, check_every=31,
          use_cuda_graph=True, is_left_preconditioner=False, run=True):
    """Restarted GMRES(restart) for a general A; arguments and result as `cg` (M as in `bicgstab`). The residual
    is checked at the ends of restart cycles."""
    state = GMRES(A, b, x, tol, atol, restart, maxiter, M, callback, check_every, use_cuda_graph,
                  is_left_preconditioner)
    return state() if run else state


class FSAI:
    """Warp's factorized sparse approximate inverse: it needs a warp.sparse matrix (refused)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"FSAI needs a warp.sparse matrix: {_SPARSE}")
