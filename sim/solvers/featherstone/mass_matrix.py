"""Factor and solve the joint-space mass matrix: H qdd = tau per articulation, the one place SolverFeatherstone
does dense linear algebra (so that it can move to tiles, `wp.tile_cholesky` / `wp.tile_cholesky_solve`, when
the kernel language has them).

Now: a dense Cholesky factorisation H = L L^T and two triangular solves, one thread per articulation, loops over
its dofs (as warp.sim's Featherstone did). The factorisation reads entries of L it wrote, which the compiler's
adjoint refuses (rightly: it cannot tell the order of reads and writes of one array), so the gradient is given
by hand: on a Tape the solve records its own backward, the adjoint of qdd = H^-1 tau:
tau.grad += z and H.grad -= z qdd^T (on the lower triangle, the part the factorisation reads, symmetrised)
with z = H^-1 qdd.grad.
"""

from __future__ import annotations

import kernels as wp
from kernels.launch import tape_hooks

#: smallest pivot squared accepted [kg m^2]; a singular mass matrix (a massless chain) is regularised to it
PIVOT_FLOOR = wp.constant(1.0e-12)


@wp.kernel
def cholesky_solve(H: wp.array(dtype=float), H_start: wp.array(dtype=wp.int32),
                   dof_start: wp.array(dtype=wp.int32), tau: wp.array(dtype=float), L: wp.array(dtype=float),
                   y: wp.array(dtype=float), qdd: wp.array(dtype=float)):
    """qdd = H^-1 tau for articulation k (dofs dof_start[k]..dof_start[k+1], matrix row-major at H_start[k]);
    L (its Cholesky factor, lower) and y = L^-1 tau are written on the way."""
    k = wp.tid()
    d0 = dof_start[k]
    n = dof_start[k + 1] - d0
    h0 = H_start[k]
    for j in range(n):
        s = H[h0 + j * n + j]
        for c in range(j):
            s = s - L[h0 + j * n + c] * L[h0 + j * n + c]
        pivot = wp.sqrt(wp.max(s, PIVOT_FLOOR))
        L[h0 + j * n + j] = pivot
        for r in range(j + 1, n):
            t = H[h0 + r * n + j]
            for c in range(j):
                t = t - L[h0 + r * n + c] * L[h0 + j * n + c]
            L[h0 + r * n + j] = t / pivot
    forward_substitute(L, h0, d0, n, tau, y)
    back_substitute(L, h0, d0, n, y, qdd)


@wp.func
def forward_substitute(L: wp.array(dtype=float), h0: int, d0: int, n: int, b: wp.array(dtype=float),
                       y: wp.array(dtype=float)):
    """y = L^-1 b for the n x n lower factor at L[h0:], vectors at offset d0."""
    for r in range(n):
        t = b[d0 + r]
        for c in range(r):
            t = t - L[h0 + r * n + c] * y[d0 + c]
        y[d0 + r] = t / L[h0 + r * n + r]


@wp.func
def back_substitute(L: wp.array(dtype=float), h0: int, d0: int, n: int, y: wp.array(dtype=float),
                    x: wp.array(dtype=float)):
    """x = L^-T y for the n x n lower factor at L[h0:], vectors at offset d0."""
    for back in range(n):
        r = n - 1 - back
        t = y[d0 + r]
        for c in range(r + 1, n):
            t = t - L[h0 + c * n + r] * x[d0 + c]
        x[d0 + r] = t / L[h0 + r * n + r]


@wp.kernel
def cholesky_solve_adjoint(L: wp.array(dtype=float), H_start: wp.array(dtype=wp.int32),
                           dof_start: wp.array(dtype=wp.int32), qdd: wp.array(dtype=float),
                           qdd_grad: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float),
                           tau_grad: wp.array(dtype=float), H_grad: wp.array(dtype=float)):
    """The backward of cholesky_solve for articulation k: z = H^-1 qdd_grad; tau_grad += z; the lower triangle
    of H_grad -= z qdd^T + qdd z^T (the diagonal once)."""
    k = wp.tid()
    d0 = dof_start[k]
    n = dof_start[k + 1] - d0
    h0 = H_start[k]
    forward_substitute(L, h0, d0, n, qdd_grad, y)
    back_substitute(L, h0, d0, n, y, z)
    for r in range(n):
        tau_grad[d0 + r] = tau_grad[d0 + r] + z[d0 + r]
        H_grad[h0 + r * n + r] = H_grad[h0 + r * n + r] - z[d0 + r] * qdd[d0 + r]
        for c in range(r):
            g = z[d0 + r] * qdd[d0 + c] + z[d0 + c] * qdd[d0 + r]
            H_grad[h0 + r * n + c] = H_grad[h0 + r * n + c] - g


def solve_mass_matrix(H, H_start, dof_start, tau, qdd, articulation_count: int, device):
    """qdd [joint_dof_count] = H^-1 tau per articulation. H: the stacked dense matrices (see
    kernels.eval_mass_matrix), H_start [articulation_count] their offsets, dof_start [articulation_count + 1]
    each articulation's first dof. On an autodiff.Tape, the backward (cholesky_solve_adjoint) is recorded with
    it; fresh scratch arrays per call keep a taped rollout's steps apart."""
    L = wp.zeros(H.shape[0], dtype=float, device=device)
    y = wp.zeros(tau.shape[0], dtype=float, device=device)
    tape = getattr(tape_hooks[-1], "__self__", None) if tape_hooks else None
    if tape is None or not hasattr(tape, "record_func"):
        # no Tape (or a launch collector that replays the forward itself): an ordinary launch
        wp.launch(cholesky_solve, dim=articulation_count, inputs=[H, H_start, dof_start, tau],
                  outputs=[L, y, qdd], device=device)
        return
    wp.launch(cholesky_solve, dim=articulation_count, inputs=[H, H_start, dof_start, tau], outputs=[L, y, qdd],
              device=device, record_tape=False)

    def backward():
        if qdd.grad is None or tau.grad is None or H.grad is None:
            return
        scratch = [wp.zeros(tau.shape[0], dtype=float, device=device) for _ in range(2)]
        wp.launch(cholesky_solve_adjoint, dim=articulation_count,
                  inputs=[L, H_start, dof_start, qdd, qdd.grad, *scratch], outputs=[tau.grad, H.grad],
                  device=device, record_tape=False)

    tape.record_func(backward, [a for a in (H, tau, qdd) if a.grad is not None])
