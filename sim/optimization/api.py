"""`optimize(config)`: one start (run.py) or, with a population of several, all of them at once as worlds of one
model (population_run.py)."""

from __future__ import annotations

from .config import OptimizeConfig, load_config
from .population_run import optimize_population
from .run import OptimizeResult
from .run import optimize as optimize_one


def population_size(cfg: OptimizeConfig, population: int | None = None) -> int:
    """Members of the optimisation: `population` (--population), else population.size, else the number of
    listed starts, else 1."""
    if population is not None:
        return int(population)
    spec = cfg.spec.population
    return spec.size or len(spec.starts or []) or 1


def optimize(config, *, iterations: int | None = None, out_dir: str | None = None, resume: bool = False,
             overwrite: bool = False, progress: bool = False, device=None, write: bool = True,
             stop_after: int | None = None, capture: bool = True, population: int | None = None,
             seed: int | None = None) -> OptimizeResult:
    """Run the optimisation described by `config` (a path or an OptimizeConfig); see run.optimize for the
    arguments. `population` (default: the config's population section, else 1) optimises that many starts at
    once as worlds of one model, drawn with `seed` (default population.seed); the result is then the best
    member's, with every member in `result.members`."""
    cfg = config if isinstance(config, OptimizeConfig) else load_config(config)
    size = population_size(cfg, population)
    if size < 1:
        raise ValueError(f"population must be at least 1, got {size}")
    options = dict(iterations=iterations, out_dir=out_dir, resume=resume, overwrite=overwrite, progress=progress,
                   device=device, write=write, stop_after=stop_after, capture=capture)
    if size == 1 and not cfg.spec.population.starts:
        return optimize_one(cfg, **options)
    return optimize_population(cfg, size, seed, **options)
