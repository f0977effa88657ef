"""Bending models of cloth hinges (two triangles sharing an edge): their names, the rest quantities the builder
computes, and the quadratic model's bend vector shared by both solvers. docs/bending.md compares the models.

A hinge is (o0, o1, v0, v1): edge v0-v1, triangles (o0, v0, v1) and (o1, v1, v0). Both models use the same
stiffness `ke` and rest constant `scale` [m^3] (Model.edge_rest_scale) and agree to second order around a flat
hinge:
    dihedral:  E = ke/2 * scale * (theta - rest)^2, theta the signed dihedral angle [rad] (atan2, wraps at +-pi);
    quadratic: E = ke/2 * scale * |b|^2, b = sum_i w_i x_i the bend vector with fixed weights w [1/m]
               (Bergou et al. 2006); |b| = 2 sin(theta/2) for a hinge folded by theta without stretching.
"""

from __future__ import annotations

import math

import numpy as np

import kernels as wp

#: Bending models a Model can use (Model.bending_model). The first is the default.
BENDING_MODELS = ("quadratic", "dihedral")
DEFAULT_BENDING = BENDING_MODELS[0]


def check_bending_model(name) -> str:
    """`name` if it is one of BENDING_MODELS; else ValueError listing them."""
    if name not in BENDING_MODELS:
        raise ValueError(f"bending model must be one of {', '.join(BENDING_MODELS)}, got {name!r}")
    return name


#: Largest rest angle [rad] of a stiff hinge the quadratic model (whose rest shape is flat) accepts silently.
FLAT_REST_TOLERANCE = 0.1


def curved_rest_warning(edge_indices, rest_angle, properties) -> str | None:
    """A warning when the quadratic model would flatten a curved rest shape: some interior hinge with bending
    stiffness has |rest angle| above FLAT_REST_TOLERANCE. Shapes [edge_count, 4], [edge_count], [edge_count, 2]."""
    edges = np.asarray(edge_indices, dtype=np.int64).reshape(-1, 4)
    angles = np.abs(np.asarray(rest_angle, dtype=np.float64).reshape(-1))
    stiff = np.asarray(properties, dtype=np.float64).reshape(-1, 2)[:, 0] > 0
    curved = (edges[:, 0] >= 0) & (edges[:, 1] >= 0) & stiff & (angles > FLAT_REST_TOLERANCE)
    if not curved.any():
        return None
    return (f"{int(curved.sum())} bending edges have rest angles up to {angles[curved].max():.3g} rad, but the "
            "quadratic bending model takes the rest shape as flat and will flatten them; use "
            "ModelBuilder(bending='dihedral') (scene key sim.bending: dihedral) to keep a curved rest shape "
            "(docs/bending.md)")


def dihedral_angle(o0, o1, v0, v1) -> float:
    """Signed angle between the normals of triangles (o0, v0, v1) and (o1, v1, v0) about edge v0-v1 [rad]."""
    e = v1 - v0
    n1 = np.cross(v0 - o0, v1 - o0)
    n2 = np.cross(v1 - o1, v0 - o1)
    n1 /= np.linalg.norm(n1)
    n2 /= np.linalg.norm(n2)
    e_hat = e / np.linalg.norm(e)
    return float(math.atan2(np.cross(n1, n2) @ e_hat, n1 @ n2))


def bending_scale(o0, o1, v0, v1) -> float:
    """Rest constant of a bending edge [m^3]: edge length times the mean of its two triangles' doubled areas.

    The dihedral model's energy is ke/2 * scale * (angle - rest)^2: at rest shape its force on an opposite vertex
    is ke * angle * length^2, the force warp.sim/Newton apply for the same ke, while remaining an exact gradient.
    The quadratic model's energy, ke/2 * scale * |b|^2, equals it to second order at a flat hinge.
    """
    e = v1 - v0
    n1 = np.cross(v0 - o0, v1 - o0)
    n2 = np.cross(v1 - o1, v0 - o1)
    return float(np.linalg.norm(e) * 0.5 * (np.linalg.norm(n1) + np.linalg.norm(n2)))


def _cot(a, b) -> float:
    """Cotangent of the angle between vectors a and b, which must not be parallel."""
    return float(np.dot(a, b) / np.linalg.norm(np.cross(a, b)))


def hinge_weights(o0, o1, v0, v1) -> np.ndarray:
    """Weights (w_o0, w_o1, w_v0, w_v1) [1/m] of the quadratic model's bend vector b = sum_i w_i x_i, from the
    rest positions (each shape (3,)); zeros for a degenerate hinge.

    Cotangent weights of Bergou et al. 2006 divided by the edge length L: in triangle (o, v0, v1) with angles
    a0 at v0 and a1 at v1, cot(a1) x_v0 + cot(a0) x_v1 is (cot a0 + cot a1) = L/h times the foot of o on the
    edge line, so that triangle contributes the unit vector from o towards the edge. The two contributions
    cancel on a flat hinge and under any affine map of it, and a fold by theta leaves |b| = 2 sin(theta/2).
    """
    o0, o1, v0, v1 = (np.asarray(p, dtype=np.float64) for p in (o0, o1, v0, v1))
    e = v1 - v0
    length = np.linalg.norm(e)
    areas = [np.linalg.norm(np.cross(v0 - o, v1 - o)) for o in (o0, o1)]
    if length < 1e-12 or min(areas) < 1e-12 * length * length:  # a zero-height triangle
        return np.zeros(4)
    a0 = [_cot(e, o - v0) for o in (o0, o1)]  # angles at v0 of triangles 0 and 1
    a1 = [_cot(-e, o - v1) for o in (o0, o1)]  # angles at v1
    return np.array([-(a0[0] + a1[0]), -(a0[1] + a1[1]), a1[0] + a1[1], a0[0] + a0[1]]) / length


def bending_energy(model, positions) -> float:
    """Bending energy [J] of `model`'s edges (by model.bending_model) at `positions` [m], shape
    [particle_count, 3]: a float64 reference in numpy, for diagnostics and tests (one Python step per edge)."""
    x = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    edges = model.edge_indices.numpy()
    ke = model.edge_bending_properties.numpy()[:, 0].astype(np.float64)
    scale = model.edge_rest_scale.numpy().astype(np.float64)
    interior = (edges[:, 0] >= 0) & (edges[:, 1] >= 0)
    if check_bending_model(model.bending_model) == "quadratic":
        weights = model.edge_bending_weights.numpy().astype(np.float64)
        bend = np.einsum("ek,ekc->ec", weights, x[np.where(interior[:, None], edges, 0)])
        return float(0.5 * np.sum((ke * scale)[interior] * np.sum(bend * bend, axis=1)[interior]))
    rest = model.edge_rest_angle.numpy().astype(np.float64)
    energy = 0.0
    for e in np.flatnonzero(interior):
        angle = dihedral_angle(*x[edges[e]])
        energy += 0.5 * ke[e] * scale[e] * (angle - rest[e]) ** 2
    return energy


@wp.func
def bend_vector(x0: wp.vec3, x1: wp.vec3, x2: wp.vec3, x3: wp.vec3, w0: float, w1: float, w2: float, w3: float):
    """The quadratic model's bend vector sum_i w_i x_i [-] of hinge (o0, o1, v0, v1) = (x0, x1, x2, x3) with
    weights w [1/m] (Model.edge_bending_weights); linear in the positions (or, with velocities, its rate [1/s])."""
    return x0 * w0 + x1 * w1 + x2 * w2 + x3 * w3
