"""Kernels whose generated source test_golden.py pins; imported by it, also in subprocesses.

The generated source embeds Python line numbers (for debug-mode error reports), so these kernels live in their
own file: editing the tests does not move them. `main` prints rendered sources for the cross-process
determinism check; it is called after `import _golden_kernels`, never run as `__main__`, because struct names in
the generated source derive from the defining module's name.
Each kernel is its own compiled module (`module=`), so the source a launch builds is the source pinned here.
"""

import sys

import kernels as wp
from kernels.runtime.module import _callees
from kernels.compiler.render_adjoint import render_adjoint_function, render_adjoint_kernel
from kernels.compiler.render_module import ModuleSource


@wp.func
def square(x: float):
    return x * x


@wp.struct
class Affine:
    scale: float
    offset: float


@wp.kernel(module="golden_saxpy")
def saxpy(alpha: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = alpha * x[i] + y[i]


@wp.kernel(module="golden_branch_loop")
def branch_loop(n: int, x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(n):
        if x[i] > 0.0:
            s += x[i]
        else:
            s -= 1.0
    out[i] = s


@wp.kernel(module="golden_func_call")
def func_call(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = square(x[i]) + 1.0


@wp.kernel(module="golden_struct_arg")
def struct_arg(p: Affine, x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = p.scale * x[i] + p.offset


#: golden file stem -> (kernel, dialect)
GOLDEN = {
    "saxpy_cpu": (saxpy, "cpu"),
    "saxpy_cuda": (saxpy, "cuda"),
    "branch_loop_cpu": (branch_loop, "cpu"),
    "func_call_cpu": (func_call, "cpu"),
    "struct_arg_cpu": (struct_arg, "cpu"),
}


def render(kernel, dialect: str) -> str:
    """The source of a module holding `kernel` alone, as Module._build_library assembles it (release mode)."""
    kernel.compile_ir()
    src = ModuleSource(dialect, False)
    for fn in _callees(kernel.ir):
        src.add_function(fn)
    parts = [src.render_kernel(kernel.ir, f"k0_{kernel.name}", render_adjoint_kernel)]
    return src.source(parts, render_adjoint_function)


def main(stems: list):
    """Print the rendered source of the golden kernels named by `stems`, each after a `==== stem` line."""
    for stem in stems:
        kernel, dialect = GOLDEN[stem]
        sys.stdout.write(f"==== {stem}\n{render(kernel, dialect)}")
