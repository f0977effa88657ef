"""The values of one sweep axis: an explicit list, a linear or logarithmic range, or seeded random samples.

Each form is a mapping in the sweep file (or a plain list); `axis_values` turns it into a list of YAML-ready values
and raises SceneError naming the file, line and key when the form is not understood.
"""

from __future__ import annotations

import math

import numpy as np

FORMS = "a list, {range: [a, b], count: n | step: s}, {logrange: [a, b], count: n} or " \
        "{random: [low, high], count: n, seed: s}"


def axis_values(value, source, path: tuple) -> list:
    """The values the axis at `path` of `source` (a sim.scene.source.Source) takes, in order."""
    if isinstance(value, list):
        if not value:
            raise source.error(path, "an axis needs at least one value")
        return list(value)
    if not isinstance(value, dict):
        raise source.error(path, f"expected {FORMS}")
    forms = [k for k in ("range", "logrange", "random") if k in value]
    if len(forms) != 1:
        raise source.error(path, f"expected exactly one of range, logrange, random; {FORMS}")
    allowed = {forms[0], "count", "step", "seed"}
    for key in value:
        if key not in allowed:
            raise source.error(path + (key,), f"unknown key; an axis takes {', '.join(sorted(allowed))}")
    form = forms[0]
    if form == "random":
        return _random(value, source, path)
    low, high = _bounds(value[form], source, path + (form,), positive=form == "logrange")
    if form == "range" and "step" in value:
        return _stepped(low, high, value["step"], source, path + ("step",))
    count = _count(value, source, path)
    points = np.geomspace(low, high, count) if form == "logrange" else np.linspace(low, high, count)
    return [float(v) for v in points]


def _bounds(value, source, path: tuple, positive: bool = False) -> tuple:
    numbers = isinstance(value, list) and len(value) == 2 and all(_is_number(v) for v in value)
    if not numbers:
        raise source.error(path, "expected two numbers [start, stop]")
    if positive and min(value) <= 0:
        raise source.error(path, "a logrange needs positive bounds")
    return value[0], value[1]


def _count(value, source, path: tuple) -> int:
    count = value.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise source.error(path + ("count",), f"expected a positive integer, got {count!r}")
    return count


def _stepped(low, high, step, source, path: tuple) -> list:
    if not _is_number(step) or step == 0 or (high - low) * step < 0:
        raise source.error(path, f"expected a non-zero step towards the stop value, got {step!r}")
    count = int(math.floor((high - low) / step + 1e-9)) + 1
    integral = all(isinstance(v, int) for v in (low, high, step))
    return [low + i * step if integral else float(low + i * step) for i in range(count)]


def _random(value, source, path: tuple) -> list:
    """Uniform samples in [low, high]; low/high are numbers or equal-length lists (one sample per component).
    The seed is required so that the same file always names the same runs (and --resume can find them)."""
    bounds = value["random"]
    if not (isinstance(bounds, list) and len(bounds) == 2):
        raise source.error(path + ("random",), "expected [low, high] (numbers or lists of numbers)")
    low, high = bounds
    shape = None
    if isinstance(low, list) or isinstance(high, list):
        if not (isinstance(low, list) and isinstance(high, list) and len(low) == len(high)
                and all(_is_number(v) for v in low + high)):
            raise source.error(path + ("random",), "low and high must be lists of numbers of the same length")
        shape = len(low)
    elif not (_is_number(low) and _is_number(high)):
        raise source.error(path + ("random",), "expected two numbers [low, high]")
    seed = value.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise source.error(path + ("seed",) if "seed" in value else path,
                           "random samples need an integer seed, so the same file names the same runs")
    count = _count(value, source, path)
    rng = np.random.default_rng(seed)
    samples = rng.uniform(np.asarray(low, float), np.asarray(high, float), size=(count,) if shape is None
                          else (count, shape))
    return [s.tolist() if shape is not None else float(s) for s in samples]


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
