"""The errors a scene can raise: bad input (SceneError, exit code 2) and a run that blew up (SimulationError, 3)."""

from __future__ import annotations


def format_path(path: tuple) -> str:
    """('cloth', 0, 'mass') -> 'cloth[0].mass'."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


class SceneError(ValueError):
    """Invalid scene input. `where` is 'file:line' (or the --set override that gave the value), `path` the key path
    as a tuple; str() is one line: `scenes/cloth.yaml:12: cloth[0].mass: expected a positive number, got -1`."""

    def __init__(self, where: str, path: tuple, message: str):
        self.where, self.path, self.message = where, tuple(path), message
        key = f"{format_path(self.path)}: " if self.path else ""
        super().__init__(f"{where}: {key}{message}")


class SimulationError(RuntimeError):
    """A run blew up: a non-finite value, or a finite one beyond the scene's blow-up bounds (`finite`); names the
    frame, the quantity and the object it belongs to."""

    def __init__(self, frame: int, quantity: str, detail: str, finite: bool = False):
        self.frame, self.quantity, self.detail = frame, quantity, detail
        what = "blew up" if finite else "is not finite"
        super().__init__(f"frame {frame}: {quantity} {what} ({detail})")
