"""The compiler driver: one function or kernel from its source to typed IR (frontend, then the pass pipeline).

The compiler's one recursion goes through here: type inference of a body compiles the @wp.func it calls for the
argument types of the call, with `compile_ir` handed to the pipeline (passes.run_pipeline's `compile_callee`),
so that neither the passes nor the function objects (function.py) import the driver back.
"""

from __future__ import annotations

from . import ir
from .. import config
from ..errors import CompileError
from ..typesys import ArrayType, StaticType, is_struct
from .frontend import FunctionSource, lower_function
from .function import is_function_argument, resolve_static
from .passes import run_pipeline


def compile_ir(source: FunctionSource, kind: str, name: str, param_types: list) -> ir.Function:
    """Frontend and forward pass pipeline for one function or kernel."""
    for t in param_types:
        if isinstance(t, StaticType) and not is_function_argument(t):  # functions: bound by name (frontend)
            raise CompileError("compile-time values cannot be passed to functions", source.loc(source.fdef), name)
        inner = t.dtype if isinstance(t, ArrayType) else t
        if is_struct(inner) and inner._wp_struct_.error is not None:
            raise CompileError(inner._wp_struct_.error, source.loc(source.fdef), name)
    fn = lower_function(source, kind, name, param_types, resolve_static)
    return run_pipeline(fn, check=config.verify_ir or config.mode == "debug", compile_callee=compile_ir)
