"""Surface nets (kernels.geometry.IsoSurfaceNets) checked independently: a sphere's quads form a closed,
consistently wound 2-manifold near the sphere enclosing its volume; sign-only noise (every ambiguous configuration)
never puts an edge in more than two quads; vertex gradients match central differences."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import kernels as wp
import kernels.geometry as geometry
from autodiff import gradcheck
from test_geometry_marching_cubes import area_and_volume, assert_closed_and_oriented, sphere_sdf

Nets = geometry.IsoSurfaceNets


def quads_of(values: np.ndarray, **kwargs):
    verts, indices = Nets.extract(wp.array(values.astype(np.float32), dtype=wp.float32), 0.0, topology="quad",
                                  **kwargs)
    return verts.numpy().astype(np.float64), indices.numpy().reshape(-1, 4)


def edge_uses(quads: np.ndarray) -> Counter:
    return Counter(tuple(sorted((int(q[k]), int(q[(k + 1) % 4])))) for q in quads for k in range(4))


def test_sphere_is_a_closed_outward_manifold():
    n, center, radius = 30, (14.3, 14.6, 14.1), 9.0
    verts, quads = quads_of(sphere_sdf(n, center, radius))
    uses = edge_uses(quads)
    assert set(uses.values()) == {2}
    assert len(verts) - len(uses) + len(quads) == 2  # Euler characteristic of a sphere
    tris = quads[:, [0, 1, 2, 0, 2, 3]].reshape(-1, 3)
    assert_closed_and_oriented(tris)
    _, volume = area_and_volume(verts, tris)
    assert volume == pytest.approx(4.0 / 3.0 * np.pi * radius**3, rel=0.03)
    # vertices average edge crossings of the sphere's distance: inside the cell, close to the sphere
    assert np.abs(np.linalg.norm(verts - np.array(center), axis=1) - radius).max() < 0.3


def test_sign_noise_stays_two_manifold():
    rng = np.random.default_rng(11)
    for _ in range(2):
        values = np.sign(rng.uniform(-1.0, 1.0, (14, 13, 12)))
        _, quads = quads_of(values)
        assert len(quads) > 1000 and max(edge_uses(quads).values()) <= 2


def test_triangles_split_the_quads_and_bad_topology_is_refused():
    values = wp.array(sphere_sdf(12, (5.5, 5.2, 5.9), 3.3).astype(np.float32), dtype=wp.float32)
    _, quads = Nets.extract(values, topology="quad")
    _, tris = Nets.extract(values)
    np.testing.assert_array_equal(tris.numpy().reshape(-1, 6), quads.numpy().reshape(-1, 4)[:, [0, 1, 2, 0, 2, 3]])
    with pytest.raises(ValueError, match="topology"):
        Nets.extract(values, topology="quads")


def test_vertex_gradients_match_central_differences():
    rng = np.random.default_rng(2)
    values = rng.uniform(0.2, 1.0, (4, 4, 4)) * rng.choice([-1.0, 1.0], (4, 4, 4))
    field = wp.array(values.astype(np.float32), dtype=wp.float32)

    def fn(f):
        verts, _ = Nets.extract(f, 0.0, lower=(0.0, -1.0, 0.5), upper=(1.0, 1.0, 2.0))
        return verts

    gradcheck(fn, [field])
