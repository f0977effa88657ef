"""`gradcheck`: compare the tape's gradients with central finite differences. The one helper every gradient test
uses: `|ad - fd| <= atol + rtol * |fd|` elementwise, with a report of the worst errors per input."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import kernels as wp

from .tape import Tape


@dataclass
class GradcheckReport:
    """Per input: max absolute and relative error, and the flat index of the worst element."""

    passed: bool
    rows: list = field(default_factory=list)  # (input index, max abs err, max rel err, worst index, ad, fd)
    numeric: list = field(default_factory=list)  # per input: the finite-difference gradient, flat (float64)

    def __str__(self):
        lines = ["gradcheck " + ("passed" if self.passed else "FAILED"),
                 f"{'input':>5} {'max abs err':>12} {'max rel err':>12} {'worst':>6} {'tape':>14} {'finite diff':>14}"]
        for i, ae, re, w, ad, fd in self.rows:
            lines.append(f"{i:>5} {ae:>12.3e} {re:>12.3e} {w:>6} {ad:>14.6e} {fd:>14.6e}")
        return "\n".join(lines)


def _outputs(result):
    if result is None:
        raise ValueError("gradcheck: fn must return the output array(s)")
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _weighted_sum(outs, weights) -> float:
    return float(sum(np.sum(o.numpy().astype(np.float64) * w) for o, w in zip(outs, weights)))


def gradcheck(fn, inputs, *, eps=None, atol=None, rtol=None, seed: int = 0, raise_on_fail: bool = True,
              weights=None):
    """Check the gradients of `fn(*inputs)` (which launches kernels and returns its output array or arrays).

    The scalar checked is sum(w * out) over the outputs with fixed random weights w (or the given `weights`,
    one array per output), so every output element contributes. `fn` must compute its outputs afresh on each
    call (allocate or zero them). Defaults depend on the inputs' precision: float64 eps=1e-6, atol=1e-6,
    rtol=1e-5; float32 eps=1e-3, atol=1e-3, rtol=2e-2. Returns a GradcheckReport, whose finite differences can
    also judge another implementation's gradient; raises AssertionError with the report when the check fails
    (unless told not to).
    """
    rng = np.random.default_rng(seed)
    double = all(wp.types.scalar_type(x.dtype) is wp.float64 for x in inputs)
    eps = eps if eps is not None else (1e-6 if double else 1e-3)
    atol = atol if atol is not None else (1e-6 if double else 1e-3)
    rtol = rtol if rtol is not None else (1e-5 if double else 2e-2)
    for x in inputs:
        x.requires_grad = True
        x.grad.zero_()
    tape = Tape()
    with tape:
        outs = _outputs(fn(*inputs))
    if weights is None:
        weights = [rng.standard_normal(o.numpy().shape) for o in outs]
    weights = [np.asarray(w, dtype=np.float64).reshape(o.numpy().shape) for o, w in zip(outs, weights)]
    tape.backward(grads={o: w.astype(o.numpy().dtype) for o, w in zip(outs, weights)})
    analytic = [x.grad.numpy().astype(np.float64).reshape(-1).copy() for x in inputs]
    tape.zero()

    report = GradcheckReport(passed=True)
    for k, x in enumerate(inputs):
        host = x.numpy()  # the array's memory on the CPU; a copy of a CUDA array, written back after each change
        flat = host.reshape(-1)

        def put():
            if x.is_cuda:
                x.assign(host)

        numeric = np.zeros(flat.size)
        for j in range(flat.size):
            orig = flat[j].copy()
            flat[j] = orig + eps
            put()
            f_plus = _weighted_sum(_outputs(fn(*inputs)), weights)
            flat[j] = orig - eps
            put()
            f_minus = _weighted_sum(_outputs(fn(*inputs)), weights)
            flat[j] = orig
            put()
            numeric[j] = (f_plus - f_minus) / (2 * eps)
        report.numeric.append(numeric)
        err = np.abs(analytic[k] - numeric)
        ok = err <= atol + rtol * np.abs(numeric)
        worst = int(np.argmax(err - (atol + rtol * np.abs(numeric)))) if err.size else 0
        rel = err / np.maximum(np.abs(numeric), 1e-30)
        report.rows.append((k, float(err.max(initial=0)), float(rel.max(initial=0)), worst,
                            float(analytic[k][worst]) if err.size else 0.0, float(numeric[worst]) if err.size else 0.0))
        report.passed &= bool(ok.all())
    if raise_on_fail and not report.passed:
        raise AssertionError(str(report))
    return report
