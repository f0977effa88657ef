"""Child process of the Warp-examples harness: run one of warp-lang's example programs and save its arrays.

    python example_runner.py --impl kernels|warp --example core.example_dem --out OUT.npz -- [EXAMPLE ARGS ...]

`--impl kernels` runs the example file unedited through `warp_shim`; `--impl warp` runs it on the installed
warp-lang. After the program's `__main__` block, every array held by its `example` object (its attributes, and
the attributes of objects it holds, two levels deep) is saved as a numpy array under its attribute path, with
`__seconds__` the wall time of the program itself (the interpreter's start, `import warp` and `wp.init()`, which
loads each implementation's native runtime, not included).
"""

import argparse
import importlib.util
import os
import runpy
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def examples_dir() -> str:
    """warp-lang's `warp/examples` folder (found before the shim takes the name `warp`)."""
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("warp-lang is not installed (it is a test extra: pip install -e '.[test]')")
    return os.path.join(list(spec.submodule_search_locations)[0], "examples")


def collect_arrays(root, wp_module, *, depth: int = 2) -> dict:
    """{attribute path: numpy array} of every Warp array (or numpy array) reachable from `root`'s attributes."""
    found: dict = {}
    seen: set = set()

    def visit(obj, prefix: str, level: int) -> None:
        if id(obj) in seen or level > depth:
            return
        seen.add(id(obj))
        attributes = getattr(obj, "__dict__", None)
        if not isinstance(attributes, dict):
            return
        for name, value in sorted(attributes.items()):
            path = f"{prefix}{name}"
            if isinstance(value, wp_module.array):
                found[path] = value.numpy()
            elif isinstance(value, np.ndarray) and value.dtype != object:
                found[path] = value
            elif isinstance(value, (list, tuple)) and value and all(isinstance(v, wp_module.array) for v in value):
                for i, item in enumerate(value):
                    found[f"{path}[{i}]"] = item.numpy()
            elif not isinstance(value, (int, float, str, bytes, bool, type(None))) and not callable(value):
                visit(value, path + ".", level + 1)

    visit(root, "", 0)
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", choices=("kernels", "warp"), required=True)
    parser.add_argument("--example", required=True, help="e.g. core.example_dem (relative to warp/examples)")
    parser.add_argument("--out", required=True, help="the .npz the example's arrays are written to")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    script = os.path.join(examples_dir(), *args.example.split(".")) + ".py"
    if args.impl == "kernels":
        import warp_shim

        wp = warp_shim.install()
        wp.init()  # loads the native runtime, as Warp's does below: neither is in the timed program
    else:
        import warp as wp

        wp.config.quiet = True
        wp.init()
    rest = args.args[1:] if args.args[:1] == ["--"] else args.args
    sys.argv = [script, *rest]
    start = time.perf_counter()
    namespace = runpy.run_path(script, run_name="__main__")
    wp.synchronize()
    seconds = time.perf_counter() - start
    example = namespace.get("example")
    arrays = collect_arrays(example, wp) if example is not None else {}
    arrays["__seconds__"] = np.array(seconds)
    tmp = args.out + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
