"""SolverFeatherstone against MuJoCo: a double pendulum and a cartpole written in MJCF and built with the
builder API (same masses, inertias, centres of mass, geometry and gravity; no damping, armature, friction or
contacts) follow the same joint trajectories for 2 s, within 1e-3 rad (m), with MuJoCo's semi-implicit
`Euler` integrator at the same time step. sim.import_mjcf: the same MJCF gives the builder's models, and an
imported arm (weld, hinge, slide, ball and free joints, actuators) follows MuJoCo; what it leaves out is
reported, what it refuses is named. Skipped when `mujoco` (a test extra) is not installed."""

import sys

import numpy as np
import pytest

import sim
from _sim_rollout import rollout
from sim.spatial import matrix_from_quat
from sim.joints import JOINT_LIMIT_UNLIMITED

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


# ---------------------------------------------------------------------------------------------------------------
# sim.import_mjcf


ARM = """<mujoco model="arm">
  <compiler angle="degree"/>
  <option timestep="0.001" integrator="Euler">
    <flag contact="disable" eulerdamp="disable"/>
  </option>
  <default><geom density="500"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="base" pos="0.1 0 0.5" euler="0 0 30">
      <geom type="box" size="0.1 0.1 0.05"/>
      <body name="link1" pos="0 0 0.1">
        <joint name="shoulder" type="hinge" axis="0 1 0" range="-170 170" damping="0.05" armature="0.01"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
        <body name="link2" pos="0.4 0 0" euler="20 0 0">
          <joint name="slide" type="slide" axis="1 0 0" armature="0.02"/>
          <geom type="sphere" pos="0.1 0 0" size="0.06"/>
          <geom name="marker" type="box" pos="0.2 0 0" size="0.1 0.02 0.02" contype="0" conaffinity="0"/>
          <body name="link3" pos="0.2 0 0">
            <joint name="wrist" type="ball" pos="0.02 0 0"/>
            <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03"/>
          </body>
        </body>
      </body>
    </body>
    <body name="box" pos="1 1 2" quat="0.9 0.1 0.3 0.2">
      <freejoint name="box_free"/>
      <geom type="box" size="0.1 0.2 0.3"/>
    </body>
  </worldbody>
  <actuator>
    <position name="hold_shoulder" joint="shoulder" kp="20" kv="1" forcerange="-5 5"/>
    <velocity name="brake_slide" joint="slide" kv="3"/>
  </actuator>
</mujoco>"""
BOX_SPIN = np.array([1.0, -2.0, 0.5])  # [rad/s], the free box's body frame (MuJoCo's qvel)


def joint_q_from_qpos(m, qpos):
    """MuJoCo qpos (rows) in our joint_q layout: quaternions (w, x, y, z) -> (x, y, z, w)."""
    q = np.array(qpos, dtype=np.float64)
    for j in range(m.njnt):
        if int(m.jnt_type[j]) in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            a = m.jnt_qposadr[j] + (3 if int(m.jnt_type[j]) == mujoco.mjtJoint.mjJNT_FREE else 0)
            q[..., a:a + 4] = q[..., [a + 1, a + 2, a + 3, a]]
    return q


def same_quaternion_sign(q, reference, m):
    """`q` with each quaternion's sign flipped where it points away from `reference`'s (the same rotation)."""
    q = q.copy()
    for j in range(m.njnt):
        if int(m.jnt_type[j]) in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            a = m.jnt_qposadr[j] + (3 if int(m.jnt_type[j]) == mujoco.mjtJoint.mjJNT_FREE else 0)
            q[..., a:a + 4] *= np.sign(np.sum(q[..., a:a + 4] * reference[..., a:a + 4], axis=-1))[..., None]
    return q


@pytest.mark.parametrize("name", MECHANISMS)
def test_import_mjcf_equals_the_builder(name):
    b = sim.ModelBuilder(up_axis="z")
    with pytest.warns(sim.ImportWarning, match="contact"):
        result = sim.import_mjcf(MECHANISMS[name][0].format(option=OPTION.format(dt=1e-3, integrator="Euler")), b)
    assert list(result.joint) == [["shoulder", "elbow"], ["slider", "hinge"]][name == "cartpole"]
    assert result.ignored == ['option <flag contact="disable"/>: a solver setting, not the model\'s '
                              "(SolverFeatherstone(model, contacts=False) does the same)"]
    imported, built = b, MECHANISMS[name][1]()
    a, c = imported.finalize("cpu"), built.finalize("cpu")
    for array in ("body_mass", "body_com", "body_inertia", "joint_type", "joint_parent", "joint_child", "joint_X_p",
                  "joint_X_c", "joint_axis", "joint_limit_lower", "joint_limit_upper", "joint_damping",
                  "joint_armature", "joint_target_ke", "shape_type", "shape_body", "shape_scale"):
        np.testing.assert_allclose(getattr(a, array).numpy(), getattr(c, array).numpy(), atol=1e-6, err_msg=array)
    for k, (x, y) in enumerate(zip(imported.shape_transform, built.shape_transform)):
        np.testing.assert_allclose(x[:3], y[:3], atol=1e-7)
        axis = 1 if imported.shape_type[k] == sim.SHAPE_CAPSULE else slice(None)  # capsules: either way round
        np.testing.assert_allclose(np.abs(matrix_from_quat(x[3:])[:, axis]), np.abs(matrix_from_quat(y[3:])[:, axis]),
                                   atol=1e-7)


