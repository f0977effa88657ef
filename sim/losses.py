"""Losses on simulated states, for optimisation through the simulation: each evaluates at given frames by
launching kernels that add into a one-element loss array, so a Tape differentiates it.

    CenterOfMassTarget(obj, frame, target)     w |com - target|^2                 [m^2]
    BodyCenterTarget(body, frame, target)      w |body com - target|^2            [m^2]
    PositionsTarget(obj, frame, positions)     w mean_i |x_i - p_i|^2             [m^2]
    TrajectoryMatch(obj, reference)            w mean_frames mean_i |x_i - r_i|^2 [m^2]
    ParameterL2(param)                         w |theta - theta_0|^2 on a learned parameter's variable
    JointTarget(joint, frame, target)          w (|q - target|^2 + v |qd|^2) of a joint     [m^2, rad^2]

`obj` is a `sim.scene.SceneObject` (which particles); positions are [m], shape [obj.count, 3].
"""

from __future__ import annotations

import numpy as np

import kernels as wp


@wp.kernel
def mass_moment(q: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float), start: int,
                moment: wp.array(dtype=wp.vec3), total: wp.array(dtype=float)):
    i = wp.tid()
    m = mass[start + i]
    wp.atomic_add(moment, 0, q[start + i] * m)
    wp.atomic_add(total, 0, m)


@wp.kernel
def com_distance_sq(moment: wp.array(dtype=wp.vec3), total: wp.array(dtype=float), target: wp.vec3, weight: float,
                    loss: wp.array(dtype=float)):
    d = moment[0] / total[0] - target
    wp.atomic_add(loss, 0, weight * wp.dot(d, d))


@wp.kernel
def body_com_distance_sq(body_q: wp.array(dtype=wp.transform), body_com: wp.array(dtype=wp.vec3), index: int,
                         target: wp.vec3, weight: float, loss: wp.array(dtype=float)):
    d = wp.transform_point(body_q[index], body_com[index]) - target
    wp.atomic_add(loss, 0, weight * wp.dot(d, d))


@wp.kernel
def positions_distance_sq(q: wp.array(dtype=wp.vec3), start: int, target: wp.array(dtype=wp.vec3), weight: float,
                          loss: wp.array(dtype=float)):
    i = wp.tid()
    d = q[start + i] - target[i]
    wp.atomic_add(loss, 0, weight * wp.dot(d, d))


@wp.kernel
def variable_distance_sq(x: wp.array(dtype=float), x0: wp.array(dtype=float), weight: float,
                         loss: wp.array(dtype=float)):
    i = wp.tid()
    d = x[i] - x0[i]
    wp.atomic_add(loss, 0, weight * d * d)


def _on_device(term, name: str, device):
    """term.<name> (positions, or a dict of them) as vec3 arrays on `device`, converted on first use only."""
    cache = term.__dict__.setdefault("_device_copies", {})
    key = (name, str(device))
    if key not in cache:
        data = getattr(term, name)
        convert = lambda p: wp.array(p, dtype=wp.vec3, device=device)  # noqa: E731
        cache[key] = {f: convert(p) for f, p in data.items()} if isinstance(data, dict) else convert(data)
    return cache[key]


class Loss:
    """A loss term: `frames` lists the frames at which `evaluate(model, frame, state, loss)` must be called
    (empty for terms on parameters, evaluated once by `evaluate_parameters(loss)`)."""

    name = "loss"
    frames: tuple = ()

    def evaluate(self, model, frame: int, state, loss):
        pass

    def evaluate_parameters(self, loss):
        pass


class CenterOfMassTarget(Loss):
    """weight * |centre of mass of `obj` at `frame` - target|^2 [m^2]; the centre uses the particle masses."""

    name = "com_target"

    def __init__(self, obj, frame: int, target, weight: float = 1.0):
        self.obj, self.frames, self.target, self.weight = obj, (int(frame),), wp.vec3(*target), float(weight)

    def evaluate(self, model, frame, state, loss):
        d = model.device
        moment = wp.zeros(1, dtype=wp.vec3, device=d, requires_grad=True)
        total = wp.zeros(1, dtype=float, device=d, requires_grad=True)
        wp.launch(mass_moment, dim=self.obj.count, inputs=[state.particle_q, model.particle_mass, self.obj.start],
                  outputs=[moment, total], device=d)
        wp.launch(com_distance_sq, dim=1, inputs=[moment, total, self.target, self.weight], outputs=[loss], device=d)


class BodyCenterTarget(Loss):
    """weight * |centre of mass of rigid body `body` at `frame` - target|^2 [m^2]; `body` is a
    `sim.scene.SceneBody` (its index into the model's body arrays)."""

    name = "com_target"

    def __init__(self, body, frame: int, target, weight: float = 1.0):
        self.body, self.frames, self.target, self.weight = body, (int(frame),), wp.vec3(*target), float(weight)

    def evaluate(self, model, frame, state, loss):
        wp.launch(body_com_distance_sq, dim=1, inputs=[state.body_q, model.body_com, self.body.index, self.target,
                                                      self.weight], outputs=[loss], device=model.device)

    def error(self, model, state) -> float:
        """|centre of mass - target| at `state` [m]."""
        pose = state.body_q.numpy()[self.body.index].astype(np.float64)
        com = model.body_com.numpy()[self.body.index].astype(np.float64)
        x, w = pose[3:6], pose[6]  # rotate com by the quaternion (x, y, z, w)
        rotated = com + 2.0 * np.cross(x, np.cross(x, com) + w * com)
        return float(np.linalg.norm(pose[:3] + rotated - np.array(self.target, np.float64)))


