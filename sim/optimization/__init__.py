"""Optimisation of scene parameters through the simulation: `sim optimize config.yaml` or `sim.optimize(path)`.
The config format is in `config.py` (documented in docs/optimize.md)."""

from .config import OptimizeConfig, load_config
from .params import LearnedParameter, resolve
from .api import optimize
from .run import OptimizeResult, Problem

__all__ = ["optimize", "OptimizeResult", "OptimizeConfig", "load_config", "Problem", "LearnedParameter", "resolve"]
