"""Recorded positions for losses: a trajectory from a .npz file or from a USD file's time-sampled points."""

from __future__ import annotations

import os

import numpy as np


def load_trajectory(path: str, key: str | None, object_name: str) -> dict:
    """frame -> positions [n, 3] (m). .npz: array `key` (default: `object_name`, else 'positions') of shape
    [frames, n, 3] holding frames 0, 1, ...; USD: time samples of the `points` of prim `key` (default: the default
    prim's child named `object_name`), time code = frame. Raises ValueError naming what is missing."""
    frames = _npz(path, key, object_name) if path.lower().endswith(".npz") else _usd(path, key, object_name)
    for f in sorted(frames):
        bad = ~np.isfinite(frames[f]).all(axis=-1)
        if bad.any():
            raise ValueError(f"{os.path.basename(path)}: the recorded positions of frame {f} are not finite "
                             f"(particle {int(np.argmax(bad))}, {int(bad.sum())} particle(s) affected)")
    return frames


def _npz(path, key, object_name):
    import pickle
    import zipfile
    if not is_zip(path):
        raise ValueError(f"{os.path.basename(path)} is not a .npz archive (not a zip file)")
    try:
        with np.load(path, allow_pickle=False) as data:
            names = list(data.keys())
            name = key or (object_name if object_name in names else "positions")
            if name not in names:
                raise ValueError(f"{os.path.basename(path)} has no array '{name}' (it has: {', '.join(names)})")
            a = np.asarray(data[name], np.float64)
    except AttributeError:  # np.load gave a plain array: a .npy file named .npz
        raise ValueError(f"{os.path.basename(path)} is not a .npz archive (it holds a single array)") from None
    except (zipfile.BadZipFile, pickle.UnpicklingError, EOFError) as e:
        raise ValueError(f"{os.path.basename(path)} is not a valid .npz archive ({e})") from None
    except ValueError as e:
        if "has no array" in str(e):
            raise
        raise ValueError(f"{os.path.basename(path)} is not a valid .npz archive ({e})") from None
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"array '{name}' must have shape [frames, particles, 3], got {list(a.shape)}")
    return {f: a[f] for f in range(a.shape[0])}


def is_zip(path: str) -> bool:
    """Whether `path` starts like a zip archive (what np.savez writes); a missing file is left to np.load."""
    try:
        with open(path, "rb") as f:
            return f.read(4) in (b"PK\x03\x04", b"PK\x05\x06")
    except FileNotFoundError:
        return True
    except OSError:
        return False


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
