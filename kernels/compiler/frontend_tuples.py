"""Frontend, tuples: helpers for variables bound to tuples of values (`t = (a, b)`, or the results of a call that
returns several), which branches merge and loops carry item by item (see frontend.py).
"""

from __future__ import annotations

from .frontend_expr import Static, _is_number


class _Slot:
    """Stands for result `index` of an if op in a tuple being merged (see Frontend.merge_tuple_items)."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


def _fill_slots(items: tuple, results: list) -> tuple:
    return tuple(results[i.index] if isinstance(i, _Slot) else _fill_slots(i, results) if isinstance(i, tuple)
                 else i for i in items)


def _tuple_items(value):
    """The items of a tuple variable: a tuple of lowered values, or a compile-time tuple of numbers such as
    `(1.0, 2.0)`; None for anything else."""
    if isinstance(value, tuple):
        return value
    if isinstance(value, Static) and isinstance(value.obj, tuple) and all(_is_number(v) for v in value.obj):
        return tuple(Static(v) for v in value.obj)
    return None


def _tuple_leaves(value, path=()):
    """(path, item) for each item of a (possibly nested) tuple, in order."""
    if not isinstance(value, tuple):
        return [(path, value)]
    return [leaf for i, v in enumerate(value) for leaf in _tuple_leaves(v, path + (i,))]


def _fill_leaves(template, leaves):
    """`template` with each of its items replaced by the next of `leaves`."""
    if not isinstance(template, tuple):
        return next(leaves)
    return tuple(_fill_leaves(t, leaves) for t in template)


def _tuple_shape(value):
    return tuple(_tuple_shape(v) for v in value) if isinstance(value, tuple) else None


def _describe_binding(value) -> str:
    items = _tuple_items(value)
    if items is not None:
        return f"a tuple of {len(items)} values"
    return "one value" if value is not None else "not defined"
