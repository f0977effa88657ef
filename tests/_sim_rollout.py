"""Shared by the rigid-body and articulation tests: a rollout with a fresh State per step, and quaternions as
rotation matrices."""

import numpy as np


def rollout(model, solver, steps, dt, *, state=None, control=None, every=0):
    """`steps` steps with a fresh State each step (`control` may be a list, one per step); returns the last
    state and every `every`-th state."""
    s = state or model.state()
    kept = [s]
    for n in range(steps):
        s_next = model.state()
        solver.step(model, s, s_next, control[n] if isinstance(control, list) else control, dt)
        s = s_next
        if every and (n + 1) % every == 0:
            kept.append(s)
    return s, kept


def quat_to_matrix(q):
    """The 3x3 rotation matrix (float64) of a unit quaternion (x, y, z, w)."""
    x, y, z, w = np.asarray(q, dtype=np.float64)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
