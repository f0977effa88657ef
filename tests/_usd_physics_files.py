"""USD Physics test files written with pxr (instead of committed binaries): a double pendulum described in SI
units and z-up, written in any stage units and up axis."""

import math

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from sim.spatial import quat_between
from sim.spatial import quat_multiply as _quat_mul, quat_rotate as _quat_rotate

#: the double pendulum in SI units, z up: hinge 1 at HINGE about y, rods of LENGTH hanging down
HINGE = np.array([0.0, 0.0, 2.0])
LENGTH = (1.0, 1.0)
MASS = (1.0, 0.5)
INERTIA = ((0.02, 0.02, 0.001), (0.01, 0.01, 0.0005))
DRIVE = dict(target_ke=3.0, target_kd=0.5, target_pos=math.radians(10.0))  # on hinge 2, per radian
LIMIT = (-math.radians(120.0), math.radians(120.0))                         # on hinge 2


def _gf_quat(q):
    return Gf.Quatf(float(q[3]), Gf.Vec3f(*map(float, q[:3])))


def _about_y(angle):
    return np.array([0.0, math.sin(angle / 2), 0.0, math.cos(angle / 2)])


def write_double_pendulum(path, *, angles=(0.6, -0.3), meters_per_unit=1.0, up_axis="Z", extras=False):
    """Write the double pendulum at joint angles `angles` [rad] into `path`. `extras` adds pieces the importer
    does not import (a material, a break force, a PhysX contact offset), to test that they are reported."""
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageMetersPerUnit(stage, meters_per_unit)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y if up_axis == "Y" else UsdGeom.Tokens.z)
    turn = quat_between((0, 0, 1), (0, 1, 0)) if up_axis == "Y" else np.array([0.0, 0.0, 0.0, 1.0])
    length_unit = 1.0 / meters_per_unit  # stage units per metre

    def to_stage(p):
        return Gf.Vec3f(*map(float, _quat_rotate(turn, p) * length_unit))

    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    root = UsdGeom.Xform.Define(stage, "/World/pendulum")
    UsdPhysics.ArticulationRootAPI.Apply(root.GetPrim())

    hinge, rotation, links = HINGE.copy(), np.array([0.0, 0.0, 0.0, 1.0]), []
    for k, (length, mass, inertia) in enumerate(zip(LENGTH, MASS, INERTIA)):
        rotation = _quat_mul(rotation, _about_y(angles[k]))
        centre = hinge + _quat_rotate(rotation, (0.0, 0.0, -length / 2))
        link = UsdGeom.Xform.Define(stage, f"/World/pendulum/link{k + 1}")
        link.AddTranslateOp().Set(Gf.Vec3d(to_stage(centre)))
        q = _quat_mul(turn, rotation)
        link.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(float(q[3]), Gf.Vec3d(*map(float, q[:3]))))
        UsdPhysics.RigidBodyAPI.Apply(link.GetPrim())
        mass_api = UsdPhysics.MassAPI.Apply(link.GetPrim())
        mass_api.CreateMassAttr(mass)
        mass_api.CreateCenterOfMassAttr(Gf.Vec3f(0.0))
        mass_api.CreateDiagonalInertiaAttr(Gf.Vec3f(*inertia) * length_unit ** 2)
        capsule = UsdGeom.Capsule.Define(stage, f"/World/pendulum/link{k + 1}/collision")
        capsule.CreateAxisAttr("Z")
        capsule.CreateRadiusAttr(0.05 * length_unit)
        capsule.CreateHeightAttr((length - 0.1) * length_unit)
        UsdPhysics.CollisionAPI.Apply(capsule.GetPrim())
        links.append(link)
        hinge = hinge + _quat_rotate(rotation, (0.0, 0.0, -length))

    for k in range(2):
        joint = UsdPhysics.RevoluteJoint.Define(stage, f"/World/pendulum/hinge{k + 1}")
        joint.CreateAxisAttr("Y")
        joint.CreateBody1Rel().SetTargets([links[k].GetPath()])
        joint.CreateLocalPos1Attr(Gf.Vec3f(0.0, 0.0, LENGTH[k] / 2 * length_unit))
        if k == 0:  # to the world: the frame is in stage coordinates
            joint.CreateLocalPos0Attr(to_stage(HINGE))
            joint.CreateLocalRot0Attr(_gf_quat(turn))
        else:
            joint.CreateBody0Rel().SetTargets([links[0].GetPath()])
            joint.CreateLocalPos0Attr(Gf.Vec3f(0.0, 0.0, -LENGTH[0] / 2 * length_unit))
            joint.CreateLowerLimitAttr(math.degrees(LIMIT[0]))
            joint.CreateUpperLimitAttr(math.degrees(LIMIT[1]))
            drive = UsdPhysics.DriveAPI.Apply(joint.GetPrim(), "angular")
            torque_unit = length_unit ** 2  # kg (stage unit)^2 / s^2 per N m
            drive.CreateStiffnessAttr(DRIVE["target_ke"] * torque_unit * math.pi / 180.0)
            drive.CreateDampingAttr(DRIVE["target_kd"] * torque_unit * math.pi / 180.0)
            drive.CreateTargetPositionAttr(math.degrees(DRIVE["target_pos"]))
    if extras:
        UsdPhysics.MaterialAPI.Apply(links[1].GetPrim())
        links[1].GetPrim().CreateAttribute("physxRigidBody:contactOffset", Sdf.ValueTypeNames.Float).Set(0.01)
        UsdPhysics.RevoluteJoint.Get(stage, "/World/pendulum/hinge1").CreateBreakForceAttr(100.0)
    stage.Save()
    return path
