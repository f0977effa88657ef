"""The table and the verdict line of tools/bench.py: rows of measurements side by side, the issues' speed
targets (PASS/MISS), and the rows of the simulation sections (cloth, rigid bodies, optimisation)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

try:
    from . import bench_articulation, bench_contention, bench_render, bench_rigid, bench_sim, bench_sweep
except ImportError:  # run as a script: tools/ is on sys.path, the repository root is not
    from tools import bench_articulation, bench_contention, bench_render, bench_rigid, bench_sim, bench_sweep

if TYPE_CHECKING:
    from tools.bench_settings import Settings

@dataclass
class Row:
    """One line of the table: a measurement in one unit for each column (None: not measured)."""

    label: str
    unit: str
    ours: float | None = None
    numpy: float | None = None
    copy: float | None = None
    warp: float | None = None
    mujoco: float | None = None  # an extra column, shown when asked for (render_table)


COLUMNS = ("ours", "numpy", "copy", "warp")
HEADERS = {"ours": "ours", "numpy": "numpy", "copy": "memcpy", "warp": "Warp CPU", "mujoco": "MuJoCo CPU"}


def format_value(value) -> str:
    """About three significant digits; "-" for a value not measured."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if value >= 1 else f"{value:.3f}"


def render_table(rows: list, extra_columns=()) -> str:
    """Rows as aligned text: label and unit left-aligned, numbers right-aligned; `extra_columns` (of "mujoco")
    after the usual ones."""
    columns = COLUMNS + tuple(extra_columns)
    header = ["benchmark", "unit"] + [HEADERS[c] for c in columns]
    cells = [header] + [[r.label, r.unit] + [format_value(getattr(r, c)) for c in columns] for r in rows]
    widths = [max(len(line[k]) for line in cells) for k in range(len(header))]

    def render_line(line):
        left = [line[k].ljust(widths[k]) for k in range(2)]
        right = [line[k].rjust(widths[k]) for k in range(2, len(line))]
        return "  ".join(left + right)

    lines = [render_line(cells[0]), "-" * (sum(widths) + 2 * (len(widths) - 1))]
    return "\n".join(lines + [render_line(line) for line in cells[1:]])


def target_verdict(name: str, value, limit: float, *, at_least: bool) -> str:
    """'name VALUE >= LIMIT PASS' (or MISS); 'n/a' when the value could not be measured."""
    if value is None:
        return f"{name} n/a"
    ok = value >= limit if at_least else value <= limit
    sign = ">=" if at_least else "<="
    return f"{name} {value:.2f} {sign} {limit:g} {'PASS' if ok else 'MISS'}"


def ratio(a, b):
    """a / b, or None when either is missing."""
    return None if a is None or b is None else a / b


def worst_launch_ratio(launch: dict):
    """Largest ratio of our launch overheads to Warp's; None without Warp."""
    ratios = [ratio(launch["ours"][k], launch.get("warp", {}).get(k)) for k in ("one", "eight", "replay")]
    return None if None in ratios else max(ratios)


def compile_ratio(compile_: dict, kind: str):
    """Our cold or warm load time over Warp's; None without Warp."""
    return ratio(compile_["ours"][kind], compile_.get("warp", {}).get(kind))


def spring_backward_ratio(ms: dict):
    """((forward+backward) - forward) / forward of one backend's spring kernel ms."""
    return (ms["forward_backward"] - ms["forward"]) / ms["forward"]


