"""Typed, documented scene keys: each key is a `Field` (name, kind, default, unit, doc); a kind converts and checks
a raw YAML value and says what it expects. The scene format itself is declared in `format.py` with these pieces;
docs/scenes.md is generated from the same declarations (tools/gen_scene_docs.py).

Validation walks the raw tree (from `source.py`) once, turning it into `Spec` objects (attribute access, the
keys' defaults filled in) and raising SceneError at the first problem, naming file, line and key path.
"""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass, field

import numpy as np

REQUIRED = object()  # Field default: the key must be given
DEFAULTS = object()  # Field default of a Section: the section with all its defaults


class Ctx:
    """Where validation is: the source (for lines), the key path, and the scene file's folder (for relative
    file names). `extra` carries cross-references (named materials)."""

    def __init__(self, source, path: tuple = (), base_dir: str = ".", extra: dict | None = None):
        self.source, self.path, self.base_dir = source, tuple(path), base_dir
        self.extra = extra if extra is not None else {}

    def child(self, key) -> "Ctx":
        return Ctx(self.source, self.path + (key,), self.base_dir, self.extra)

    def fail(self, message: str):
        raise self.source.error(self.path, message)


def _got(value) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    if value is None:
        return "nothing"
    return repr(value) if not isinstance(value, (dict, list)) else f"a {'mapping' if isinstance(value, dict) else 'list'}"


class Kind:
    """Converts a raw value; `doc_type` is the type column of the docs."""

    doc_type = "value"

    def convert(self, value, ctx: Ctx):
        raise NotImplementedError


class Number(Kind):
    """A finite real number, optionally bounded (`positive`: > 0; `min`/`max` inclusive)."""

    def __init__(self, *, positive: bool = False, min: float | None = None, max: float | None = None):
        self.positive, self.min, self.max = positive, min, max

    @property
    def doc_type(self):
        if self.positive:
            return "number > 0"
        if self.min is not None and self.max is not None:
            return f"number in [{self.min:g}, {self.max:g}]"
        if self.min is not None:
            return f"number >= {self.min:g}"
        return "number"

    def _expected(self) -> str:
        if self.positive:
            return "a positive number"
        if self.min is not None and self.max is not None:
            return f"a number between {self.min:g} and {self.max:g}"
        if self.min is not None:
            return "a number >= 0" if self.min == 0 else f"a number >= {self.min:g}"
        return "a number"

    def convert(self, value, ctx):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            ctx.fail(f"expected {self._expected()}, got {_got(value)}")
        bad = (self.positive and value <= 0) or (self.min is not None and value < self.min) or \
            (self.max is not None and value > self.max)
        if bad:
            ctx.fail(f"expected {self._expected()}, got {value:g}")
        return float(value)


class Integer(Kind):
    def __init__(self, *, min: int | None = None):
        self.min = min

    @property
    def doc_type(self):
        return "integer" if self.min is None else f"integer >= {self.min}"

    def convert(self, value, ctx):
        expected = "an integer" if self.min is None else f"an integer >= {self.min}"
        if isinstance(value, bool) or not isinstance(value, int):
            ctx.fail(f"expected {expected}, got {_got(value)}")
        if self.min is not None and value < self.min:
            ctx.fail(f"expected {expected}, got {value}")
        return int(value)


class Boolean(Kind):
    doc_type = "true/false"

    def convert(self, value, ctx):
        if not isinstance(value, bool):
            ctx.fail(f"expected true or false, got {_got(value)}")
        return value


class String(Kind):
    doc_type = "string"

    def convert(self, value, ctx):
        if not isinstance(value, str) or not value:
            ctx.fail(f"expected a non-empty string, got {_got(value)}")
        return value


