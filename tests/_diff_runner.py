"""Runs the generated cases of the differential tests with one framework (`wp`: kernels in the test's process,
or warp-lang in the child process of _warp_child.py's "cases" job)."""

from __future__ import annotations

import numpy as np

from _diff_kernels import THREADS


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


def gradient_inputs(wp, module, entry, device):
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
            x, v, p, y, z = gradient_inputs(wp, module, entry, device)
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
