"""Which `sim` command a YAML file is for (a scene, an optimisation config, a sweep file), so that a file given to
the wrong command gets one line naming the right one instead of an "unknown key" error about its first key."""

from __future__ import annotations

# command -> (what its files are, top-level keys only its files have)
_KINDS = {
    "sweep": ("a sweep file", ("axes", "metrics", "keep", "mode")),
    "optimize": ("an optimisation config", ("parameters", "loss", "optimizer", "iterations", "tolerance")),
    "run": ("a scene", ("sim", "cloth", "particles", "bodies", "joints", "robot", "colliders", "materials")),
}


def file_command(path: str) -> tuple | None:
    """(command, what the file is, the keys that say so) for the YAML file at `path`, or None when it cannot be
    read or its top-level keys fit no kind."""
    from .scene.errors import SceneError
    from .scene.source import load_source
    try:
        data = load_source(str(path)).data
    except (SceneError, OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    for command, (what, keys) in _KINDS.items():
        found = [k for k in keys if k in data]
        if found:
            return command, what, found
    return None


def wrong_command(path: str, command: str) -> str | None:
    """The line saying which command runs `path` when it is not a file of `command` ("run", "validate" and "info"
    take scenes; "optimize" configs; "sweep" sweep files); None when it is, or when its kind is unclear."""
    kind = file_command(path)
    wanted = "run" if command in ("validate", "info") else command
    if kind is None or kind[0] == wanted:
        return None
    other, what, keys = kind
    return (f"{path} is {what} (it has {', '.join(keys)}), not {_KINDS[wanted][0]}: run it with "
            f"`sim {other} {path}`")