class Choice(Kind):
    def __init__(self, *options: str):
        self.options = options

    @property
    def doc_type(self):
        return " \\| ".join(f"`{o}`" for o in self.options)

    def convert(self, value, ctx):
        if value not in self.options:
            hint = suggest(value, self.options)
            ctx.fail(f"expected one of {', '.join(self.options)}, got {_got(value)}{hint}")
        return value


class Vector(Kind):
    """A list of `n` numbers, e.g. a position [x, y, z]."""

    def __init__(self, n: int = 3, *, positive: bool = False, integer: bool = False, min: float | None = None):
        self.n, self.positive, self.integer = n, positive, integer
        self.item = Integer(min=min) if integer else Number(positive=positive, min=min)

    @property
    def doc_type(self):
        what = "integers" if self.integer else "numbers"
        return f"[{self.n} {what}{' > 0' if self.positive else ''}]"

    def convert(self, value, ctx):
        if not isinstance(value, (list, tuple)) or len(value) != self.n:
            ctx.fail(f"expected a list of {self.n} {'integers' if self.integer else 'numbers'}, got {_got(value)}")
        return tuple(self.item.convert(v, ctx.child(i)) for i, v in enumerate(value))


class Rotation(Kind):
    """A rotation: a quaternion [x, y, z, w] or {axis: [x, y, z], angle: degrees}. Converts to a unit quaternion
    (x, y, z, w) as a numpy array."""

    doc_type = "[x, y, z, w] or {axis, angle}"

    def convert(self, value, ctx):
        if isinstance(value, dict):
            unknown = set(value) - {"axis", "angle"}
            if unknown or set(value) != {"axis", "angle"}:
                ctx.fail(f"a rotation mapping has exactly the keys axis and angle (degrees), got {sorted(value)}")
            axis = np.asarray(Vector(3).convert(value["axis"], ctx.child("axis")))
            angle = math.radians(Number().convert(value["angle"], ctx.child("angle")))
            n = np.linalg.norm(axis)
            if n == 0:
                ctx.child("axis").fail("the rotation axis must not be zero")
            return np.concatenate([axis / n * math.sin(angle / 2), [math.cos(angle / 2)]])
        if not isinstance(value, (list, tuple)):
            ctx.fail(f"expected a quaternion [x, y, z, w] or {{axis, angle}}, got {_got(value)}")
        q = np.asarray(Vector(4).convert(value, ctx))
        n = np.linalg.norm(q)
        if n == 0:
            ctx.fail("a rotation quaternion must not be zero")
        return q / n


class FilePath(Kind):
    """A file name, relative to the scene file's folder unless absolute; the file must exist."""

    def __init__(self, *extensions: str):
        self.extensions = extensions

    @property
    def doc_type(self):
        return "file (" + ", ".join(self.extensions) + ")"

    def convert(self, value, ctx):
        name = String().convert(value, ctx)
        path = name if os.path.isabs(name) else os.path.normpath(os.path.join(ctx.base_dir, name))
        if not name.lower().endswith(self.extensions):
            ctx.fail(f"expected a {', '.join(self.extensions)} file, got '{name}'")
        if not os.path.isfile(path):
            ctx.fail(f"file not found: {path}")
        return path


class ListOf(Kind):
    def __init__(self, item: Kind, *, min_len: int = 0):
        self.item, self.min_len = item, min_len

    @property
    def doc_type(self):
        return f"list of {self.item.doc_type}"

    def convert(self, value, ctx):
        if not isinstance(value, list):
            ctx.fail(f"expected a list, got {_got(value)}")
        if len(value) < self.min_len:
            ctx.fail(f"expected at least {self.min_len} item(s), got {len(value)}")
        return [self.item.convert(v, ctx.child(i)) for i, v in enumerate(value)]


class AnyOf(Kind):
    """The first of several kinds that accepts the value, tried in order."""

    def __init__(self, *kinds: Kind, expected: str):
        self.kinds, self.expected = kinds, expected

    @property
    def doc_type(self):
        return self.expected

    def convert(self, value, ctx):
        for k in self.kinds:
            try:
                return k.convert(value, ctx)
            except ValueError:
                continue
        ctx.fail(f"expected {self.expected}, got {_got(value)}")


