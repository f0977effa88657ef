"""Rigid-body solver: free bodies with penalty contacts (see solver.py)."""

from .solver import SolverRigid

__all__ = ["SolverRigid"]
