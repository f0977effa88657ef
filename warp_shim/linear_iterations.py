"""The iterations of warp.optim.linear's solvers on the host, in float64, batched as Warp batches them.

A system may hold several independent subproblems (a LinearOperator's `batch_offsets`: scalar degrees of
freedom [offsets[i], offsets[i+1]) form subproblem i; those at or past offsets[-1] are inactive and never
change). Every scalar of an iteration (step lengths, dot products, tolerances) is one per subproblem; a
subproblem whose residual meets its own tolerance stops moving (Warp's kernels take a zero step for it), and a
solve ends when all of them meet theirs. The loop is Warp's `_run_solver_loop`: iterations in cycles (one
iteration, or a restart cycle), the residual checked every `check_every` iterations, the callback called with
(iteration, worst residual norm, worst absolute tolerance). The algorithms follow Warp's CG, CR, BiCGSTAB and
GMRES step by step; the arithmetic is float64 here where Warp's device kernels use the system's scalar type,
so iteration counts can differ from Warp's by a few while every result meets the same tolerance rule.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np


class Batches:
    """The subproblems of a system of `n` scalar unknowns (`offsets`: Warp's batch_offsets, or None: one)."""

    def __init__(self, offsets, n: int):
        if offsets is None:
            offsets = np.array([0, n])
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
        self.segments = [(int(s), int(e)) for s, e in zip(offsets[:-1], offsets[1:])]
        self.sizes = np.array([e - s for s, e in self.segments], dtype=np.int64)
        self.end = int(offsets[-1]) if offsets.size else 0
        self.n = n
        self.count = len(self.segments)

    def dot(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Per-subproblem dot products, shape [count]."""
        return np.array([float(u[s:e] @ v[s:e]) for s, e in self.segments])

    def expand(self, per_batch: np.ndarray) -> np.ndarray:
        """A per-subproblem value on each of its unknowns; 0 on the inactive ones."""
        out = np.zeros(self.n)
        out[:self.end] = np.repeat(per_batch, self.sizes)
        return out

    def masked(self, v: np.ndarray) -> np.ndarray:
        """`v` with its inactive entries zeroed (a direction never moves them)."""
        v = v.copy()
        v[self.end:] = 0.0
        return v


def _ratio(num, den, active) -> np.ndarray:
    """num / den where a subproblem is active and den is not 0, else 0 (Warp's zero step)."""
    ok = active & (den != 0.0)
    return np.where(ok, num / np.where(ok, den, 1.0), 0.0)


class Problem:
    """What an iteration works on: the operators as host functions, the vectors and the tolerances."""

    def __init__(self, apply_a: Callable, apply_m: Callable | None, b: np.ndarray, x: np.ndarray,
                 batches: Batches, atol_sq: np.ndarray):
        self.apply_a, self.apply_m = apply_a, apply_m
        self.b, self.x, self.batches, self.atol_sq = b, x, batches, atol_sq
        self.r_norm_sq = np.zeros(batches.count)

    def precondition(self, v: np.ndarray) -> np.ndarray:
        return v.copy() if self.apply_m is None else self.apply_m(v)

    def residual(self) -> np.ndarray:
        return self.b - self.apply_a(self.x)

    def active(self) -> np.ndarray:
        return self.r_norm_sq > self.atol_sq


class CGIterations:
    """Warp's CG (preconditioned when M is given), with its optional restart cycle."""

    def __init__(self, p: Problem, restart: int | None):
        self.p, self.restart = p, restart
        self.cycle_size = restart or 1
        self.start()

    def start(self):
        p = self.p
        self.r = p.batches.masked(p.residual())
        self.update_rr_rz()
        self.d = self.z.copy()

    def update_rr_rz(self):
        p = self.p
        self.z = p.batches.masked(p.precondition(self.r))
        p.r_norm_sq = p.batches.dot(self.r, self.r)
        self.rz = p.batches.dot(self.r, self.z)

    def iteration(self, update_direction: bool = True):
        p, B = self.p, self.p.batches
        rz_old = self.rz
        ad = p.apply_a(self.d)
        alpha = B.expand(_ratio(rz_old, B.dot(self.d, ad), p.active()))
        p.x += alpha * self.d
        self.r = B.masked(self.r - alpha * ad)
        if update_direction:
            self.update_rr_rz()
            beta = B.expand(_ratio(self.rz, rz_old, p.active()))
            self.d = self.z + beta * self.d

    def cycle(self):
        if self.restart is None:
            self.iteration()
            return
        for _ in range(self.restart - 1):
            self.iteration()
        self.iteration(update_direction=False)
        self.start()  # the true residual replaces the recursive one; the direction restarts from it


class CRIterations:
    """Warp's conjugate residuals (preconditioned when M is given), with its optional restart cycle."""

    def __init__(self, p: Problem, restart: int | None):
        self.p, self.restart = p, restart
        self.cycle_size = restart or 1
        self.start()

    def start(self):
        p = self.p
        self.r = p.batches.masked(p.residual())
        self.z = p.batches.masked(p.precondition(self.r))
        self.update_rr_zaz()
        self.d, self.ad = self.z.copy(), self.az.copy()

    def update_rr_zaz(self):
        p = self.p
        self.az = p.apply_a(self.z)
        p.r_norm_sq = p.batches.dot(self.r, self.r)
        self.zaz = p.batches.dot(self.z, self.az)

    def iteration(self, update_direction: bool = True):
        p, B = self.p, self.p.batches
        zaz_old = self.zaz
        y = B.masked(p.precondition(self.ad))
        alpha = B.expand(_ratio(zaz_old, B.dot(self.ad, y), p.active()))
        p.x += alpha * self.d
        self.r = B.masked(self.r - alpha * self.ad)
        self.z = B.masked(self.z - alpha * y) if p.apply_m is not None else self.r.copy()
        if update_direction:
            self.update_rr_zaz()
            beta = B.expand(_ratio(self.zaz, zaz_old, p.active()))
            self.d = self.z + beta * self.d
            self.ad = self.az + beta * self.ad

    def cycle(self):
        if self.restart is None:
            self.iteration()
            return
        for _ in range(self.restart - 1):
            self.iteration()
        self.iteration(update_direction=False)
        self.start()


class BiCGSTABIterations:
    """Warp's BiCGSTAB: M right-preconditions, or enters the stabilising step's projection with
    `left`; the residual checked is always b - A x."""

    cycle_size = 1

    def __init__(self, p: Problem, left: bool):
        self.p, self.left = p, left and p.apply_m is not None
        B = p.batches
        self.r = B.masked(p.residual())
        p.r_norm_sq = B.dot(self.r, self.r)
        self.d, self.r0 = self.r.copy(), self.r.copy()
        self.rho = p.r_norm_sq.copy()

    def cycle(self):
        p, B = self.p, self.p.batches
        y = B.masked(p.precondition(self.d))
        v = B.masked(p.apply_a(y))
        r0v = B.dot(self.r0, v)
        alpha = B.expand(_ratio(self.rho, r0v, p.active()))
        p.x += alpha * y
        self.r = B.masked(self.r - alpha * v)
        p.r_norm_sq = B.dot(self.r, self.r)
        z = B.masked(p.precondition(self.r))
        t = B.masked(p.apply_a(z))
        if self.left:
            mt = B.masked(p.apply_m(t))
            st, tt = B.dot(z, mt), B.dot(mt, mt)
        else:
            st, tt = B.dot(self.r, t), B.dot(t, t)
        active = p.active()
        omega = B.expand(_ratio(st, tt, active))
        p.x += omega * z
        self.r = B.masked(self.r - omega * t)
        p.r_norm_sq = B.dot(self.r, self.r)
        self.rho = B.dot(self.r0, self.r)
        active = p.active()
        beta = B.expand(_ratio(self.rho * tt, r0v * st, active))
        beta_omega = B.expand(_ratio(self.rho, r0v, active))
        self.d = self.r + beta * self.d - beta_omega * v


class GMRESIterations:
    """Warp's restarted GMRES: each cycle runs `restart` Arnoldi steps (Gram-Schmidt per subproblem), solves each
    subproblem's small least-squares problem and updates x; M left- or right-preconditions. The residual
    checked is b - A x."""

    def __init__(self, p: Problem, restart: int, left: bool):
        self.p, self.restart = p, restart
        self.left = left and p.apply_m is not None
        self.cycle_size = restart
        self.r = p.residual()
        p.r_norm_sq = p.batches.dot(self.r, self.r)

    def operator(self, v: np.ndarray) -> np.ndarray:
        p = self.p
        if p.apply_m is None:
            return p.apply_a(v)
        return p.apply_m(p.apply_a(v)) if self.left else p.apply_a(p.apply_m(v))

    def cycle(self):
        p, B, m = self.p, self.p.batches, self.restart
        rh = B.masked(p.apply_m(self.r) if self.left else self.r)
        beta = np.sqrt(np.maximum(B.dot(rh, rh), 0.0))
        basis = [B.masked(rh * B.expand(_ratio(1.0, beta, np.ones(B.count, bool))))]
        hess = np.zeros((B.count, m + 1, m))
        for j in range(m):
            w = B.masked(self.operator(basis[j]))
            dots = [B.dot(w, basis[i]) for i in range(j + 1)]  # all against w at once, as Warp computes them
            for i, h in enumerate(dots):
                hess[:, i, j] = h
                w = w - B.expand(h) * basis[i]
            norm = np.sqrt(np.maximum(B.dot(w, w), 0.0))
            hess[:, j + 1, j] = norm
            basis.append(B.masked(w * B.expand(_ratio(1.0, norm, np.ones(B.count, bool)))))
        step = np.zeros(B.n)
        for k in range(B.count):
            rhs = np.zeros(m + 1)
            rhs[0] = beta[k]
            y = np.linalg.lstsq(hess[k], rhs, rcond=None)[0]
            s, e = B.segments[k]
            for j in range(m):
                step[s:e] += y[j] * basis[j][s:e]
        if self.left or p.apply_m is None:
            p.x += step
        else:
            p.x += B.masked(p.apply_m(step))
        self.r = p.residual()
        p.r_norm_sq = B.dot(self.r, self.r)


def run_loop(iterations, p: Problem, maxiter: int, callback: Callable | None, check_every: int) -> tuple:
    """Warp's host loop: (iterations done, worst residual norm, worst absolute tolerance)."""
    cycle_size = iterations.cycle_size
    atol = math.sqrt(float(p.atol_sq.max()))
    check_every = max(check_every, cycle_size)
    cur_iter = 0
    err = math.sqrt(float(p.r_norm_sq.max()))
    if callback is not None:
        callback(cur_iter, err, atol)
    if (p.r_norm_sq <= p.atol_sq).all():
        return cur_iter, err, atol
    while True:
        iterations.cycle()
        cur_iter += cycle_size
        if cur_iter >= maxiter:
            break
        if cur_iter % check_every < cycle_size:
            if (p.r_norm_sq <= p.atol_sq).all():
                break
            if callback is not None:
                callback(cur_iter, math.sqrt(float(p.r_norm_sq.max())), atol)
    err = math.sqrt(float(p.r_norm_sq.max()))
    if callback is not None:
        callback(cur_iter, err, atol)
    return cur_iter, err, atol


def run_fixed(iterations, maxiter: int) -> int:
    """Warp's loop without host checks (check_every=0) on a device without conditional graphs: every cycle up to
    maxiter runs (subproblems that converged take zero steps); returns the iteration count Warp reports."""
    cur_iter = 0
    for _ in range(0, maxiter, iterations.cycle_size):
        iterations.cycle()
        cur_iter += iterations.cycle_size
    return cur_iter


class _ArrayLoop:
    """Warp's `_run_solver_loop` arguments (device arrays of squared norms and tolerances, a cycle function) seen
    as what run_loop reads."""

    def __init__(self, do_cycle, cycle_size, r_norm_sq, atol_sq):
        self.cycle, self.cycle_size = do_cycle, cycle_size
        self._r_norm_sq, self.atol_sq = r_norm_sq, np.asarray(atol_sq.numpy(), dtype=np.float64)

    @property
    def r_norm_sq(self):
        return np.asarray(self._r_norm_sq.numpy(), dtype=np.float64)


def run_solver_loop(do_cycle, cycle_size, r_norm_sq, maxiter, atol_sq, callback, check_every, use_cuda_graph,
                    device) -> tuple:
    """run_loop with Warp's `_run_solver_loop` signature: `r_norm_sq` and `atol_sq` are arrays that `do_cycle`
    updates (per subproblem); `use_cuda_graph` and `device` have no effect on the host."""
    loop = _ArrayLoop(do_cycle, cycle_size, r_norm_sq, atol_sq)
    return run_loop(loop, loop, maxiter, callback, check_every)
