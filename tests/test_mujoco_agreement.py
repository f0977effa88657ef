"""SolverFeatherstone against MuJoCo: a double pendulum and a cartpole written in MJCF and built with the
builder API (same masses, inertias, centres of mass, geometry and gravity; no damping, armature, friction or
contacts) follow the same joint trajectories for 2 s, within 1e-3 rad (m), with MuJoCo's semi-implicit
`Euler` integrator at the same time step. Skipped when `mujoco` (a test extra) is not installed."""

import numpy as np
import pytest

import sim
from sim.joints import JOINT_LIMIT_UNLIMITED
from _sim_rollout import rollout

mujoco = pytest.importorskip("mujoco", reason="mujoco (a test extra: pip install -e '.[test]') is not installed")

DURATION = 2.0     # [s]
TOLERANCE = 1e-3   # [rad] for hinges, [m] for sliders

# MuJoCo's "Euler" is semi-implicit: qvel += dt qacc, then qpos from the new qvel (implicit only in joint
# damping, of which there is none here), the scheme of SolverFeatherstone.
OPTION = """<option timestep="{dt}" integrator="{integrator}" gravity="0 0 -9.81">
    <flag contact="disable"/>
  </option>"""

DOUBLE_PENDULUM = """<mujoco model="double_pendulum">
  {option}
  <worldbody>
    <body name="upper" pos="0 0 2">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.5" mass="1" fullinertia="0.09 0.085 0.01 0 0.001 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -1" size="0.05"/>
      <body name="lower" pos="0 0 -1">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 -0.4" mass="0.5" diaginertia="0.03 0.03 0.002"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.8" size="0.04"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""

CARTPOLE = """<mujoco model="cartpole">
  {option}
  <worldbody>
    <body name="cart" pos="0 0 1">
      <joint name="slider" type="slide" axis="1 0 0"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.01 0.02 0.025"/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body name="pole">
        <joint name="hinge" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 0.5" mass="0.2" diaginertia="0.0168 0.0168 0.0002"/>
        <geom type="capsule" fromto="0 0 0 0 0 1" size="0.03"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""

CART_FORCE = 2.0   # [N] along the slider, constant


def capsule_along_z(b, body, length, radius):
    """A capsule from the body origin to (0, 0, length), as MJCF's fromto: our capsules lie along local y."""
    s = np.sqrt(0.5)
    b.add_shape_capsule(pos=(0, 0, length / 2), rot=(s, 0, 0, s), radius=radius, half_height=abs(length) / 2,
                        body=body)


def double_pendulum():
    b = sim.ModelBuilder(up_axis="z")
    upper = b.add_body(mass=1.0, com=(0, 0, -0.5), inertia=[[0.09, 0, 0.001], [0, 0.085, 0], [0.001, 0, 0.01]])
    capsule_along_z(b, upper, -1.0, 0.05)
    lower = b.add_body(mass=0.5, com=(0, 0, -0.4), inertia=np.diag([0.03, 0.03, 0.002]))
    capsule_along_z(b, lower, -0.8, 0.04)
    b.add_joint_revolute(-1, upper, axis=(0, 1, 0), parent_xform=(0, 0, 2, 0, 0, 0, 1))
    b.add_joint_revolute(upper, lower, axis=(0, 1, 0), parent_xform=(0, 0, -1, 0, 0, 0, 1))
    return b


def cartpole():
    b = sim.ModelBuilder(up_axis="z")
    cart = b.add_body(mass=1.0, com=(0, 0, 0), inertia=np.diag([0.01, 0.02, 0.025]))
    b.add_shape_box(hx=0.2, hy=0.1, hz=0.05, body=cart)
    pole = b.add_body(mass=0.2, com=(0, 0, 0.5), inertia=np.diag([0.0168, 0.0168, 0.0002]))
    capsule_along_z(b, pole, 1.0, 0.03)
    b.add_joint_prismatic(-1, cart, axis=(1, 0, 0), parent_xform=(0, 0, 1, 0, 0, 0, 1))
    b.add_joint_revolute(cart, pole, axis=(0, 1, 0))
    return b


# name: (MJCF, builder, initial joint coordinates [rad, m], constant joint forces [N m, N])
MECHANISMS = {
    "double_pendulum": (DOUBLE_PENDULUM, double_pendulum, (2.0, -1.0), (0.0, 0.0)),
    "cartpole": (CARTPOLE, cartpole, (0.0, 0.2), (CART_FORCE, 0.0)),
}


def mujoco_model(name, dt, integrator="Euler"):
    xml = MECHANISMS[name][0].format(option=OPTION.format(dt=dt, integrator=integrator))
    return mujoco.MjModel.from_xml_string(xml)