# The targets: (section, name, value of the results, limit, whether the value must be at least the limit)
TARGETS = (
    ("saxpy", "saxpy/memcpy", lambda r: ratio(r["saxpy"]["ours"], r["saxpy"]["copy"]), 0.7, True),
    ("launch", "launch/Warp (worst)", lambda r: worst_launch_ratio(r["launch"]), 1.0, False),
    ("compile", "cold/Warp", lambda r: compile_ratio(r["compile"], "cold"), 1.5, False),
    ("compile", "warm/Warp", lambda r: compile_ratio(r["compile"], "warm"), 2.0, False),
    ("autodiff", "backward/forward", lambda r: spring_backward_ratio(r["autodiff"]["ours"]), 3.0, False),
    ("gemm", "tiled GEMM within 4x of numpy: numpy/ours", lambda r: ratio(r["gemm"]["numpy"], r["gemm"]["ours"]),
     4.0, False),
    ("cloth", "cloth fwd vs reference (semi-implicit, worst size)",
     lambda r: bench_sim.cloth_worst_speedup(r["cloth"]), 1.5, True),
    ("cloth", "cloth backward/forward (worst of all solvers and sizes)",
     lambda r: bench_sim.cloth_worst_backward(r["cloth"]), 3.0, False),
    ("articulation", "articulation fwd vs Newton Featherstone (worst scene)",
     lambda r: bench_articulation.worst_speedup(r["articulation"]), 1.0, True),
    ("articulation", "articulation backward/forward (worst scene)",
     lambda r: bench_articulation.worst_backward(r["articulation"]), 3.0, False),
    ("articulation", "articulation backward/forward, captured (worst scene)",
     lambda r: bench_articulation.worst_backward(r["articulation"], captured=True), 3.0, False),
    ("contention", "2 processes at once: each vs alone (worst cloth row)",
     lambda r: bench_contention.worst_pair_ratio(r["contention"]), 0.45, True),
    ("contention", "alone: pool vs previous runtime (worst row)",
     lambda r: bench_contention.worst_alone_ratio(r["contention"]), 0.9, True),
    ("sweep", "sweep: 2 workers vs 1", lambda r: bench_sweep.speedup(r["sweep"]), bench_sweep.TARGET, True),
    ("rigid", "rigid 1000 boxes vs Newton", lambda r: bench_rigid.speedup(r["rigid"]["large"]), 1.5, True),
    ("rigid", "rigid 1000 boxes, 1 thread vs Newton",
     lambda r: bench_rigid.speedup(r["rigid"]["large"], "ours_one_thread"), 1.0, True),
    ("rigid", "rigid 1000 boxes vs the tree before issue 36",
     lambda r: bench_rigid.baseline_ratio(r["rigid"]["large"]), 0.8, True),
    ("rigid", "rigid 1000 boxes, 1 thread, vs the tree before issue 36",
     lambda r: bench_rigid.baseline_ratio(r["rigid"]["large"], "ours_one_thread"), 0.8, True),
    ("rigid", "rigid 100 boxes forward+backward / forward",
     lambda r: 1.0 + bench_rigid.backward_ratio(r["rigid"]["small"]), 2.0, False),
    ("render", "sim render cloth 120 frames 640x360 [s]",
     lambda r: bench_render.whole_seconds_for_target(r["render"]), bench_render.TARGET_SECONDS, False),
)


def closing_line(results: dict) -> str:
    """The issue's targets of the measured sections, each with the measured ratio and PASS/MISS."""
    verdicts = [target_verdict(name, value(results), limit, at_least=at_least)
                for section, name, value, limit, at_least in TARGETS if section in results]
    return "targets: " + (" | ".join(verdicts) if verdicts else "none in the sections run")


CLOTH_SOLVER_LABELS = {"semi_implicit": "semi-implicit", "xpbd": f"XPBD {bench_sim.XPBD_ITERATIONS} it"}


def cloth_rows(cloth: dict, settings: Settings) -> list:
    """Forward, forward+backward and their ratio for each cloth; the reference goes in the Warp CPU column."""
    rows = []
    for (solver, cells), entry in bench_sim.cloth_entries(cloth):
        frames = settings.cloth_frames[solver]
        name = f"cloth {cells}x{cells} {CLOTH_SOLVER_LABELS[solver]}"
        steps = f"{frames}x{bench_sim.SUBSTEPS} steps"
        ours, reference = entry["ours"], entry["reference"] or {}
        rows += [
            Row(f"{name} forward ({steps})", "steps/s", ours["forward"], warp=reference.get("forward")),
            Row(f"{name} forward, captured graph replay", "steps/s", ours.get("forward_graph")),
            Row(f"{name} forward+backward", "steps/s", ours["forward_backward"],
                warp=reference.get("forward_backward")),
            Row(f"{name} backward / forward", "x", bench_sim.cloth_backward_ratio(ours),
                warp=bench_sim.cloth_backward_ratio(reference)),
        ]
    return rows


