"""Shared by the rigid-body and articulation tests: a rollout with a fresh State per step, and quaternions as
rotation matrices (sim.spatial's, numpy: independent of the solvers' kernels)."""

from sim.spatial import matrix_from_quat as quat_to_matrix  # noqa: F401 (the tests' name)


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
