"""Sweeps: many runs of a scene (`sim run`) or an optimisation (`sim optimize`) over a grid or zip of overrides,
fanned out as Ray tasks (or local processes without Ray), one row per run in DIR/results.csv and .parquet.
`sim sweep configs/sweeps/<name>.yaml` or `sim.sweep(path)`; the file format is in `spec.py`."""

from .driver import sweep
from .spec import Run, SweepSpec, load_sweep

__all__ = ["sweep", "load_sweep", "SweepSpec", "Run"]
