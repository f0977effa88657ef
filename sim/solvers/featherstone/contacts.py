"""Contacts of articulated links: the contact wrenches of the free rigid-body solver (`SolverRigid`), evaluated at
the body poses and velocities of the joint state, for SolverFeatherstone to map into joint space (J^T f).

Links collide with static shapes (the ground) and, with `body_contacts`, with each other, except the shapes of
the two bodies of a joint (parent and child), which overlap at the joint by design (Newton's default,
`collision_filter_parent`): SolverRigid is given those pairs as `excluded_shape_pairs`.
"""

from __future__ import annotations

import copy

import numpy as np

import kernels as wp

from ..rigid import SolverRigid


@wp.kernel
def copy_unjointed(body_joint: wp.array(dtype=wp.int32), body_q: wp.array(dtype=wp.transform),
                   body_qd: wp.array(dtype=wp.spatial_vector), body_q_out: wp.array(dtype=wp.transform),
                   body_qd_out: wp.array(dtype=wp.spatial_vector)):
    """The pose and velocity of body b when it is the child of no joint (the joints give the others')."""
    b = wp.tid()
    if body_joint[b] < 0:
        body_q_out[b] = body_q[b]
        body_qd_out[b] = body_qd[b]


def jointed_shape_pairs(model) -> set:
    """(a, b), a < b: the pairs of shapes on the parent and on the child body of a joint."""
    if model.shape_count == 0 or model.joint_count == 0:
        return set()
    shapes_of = {}
    for s, body in enumerate(model.shape_body.numpy()):
        shapes_of.setdefault(int(body), []).append(s)
    pairs = set()
    for parent, child in zip(model.joint_parent.numpy(), model.joint_child.numpy()):
        if parent < 0:
            continue
        for a in shapes_of.get(int(parent), []):
            for b in shapes_of.get(int(child), []):
                pairs.add((min(a, b), max(a, b)))
    return pairs


class LinkContacts:
    """Contact wrenches on the links of a model (see the module docstring).

    Args:
        model: the Model (its shapes and materials as for SolverRigid).
        enabled: False: no contacts at all (`active` stays False).
        body_contacts: whether links collide with each other (and with other bodies' shapes).
        restitution_velocity, contact_smoothing: as for SolverRigid.
    """

    def __init__(self, model, *, enabled: bool = True, body_contacts: bool, restitution_velocity: float,
                 contact_smoothing: float | None):
        shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
        self.active = enabled and bool((shape_body >= 0).any())
        if not self.active:
            return
        excluded = jointed_shape_pairs(model) if body_contacts else set()
        self.rigid = SolverRigid(model, body_contacts=body_contacts, restitution_velocity=restitution_velocity,
                                 contact_smoothing=contact_smoothing, excluded_shape_pairs=sorted(excluded))
        body_joint = np.full(model.body_count, -1, np.int32)
        if model.joint_count:
            body_joint[model.joint_child.numpy()] = np.arange(model.joint_count, dtype=np.int32)
        self.any_unjointed = bool((body_joint < 0).any())
        self.body_joint = wp.array(body_joint, dtype=wp.int32, device=model.device)

    def fill_unjointed(self, model, state, body_q, body_qd):
        """Copy `state`'s poses and velocities of the bodies that are the child of no joint into body_q and
        body_qd (the joints give the others')."""
        if self.any_unjointed:
            wp.launch(copy_unjointed, dim=model.body_count, inputs=[self.body_joint, state.body_q, state.body_qd],
                      outputs=[body_q, body_qd], device=model.device)

    def wrenches(self, model, state, body_q, body_qd, dt: float) -> wp.array:
        """Contact wrenches (torque about the centre of mass [N m], force [N], world) on every body, shape
        [body_count], at the poses body_q and velocities body_qd (of the joint state: gradients reach joint_q
        and joint_qd through them), for a step of dt [s] (0: the instantaneous force; see SolverRigid). The
        time-constant form's effective mass is each link's own (its mass and inertia, not the articulated
        inertia of the chain it belongs to), which makes a link's contact softer than tau states when the
        chain presses on it."""
        at = copy.copy(state)
        at.body_q, at.body_qd = body_q, body_qd
        f = wp.zeros(model.body_count, dtype=wp.spatial_vector, device=model.device,
                     requires_grad=model.requires_grad)
        # no coupled passes: they predict free bodies' motion, not that of links in a chain
        self.rigid.eval_contact_forces(model, at, f, dt=dt, iterations=0)  # a fresh zero f: sets or adds alike
        return f
