"""Recorded positions for losses: a trajectory from a .npz file or from a USD file's time-sampled points."""

from __future__ import annotations

import os

import numpy as np


def load_trajectory(path: str, key: str | None, object_name: str) -> dict:
    """frame -> positions [n, 3] (m). .npz: array `key` (default: `object_name`, else 'positions') of shape
    [frames, n, 3] holding frames 0, 1, ...; USD: time samples of the `points` of prim `key` (default: the default
    prim's child named `object_name`), time code = frame. Raises ValueError naming what is missing."""
    if path.lower().endswith(".npz"):
        return _npz(path, key, object_name)
    return _usd(path, key, object_name)


def _npz(path, key, object_name):
    with np.load(path) as data:
        names = list(data.keys())
        name = key or (object_name if object_name in names else "positions")
        if name not in names:
            raise ValueError(f"{os.path.basename(path)} has no array '{name}' (it has: {', '.join(names)})")
        a = np.asarray(data[name], np.float64)
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"array '{name}' must have shape [frames, particles, 3], got {list(a.shape)}")
    return {f: a[f] for f in range(a.shape[0])}


def _usd(path, key, object_name):
    from pxr import Usd, UsdGeom
    stage = Usd.Stage.Open(path)
    if stage is None:
        raise ValueError(f"cannot open {path} as USD")
    if key:
        prim = stage.GetPrimAtPath(key)
    else:
        root = stage.GetDefaultPrim()
        prim = root.GetChild(object_name) if root else Usd.Prim()
    if not prim or not prim.IsValid():
        raise ValueError(f"{os.path.basename(path)} has no prim {key or 'named ' + repr(object_name)}")
    attr = UsdGeom.PointBased(prim).GetPointsAttr()
    times = attr.GetTimeSamples() if attr else []
    if not times:
        raise ValueError(f"prim {prim.GetPath()} has no time-sampled points")
    return {int(round(t)): np.asarray(attr.Get(t), np.float64) for t in times}
