"""Type inference of Warp's `wp.grad(f)(args)`: the gradient of a user function or a differentiable builtin that
returns one float scalar, w.r.t. each argument (its adjoint seeded with 1)."""

from __future__ import annotations

from ... import types as T
from ...typesys import ArrayType, describe, is_differentiable_type
from .. import ir
from .adjoint import adjoint_error


class GradientForms:
    """The `wp.grad` call forms (mixed into TypeInference)."""

    def gradient_call(self, op, callee, args):
        """`wp.grad(f)(args)`: f's adjoint seeded with 1 gives d f / d arg for each argument. f must return one
        float scalar and take differentiable values; its adjoint must exist."""
        rtypes = callee.return_types
        if len(rtypes) != 1 or not T.is_float(rtypes[0]):
            got = ", ".join(describe(t) for t in rtypes) or "nothing"
            raise self.error(f"wp.grad({callee.name}): the function must return one float scalar, it returns {got}",
                             op)
        for p, name in zip(callee.params, callee.param_names):
            if not is_differentiable_type(p.type) or isinstance(p.type, ArrayType):
                raise self.error(f"wp.grad({callee.name}): argument '{name}' ({describe(p.type)}) has no "
                                 f"gradient; wp.grad needs float scalars, vectors, matrices or quaternions", op)
        error = adjoint_error(callee)
        if error is not None:
            raise self.error(f"wp.grad({callee.name}): the function has no gradient: {error.message}", op)
        for r, p in zip(op.results, callee.params):
            r.type = p.type
        self.append(ir.Op("call", list(args), op.results, {"callee": callee, "name": callee.name, "gradient": True},
                          [], op.loc))

    def builtin_gradient_call(self, op):
        """`wp.grad(wp.atan2)(y, x)`: a differentiable builtin's adjoint seeded with 1 gives its gradient w.r.t.
        each argument; the builtin must return one float scalar."""
        name = op.attrs["name"]
        args = list(op.operands)
        ov, rtype = self.resolve(name, args)
        if ov is None:
            got = ", ".join(describe(a.type) for a in args)
            raise self.error(f"wp.grad({name}): no overload of '{name}' accepts ({got})", op)
        args = self.coerce_weak(args, ov, op)
        if not ov.differentiable or ov.mutated_args() or ov.template_ret or not T.is_float(rtype):
            raise self.error(f"wp.grad({name}): '{name}' must be differentiable and return one float scalar", op)
        for a, arg_name in zip(args, ov.arg_names):
            if not is_differentiable_type(a.type) or isinstance(a.type, ArrayType):
                raise self.error(f"wp.grad({name}): argument '{arg_name}' ({describe(a.type)}) has no gradient", op)
        for r, a in zip(op.results, args):
            r.type = a.type
        self.append(ir.Op("call", args, op.results, {"name": name, "overload": ov, "gradient": True, "seed": rtype},
                          [], op.loc))
