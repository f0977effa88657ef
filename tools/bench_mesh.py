"""Triangle-mesh construction and refit for tools/bench.py (`--only mesh`): `wp.Mesh(points, indices)` (the host
BVH build, kernels/native/bvh_build.cpp, and the upload) and `Mesh.refit()` after the points moved, side by side
with warp-lang's on its CPU backend.

The mesh is a wavy height field of N x N cells (2 N^2 triangles; N = 80 gives the 12,800 triangles of a mesh like
Warp's example bunny), the same points and indices for both. Each figure is the best of `repeats` runs in this
process, after one untimed run (Warp's refit kernel and ours load once); construction includes the BVH build and
the copies to the mesh's buffers.
"""

from __future__ import annotations

import time

import numpy as np

import kernels as wp


def height_field(cells: int) -> tuple:
    """(points [float32, ((cells + 1)^2, 3)], indices [int32, (2 cells^2 * 3)]): a 1 m square in x-z, y a wave."""
    u = np.linspace(0.0, 1.0, cells + 1, dtype=np.float32)
    x, z = np.meshgrid(u, u)
    y = 0.05 * np.sin(8.0 * x) * np.cos(6.0 * z)
    points = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1).astype(np.float32)
    grid = np.arange((cells + 1) ** 2, dtype=np.int32).reshape(cells + 1, cells + 1)
    a, b, c, d = grid[:-1, :-1].ravel(), grid[:-1, 1:].ravel(), grid[1:, 1:].ravel(), grid[1:, :-1].ravel()
    return points, np.concatenate([np.stack([a, d, b], 1), np.stack([b, d, c], 1)]).ravel()


def _best(run, repeats: int) -> float:
    """Milliseconds of the fastest of `repeats` calls of `run`, after one untimed call."""
    run()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def _times(module, points: np.ndarray, indices: np.ndarray, repeats: int) -> dict:
    """{"build": ms, "refit": ms} of `module`'s Mesh (kernels or warp) on the CPU."""
    p = module.array(points, dtype=module.vec3, device="cpu")
    i = module.array(indices, dtype=module.int32, device="cpu")
    build = _best(lambda: module.Mesh(points=p, indices=i), repeats)
    mesh = module.Mesh(points=p, indices=i)
    p.assign(points + np.float32(0.01) * np.sin(points[:, ::-1] * np.float32(5.0)))  # moved in place

    def refit():
        mesh.refit()
        module.synchronize()

    return {"build": build, "refit": _best(refit, repeats)}


def measure(cells: int, repeats: int) -> dict:
    """The construction and refit times, ours and (when warp-lang is installed) Warp's."""
    points, indices = height_field(cells)
    out = {"triangles": len(indices) // 3, "ours": _times(wp, points, indices, repeats), "warp": None}
    try:
        import warp
    except ImportError:
        return out
    warp.config.quiet = True
    out["warp"] = _times(warp, points, indices, repeats)
    return out


def rows(results: dict, row_type) -> list:
    """Table rows (tools/bench_report.Row) in milliseconds; the Warp CPU column is warp-lang's Mesh."""
    n, warp = results["triangles"], results["warp"]
    return [row_type(f"mesh of {n} triangles: wp.Mesh(points, indices)", "ms", results["ours"]["build"],
                     warp=warp and warp["build"]),
            row_type(f"mesh of {n} triangles: Mesh.refit() after the points moved", "ms",
                     results["ours"]["refit"], warp=warp and warp["refit"])]


def footnotes(results: dict) -> list:
    return ["mesh rows: lower is better; best of several runs in one process, the BVH built on the host by each "
            "(ours: kernels/native/bvh_build.cpp), refit by each one's kernels"]
