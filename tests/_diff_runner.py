"""Runs the generated cases of the differential tests with one framework: `kernels` (in the test's process) or
warp-lang (in a child process, so that Warp's import and its compile run beside ours and `import warp` is never
the shim another test may have installed).

    python tests/_diff_runner.py MODULE.py MANIFEST.json OUT.npz CACHE_DIR

runs MODULE (which starts with `import warp as wp`) on Warp's CPU and writes every output and gradient to OUT.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import traceback

import numpy as np

from _diff_kernels import THREADS

def load_module(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _composite_type(wp, kind, scalar):
    """wp.vec3, wp.mat33d, ...: the composite `kind` of float32 or float64."""
    return getattr(wp, kind + ("d" if scalar == "float64" else ""))


def _expression_args(wp, entry, device):
    if entry["kind"] == "scalar":
        args = [getattr(wp, t)(v) for t, v in entry["inputs"]]
        dtypes = [getattr(wp, t) for t in entry["outputs"]]
    else:
        s = entry["scalar"]
        args = []
        for kind, v in entry["inputs"]:
            if kind == s:
                args.append(getattr(wp, s)(v))
            else:
                t = _composite_type(wp, kind, s)
                args.append(wp.array(np.array([v], dtype=s), dtype=t, device=device))
        dtypes = [getattr(wp, s) if k == "scalar" else _composite_type(wp, k, s) for k in entry["outputs"]]
    outputs = [wp.zeros(1, dtype=t, device=device) for t in dtypes]
    return args, outputs


def run_expressions(wp, module, manifest, device="cpu") -> tuple:
    """({"<kernel>/o<k>": value}, {kernel: error text}) for the expression kernels of `manifest`."""
    results, errors = {}, {}
    for entry in manifest:
        try:
            args, outputs = _expression_args(wp, entry, device)
            wp.launch(getattr(module, entry["name"]), dim=1, inputs=args + outputs, device=device)
            for k, o in enumerate(outputs):
                results[f"{entry['name']}/o{k}"] = o.numpy()[0]
        except Exception as e:  # noqa: BLE001  (a refusal is recorded with its reason)
            errors[entry["name"]] = f"{type(e).__name__}: {e}"
    return results, errors


def _gradient_inputs(wp, module, entry, device):
    s = entry["scalar"]
    dtype = getattr(wp, s)
    vec = wp.vec3d if s == "float64" else wp.vec3
    x = wp.array(np.array(entry["x"], dtype=s), dtype=dtype, device=device, requires_grad=True)
    v = wp.array(np.array(entry["v"], dtype=s), dtype=vec, device=device, requires_grad=True)
    p = (module.Params64 if s == "float64" else module.Params32)()
    p.scale = dtype(entry["scale"])
    p.w = wp.array(np.array(entry["w"], dtype=s), dtype=dtype, device=device, requires_grad=True)
    y = wp.zeros(THREADS, dtype=dtype, device=device, requires_grad=True)
    z = wp.zeros(1, dtype=dtype, device=device, requires_grad=True)
    return x, v, p, y, z


def run_gradients(wp, tape_class, module, manifest, device="cpu") -> tuple:
    """Forward outputs and Tape gradients of each kernel: ({"<kernel>/<y|z|x.grad|v.grad|w.grad>": array},
    {kernel: error text})."""
    results, errors = {}, {}
    for entry in manifest:
        name = entry["name"]
        try:
            x, v, p, y, z = _gradient_inputs(wp, module, entry, device)
            tape = tape_class()
            with tape:
                wp.launch(getattr(module, name), dim=THREADS, inputs=[x, v, p, entry["n"], y, z], device=device)
            s = entry["scalar"]
            tape.backward(grads={y: wp.array(np.array(entry["wy"], dtype=s), dtype=getattr(wp, s), device=device),
                                 z: wp.array(np.array(entry["wz"], dtype=s), dtype=getattr(wp, s), device=device)})
            for key, a in (("y", y), ("z", z), ("x.grad", x.grad), ("v.grad", v.grad), ("w.grad", p.w.grad)):
                results[f"{name}/{key}"] = a.numpy().copy()
        except Exception as e:  # noqa: BLE001  (a refusal is recorded with its reason)
            errors[name] = f"{type(e).__name__}: {e}"
    return results, errors


def main(module_path, manifest_path, out_path, cache_dir):
    import warp as wp

    wp.config.kernel_cache_dir = cache_dir
    wp.config.quiet = True
    wp.config.optimization_level = 0  # compile time is most of the run; the semantics do not depend on it
    wp.init()
    module = load_module(module_path, "warp_diff_cases")
    with open(manifest_path) as f:
        manifest = json.load(f)
    expr = [e for e in manifest if e["kind"] in ("scalar", "composite")]
    grad = [e for e in manifest if e["kind"] == "gradient"]
    results, errors = run_expressions(wp, module, expr)
    more, more_errors = run_gradients(wp, wp.Tape, module, grad)
    results.update(more)
    errors.update(more_errors)
    np.savez(out_path, **{k: np.asarray(v) for k, v in results.items()})
    with open(out_path + ".errors.json", "w") as f:
        json.dump(errors, f)


if __name__ == "__main__":
    try:
        main(*sys.argv[1:5])
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)
