"""Articulation solver in reduced coordinates (Featherstone's algorithms; see solver.py)."""

from .solver import SolverFeatherstone

__all__ = ["SolverFeatherstone"]
