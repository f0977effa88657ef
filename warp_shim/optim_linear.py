"""Warp's `warp.optim.linear` for dense systems: the iterative solvers `cg`, `cr`, `bicgstab`, `gmres`, the Jacobi
`preconditioner`, `LinearOperator` and `aslinearoperator`, with Warp's signatures and results.

A matrix is a 2-d array (dense), a 1-d array (a diagonal) or a `LinearOperator` whose `matvec(x, y, z, alpha,
beta)` computes z = alpha A x + beta y. The iterations run on the host in float64 (the solution is written back
to `x` in its dtype), so iteration counts may differ from Warp's device kernels while the result meets the same
tolerance: the absolute tolerance is max(atol, tol |b|) with Warp's dtype-dependent defaults, convergence is
checked every `check_every` iterations (and before the first), and a call returns (iterations, residual norm,
absolute tolerance) as Warp's does. `warp.sparse` matrices, batched operators (`batch_offsets`), pre-allocated
solver functors (`run=False`, CG/CR/BiCGSTAB/GMRES classes), device-side checks (`check_every=0`) and the
block-Jacobi/FSAI preconditioners are refused with one clear error each.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

import kernels as wp

__all__ = ["LinearOperator", "aslinearoperator", "preconditioner", "cg", "cr", "bicgstab", "gmres", "CG", "CR",
           "BiCGSTAB", "GMRES", "FSAI", "LinearSolverState"]

_SPARSE = ("warp.optim.linear here takes dense matrices (2-d arrays), diagonals (1-d arrays) and LinearOperator; "
           "warp.sparse matrices are outside the kernel layer (not provided by the kernels shim)")


class LinearOperator:
    """A linear map for the solvers (Warp's class): `shape` (rows, cols), `dtype`, `device` and
    `matvec(x, y, z, alpha, beta)` computing z = alpha A x + beta y (arrays of `dtype`)."""

    def __init__(self, shape, dtype, device, matvec: Callable, batch_offsets=None, max_batch_length=None):
        if batch_offsets is not None or max_batch_length is not None:
            raise NotImplementedError("batched linear operators (batch_offsets) are not supported by the kernels "
                                      "shim's warp.optim.linear: solve each system on its own")
        self._shape, self._dtype, self._device, self._matvec = tuple(shape), dtype, device, matvec
        self.batch_offsets, self.max_batch_length = None, None

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

    def _layout(self, scalars: int) -> tuple:
        width = int(np.prod(getattr(self._dtype, "_shape_", ()) or (1,)))
        return (scalars // width, width) if width > 1 else (scalars,)


def _host_operator(shape, dtype, device, host: Callable) -> LinearOperator:
    """A LinearOperator of a matrix known on the host: `host(x)` gives A x in float64; matvec works on arrays."""

    def matvec(x, y, z, alpha, beta):
        ax = host(np.asarray(x.numpy(), dtype=np.float64).reshape(-1))
        out = float(alpha) * ax + float(beta) * np.asarray(y.numpy(), dtype=np.float64).reshape(-1)
        z.assign(out.reshape(z.numpy().shape).astype(z.numpy().dtype))

    op = LinearOperator(shape, dtype, device, matvec)
    op._host = host
    return op


def aslinearoperator(A, batch_offsets=None, max_batch_length=None) -> LinearOperator | None:
    """`A` as a LinearOperator: a 2-d array is a dense matrix, a 1-d array a diagonal; a LinearOperator or None
    is returned as it is.

    Raises:
        TypeError: `A` is a warp.sparse matrix or another type.
        NotImplementedError: `batch_offsets` or `max_batch_length` is given.
    """
    if A is None or isinstance(A, LinearOperator):
        return A
    if batch_offsets is not None or max_batch_length is not None:
        raise NotImplementedError("batched linear operators (batch_offsets) are not supported by the kernels "
                                  "shim's warp.optim.linear: solve each system on its own")
    if not isinstance(A, wp.array) or A.ndim not in (1, 2):
        raise TypeError(f"{_SPARSE}; got {type(A).__name__}")
    values = np.asarray(A.numpy(), dtype=np.float64)
    if A.ndim == 2:
        if wp.types.is_composite(A.dtype):
            raise TypeError("a dense matrix here is a 2-d array of scalars")
        return _host_operator(A.shape, A.dtype, A.device, lambda x: values @ x)
    diagonal = values.reshape(-1)
    return _host_operator((diagonal.size, diagonal.size), A.dtype, A.device, lambda x: diagonal * x)


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


class _Solve:
    """What the four solvers share: operands on the host, the tolerance, the check schedule and the result."""

    def __init__(self, A, b, x, tol, atol, maxiter, M, callback, check_every, run, batched_ok=False):
        if not run:
            raise NotImplementedError("pre-allocated solver functors (run=False) are not supported by the kernels "
                                      "shim's warp.optim.linear: call the solver function each time")
        if check_every == 0:
            raise NotImplementedError("device-side convergence checks (check_every=0, for CUDA graph capture) are "
                                      "not supported by the kernels shim's warp.optim.linear")
        self.A = aslinearoperator(A)
        self.M = aslinearoperator(M)
        self.x_array = x
        self.b = np.asarray(b.numpy(), dtype=np.float64).reshape(-1)
        self.x = np.asarray(x.numpy(), dtype=np.float64).reshape(-1).copy()
        rtol, atol_ = _tolerances(wp.types.scalar_type(b.dtype), tol, atol)
        self.atol = max(rtol * float(np.linalg.norm(self.b)), atol_)
        self.maxiter = int(maxiter) if maxiter else self.b.size
        self.callback, self.check_every = callback, int(check_every)

    def precondition(self, v: np.ndarray) -> np.ndarray:
        return v.copy() if self.M is None else self.M._apply(v)  # a copy: solvers update both in place

    def checks(self, i: int, err: float) -> bool:
        """At a check iteration: call the callback and say whether the residual meets the tolerance."""
        if i % self.check_every != 0 and i < self.maxiter:
            return False
        if self.callback is not None:
            self.callback(i, err, self.atol)
        return err <= self.atol

    def result(self, i: int, err: float) -> tuple:
        self.x_array.assign(self.x.reshape(self.x_array.numpy().shape).astype(self.x_array.numpy().dtype))
        return i, err, self.atol


def cg(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10, use_cuda_graph=True,
       run=True, *, restart=None):
    """Conjugate gradients for a symmetric positive definite A (M: a preconditioner); x is the initial guess and
    receives the solution. Returns (iterations, residual norm, absolute tolerance)."""
    s = _Solve(A, b, x, tol, atol, maxiter, M, callback, check_every, run)
    r = s.b - s.A._apply(s.x)
    z = s.precondition(r)
    p, rz = z.copy(), float(r @ z)
    i = 0
    while True:
        err = float(np.sqrt(r @ r))
        if s.checks(i, err) or i >= s.maxiter or rz == 0.0:
            return s.result(i, err)
        if restart and i > 0 and i % restart == 0:  # a fresh residual and direction, as Warp's restart does
            r = s.b - s.A._apply(s.x)
            z = s.precondition(r)
            p, rz = z.copy(), float(r @ z)
        ap = s.A._apply(p)
        pap = float(p @ ap)
        if pap == 0.0:
            return s.result(i, err)
        alpha = rz / pap
        s.x += alpha * p
        r -= alpha * ap
        z = s.precondition(r)
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
        i += 1


def cr(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10, use_cuda_graph=True,
       run=True, *, restart=None):
    """Conjugate residuals for a symmetric (possibly indefinite) A; arguments and result as `cg`."""
    s = _Solve(A, b, x, tol, atol, maxiter, M, callback, check_every, run)

    def start():
        r = s.b - s.A._apply(s.x)
        z = s.precondition(r)
        az = s.A._apply(z)
        return r, z, z.copy(), az, az.copy(), float(z @ az)

    r, z, p, az, ap, zaz = start()
    i = 0
    while True:
        err = float(np.sqrt(r @ r))
        if s.checks(i, err) or i >= s.maxiter or zaz == 0.0:
            return s.result(i, err)
        if restart and i > 0 and i % restart == 0:
            r, z, p, az, ap, zaz = start()
        y = s.precondition(ap)
        denominator = float(ap @ y)
        if denominator == 0.0:
            return s.result(i, err)
        alpha = zaz / denominator
        s.x += alpha * p
        r -= alpha * ap
        z -= alpha * y
        az = s.A._apply(z)
        zaz_new = float(z @ az)
        beta = zaz_new / zaz
        p = z + beta * p
        ap = az + beta * ap
        zaz = zaz_new
        i += 1


def bicgstab(A, b, x, tol=None, atol=None, maxiter=0, M=None, callback=None, check_every=10, use_cuda_graph=True,
             is_left_preconditioner=False, run=True):
    """Biconjugate gradients stabilised for a general A (M right-preconditions, or left with
    `is_left_preconditioner`); arguments and result as `cg`. With a left preconditioner the residual checked is
    that of M A x = M b, as in Warp."""
    s = _Solve(A, b, x, tol, atol, maxiter, M, callback, check_every, run)
    left = is_left_preconditioner and s.M is not None

    def op(v):  # the operator iterated on: M A (left) or A M (right)
        return s.precondition(s.A._apply(v)) if left else s.A._apply(s.precondition(v))

    r = s.b - s.A._apply(s.x)
    if left:
        r = s.precondition(r)
    r0, p = r.copy(), r.copy()
    rho = float(r0 @ r)
    i = 0
    while True:
        err = float(np.sqrt(r @ r))
        if s.checks(i, err) or i >= s.maxiter or rho == 0.0:
            return s.result(i, err)
        v = op(p)
        r0v = float(r0 @ v)
        if r0v == 0.0:
            return s.result(i, err)
        alpha = rho / r0v
        h = r - alpha * v
        t = op(h)
        tt = float(t @ t)
        omega = float(t @ h) / tt if tt != 0.0 else 0.0
        step = alpha * p + omega * h
        s.x += step if left else s.precondition(step)
        r = h - omega * t
        rho_new = float(r0 @ r)
        if omega == 0.0:
            err = float(np.sqrt(r @ r))
            return s.result(i + 1, err)
        p = r + (rho_new / rho) * (alpha / omega) * (p - omega * v)
        rho = rho_new
        i += 1


def gmres(A, b, x, tol=None, atol=None, restart=31, maxiter=0, M=None, callback=None, check_every=31,
          use_cuda_graph=True, is_left_preconditioner=False, run=True):
    """Restarted GMRES(restart) for a general A; arguments and result as `cg` (M as in `bicgstab`). The residual
    is checked at the end of each restart cycle."""
    s = _Solve(A, b, x, tol, atol, maxiter, M, callback, check_every, run)
    left = is_left_preconditioner and s.M is not None
    m = max(1, int(restart))

    def residual():
        r = s.b - s.A._apply(s.x)
        return s.precondition(r) if left else r

    i = 0
    r = residual()
    while True:
        err = float(np.linalg.norm(r))
        if err <= s.atol or i >= s.maxiter:
            if s.callback is not None:
                s.callback(i, err, s.atol)
            return s.result(i, err)
        basis = [r / err]
        hess = np.zeros((m + 1, m))
        k = 0
        for k in range(min(m, s.maxiter - i)):
            w = s.precondition(s.A._apply(basis[k])) if left else s.A._apply(s.precondition(basis[k]))
            for j in range(k + 1):  # modified Gram-Schmidt
                hess[j, k] = float(w @ basis[j])
                w = w - hess[j, k] * basis[j]
            hess[k + 1, k] = float(np.linalg.norm(w))
            if hess[k + 1, k] == 0.0:
                break
            basis.append(w / hess[k + 1, k])
        cols = k + 1
        rhs = np.zeros(cols + 1)
        rhs[0] = err
        y = np.linalg.lstsq(hess[:cols + 1, :cols], rhs, rcond=None)[0]
        step = np.array(basis[:cols]).T @ y
        s.x += step if left else s.precondition(step)
        i += cols
        r = residual()
        if s.callback is not None and i % s.check_every == 0:
            s.callback(i, float(np.linalg.norm(r)), s.atol)


def _functor(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"warp.optim.linear.{name} (a pre-allocated solver functor) is not supported by "
                                  "the kernels shim: call the solver function instead")
    return type(name, (), {"__init__": refuse, "__doc__": f"Warp's {name} functor: refused (see the module)."})


CG, CR, BiCGSTAB, GMRES, LinearSolverState = (_functor(n) for n in ("CG", "CR", "BiCGSTAB", "GMRES",
                                                                    "LinearSolverState"))


class FSAI:
    """Warp's factorized sparse approximate inverse: it needs a warp.sparse matrix (refused)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"FSAI needs a warp.sparse matrix: {_SPARSE}")