def rigid_rows(rigid: dict, settings: Settings) -> list:
    """Bodies x steps/s of the falling boxes (Newton in the Warp CPU column), and our forward+backward cost."""
    large, small = rigid["large"], rigid["small"]
    count, grad_count = math.prod(settings.rigid_boxes), math.prod(settings.rigid_grad_boxes)
    name = f"rigid {grad_count} boxes"
    return [
        Row(f"rigid {count} boxes falling, forward ({settings.rigid_steps} steps)", "body-steps/s", large["ours"],
            warp=large["reference"]),
        Row(f"rigid {count} boxes falling, forward, 1 thread", "body-steps/s", large["ours_one_thread"],
            warp=large["reference"]),
        Row(f"rigid {count} boxes falling, forward, the tree before issue 36", "body-steps/s",
            large.get("baseline")),
        Row(f"rigid {count} boxes falling, 1 thread, the tree before issue 36", "body-steps/s",
            large.get("baseline_one_thread")),
        Row(f"{name} forward ({settings.rigid_grad_steps} steps)", "body-steps/s", small["forward"]),
        Row(f"{name} forward+backward", "body-steps/s", small["forward_backward"]),
        Row(f"{name} backward / forward", "x", bench_rigid.backward_ratio(small)),
    ] + [Row(f"rigid {count} boxes, {what} penetration at the end", "mm", _pick(rigid["depth"]["ours"], k),
             warp=_pick(rigid["depth"]["reference"], k)) for k, what in enumerate(("mean", "worst"))]


def _pick(values, k: int):
    """values[k], or None when there are no values."""
    return None if values is None else values[k]


def articulation_rows(results: dict, settings: Settings) -> list:
    """Joint-steps/s of each chain forward (Newton in the Warp CPU column, MuJoCo in its own) and forward+backward,
    and our backward / forward."""
    rows = []
    for chain in bench_articulation.SCENES:
        rates = results[chain.name]
        name = f"articulation {chain.name}"
        rows += [
            Row(f"{name} forward ({settings.articulation_steps} steps)", "joint-steps/s", rates["forward"],
                warp=rates["newton"], mujoco=rates["mujoco"]),
            Row(f"{name} forward+backward ({settings.articulation_grad_steps} steps)", "joint-steps/s",
                rates["forward_backward"]),
            Row(f"{name} backward / forward", "x", bench_articulation.backward_ratio(rates)),
            Row(f"{name} forward, captured graph replay", "joint-steps/s", rates["forward_graph"]),
            Row(f"{name} forward+backward, captured graph replay", "joint-steps/s", rates["forward_backward_graph"]),
            Row(f"{name} backward / forward, captured", "x", bench_articulation.backward_ratio(rates, captured=True)),
        ]
    return rows


def optim_rows(optim: dict) -> list:
    """Seconds per cloth-throw iteration (Newton in the Warp CPU column) and the tape's peak memory."""
    iteration, memory = optim["iteration"], optim["memory"]
    mib = 1024.0 ** 2
    return [
        Row(f"cloth throw optimisation iteration ({iteration['steps']} steps)", "s", iteration["ours"],
            warp=iteration["reference"]),
        Row(f"loss+gradient peak memory, full tape ({memory['steps']} steps)", "MiB", memory["full"] / mib),
        Row(f"loss+gradient peak memory, checkpointed ({memory['steps']} steps)", "MiB", memory["checkpointed"] / mib),
        Row("peak memory full / checkpointed", "x", memory["full"] / memory["checkpointed"]),
    ]
