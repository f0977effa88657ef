"""The shipped scenes do what their descriptions say."""

import os

import numpy as np

from sim.scene import Scene

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_rigid_bounce_heights_follow_the_mean_contact_restitution():
    """scenes/rigid_bounce.yaml: the contact restitution is the mean of ball and ground (1.0); each ball's first
    bounce reaches that squared of its 0.9 m fall."""
    scene = Scene.load(os.path.join(ROOT, "scenes", "rigid_bounce.yaml"))
    built = scene.build("cpu")
    state, scratch = built.model.state(), built.model.state()
    heights = []
    for frame in range(1, 121):
        state, scratch = built.step_frame(state, scratch, frame)
        heights.append(state.body_q.numpy()[:, 1].copy())
    heights = np.array(heights)
    for k, body in enumerate(scene.spec.bodies):
        e = 0.5 * (body.material.restitution + scene.spec.colliders[0].material.restitution)
        y = heights[:, k]
        contact = int(np.argmin(y[:60]))
        apex_ratio = (y[contact:].max() - 0.1) / 0.9
        assert abs(apex_ratio - e * e) < 0.03, (body.name, apex_ratio, e * e)


def test_cloth_pinned_curtain_swings_onto_the_bar():
    """scenes/cloth_pinned.yaml: the curtain reaches the bar (within its contact margin) during its swing."""
    scene = Scene.load(os.path.join(ROOT, "scenes", "cloth_pinned.yaml"))
    built = scene.build("cpu")
    bar = scene.spec.colliders[0]
    state, scratch = built.model.state(), built.model.state()
    closest = np.inf
    for frame in range(1, 100):
        state, scratch = built.step_frame(state, scratch, frame)
        q = state.particle_q.numpy()
        closest = min(closest, float(np.hypot(q[:, 1] - bar.pos[1], q[:, 2] - bar.pos[2]).min()))
    margin = 0.02  # the particles' contact radius and the collision margin
    assert closest < bar.radius + margin, closest
