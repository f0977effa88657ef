"""Per-world overrides of a scene with `sim.worlds: N`: `--set worlds.K.KEY.PATH=VALUE` sets KEY.PATH in world K
only (K from 0 to N - 1); every other world keeps the scene's value.

Only what a world owns can differ: its objects (`cloth`, `particles`, `bodies`, `joints`, `robot`) and the named
`materials` they use. Settings of the one model (`sim`: time step, solver, gravity, the world count itself),
the shared `colliders` and `output` are the same for every world and are refused under `worlds.K.`.

A list over worlds is `--set 'worlds.*.KEY.PATH=[v0, v1, ...]'`: exactly one value per world, value K for world
K (the `*` says the list is over worlds: `cloth.0.vel=[[...], [...]]` alone would read the same as a key whose one
value is a list of vectors, such as `velocities`).
"""

from __future__ import annotations

import copy
import json

import yaml

from .errors import SceneError
from .source import Source

#: the top-level scene keys a world may set for itself
PER_WORLD_KEYS = ("cloth", "particles", "bodies", "joints", "robot", "materials")
PREFIX = "worlds."


def split_world_overrides(overrides) -> tuple:
    """(the overrides of the whole scene, {world K: [(KEY.PATH=VALUE text, label)]}) from `--set` texts (or
    (text, label) pairs). Raises SceneError for a `worlds.` override that is not `worlds.K.KEY.PATH=VALUE` with
    a key a world owns."""
    shared, per_world = [], {}
    for item in overrides:
        text, label = item if isinstance(item, tuple) else (item, None)
        if not isinstance(text, str) or not text.startswith(PREFIX):
            shared.append(item)
            continue
        label = label or f"--set {text}"
        key, sep, raw = text.partition("=")
        parts = key.strip().split(".")
        if not sep or len(parts) < 3 or not (parts[1].isdigit() or parts[1] == "*"):
            raise SceneError(label, ("worlds",), "expected worlds.K.KEY.PATH=VALUE, K a world index from 0 "
                             "(e.g. worlds.3.cloth.0.vel=[0, 0, 1]), or worlds.*.KEY.PATH=[one value per world]")
        world, head = (parts[1] if parts[1] == "*" else int(parts[1])), parts[2]
        if head not in PER_WORLD_KEYS:
            why = {"sim": "sim settings belong to the one model of all worlds",
                   "colliders": "colliders are shared by all worlds",
                   "output": "one run has one output"}.get(head, f"'{head}' is not a key a world owns")
            raise SceneError(label, ("worlds", world, head), f"cannot differ per world: {why} (per-world keys: "
                             f"{', '.join(PER_WORLD_KEYS)})")
        per_world.setdefault(world, []).append((".".join(parts[2:]) + "=" + raw, label))
    return shared, per_world


def expand_all_worlds(per_world: dict, world_count: int) -> dict:
    """`per_world` with its `worlds.*.` items (a list, one value per world) given to each world: world K gets
    value K. Raises SceneError for a value that is not a list of `world_count` values."""
    out = {k: list(v) for k, v in per_world.items() if k != "*"}
    for text, label in per_world.get("*", []):
        key, _, raw = text.partition("=")
        try:
            values = yaml.safe_load(raw)
        except yaml.YAMLError:
            values = None
        if not isinstance(values, list) or len(values) != world_count:
            got = f"{len(values)} values" if isinstance(values, list) else repr(raw.strip())
            path = tuple(int(p) if p.isdigit() else p for p in key.split("."))
            raise SceneError(label, ("worlds", "*") + path, f"expected a list of {world_count} "
                             f"values, one per world (sim.worlds: {world_count}), got {got}")
        for k, value in enumerate(values):
            out.setdefault(k, []).append((f"{key}={json.dumps(value)}", label))
    return out


def check_world_indices(per_world: dict, world_count: int):
    """Refuse an override of a world the scene does not have."""
    for world, items in sorted(per_world.items()):
        if world >= world_count:
            raise SceneError(items[0][1], ("worlds", world), f"no world {world}: the scene has {world_count} "
                             f"world{'s' if world_count != 1 else ''} (sim.worlds), from 0")


def world_spec(source: Source, world: int, items: list, convert):
    """World `world`'s spec: `convert(source)` of a copy of `source` (the overrides of the whole scene already
    applied) with that world's overrides applied. Its errors name the key under `worlds[K]`."""
    out = Source(copy.deepcopy(source.data), dict(source.lines), source.file)
    try:
        for item in items:
            out.apply_override(item)
        return convert(out)
    except SceneError as e:
        raise SceneError(e.where, ("worlds", world) + e.path, e.message) from None
