"""The C++ by which a kernel's thread function tells wp.block_dim() its launch's effective block_dim.

A launch carries its effective block_dim (kernels/runtime/cpu_blocks.py) in the launch bounds; wp::block_dim() is
read in user functions too, which have no bounds at hand, so a kernel that reads it (at any call depth) copies it
to a slot at each thread (native/core.h: a thread-local on the CPU, block-shared on CUDA). Other kernels' source
is unchanged by this (their cached libraries stay valid, their hot loop has no extra store).
"""

from __future__ import annotations

from . import ir


def calls_builtin(fn: ir.Function, name: str) -> bool:
    """Whether `fn` (a kernel or function) or a function it calls, at any depth, calls the builtin `name`."""
    seen, stack = set(), [fn]
    while stack:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        for op in ir.walk(f.body):
            callee = op.attrs.get("callee")
            if callee is not None:
                stack.append(callee)
            elif op.opcode == "call" and op.attrs.get("name") == name:
                return True
            elem = op.attrs.get("elem")
            if elem is not None and elem[0] == "func":
                stack.append(elem[1])
    return False


def block_dim_prologue(fn: ir.Function) -> str:
    """C++ opening a kernel's thread function (either dialect) that reads wp.block_dim() (itself or in a function
    it calls): the launch's block_dim goes where wp::block_dim() reads it (the same statement in both dialects,
    the slot differs: native/core.h). Other kernels' source is unchanged."""
    if not calls_builtin(fn, "block_dim"):
        return ""
    return "    wp::block_dim_slot() = lb.block_dim;\n"
