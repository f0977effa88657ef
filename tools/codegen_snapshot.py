"""Write the generated source of every kernel the repository defines at import time, to compare two versions of
the compiler: a refactor that must not change code generation shows an empty diff.

    python tools/codegen_snapshot.py /tmp/before.txt          # on the old version
    python tools/codegen_snapshot.py /tmp/after.txt           # on the new one
    diff /tmp/before.txt /tmp/after.txt

Imports every module of `sim` and `autodiff` and the test modules (kernels defined inside test functions are not
seen), compiles each kernel's IR, and writes per kernel module the CPU and CUDA sources, release and debug, with
the adjoints, plus one comment line per compile error or adjoint refusal. Renders only: nothing is compiled to
machine code. Kernel names made by factories carry a memory address, written as 0x0; the checkout's path is
written as <repo>.
"""

from __future__ import annotations

import argparse
import glob
import importlib
import os
import pkgutil
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _import_everything():
    import autodiff
    import sim
    names = [m.name for pkg in (sim, autodiff) for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
             if not m.name.endswith("__main__")]
    tests = os.path.join(ROOT, "tests")
    sys.path.insert(0, tests)
    names += [os.path.basename(p)[:-3] for p in sorted(glob.glob(os.path.join(tests, "test_*.py")))
              + sorted(glob.glob(os.path.join(tests, "_*.py")))]
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as e:  # noqa: BLE001  (a test module may need what this machine lacks)
            failed.append(f"{name} ({type(e).__name__})")
    return failed


def _adjoint_error(fn):
    adjoint = getattr(fn, "adjoint", None)
    if adjoint is not None:
        return adjoint.error
    from kernels.compiler import render_adjoint  # a compiler from before the adjoint pass (to compare with it)
    return render_adjoint.adjoint_error(fn)


def snapshot() -> tuple:
    from kernels.runtime import module as kernel_modules
    from kernels.compiler.render import CPU, CUDA
    from kernels.compiler.render_adjoint import render_adjoint_function, render_adjoint_kernel
    from kernels.compiler.render_module import ModuleSource
    out = []
    count = 0
    for mname in sorted(kernel_modules._modules):
        compiled = []
        for k in kernel_modules._modules[mname].kernels:
            if k.is_generic:
                continue
            try:
                k.compile_ir()
                compiled.append(k)
                count += 1
            except Exception as e:  # noqa: BLE001  (kernels written to fail compiling, for error tests)
                out.append(f"// {mname}.{k.name}: compile error {type(e).__name__}: {e}")
        for k in compiled:
            if k.enable_backward and _adjoint_error(k.ir) is not None:
                out.append(f"// {mname}.{k.name}: no adjoint: {_adjoint_error(k.ir)}")
        for dialect in (CPU, CUDA):
            for debug in (False, True):
                src = ModuleSource(dialect, debug)
                parts = []
                for i, k in enumerate(compiled):
                    for fn in kernel_modules._callees(k.ir):
                        src.add_function(fn)
                    parts.append(src.render_kernel(k.ir, f"k{i}_{k.name}",
                                                   render_adjoint_kernel if k.enable_backward else None))
                out.append(src.source(parts, render_adjoint_function))
    text = "\n".join(out).replace(ROOT, "<repo>")  # two checkouts compare equal
    return re.sub(r"0x[0-9a-f]+|::[0-9a-f]{8,}\.", "0x0", text), count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="file to write")
    args = parser.parse_args(argv)
    failed = _import_everything()
    text, kernels = snapshot()
    with open(args.out, "w") as f:
        f.write(text)
    print(f"{args.out}: {len(text):,} characters, {kernels} kernels compiled"
          + (f"; not imported: {', '.join(failed)}" if failed else ""))


if __name__ == "__main__":
    main()
