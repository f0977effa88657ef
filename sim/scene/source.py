"""Read a YAML scene into plain Python values plus the line of every key, and apply `--set` overrides.

Values come back as dicts, lists and scalars; `Source.where(path)` says where the value at a key path came from
(`file:line`, or the override that set it), so validation errors can point at the line.
"""

from __future__ import annotations

import re

import yaml

from .errors import SceneError, format_path


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads `1e3` and `-2E-4` as floats (YAML 1.1 wants a dot in the mantissa)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


#: Limits on what a scene or config file may expand to: nesting depth of sections/lists, and values after YAML
#: aliases are expanded (an alias "bomb" of a few lines expands to billions). Shipped scenes use depth < 10 and an
#: inline mesh of 10^5 vertices is ~4 * 10^5 values.
MAX_DEPTH = 64
MAX_VALUES = 5_000_000


class Source:
    """The raw scene tree of one file and where each key was written."""

    def __init__(self, data, lines: dict, file: str):
        self.data, self.lines, self.file = data, lines, file

    def where(self, path: tuple) -> str:
        """`file:line` of the deepest written prefix of `path` (a missing key points at its parent)."""
        path = tuple(path)
        while path not in self.lines and path:
            path = path[:-1]
        loc = self.lines.get(path)
        if isinstance(loc, str):
            return loc
        return f"{self.file}:{loc}" if loc is not None else self.file

    def error(self, path: tuple, message: str) -> SceneError:
        return SceneError(self.where(path), path, message)

    # ------------------------------------------------------------------------------------------------ overrides

    def apply_override(self, text, label: str | None = None):
        """Apply one `key.path=value` (value parsed as YAML; list items by index: `cloth.0.mass=0.2`). `label` says
        where it came from in errors (default `--set key.path=value`); `text` may also be a (text, label) pair."""
        if isinstance(text, tuple):
            text, label = text
        if not isinstance(text, str):
            raise SceneError(label or "--set", (), f"expected KEY.PATH=VALUE text, got {text!r}")
        label = label or f"--set {text}"
        key, sep, raw = text.partition("=")
        if not sep or not key.strip():
            raise SceneError(label, (), "expected KEY.PATH=VALUE")
        try:
            value = yaml.load(raw, Loader=_Loader) if raw.strip() else None
        except yaml.YAMLError as e:
            raise SceneError(label, (), f"the value is not valid YAML ({getattr(e, 'problem', e)})") from None
        parts = [int(p) if p.lstrip("-").isdigit() else p for p in key.strip().split(".")]
        if not isinstance(self.data, dict):
            raise SceneError(label, (), "the scene is not a mapping")
        node = self.data
        for depth, p in enumerate(parts[:-1]):
            node = self._descend(node, p, tuple(parts[:depth + 1]), label)
        last = parts[-1]
        self._check_slot(node, last, tuple(parts), label)
        node[last] = value
        self._mark(tuple(parts), value, label)

    def _descend(self, node, key, path: tuple, label: str):
        self._check_slot(node, key, path, label)
        if isinstance(node, dict) and key not in node:
            node[key] = {}  # a section the file left out gets created by the override
            self.lines[path] = label
        child = node[key]
        if not isinstance(child, (dict, list)):
            raise SceneError(label, path, f"is a {type(child).__name__}, not a section or list")
        return child

    @staticmethod
    def _check_slot(node, key, path: tuple, label: str):
        if isinstance(node, list):
            if not isinstance(key, int) or not -len(node) <= key < len(node):
                raise SceneError(label, path, f"no item {key} (the list has {len(node)} items, from 0)")
        elif isinstance(key, int):
            raise SceneError(label, path, f"{format_path(path[:-1])} is a section, not a list")

    def _mark(self, path: tuple, value, label: str):
        self.lines = {p: l for p, l in self.lines.items() if p[:len(path)] != path}
        self.lines[path] = label
        if isinstance(value, dict):
            for k, v in value.items():
                self._mark(path + (k,), v, label)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self._mark(path + (i,), v, label)


def load_source(path: str, text: str | None = None) -> Source:
    """Parse the YAML file at `path` (or `text`, reported as `path`). Malformed YAML, duplicate keys and non-string
    keys raise SceneError with the line."""
    if text is None:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise SceneError(path, (), "no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise SceneError(path, (), f"cannot read the file ({e})") from None
    if not text.strip() or _only_comments(text):
        raise SceneError(path, (), "the file is empty: expected a mapping of settings")
    _check_depth(path, text)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise SceneError(path, (), "the file is empty: expected a mapping of settings")
        _check_expansion(path, node)
        lines: dict = {}
        data = _convert(loader, node, (), lines, path)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else "?"
        raise SceneError(f"{path}:{line}", (), f"malformed YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise SceneError(path, (), f"malformed YAML: {e}") from None
    finally:
        loader.dispose()
    return Source(data, lines, path)


def _only_comments(text: str) -> bool:
    return all(not ln.strip() or ln.lstrip().startswith("#") or ln.strip() in ("---", "...")
               for ln in text.splitlines())


def _check_depth(path: str, text: str):
    """Refuse nesting deeper than MAX_DEPTH, from the event stream (iterative, unlike composing nodes, which
    recurses per level and would end in a RecursionError)."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise SceneError(f"{path}:{event.start_mark.line + 1}", (),
                                     f"sections and lists nested more than {MAX_DEPTH} deep")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else "?"
        raise SceneError(f"{path}:{line}", (), f"malformed YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise SceneError(path, (), f"malformed YAML: {e}") from None


def _check_expansion(path: str, root):
    """Refuse a document whose values, with every alias expanded, exceed MAX_VALUES. Sizes are computed once per
    distinct node (aliases share nodes), so a bomb is measured without being expanded."""
    sizes: dict = {}
    order, stack = [], [root]
    while stack:  # post-order without recursion
        node = stack.pop()
        if id(node) in sizes:
            continue
        sizes[id(node)] = None
        order.append(node)
        if isinstance(node, yaml.MappingNode):
            stack.extend(v for pair in node.value for v in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    for node in reversed(order):
        if isinstance(node, yaml.MappingNode):
            children = [v for pair in node.value for v in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = ()
        total = 1 + sum(sizes[id(c)] or 0 for c in children)
        sizes[id(node)] = total
        if total > MAX_VALUES:
            raise SceneError(f"{path}:{node.start_mark.line + 1}", (),
                             f"expands to more than {MAX_VALUES:,} values (YAML aliases repeat what they refer "
                             f"to); refusing to load it")


def _convert(loader, node, path: tuple, lines: dict, file: str):
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # YAML merge keys (<<: *base)
        out = {}
        for k_node, v_node in node.value:
            key = loader.construct_object(k_node, deep=True)
            line = k_node.start_mark.line + 1
            if not isinstance(key, str):
                raise SceneError(f"{file}:{line}", path, f"keys must be names, got {key!r}")
            if key in out:
                raise SceneError(f"{file}:{line}", path + (key,), "duplicate key")
            lines[path + (key,)] = line
            out[key] = _convert(loader, v_node, path + (key,), lines, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(loader, n, path + (i,), lines, file) for i, n in enumerate(node.value)]
    return loader.construct_object(node, deep=True)
