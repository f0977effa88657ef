"""Solvers: one folder each (solver.py + kernels.py), all with `step(model, state_in, state_out, control, dt)`.

Add a solver with one import line; `__all__` lists every imported `Solver*` class.
"""

from .featherstone import SolverFeatherstone
from .rigid import SolverRigid
from .semi_implicit import SolverSemiImplicit
from .xpbd import SolverXPBD

__all__ = sorted(name for name in dir() if name.startswith("Solver"))