@dataclass
class Field:
    name: str
    kind: Kind
    default: object = REQUIRED
    unit: str = ""
    doc: str = ""


class Spec:
    """A validated section: its keys as attributes (defaults filled in); `given` lists the keys the scene wrote."""

    def __init__(self, values: dict, given: set, path: tuple):
        self.__dict__.update(values)
        self._given, self._path = given, path

    def given(self, name: str) -> bool:
        return name in self._given

    def keys(self) -> list:
        return [k for k in self.__dict__ if not k.startswith("_")]

    def __repr__(self):
        return "Spec(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.keys()) + ")"


@dataclass
class Section(Kind):
    """A mapping with declared keys. Unknown keys are errors (with a suggestion); `checks` run after the keys."""

    fields: list
    doc: str = ""
    checks: list = field(default_factory=list)
    title: str = "section"

    @property
    def doc_type(self):
        return f"mapping (`{self.title}`)" if self.title != "section" else "mapping"

    def field_names(self) -> list:
        return [f.name for f in self.fields]

    def convert(self, value, ctx):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            ctx.fail(f"expected a mapping of keys, got {_got(value)}")
        names = self.field_names()
        for key in value:
            if key not in names:
                ctx.child(key).fail(f"unknown key{suggest(key, names)} (known: {', '.join(names)})")
        out = {}
        for f in self.fields:
            if f.name in value:
                out[f.name] = f.kind.convert(value[f.name], ctx.child(f.name))
            elif f.default is REQUIRED:
                ctx.fail(f"missing required key '{f.name}'")
            elif f.default is DEFAULTS:
                out[f.name] = f.kind.convert({}, ctx.child(f.name))
            else:
                out[f.name] = list(f.default) if isinstance(f.default, list) else f.default
        spec = Spec(out, set(value), ctx.path)
        for check in self.checks:
            check(spec, ctx)
        return spec


class Variant(Kind):
    """A mapping whose `key` (e.g. `type`) selects which Section validates it."""

    def __init__(self, key: str, variants: dict, *, default: str | None = None):
        self.key, self.variants, self.default = key, variants, default

    doc_type = "mapping"

    def convert(self, value, ctx):
        if not isinstance(value, dict):
            ctx.fail(f"expected a mapping of keys, got {_got(value)}")
        kind = value.get(self.key, self.default)
        if kind is None:
            ctx.fail(f"missing required key '{self.key}' (one of {', '.join(self.variants)})")
        if kind not in self.variants:
            ctx.child(self.key).fail(f"expected one of {', '.join(self.variants)}, got {_got(kind)}"
                                     f"{suggest(kind, self.variants)}")
        rest = {k: v for k, v in value.items() if k != self.key}
        spec = self.variants[kind].convert(rest, ctx)
        spec.__dict__[self.key] = kind
        return spec


class MappingOf(Kind):
    """A mapping from user-chosen names to items of one kind (e.g. named materials)."""

    def __init__(self, item: Kind):
        self.item = item

    @property
    def doc_type(self):
        return "mapping of name to " + self.item.doc_type

    def convert(self, value, ctx):
        if value is None:
            return {}
        if not isinstance(value, dict):
            ctx.fail(f"expected a mapping of names, got {_got(value)}")
        return {k: self.item.convert(v, ctx.child(k)) for k, v in value.items()}


def suggest(word, options) -> str:
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def exactly_one(*names: str):
    """A Section check: exactly one of `names` must be given."""
    def check(spec: Spec, ctx: Ctx):
        given = [n for n in names if spec.given(n)]
        if len(given) != 1:
            what = "both " + " and ".join(given) if given else "none"
            ctx.fail(f"give exactly one of {', '.join(names)} (got {what})")
    return check
