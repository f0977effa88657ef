"""What a sweep shows a person: a one-line progress bar (done/failed/running, ETA) and the closing summary table."""

from __future__ import annotations

import math
import time

import numpy as np

from ..scene.progress import Progress
from .metrics import metric_columns


class SweepProgress:
    """`update(done, failed, running)` redraws the bar with an ETA from the mean time per finished run so far."""

    def __init__(self, total: int, enabled: bool):
        self.bar = Progress(total, unit="runs", enabled=enabled)
        self.total, self.t0 = total, time.perf_counter()

    def update(self, done: int, failed: int, running: int, *, force: bool = False):
        elapsed = time.perf_counter() - self.t0
        eta = f"ETA {elapsed / done * (self.total - done):.0f} s" if done else "ETA -"
        self.bar.update(done, f"failed {failed}  running {running}  {eta}", force=force)

    def close(self):
        self.bar.close()


def summary(rows: list, axes: list, metrics: list, kind: str, seconds: float, executor: str) -> str:
    """Counts by status, min/median/max of each metric over the successful runs, and (for optimisations) the
    best run by final loss; failed runs are listed with their reason."""
    ok = [r for r in rows if r["status"] == "ok"]
    failed = [r for r in rows if r["status"] != "ok"]
    lines = [f"{len(rows)} runs in {seconds:.1f} s on {executor}: {len(ok)} ok, {len(failed)} failed"]
    cols = metric_columns(metrics)
    width = max([len(c) for c in cols] + [6])
    lines.append(f"{'metric':<{width}}  {'min':>12}  {'median':>12}  {'max':>12}")
    for c in cols:
        values = [r[c] for r in ok if isinstance(r.get(c), (int, float)) and math.isfinite(r[c])]
        if values:
            lines.append(f"{c:<{width}}  {min(values):>12.6g}  {float(np.median(values)):>12.6g}  "
                         f"{max(values):>12.6g}")
        else:
            lines.append(f"{c:<{width}}  {'-':>12}  {'-':>12}  {'-':>12}")
    if kind == "optimize" and "final_loss" in cols and ok:
        best = min(ok, key=lambda r: r["final_loss"] if math.isfinite(r["final_loss"]) else math.inf)
        lines.append(f"best run {best['run']}: final_loss {best['final_loss']:.6g}  " + "  ".join(f"{k}={best[k]}" for k in axes))
    for r in failed[:10]:
        lines.append(f"run {r['run']} {r['status']}: {r['error']}")
    if len(failed) > 10:
        lines.append(f"... and {len(failed) - 10} more failed runs (see results.csv)")
    return "\n".join(lines)

