"""Warp's refusals at build time of a kernel with a backward (enable_backward=True), where other refusals of a
gradient wait until a backward pass is asked for (passes/adjoint.py): Warp 1.19 fails such a kernel's build, so a
program that relies on that (and Warp's tests) sees the error at the launch.

  - a call of a function with wp.ref[T] parameters whose adjoint would be derived (references have none; a
    @wp.func_native with an adj_snippet gives one), anywhere in the kernel or the functions it calls;
  - an op that type inference marked "refuse_build" (an augmented assignment other than += / -= into a
    differentiable component of an array element, typeinfer_paths.py), with its "refuse_adjoint" message.
"""

from __future__ import annotations

from .. import ir
from ...errors import CompileError


def backward_build_refusal(fn: ir.Function) -> CompileError | None:
    """The CompileError that refuses building kernel `fn` with a backward, in Warp's words, or None."""
    seen: set = set()
    stack = [fn]
    while stack:
        f = stack.pop()
        for op in ir.walk(f.body):
            if op.attrs.get("refuse_build"):
                return CompileError(op.attrs["refuse_adjoint"], op.loc, f.name)
            callee = op.attrs.get("callee")
            if callee is None:
                continue
            if op.attrs.get("references") and op.attrs.get("refuse_adjoint"):
                scope = "kernel" if f.kind == "kernel" else "function"
                key = getattr(getattr(callee, "func_object", None), "key", callee.name)
                return CompileError(f"In {scope} '{f.name}': Cannot call '{key}' with wp.ref[T] parameters from a "
                                    f"backward-enabled kernel. Use enable_backward=False on the kernel, or switch "
                                    f"to @wp.func_native with adj_snippet for a manually written adjoint.",
                                    op.loc, fn.name)
            if id(callee) not in seen:
                seen.add(id(callee))
                stack.append(callee)
    return None