def mujoco_trajectory(name, dt, integrator="Euler"):
    """qpos and qvel at every step of DURATION, shape [steps + 1, 2] each, and the final MjData."""
    m = mujoco_model(name, dt, integrator)
    d = mujoco.MjData(m)
    _, _, q0, joint_f = MECHANISMS[name]
    d.qpos[:] = q0
    d.qfrc_applied[:] = joint_f
    qpos, qvel = [d.qpos.copy()], [d.qvel.copy()]
    for _ in range(round(DURATION / dt)):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        qvel.append(d.qvel.copy())
    mujoco.mj_kinematics(m, d)  # mj_step leaves the body poses of the step's start
    return np.array(qpos), np.array(qvel), d


def our_model(name, device):
    _, build, q0, joint_f = MECHANISMS[name]
    b = build()
    b.joint_q[:] = q0
    model = b.finalize(device)
    control = model.control()
    control.joint_f.assign(np.array(joint_f, dtype=np.float32))
    return model, control


def our_trajectory(name, dt, device):
    """joint_q and joint_qd at every step of DURATION, shape [steps + 1, 2] each, and the final State."""
    model, control = our_model(name, device)
    last, states = rollout(model, sim.SolverFeatherstone(model), round(DURATION / dt), dt, control=control,
                           every=1)
    return np.array([s.joint_q.numpy() for s in states]), np.array([s.joint_qd.numpy() for s in states]), last


def quat_to_matrix_wxyz(q):
    r = np.zeros(9)
    mujoco.mju_quat2Mat(r, np.asarray(q, dtype=np.float64))
    return r.reshape(3, 3)


@pytest.mark.parametrize("name", MECHANISMS)
def test_mjcf_and_builder_describe_the_same_mechanism(name, device):
    m = mujoco_model(name, 1e-3)
    model, _ = our_model(name, device)
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    assert m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT
    for passive in (m.dof_armature, m.dof_damping, m.dof_frictionloss, m.jnt_stiffness):
        np.testing.assert_array_equal(passive, 0.0)
    for ours in (model.joint_armature, model.joint_damping, model.joint_friction, model.joint_target_ke,
                 model.joint_target_kd):
        np.testing.assert_array_equal(ours.numpy(), 0.0)
    assert not m.jnt_limited.any()
    np.testing.assert_allclose(model.joint_limit_lower.numpy(), -JOINT_LIMIT_UNLIMITED, rtol=1e-6)
    np.testing.assert_allclose(model.joint_limit_upper.numpy(), JOINT_LIMIT_UNLIMITED, rtol=1e-6)
    np.testing.assert_allclose(np.array(model.gravity), m.opt.gravity, rtol=1e-7)
    np.testing.assert_allclose(model.body_mass.numpy(), m.body_mass[1:], rtol=1e-7)
    np.testing.assert_allclose(model.body_com.numpy(), m.body_ipos[1:], atol=1e-7)
    for body in range(model.body_count):  # MuJoCo keeps principal moments and the axes' rotation
        r = quat_to_matrix_wxyz(m.body_iquat[body + 1])
        np.testing.assert_allclose(model.body_inertia.numpy()[body], r @ np.diag(m.body_inertia[body + 1]) @ r.T,
                                   atol=1e-8)
    d = mujoco.MjData(m)  # the body frames agree at the initial coordinates
    d.qpos[:] = model.joint_q.numpy()
    mujoco.mj_kinematics(m, d)
    state = model.state()
    sim.eval_fk(model, model.joint_q, model.joint_qd, state)
    body_q = state.body_q.numpy()
    np.testing.assert_allclose(body_q[:, :3], d.xpos[1:], atol=1e-6)
    np.testing.assert_allclose(np.abs(np.sum(body_q[:, 3:] * d.xquat[1:, [1, 2, 3, 0]], axis=1)), 1.0, atol=1e-6)


@pytest.mark.parametrize("dt", [1e-3, 1e-2])
@pytest.mark.parametrize("name", MECHANISMS)
def test_joint_trajectories_agree_with_mujoco_euler(name, dt, device):
    qpos, qvel, d = mujoco_trajectory(name, dt)
    joint_q, joint_qd, state = our_trajectory(name, dt, device)
    error = np.abs(joint_q - qpos).max()
    velocity_error = np.abs(joint_qd - qvel).max()
    print(f"{name}, dt = {dt}: over {DURATION} s, max |q - qpos| = {error:.2e}, "
          f"max |qd - qvel| = {velocity_error:.2e}")
    assert np.ptp(qpos, axis=0).min() > 0.5  # both joints moved a lot
    assert error < TOLERANCE
    assert velocity_error < 10 * TOLERANCE
    np.testing.assert_allclose(state.body_q.numpy()[:, :3], d.xpos[1:], atol=TOLERANCE)


@pytest.mark.parametrize("name", MECHANISMS)
def test_tolerance_tells_integrators_apart(name):
    """The agreement comes from the same integrator, not from both being close to the exact solution:
    MuJoCo's RK4 at the same step is farther from its Euler than TOLERANCE (at least 4x)."""
    euler = mujoco_trajectory(name, 1e-3)[0]
    rk4 = mujoco_trajectory(name, 1e-3, integrator="RK4")[0]
    assert np.abs(euler - rk4).max() > 4 * TOLERANCE
