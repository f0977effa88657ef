"""Struct arguments on a Tape: the copy of a struct a record keeps (as its launch packed it), the arrays at a
kernel's access paths in it, and its adjoint struct (a struct of the same type holding the members' gradient
arrays) with that adjoint's packed form."""

from __future__ import annotations

from dataclasses import dataclass
from operator import is_

import kernels as wp
from kernels.tape_interface import ArrayType, is_struct


@dataclass(frozen=True)
class StructPlan:
    """Per struct type: `zero`, an instance with every member at its default; `array_fields`, the names of the
    array members; `struct_fields`, (name, type) of the struct members."""

    zero: object
    array_fields: tuple
    struct_fields: tuple


_STRUCT_PLANS: dict = {}  # struct type -> StructPlan


def struct_plan(t) -> StructPlan:
    """The StructPlan of struct type `t`, made once per type."""
    plan = _STRUCT_PLANS.get(t)
    if plan is None:
        fields = t._wp_struct_.fields
        plan = _STRUCT_PLANS[t] = StructPlan(
            t(), tuple(n for n, ft in fields.items() if isinstance(ft, ArrayType)),
            tuple((n, ft) for n, ft in fields.items() if is_struct(ft)))
    return plan


def struct_adjoint(s, t, touched: dict):
    """A struct of type `t` whose array members are the gradient arrays of struct `s`'s members (zero-default
    elsewhere); the members with gradients go into `touched` (id -> array)."""
    plan = struct_plan(t)
    adj = object.__new__(t)
    # the zero struct's members: its composite members are only packed, never changed in place
    adj.__dict__.update(plan.zero.__dict__)
    for name in plan.array_fields:
        v = getattr(s, name)
        if v is not None and not v._foreign:
            g = v._grad
            if g is not None:
                touched[id(v)] = v
                object.__setattr__(adj, name, g)
    for name, ft in plan.struct_fields:
        object.__setattr__(adj, name, struct_adjoint(getattr(s, name), ft, touched))
    return adj


def pack_struct_adjoint(adj, t):
    """The native form of adjoint struct `adj` (of type t, see struct_adjoint): its members' gradient arrays, zero
    elsewhere (what adj._to_ctype() gives, without caching the form for a struct used once)."""
    plan = struct_plan(t)
    c = t._wp_struct_.ctype()()
    for name in plan.array_fields:
        g = getattr(adj, name)
        if g is not None:
            setattr(c, name, g._descriptor())
    for name, ft in plan.struct_fields:
        setattr(c, name, pack_struct_adjoint(getattr(adj, name), ft))
    return c


def copy_struct(s):
    """A struct of the same type holding the same member values (struct members copied the same way)."""
    t = type(s)
    c = object.__new__(t)
    c.__dict__.update(s.__dict__)
    for name, _ in struct_plan(t).struct_fields:
        member = getattr(s, name)
        if member is not None:
            object.__setattr__(c, name, copy_struct(member))
    return c


def struct_members(struct, paths) -> list:
    """The differentiable toolkit arrays of `struct` at the ArrayPaths `paths` (None where there is none)."""
    members = []
    for access in paths:
        obj = struct
        for f in access.fields:
            obj = getattr(obj, f, None) if obj is not None else None
        members.append(obj if isinstance(obj, wp.array) and not obj._foreign else None)
    return members


class StructSnapshot:
    """A Tape's copy of a struct argument, `struct`, as its launches packed it; `members`: kernel -> the arrays at
    the kernel's tracked paths in it (see struct_members). Tapes share it while the struct keeps its packed
    form."""

    __slots__ = ("struct", "members", "_fields", "_adjoint")

    def __init__(self, struct):
        self.struct, self.members = struct, {}
        self._fields = tuple(getattr(struct, name) for name in struct_plan(type(struct)).array_fields)
        self._adjoint = None  # (gradient arrays of _fields, adjoint struct, native form, {id: member with one})

    def adjoint(self, touched: dict) -> tuple:
        """(struct_adjoint of the struct, its native form) for a backward, with the members that have gradients
        put into `touched`: made again only when a member's gradient array changed (kernels never write either:
        the adjoint's native form is copied into each adjoint launch's arguments)."""
        grads = tuple([None if v is None or v._foreign else v._grad for v in self._fields])
        known = self._adjoint
        if known is not None and all(map(is_, grads, known[0])):
            touched.update(known[3])
            return known[1], known[2]
        t = type(self.struct)
        adj = struct_adjoint(self.struct, t, touched)
        self._adjoint = (grads, adj, pack_struct_adjoint(adj, t),
                         {id(v): v for v, g in zip(self._fields, grads) if g is not None})
        return adj, self._adjoint[2]
