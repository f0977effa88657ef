"""Memory a scene will need, estimated from its counts at load time (before anything is built), and the memory
the machine can give; a scene that cannot fit is refused at validation, naming its largest object's key.

The per-item costs were measured on `sim run` (peak RSS growth of a run of a 300 x 300 cloth and of a 40^3
particle block: ~3.4 KiB per cloth vertex with its triangles and bending edges, ~0.75 KiB per free particle),
and include the builder's Python-side lists, the model, two states and solver buffers.
"""

from __future__ import annotations

import os

BYTES_PER_PARTICLE = 800
BYTES_PER_TRIANGLE = 1000  # the membrane element, its bending edges and their solver buffers
BYTES_PER_BODY = 16 * 1024
BASE_BYTES = 256 * 2**20  # the interpreter, numpy, pxr and compiled kernels
BYTES_PER_WORLD = 4 * 1024  # a world's builder copy, index ranges and bookkeeping, even with nothing in it


def object_estimates(spec) -> list:
    """[(key path, bytes)] of each cloth, particle block and the bodies of a validated scene spec."""
    out = []
    for i, c in enumerate(spec.cloth):
        if c.grid is not None:
            verts = (c.grid.dim_x + 1) * (c.grid.dim_y + 1)
            tris = 2 * c.grid.dim_x * c.grid.dim_y
            key = ("cloth", i, "grid")
        else:
            mesh = c.mesh if c.mesh is not None else c.inline
            verts, tris = len(mesh.vertices), len(mesh.triangles)
            key = ("cloth", i, "mesh" if c.mesh is not None else "inline")
        out.append((key, verts * BYTES_PER_PARTICLE + tris * BYTES_PER_TRIANGLE))
    for i, p in enumerate(spec.particles):
        if p.grid is not None:
            count, key = p.grid.dim[0] * p.grid.dim[1] * p.grid.dim[2], ("particles", i, "grid")
        else:
            count, key = len(p.points), ("particles", i, "points")
        out.append((key, count * BYTES_PER_PARTICLE))
    if spec.bodies:
        out.append((("bodies",), len(spec.bodies) * BYTES_PER_BODY))
    return out


def estimate_bytes(spec, worlds: int | None = None) -> int:
    """Bytes a run of `spec` needs with `worlds` copies of its objects (default its sim.worlds)."""
    worlds = spec.sim.worlds if worlds is None else worlds
    return BASE_BYTES + worlds * (BYTES_PER_WORLD + sum(b for _, b in object_estimates(spec)))


def available_bytes() -> int | None:
    """Memory this process can still get: MemAvailable, bounded by the cgroup's limit; None if unknown."""
    limits = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as f:
                text = f.read().strip()
            if text == "max":
                continue
            with open(usage_file) as f:
                used = int(f.read().strip())
            limit = int(text)
            if limit < 1 << 60:  # cgroup v1 writes a huge number for "no limit"
                limits.append(max(limit - used, 0))
        except (OSError, ValueError):
            continue
    if not limits and hasattr(os, "sysconf"):
        try:
            limits.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError):
            pass
    return min(limits) if limits else None


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n < 2**40 else f"{n / 2**40:,.1f} TiB"


def check_memory(spec, ctx) -> None:
    """Refuse a scene whose estimated memory exceeds what is available, at its largest object's key (or at
    sim.worlds when one world would fit)."""
    need, have = estimate_bytes(spec), available_bytes()
    if have is None or need <= have:
        return
    worlds = spec.sim.worlds
    if worlds > 1 and estimate_bytes(spec, 1) <= have:
        fit = max(1, (have - BASE_BYTES) // max(estimate_bytes(spec, 1) - BASE_BYTES, 1))
        ctx.child("sim").child("worlds").fail(
            f"{worlds} worlds need about {mib(need)} of memory but {mib(have)} are available (about {fit:,} "
            f"worlds of this scene fit)")
    key, largest = max(object_estimates(spec), key=lambda kv: kv[1])
    target = ctx
    for part in key:
        target = target.child(part)
    target.fail(f"the scene needs about {mib(need)} of memory (this object {mib(largest)}) but "
                f"{mib(have)} are available; make it smaller")