def test_imported_arm_follows_mujoco():
    """Weld, hinge (limits, damping, armature, position actuator with a force range), slide (velocity actuator),
    ball and free joints, rotated bodies: the imported model against MuJoCo's Euler (implicit damping off)."""
    dt = 1e-3
    m = mujoco.MjModel.from_xml_string(ARM)
    d = mujoco.MjData(m)
    free_dof = m.jnt_dofadr[m.joint("box_free").id]
    d.qvel[free_dof + 3:free_dof + 6] = BOX_SPIN
    qpos = [d.qpos.copy()]
    for _ in range(round(DURATION / dt)):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
    reference = joint_q_from_qpos(m, qpos)

    b = sim.ModelBuilder(up_axis="z")
    result = sim.import_mjcf(ARM, b)
    assert list(result.joint) == ["base_weld", "shoulder", "slide", "wrist", "box_free"]
    assert [(v.link, v.kind) for v in result.visuals] == [("link2", "box")]
    model = b.finalize("cpu")
    np.testing.assert_allclose(model.joint_q.numpy(), reference[0], atol=1e-7)
    joint_qd = model.joint_qd.numpy()  # our free joint's angular velocity is in world axes
    joint_qd[-3:] = quat_to_matrix_wxyz(m.qpos0[-4:]) @ BOX_SPIN
    model.joint_qd.assign(joint_qd)
    solver = sim.SolverFeatherstone(model, contacts=False)  # as the MJCF's <flag contact="disable"/>
    _, states = rollout(model, solver, round(DURATION / dt), dt, every=1)
    ours = np.array([s.joint_q.numpy() for s in states])
    error = np.abs(same_quaternion_sign(ours, reference, m) - reference).max(axis=0)
    print(f"imported arm: max |q - qpos| over {DURATION} s per coordinate: {np.array2string(error, precision=1)}")
    assert error.max() < TOLERANCE
    assert (np.ptp(reference, axis=0)[[0, 1, 2, 3, 4, 5, 8]] > 0.05).all()  # every joint moved


def test_import_mjcf_reports_what_it_leaves_out():
    xml = ARM.replace('integrator="Euler"', 'integrator="Euler" gravity="0 0 -3"').replace("</actuator>", """
    <motor name="push" joint="slide" gear="2"/>
  </actuator>
  <tendon><fixed name="couple"><joint joint="shoulder" coef="1"/><joint joint="slide" coef="1"/></fixed></tendon>
  <sensor><jointpos joint="shoulder"/></sensor>""").replace('armature="0.02"', 'armature="0.02" stiffness="4"')
    with pytest.warns(sim.ImportWarning, match="not imported"):
        result = sim.import_mjcf(xml, sim.ModelBuilder(up_axis="z"))
    assert result.ignored == [
        "joint 'slide': stiffness 4 (a joint spring) not imported",
        "actuator 'push': not a position or velocity actuator on a hinge or slide with gear 1 (not imported; apply "
        "its force through Control.joint_f)",
        "1 tendons not imported", "1 sensors not imported",
        'option <flag contact="disable"/>: a solver setting, not the model\'s '
        "(SolverFeatherstone(model, contacts=False) does the same)",
        "option gravity (0.0, 0.0, -3.0) (the builder's is used)"]


def test_import_mjcf_refuses_with_the_element_named(tmp_path):
    with pytest.raises(FileNotFoundError):
        sim.import_mjcf(str(tmp_path / "nowhere.xml"), sim.ModelBuilder())
    cylinder = ARM.replace('<geom type="sphere" pos="0.1 0 0" size="0.06"/>',
                           '<geom name="can" type="cylinder" size="0.06 0.1"/>')
    with pytest.raises(sim.ImporterError, match="<string>: geom 'can' of body 'link2': cylinder collision"):
        sim.import_mjcf(cylinder, sim.ModelBuilder(up_axis="z"))
    two_joints = ARM.replace('<joint name="slide"', '<joint name="twist" type="hinge"/><joint name="slide"')
    with pytest.raises(sim.ImporterError, match=r"joint 'slide' of body 'link2': a slide after the hinge 'twist'"):
        sim.import_mjcf(two_joints, sim.ModelBuilder(up_axis="z"))
    path = tmp_path / "bad.xml"
    path.write_text(ARM.replace('<joint name="wrist" type="ball"', '<joint name="wrist" type="screw"'))
    with pytest.raises(sim.ImporterError) as caught:
        sim.import_mjcf(path, sim.ModelBuilder(up_axis="z"))
    assert str(caught.value) == f"{path}:19: <joint>: XML invalid keyword: 'screw'"
    bad_inertia = ARM.replace('<geom type="box" size="0.1 0.2 0.3"/>',
                              '<inertial pos="0 0 0" mass="1" diaginertia="1 0.1 0.1"/>')
    with pytest.raises(sim.ImporterError, match=r"^<string>:25: element 'box': inertia must satisfy A \+ B >= C"):
        sim.import_mjcf(bad_inertia, sim.ModelBuilder(up_axis="z"))


def test_import_mjcf_without_mujoco_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(ImportError, match="sim.import_mjcf needs the `mujoco` package: pip install mujoco"):
        sim.import_mjcf(ARM, sim.ModelBuilder(up_axis="z"))
