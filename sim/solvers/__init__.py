"""Solvers: one folder each (solver.py + kernels.py), every one a `Solver` (base.py: `step(model, state_in,
state_out, control, dt)`, `notify_model_changed`, declared capabilities), listed in registry.py.

`__all__` lists `Solver`, `ModelChange` and every registered `Solver*` class.
"""

from .base import ModelChange, Solver  # noqa: F401  (public names of the package)
from .registry import SOLVERS

globals().update({cls.__name__: cls for cls in SOLVERS.values()})

__all__ = ["Solver", "ModelChange"] + sorted(cls.__name__ for cls in SOLVERS.values())
