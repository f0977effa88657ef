"""Semi-implicit (symplectic) Euler solver for particles and cloth."""

from .solver import SolverSemiImplicit

__all__ = ["SolverSemiImplicit"]
