"""Compile every kernel of `sim` (and, with --tests, of the test suite) to machine code for one GPU architecture
with NVRTC, and report each entry point's registers, stack frame and spilled bytes (ptxas's verbose report).
No GPU needed: this is the CUDA build check of a machine without one.

    python tools/cuda_report.py [--arch 90] [--tests] [--top 20]

Prints one line per module (kernels, compile seconds) and then the entry points with the most spilled bytes;
exits 1 when a module fails to compile (its error is printed).
"""

from __future__ import annotations

import argparse
import glob
import importlib
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kernels.errors import CompileError  # noqa: E402
from kernels.runtime.module import _modules  # noqa: E402
from kernels.compiler.nvrtc import compile_source, render_cuda_source, resource_report  # noqa: E402


def import_kernels(tests):
    """Import the modules whose kernels are reported: sim's solvers and helpers, and the test modules (`tests`:
    True for all of them, or a list of test module names such as ["test_tiles_linalg"])."""
    import sim  # noqa: F401
    for path in sorted(glob.glob(os.path.join(ROOT, "sim", "**", "*.py"), recursive=True)):
        name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
        if not name.endswith("__main__"):
            importlib.import_module(name.removesuffix(".__init__"))
    if tests:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        for path in sorted(glob.glob(os.path.join(ROOT, "tests", "test_*.py"))):
            if tests is not True and os.path.basename(path)[:-3] not in tests:
                continue
            try:
                importlib.import_module(os.path.basename(path)[:-3])
            except (Exception, BaseException) as e:  # noqa: BLE001  needs an optional package (importorskip
                # raises pytest's Skipped, a BaseException)
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                print(f"skipped {os.path.basename(path)}: {type(e).__name__}: {e}", file=sys.stderr)


def report(arch: int) -> tuple:
    """(per-module rows, per-entry rows, failures) for every module with kernels."""
    modules, entries, failures = [], [], []
    for name, module in sorted(_modules.items()):
        kernels = []
        for k in module.kernels:
            try:
                k.compile_ir()
                kernels.append(k)
            except CompileError:
                continue  # kernels written to fail (error tests) or not compilable: their launch says why
        if not kernels:
            continue
        t0 = time.perf_counter()
        try:
            _, log = compile_source(render_cuda_source(kernels), arch, f"{name}.cu", "cubin")
        except Exception as e:  # noqa: BLE001
            failures.append((name, str(e)))
            continue
        modules.append((name, len(kernels), time.perf_counter() - t0))
        for entry, use in resource_report(log).items():
            entries.append((name, entry, use["registers"], use["stack_bytes"], use["spill_bytes"]))
    return modules, entries, failures


def _precompile_one(job: tuple) -> tuple:
    """Compile one build unit of a module as its first CUDA launch would (cache warm-up): `job` is (module name,
    adjoint, unit index) over kernels.runtime.cuda_module.build_units of the module's batch in that direction."""
    from kernels.runtime.cuda_module import build_units, module_batches, unit_source
    from kernels.compiler.nvrtc import compile_source
    name, adjoint, index = job
    t0 = time.perf_counter()
    forward, backward = module_batches(_modules[name])
    unit = build_units(backward if adjoint else forward, adjoint)[index]
    what = f"{name}{' adjoint of ' + unit[0].name if adjoint and len(unit) == 1 else ''}"
    try:
        compile_source(unit_source(unit, adjoint), ARCH[0], f"{name}.cu", "cubin")
    except Exception as e:  # noqa: BLE001  reported; the launch will report it too
        return what, time.perf_counter() - t0, str(e)[-500:]
    return what, time.perf_counter() - t0, None


ARCH = [90]


def precompile(arch: int, jobs: int) -> int:
    """Fill the kernel cache with every module's CUDA programs (each build unit a job, `jobs` at a time in forked
    workers): what the modules' first forward and adjoint launches compile."""
    import multiprocessing
    from kernels.runtime.cuda_module import build_units, module_batches
    ARCH[0] = arch
    work = []
    for name, module in _modules.items():
        if not module.kernels:
            continue
        forward, backward = module_batches(module)
        for adjoint, batch in ((False, forward), (True, backward)):
            if batch:
                work += [(len(batch), (name, adjoint, i)) for i in range(len(build_units(batch, adjoint)))]
    # the largest modules first, so that the slowest compiles start at once
    work.sort(key=lambda w: -w[0])
    failed = 0
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for what, seconds, error in pool.imap_unordered(_precompile_one, [job for _, job in work]):
            print(f"precompiled {what}: {seconds:.1f} s{' FAILED ' + error if error else ''}", flush=True)
            failed += error is not None
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="compute capability, e.g. 90 for sm_90 (H100/H200)")
    parser.add_argument("--tests", nargs="*", default=None, metavar="MODULE",
                        help="also the kernels of tests/test_*.py (of the named test modules only, when named)")
    parser.add_argument("--top", type=int, default=20, help="entry points listed, most spilled bytes first")
    parser.add_argument("--precompile", type=int, default=0, metavar="JOBS",
                        help="instead of the report, compile every module as its first CUDA launches would, JOBS "
                             "modules at a time, into the kernel cache (KERNELS_CACHE_DIR)")
    args = parser.parse_args(argv)
    import_kernels(False if args.tests is None else (args.tests or True))
    if args.precompile:
        return precompile(args.arch, args.precompile)
    modules, entries, failures = report(args.arch)
    for name, count, seconds in modules:
        print(f"{name}: {count} kernels, {seconds:.1f} s")
    spilling = sum(1 for e in entries if e[4])
    print(f"\nsm_{args.arch}: {len(entries)} entry points in {len(modules)} modules, {spilling} spill; "
          f"registers max {max((e[2] for e in entries), default=0)}")
    print(f"{'module':40} {'entry point':48} {'regs':>5} {'stack B':>8} {'spill B':>8}")
    for name, entry, regs, stack, spill in sorted(entries, key=lambda e: (-e[4], -e[3]))[:args.top]:
        print(f"{name[-40:]:40} {entry[-48:]:48} {regs:5d} {stack:8d} {spill:8d}")
    for name, error in failures:
        print(f"FAILED {name}:\n{error[-3000:]}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
