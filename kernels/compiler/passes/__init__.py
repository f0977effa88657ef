"""The compiler's passes, one per module, and the pipeline that runs them in order.

The whole compiler: frontend.lower_function (Python AST -> IR), the PIPELINE below (IR -> IR, the adjoint
included), then render*.py (IR -> C++/CUDA text: printing only) and build (compile, cache, load).
"""

from __future__ import annotations

from .. import ir
from ...errors import CompileError, KernelError
from .adjoint import derive_adjoint
from .constfold import fold_constants
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .typeinfer import infer_types
from .unroll import unroll_static_loops
from .verify import verify

#: The pipeline: each pass takes and returns an ir.Function (see each module's docstring). The adjoint pass
#: records a refusal in `fn.adjoint` rather than raising: the forward of a non-differentiable kernel still runs.
PIPELINE = (
    ("typeinfer", infer_types),
    ("constfold", fold_constants),
    ("unroll", unroll_static_loops),
    ("constfold-after-unroll", fold_constants),
    ("cse", eliminate_common_subexpressions),
    ("dce", eliminate_dead_code),
    ("adjoint", derive_adjoint),
)


def run_pipeline(fn: ir.Function, *, check: bool = False, compile_callee=None) -> ir.Function:
    """Run every pass of PIPELINE on `fn`; with `check` (config.verify_ir, debug mode), verify the IR after each
    one against the op schema (ir_ops.SCHEMA). `compile_callee(source, kind, name, param_types)` compiles a
    called @wp.func for its argument types (the driver's compile_ir): type inference needs it, and only it."""
    for name, p in PIPELINE:
        try:
            fn = p(fn, compile_callee) if p is infer_types else p(fn)
        except KernelError:
            raise
        except Exception as e:  # noqa: BLE001  (a compiler bug must still name the function, never escape raw)
            raise CompileError(f"internal compiler error in pass '{name}' ({type(e).__name__}: {e})", fn.loc,
                               fn.name) from e
        if check:
            verify(fn, name)
    return fn