class PositionsTarget(Loss):
    """weight * mean over the object's particles of |x_i(frame) - positions_i|^2 [m^2]."""

    name = "positions"

    def __init__(self, obj, frame: int, positions, weight: float = 1.0):
        positions = np.asarray(positions, np.float32).reshape(-1, 3)
        if len(positions) != obj.count:
            raise ValueError(f"target has {len(positions)} positions, object '{obj.name}' has {obj.count} particles")
        self.obj, self.frames, self.weight = obj, (int(frame),), float(weight)
        self._target = positions

    def evaluate(self, model, frame, state, loss):
        target = _on_device(self, "_target", model.device)
        wp.launch(positions_distance_sq, dim=self.obj.count,
                  inputs=[state.particle_q, self.obj.start, target, self.weight / self.obj.count], outputs=[loss],
                  device=model.device)


class TrajectoryMatch(Loss):
    """weight * mean over `reference`'s frames and the object's particles of |x_i(f) - r_i(f)|^2 [m^2];
    `reference` maps frame -> positions [obj.count, 3]."""

    name = "trajectory"

    def __init__(self, obj, reference: dict, weight: float = 1.0):
        if not reference:
            raise ValueError("a trajectory needs at least one frame")
        self.obj, self.weight = obj, float(weight)
        self._reference = {int(f): np.asarray(p, np.float32).reshape(-1, 3) for f, p in reference.items()}
        for f, p in self._reference.items():
            if len(p) != obj.count:
                raise ValueError(f"frame {f} of the trajectory has {len(p)} positions, object '{obj.name}' has "
                                 f"{obj.count} particles")
        self.frames = tuple(sorted(self._reference))

    def evaluate(self, model, frame, state, loss):
        target = _on_device(self, "_reference", model.device)[frame]
        scale = self.weight / (self.obj.count * len(self.frames))
        wp.launch(positions_distance_sq, dim=self.obj.count, inputs=[state.particle_q, self.obj.start, target, scale],
                  outputs=[loss], device=model.device)


@wp.kernel
def joint_distance_sq(joint_q: wp.array(dtype=float), joint_qd: wp.array(dtype=float), q_start: int,
                      qd_start: int, target: wp.array(dtype=float), weight: float, velocity_weight: float,
                      loss: wp.array(dtype=float)):
    k = wp.tid()
    d = joint_q[q_start + k] - target[k]
    v = joint_qd[qd_start + k]
    wp.atomic_add(loss, 0, weight * (d * d + velocity_weight * v * v))


class JointTarget(Loss):
    """weight * (|q - target|^2 + velocity_weight |qd|^2) of a joint's coordinates and velocities at `frame`
    [m^2 or rad^2]; `joint` is a `sim.scene.build_joints.SceneJoint` with one coordinate per axis (revolute,
    prismatic, d6)."""

    name = "joint_target"

    def __init__(self, joint, frame: int, target, weight: float = 1.0, velocity_weight: float = 0.0):
        target = np.asarray(target, np.float32).reshape(-1)
        if len(target) != joint.coord_count:
            raise ValueError(f"joint '{joint.name}' has {joint.coord_count} coordinate(s), the target "
                             f"{len(target)}")
        self.joint, self.frames, self.weight = joint, (int(frame),), float(weight)
        self.velocity_weight, self._target = float(velocity_weight), target

    def evaluate(self, model, frame, state, loss):
        d, j = model.device, self.joint
        target = self.__dict__.setdefault("_device_target", wp.array(self._target, dtype=float, device=d))
        wp.launch(joint_distance_sq, dim=j.coord_count,
                  inputs=[state.joint_q, state.joint_qd, j.coord_start, j.dof_start, target, self.weight,
                          self.velocity_weight], outputs=[loss], device=d)

    def error(self, state) -> float:
        """|q - target| at `state` [m or rad]."""
        j = self.joint
        q = state.joint_q.numpy()[j.coord_start:j.coord_start + j.coord_count]
        return float(np.linalg.norm(q - self._target))


class ParameterL2(Loss):
    """weight * |variable - its initial value|^2 of a learned parameter (a regulariser)."""

    name = "param_l2"

    def __init__(self, param, weight: float = 1.0):
        self.param, self.weight = param, float(weight)
        self._x0 = None

    def evaluate_parameters(self, loss):
        v = self.param.variable
        if self._x0 is None:
            self._x0 = wp.array(self.param.initial_variable(), dtype=float, device=v.device)
        wp.launch(variable_distance_sq, dim=v.shape[0], inputs=[v, self._x0, self.weight], outputs=[loss],
                  device=v.device)
