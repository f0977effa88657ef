"""Resumable optimisation state: variables, optimiser state and the loss history, saved atomically to one .npz."""

from __future__ import annotations

import io
import json
import os

import numpy as np

from ..atomic_file import write_atomic

SNAPSHOT = "snapshot.npz"


def save_snapshot(out_dir: str, iteration: int, params: list, optimizer, rows: list, config_digest: str):
    """Write `snapshot.npz` in `out_dir` (temp file + rename): the next iteration to run, every variable, the
    optimiser's state dict and the rows of loss.csv so far."""
    state = optimizer.state_dict()
    arrays = {f"var_{k}": p.variable.numpy().copy() for k, p in enumerate(params)}
    for name, per_param in state.pop("state").items():
        for k, a in enumerate(per_param):
            arrays[f"opt_{name}_{k}"] = np.asarray(a)
    meta = {"iteration": iteration, "optimizer": state, "config": config_digest, "paths": [p.path for p in params],
            "state_names": sorted({k[4:].rsplit("_", 1)[0] for k in arrays if k.startswith("opt_")})}
    arrays["meta"] = np.array(json.dumps(meta, default=_jsonable))
    arrays["rows"] = np.asarray(rows, np.float64).reshape(len(rows), -1) if rows else np.zeros((0, 0))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_atomic(os.path.join(out_dir, SNAPSHOT), buffer.getvalue())


def load_snapshot(out_dir: str, params: list, optimizer, config_digest: str) -> tuple:
    """Restore variables and optimiser from `out_dir`'s snapshot; returns (next iteration, rows). Raises
    FileNotFoundError when there is none and ValueError when it belongs to another config."""
    path = os.path.join(out_dir, SNAPSHOT)
    try:
        return _read_snapshot(path, params, optimizer, config_digest)
    except FileNotFoundError:
        raise
    except _DifferentConfig as e:
        raise ValueError(str(e)) from None
    except Exception as e:  # noqa: BLE001  any damage (not a zip, missing arrays, bad json): say so, never a traceback
        raise SnapshotError(f"{path} is damaged and cannot be resumed from ({type(e).__name__}: {e}); remove it "
                            "to start over, or use another --out-dir") from None


class SnapshotError(ValueError):
    """A snapshot that cannot be read back."""


class _DifferentConfig(Exception):
    pass


def _read_snapshot(path: str, params: list, optimizer, config_digest: str) -> tuple:
    from .data import is_zip
    if os.path.exists(path) and not is_zip(path):
        raise ValueError("not a zip archive")
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        if meta["config"] != config_digest or meta["paths"] != [p.path for p in params]:
            raise _DifferentConfig(f"{path} was written for a different config or parameters; remove it or use "
                                   "another --out-dir")
        for k, p in enumerate(params):
            p.variable.assign(data[f"var_{k}"])
        state = dict(meta["optimizer"])
        state["state"] = {}
        for name in meta["state_names"]:
            state["state"][name] = [data[f"opt_{name}_{k}"] for k in range(len(params))]
        optimizer.load_state_dict(state)
        rows = [list(r) for r in data["rows"]]
    return meta["iteration"], rows


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, tuple):
        return list(x)
    raise TypeError(f"cannot save {type(x).__name__} in a snapshot")
