"""XPBD solver: extended position-based dynamics with Jacobi iterations (solver.py), its kernels (kernels.py)."""

from .solver import SolverXPBD

__all__ = ["SolverXPBD"]
