"""Factor and solve the joint-space mass matrix with tiles: H qdd = tau per articulation, the one place
SolverFeatherstone does dense linear algebra.

One block per articulation loads its matrix as an N x N tile (N: the model's largest number of dofs in an
articulation, a compile-time constant: one kernel per N), factors it (`wp.tile_cholesky`) and solves
(`wp.tile_cholesky_solve`). Articulations with n < N dofs are padded with the identity (so the tile stays
symmetric positive definite) and a zero right-hand side, whose solution, 0, is not stored. An ordinary kernel
launch: on a Tape its backward is the tiles' adjoints.
"""

from __future__ import annotations

import kernels as wp

_SOLVE_KERNELS = {}


def _solve_kernel(size: int):
    """The kernel solving H qdd = tau for articulations of at most `size` dofs."""
    def solve_mass_matrix_tiled(H: wp.array3d(dtype=float), dof_start: wp.array(dtype=wp.int32),
                                tau: wp.array(dtype=float), qdd: wp.array(dtype=float)):
        # articulation k: dofs dof_start[k] .. dof_start[k + 1], its matrix H[k] (the upper left n x n block)
        k = wp.tid()
        d0 = dof_start[k]
        n = dof_start[k + 1] - d0
        h = wp.tile_load(H[k], shape=(size, size))
        rhs = wp.tile_zeros(shape=size, dtype=float)
        for j in range(n):
            rhs[j] = tau[d0 + j]
        for j in range(n, size):
            h[j, j] = 1.0
        x = wp.tile_cholesky_solve(wp.tile_cholesky(h), rhs)
        for j in range(n):
            qdd[d0 + j] = x[j]

    return wp.kernel(solve_mass_matrix_tiled, module="unique", name=f"solve_mass_matrix_{size}")


def solve_kernel(size: int):
    """The (cached) tiled solve for articulations of at most `size` >= 1 dofs."""
    if size not in _SOLVE_KERNELS:
        _SOLVE_KERNELS[size] = _solve_kernel(size)
    return _SOLVE_KERNELS[size]


def solve_mass_matrix(H, dof_start, tau, qdd, device):
    """qdd [joint_dof_count] = H^-1 tau per articulation. H [articulation_count, N, N]: each articulation's mass
    matrix in its upper left block, zero elsewhere (see kernels.eval_mass_matrix); dof_start
    [articulation_count + 1]: each articulation's first dof. A singular H (a massless leaf body without armature)
    gives NaN accelerations."""
    articulation_count, size = H.shape[0], H.shape[1]
    wp.launch_tiled(solve_kernel(size), dim=articulation_count, inputs=[H, dof_start, tau], outputs=[qdd],
                    block_dim=32, device=device)
