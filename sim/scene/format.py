"""The scene file format: every key with its kind, default, unit and meaning. docs/scenes.md is generated from
these declarations (`python tools/gen_scene_docs.py`), so this file is the one place the format is defined."""

from __future__ import annotations

import os

import re

from ..bending import BENDING_MODELS, DEFAULT_BENDING
from ..model import DEFAULT_DAMPRATIO, DEFAULT_TIMECONST, PENALTY_KE
from ..solvers.registry import particle_solver_names, solver_class
from .schema import (DEFAULTS, REQUIRED, AnyOf, Boolean, Choice, Ctx, Field, FilePath, Integer, Kind, ListOf,
                     MappingOf, Number, Rotation, Section, String, Variant, Vector, exactly_one)
from .format_joints import (ANCHOR, D6_AXIS, DRIVE, JOINT, LIMITS, ROBOT, ROBOT_JOINT,
                            check_articulation)
from .source import load_source

IDENTITY = (0.0, 0.0, 0.0, 1.0)
FIX_NAMES = ("left_edge", "right_edge", "bottom_edge", "top_edge", "bottom_left", "bottom_right", "top_left",
             "top_right")

def _contact_fields(ke: float, kd: float) -> list:
    return [
        Field("ke", Number(positive=True), ke, "N/m", "normal contact stiffness"),
        Field("kd", Number(min=0), kd, "N s/m", "normal contact damping"),
        Field("kf", Number(min=0), 10.0, "N s/m", "friction regularisation (viscous slope below the Coulomb limit)"),
        Field("mu", Number(min=0), 0.5, "", "Coulomb friction coefficient"),
        Field("margin", Number(min=0), 0.01, "m", "distance at which contact starts"),
    ]


CONTACT = Section(_contact_fields(1.0e4, 10.0), doc="Particle-shape contact material (the solvers' soft contact).",
                  title="sim.contact")

PARTICLE_CONTACT = Section(
    [Field("enabled", Boolean(), False, "", "simulate particle-particle contact (hash grid)")]
    + _contact_fields(1.0e3, 1.0), doc="Particle-particle contact.", title="sim.particle_contact")

XPBD = Section([
    Field("iterations", Integer(min=0), 10, "", "Jacobi constraint iterations per substep"),
    Field("relaxation", Number(positive=True), 1.0, "", "scale of the averaged position correction"),
    Field("damping", Number(min=0), 0.0, "1/s", "velocity damping rate added to sim.particle_damping"),
], doc="`type: xpbd`: position-based dynamics with compliant constraints (SolverXPBD).", title="solver xpbd")

SEMI_IMPLICIT = Section([
    Field("damping", Number(min=0), 0.0, "1/s", "velocity damping rate added to sim.particle_damping"),
], doc="`type: semi_implicit`: symplectic Euler with forces (SolverSemiImplicit); needs small substeps.",
    title="solver semi_implicit")

#: the settings sections of the particle solvers that have settings of their own
SOLVER_SETTINGS = {"xpbd": XPBD, "semi_implicit": SEMI_IMPLICIT}


def _solver_types() -> dict:
    """`sim.solver.type` -> its settings section, for every particle solver in the registry (one without
    settings of its own gets an empty section), those with settings first."""
    names = [n for n in SOLVER_SETTINGS if n in particle_solver_names()]
    names += [n for n in particle_solver_names() if n not in names]
    return {name: SOLVER_SETTINGS.get(name) or Section([], doc=f"`type: {name}`: {solver_class(name).title}.",
                                                       title=f"solver {name}") for name in names}


SOLVER_TYPES = _solver_types()


def _one_normal_form(spec, ctx: Ctx):
    """A material states its normal force in one form: time constant (timeconst, dampratio) or penalty (ke, kd)."""
    penalty = [k for k in ("ke", "kd") if spec.given(k)]
    time_constant = [k for k in ("timeconst", "dampratio") if spec.given(k)]
    if penalty and time_constant:
        ctx.child(time_constant[0]).fail(
            f"give the normal force either as timeconst/dampratio or as ke/kd (the penalty form), not both "
            f"({penalty[0]} is given too)")


RIGID_MATERIAL = Section([
    Field("timeconst", Number(positive=True), DEFAULT_TIMECONST, "s", "time constant of the normal "
          "spring-damper of the pair's effective mass (the default form; docs/rigid_contact.md)"),
    Field("dampratio", Number(positive=True), DEFAULT_DAMPRATIO, "", "its damping ratio (1: critical)"),
    Field("ke", Number(min=0), PENALTY_KE, "N/m", "penalty form: contact stiffness (given ke or kd selects "
          "the penalty form instead of timeconst/dampratio)"),
    Field("kd", Number(min=0), 0.0, "N s/m", "penalty form: contact damping"),
    Field("kf", Number(min=0), 100.0, "N s/m", "friction regularisation (slope at small slip)"),
    Field("mu", Number(min=0), 0.5, "", "Coulomb friction coefficient"),
    Field("restitution", Number(min=0, max=1), 0.0, "", "bounce speed / arrival speed"),
], doc="Contact material of a shape in rigid-body contacts (a contact uses the mean of its two shapes'). The "
       "normal force has the time-constant form unless ke or kd is given (docs/rigid_contact.md).",
    checks=[_one_normal_form], title="rigid material")

RIGID = Section([
    Field("linear_damping", Number(min=0), 0.0, "1/s", "decay rate of body velocities"),
    Field("angular_damping", Number(min=0), 0.0, "1/s", "decay rate of body angular momenta"),
    Field("restitution_velocity", Number(positive=True), 0.2, "m/s", "normal speed over which a contact turns "
          "from loading to unloading"),
    Field("body_contacts", Boolean(), True, "", "bodies collide with each other (always with colliders)"),
], doc="Rigid-body solver settings (SolverRigid), used when the scene has `bodies`.", title="sim.rigid")


class SolverKind(Variant):
    """`type` picks the solver; `preset: NAME` first loads configs/solvers/NAME.yaml, and the scene's own keys
    override the preset's."""

    doc_type = "mapping"

    def __init__(self):
        super().__init__("type", SOLVER_TYPES, default="xpbd")

    def convert(self, value, ctx):
        if value is None:
            value = {}
        if isinstance(value, dict) and "preset" in value:
            name = value["preset"]
            preset = load_preset(name, ctx.child("preset"))
            value = {**preset, **{k: v for k, v in value.items() if k != "preset"}}
        spec = super().convert(value, ctx)
        return spec


def preset_dirs(base_dir: str) -> list:
    """Where `preset: NAME` is looked up, in order: configs/solvers next to or above the scene's folder, in the
    working directory, and in the source tree this package belongs to."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    dirs = [os.path.join(base_dir, "configs", "solvers"), os.path.join(base_dir, "..", "configs", "solvers"),
            os.path.join(os.getcwd(), "configs", "solvers"), os.path.join(here, "configs", "solvers")]
    out = []
    for d in dirs:
        d = os.path.normpath(d)
        if d not in out:
            out.append(d)
    return out


def load_preset(name, ctx: Ctx) -> dict:
    """The raw keys of solver preset `name`, validated against the solver sections (errors name the preset file)."""
    name = String().convert(name, ctx)
    dirs = preset_dirs(ctx.base_dir)
    for d in dirs:
        path = os.path.join(d, f"{name}.yaml")
        if os.path.isfile(path):
            src = load_source(path)
            if not isinstance(src.data, dict):
                raise src.error((), "a solver preset is a mapping of solver settings")
            SolverKind().convert(dict(src.data), Ctx(src, (), os.path.dirname(path)))
            return dict(src.data)
    known = sorted({f[:-5] for d in dirs if os.path.isdir(d) for f in os.listdir(d) if f.endswith(".yaml")})
    ctx.fail(f"no solver preset '{name}' (known: {', '.join(known) or 'none'}; looked in {', '.join(dirs)})")


class Device(Kind):
    doc_type = "`cpu` \\| `cuda` \\| `cuda:N`"

    def convert(self, value, ctx):
        if not isinstance(value, str) or not re.fullmatch(r"cpu|cuda(:[0-9]+)?", value):
            ctx.fail(f"expected cpu, cuda or cuda:N, got {value!r}")
        return value


SIM = Section([
    Field("fps", Number(positive=True), 60.0, "1/s", "frames per second of the output"),
    Field("frames", Integer(min=1), 120, "", "frames simulated after the initial frame 0"),
    Field("substeps", Integer(min=1), 16, "", "solver steps per frame (dt = 1 / (fps * substeps))"),
    Field("solver", SolverKind(), DEFAULTS, "", "solver settings: `type` (xpbd, semi_implicit) or `preset`, then "
          "that solver's keys (below)"),
    Field("gravity", Number(), -9.81, "m/s^2", "acceleration along the up axis (negative pulls down)"),
    Field("up_axis", Choice("y", "z"), "y", "", "the world's up axis"),
    Field("device", Device(), "cpu", "",
          "where to run: cpu, cuda or cuda:N"),
    Field("particle_damping", Number(min=0), 0.0, "1/s", "velocity damping rate of every particle"),
    Field("worlds", Integer(min=1), 1, "", "independent copies of the scene's objects (cloth, particles, "
          "bodies, joints, robot) simulated as worlds of one model, one launch per kernel for all (docs/worlds.md); "
          "the colliders are shared by every world; `--set worlds.K.KEY=VALUE` sets one world's value; `sim run` "
          "writes the worlds side by side in one USD (or one file each with --split)"),
    Field("world_spacing", Number(positive=True), None, "m", "distance between neighbouring worlds in the USD "
          "written by `sim run` (the worlds are laid out on a grid across the up axis); default one and a half "
          "times the scene's initial horizontal extent, at least 1 m. The simulation itself keeps every world at "
          "the scene's place, so each meets the shared colliders where the scene puts them"),
    Field("max_distance", Number(positive=True), None, "m", "blow-up check: a particle or body farther than this "
          "from the scene's initial centre stops the run (exit 3); default 100 times the scene's extent (at least "
          "1 m) plus the distance its fastest initial speed and gravity cover by that frame"),
    Field("max_speed", Number(positive=True), None, "m/s", "blow-up check: a particle or body faster than this "
          "stops the run (exit 3); default 100 times (the fastest initial speed + |gravity| x time + 1 m/s)"),
    Field("bending", Choice(*BENDING_MODELS), DEFAULT_BENDING, "", "bending model of every cloth: quadratic "
          "(smooth through folds, for gradients; rest shapes taken as flat) or dihedral (keeps curved rest "
          "shapes; its force jumps when a hinge folds through +-180 degrees); see docs/bending.md"),
    Field("contact", CONTACT, DEFAULTS, "", "particle-shape contact material"),
    Field("particle_contact", PARTICLE_CONTACT, DEFAULTS, "", "particle-particle contact"),
    Field("rigid", RIGID, DEFAULTS, "", "rigid-body solver settings"),
], doc="Time stepping, solver, gravity and device. With `bodies`, each substep advances the bodies with the rigid "
       "solver (with `joints` or a `robot`: SolverFeatherstone, in joint coordinates) and the cloth and particles "
       "with `solver`, which sees the bodies' shapes as moving colliders.",
    title="sim")

MATERIAL = Section([
    Field("tri_ke", Number(min=0), 1.0e3, "N/m", "membrane shear stiffness (Lame mu of the StVK triangles)"),
    Field("tri_ka", Number(min=0), 1.0e3, "N/m", "membrane area stiffness (Lame lambda)"),
    Field("tri_kd", Number(min=0), 0.1, "N s/m", "membrane damping"),
    Field("edge_ke", Number(min=0), 0.0, "N m/rad", "bending stiffness (0: no bending)"),
    Field("edge_kd", Number(min=0), 0.0, "N m s/rad", "bending damping"),
    Field("springs", Boolean(), False, "", "add a spring along every mesh edge"),
    Field("spring_ke", Number(min=0), 1.0e3, "N/m", "edge spring stiffness"),
    Field("spring_kd", Number(min=0), 0.0, "N s/m", "edge spring damping"),
], doc="Cloth material: membrane, bending and optional edge springs.", title="material")

GRID = Section([
    Field("dim_x", Integer(min=1), REQUIRED, "", "cells along the local x axis"),
    Field("dim_y", Integer(min=1), REQUIRED, "", "cells along the local y axis"),
    Field("cell_x", Number(positive=True), REQUIRED, "m", "cell width"),
    Field("cell_y", Number(positive=True), REQUIRED, "m", "cell height"),
], doc="A rectangular grid of (dim_x + 1) x (dim_y + 1) vertices in the local x-y plane.", title="cloth grid")

MESH = Section([
    Field("file", FilePath(".obj", ".usd", ".usda", ".usdc"), REQUIRED, "",
          "triangle mesh file, relative to the scene file"),
    Field("prim", String(), None, "", "USD prim path of the mesh (default: the first mesh in the file)"),
    Field("scale", Number(positive=True), 1.0, "m/unit", "scale from file units to metres"),
], doc="A triangle mesh read from a file (polygons are split into triangles).",
    checks=[lambda spec, ctx: read_mesh(spec, ctx)], title="cloth mesh")


def read_mesh(spec, ctx: Ctx):
    """Load the mesh file now, so that `sim validate` reports a broken file; keeps vertices and triangles."""
    from ..mesh_io import MeshFormatError, load_mesh
    try:
        verts, tris = load_mesh(spec.file, spec.prim)
    except (MeshFormatError, OSError) as e:
        ctx.child("file").fail(str(e))
    else:
        spec.__dict__.update(vertices=verts, triangles=tris)

INLINE_MESH = Section([
    Field("vertices", ListOf(Vector(3), min_len=3), REQUIRED, "m", "vertex positions"),
    Field("triangles", ListOf(Vector(3, integer=True, min=0), min_len=1), REQUIRED, "", "vertex indices"),
], doc="A triangle mesh written in the scene.", title="cloth inline mesh")

FIX_ENTRY = AnyOf(Integer(min=0), Choice(*FIX_NAMES), expected="a vertex index or one of " + ", ".join(FIX_NAMES))

class MaterialRef(Kind):
    """A material mapping, or the name of one under `materials` (names are checked by `check_scene`)."""

    doc_type = "mapping or name"

    def convert(self, value, ctx):
        if isinstance(value, str):
            return String().convert(value, ctx)
        if value is None:
            ctx.fail("expected a material mapping or the name of one under `materials`, got nothing")
        return MATERIAL.convert(value, ctx)


MATERIAL_REF = MaterialRef()

CLOTH = Section([
    Field("name", String(), None, "", "object name (prim name in the USD); default cloth_<index>"),
    Field("grid", GRID, None, "", "a rectangular grid (give one of grid, mesh, inline)"),
    Field("mesh", MESH, None, "", "a mesh file"),
    Field("inline", INLINE_MESH, None, "", "a mesh written in the scene"),
    Field("pos", Vector(3), (0.0, 0.0, 0.0), "m", "translation of the object's local frame"),
    Field("rot", Rotation(), IDENTITY, "", "rotation of the local frame (quaternion or axis + angle in degrees)"),
    Field("vel", Vector(3), (0.0, 0.0, 0.0), "m/s", "initial velocity of every vertex"),
    Field("velocities", ListOf(Vector(3)), None, "m/s", "initial velocity of each vertex (replaces vel)"),
    Field("forces", ListOf(Vector(3)), None, "N", "control: force on each vertex during frame 1, 2, ... "
          "(one entry per frame; frames past the list get none)"),
    Field("mass", Number(positive=True), None, "kg", "mass of each vertex (grids; default 0.01)"),
    Field("density", Number(positive=True), None, "kg/m^2", "areal density (meshes; default 0.2)"),
    Field("radius", Number(positive=True), 0.01, "m", "contact radius of each vertex"),
    Field("self_collision", Boolean(), False, "", "collide with itself and with the other cloths that have it "
          "(vertex-triangle and edge-edge contacts with friction sim.contact.mu; no intersections can form)"),
    Field("thickness", Number(positive=True), None, "m", "distance kept between the cloth's surfaces with "
          "self_collision (default: a quarter of the mean edge length)"),
    Field("material", MATERIAL_REF, None, "", "material mapping, or a name from `materials`"),
    Field("fix", ListOf(FIX_ENTRY), [], "", "pinned vertices: indices and/or named sides and corners "
          "(" + ", ".join(FIX_NAMES) + "); sides and corners of a mesh are those of its local bounding box"),
    Field("color", Vector(3, min=0), (0.75, 0.35, 0.25), "", "display colour (RGB in [0, 1]) in the USD"),
], doc="A cloth: a grid, a mesh file or an inline mesh, with its material and pinned vertices.",
    checks=[exactly_one("grid", "mesh", "inline"), lambda spec, ctx: check_cloth(spec, ctx)], title="cloth[]")


def check_cloth(spec, ctx: Ctx):
    """Vertex indices in `fix` and inline triangles exist; `mass` belongs to grids and `density` to meshes."""
    if spec.grid is not None:
        count = (spec.grid.dim_x + 1) * (spec.grid.dim_y + 1)
        if spec.given("density"):
            ctx.child("density").fail("a grid takes `mass` per vertex; `density` is for meshes")
    else:
        if spec.given("mass"):
            ctx.child("mass").fail("a mesh takes an areal `density`; `mass` per vertex is for grids")
        count = len(spec.mesh.vertices) if spec.mesh is not None else len(spec.inline.vertices)
    if spec.inline is not None:
        for i, t in enumerate(spec.inline.triangles):
            if max(t) >= count:
                ctx.child("inline").child("triangles").child(i).fail(
                    f"vertex index {max(t)} out of range ({count} vertices)")
        check_triangle_areas(spec.inline.vertices, spec.inline.triangles, ctx.child("inline").child("triangles"))
    if spec.mesh is not None:
        check_triangle_areas(spec.mesh.vertices, spec.mesh.triangles, ctx.child("mesh").child("file"),
                             in_file=True)
    for i, v in enumerate(spec.fix):
        if isinstance(v, int) and v >= count:
            ctx.child("fix").child(i).fail(f"vertex index {v} out of range (the cloth has {count} vertices)")
    check_velocities(spec, ctx, count)


#: A triangle whose area is below this [m^2] is degenerate (the builder refuses it: its rest frame is undefined).
MIN_TRIANGLE_AREA = 1e-12


def check_triangle_areas(vertices, triangles, ctx: Ctx, in_file: bool = False):
    """Refuse degenerate triangles (repeated vertices, collinear corners) at load, naming the triangle."""
    import numpy as np
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if len(t) == 0:
        return
    area = 0.5 * np.linalg.norm(np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]]), axis=1)
    bad = np.flatnonzero(area < MIN_TRIANGLE_AREA)
    if len(bad):
        i = int(bad[0])
        what = "repeats a vertex" if len(set(t[i].tolist())) < 3 else f"has zero area ({area[i]:.3g} m^2)"
        more = f" ({len(bad) - 1} more degenerate triangles)" if len(bad) > 1 else ""
        target = ctx if in_file else ctx.child(i)
        prefix = f"triangle {i} {tuple(int(x) for x in t[i])}" if in_file else f"{tuple(int(x) for x in t[i])}"
        target.fail(f"{prefix} {what}{more}: degenerate triangles cannot be simulated")


def check_velocities(spec, ctx: Ctx, count: int):
    if spec.velocities is not None and len(spec.velocities) != count:
        ctx.child("velocities").fail(f"expected one velocity per particle ({count}), got {len(spec.velocities)}")


def particle_count_of(spec) -> int:
    if spec.grid is not None:
        return spec.grid.dim[0] * spec.grid.dim[1] * spec.grid.dim[2]
    return len(spec.points)

PARTICLE_GRID = Section([
    Field("dim", Vector(3, integer=True, min=1), REQUIRED, "", "particles along local x, y, z"),
    Field("spacing", Number(positive=True), REQUIRED, "m", "distance between neighbours"),
    Field("jitter", Number(min=0), 0.0, "m", "random offset of each particle (uniform in +-jitter per axis)"),
    Field("seed", Integer(min=0), 42, "", "random seed of the jitter"),
], doc="A block of particles.", title="particles grid")

PARTICLES = Section([
    Field("name", String(), None, "", "object name (prim name in the USD); default particles_<index>"),
    Field("grid", PARTICLE_GRID, None, "", "a block of particles (give one of grid, points)"),
    Field("points", ListOf(Vector(3), min_len=1), None, "m", "particle positions in the local frame"),
    Field("pos", Vector(3), (0.0, 0.0, 0.0), "m", "translation of the local frame"),
    Field("rot", Rotation(), IDENTITY, "", "rotation of the local frame"),
    Field("vel", Vector(3), (0.0, 0.0, 0.0), "m/s", "initial velocity of every particle"),
    Field("velocities", ListOf(Vector(3)), None, "m/s", "initial velocity of each particle (replaces vel)"),
    Field("forces", ListOf(Vector(3)), None, "N", "control: force on each particle during frame 1, 2, ... "
          "(one entry per frame; frames past the list get none)"),
    Field("mass", Number(positive=True), 0.01, "kg", "mass of each particle"),
    Field("radius", Number(positive=True), None, "m", "contact radius (default: half the grid spacing, or 0.01)"),
    Field("color", Vector(3, min=0), (0.2, 0.45, 0.8), "", "display colour (RGB in [0, 1]) in the USD"),
], doc="Free particles.", checks=[exactly_one("grid", "points"),
                                 lambda spec, ctx: check_velocities(spec, ctx, particle_count_of(spec))],
    title="particles[]")

_POSE = [
    Field("name", String(), None, "", "prim name in the USD; default <type>_<index>"),
    Field("pos", Vector(3), (0.0, 0.0, 0.0), "m", "position of the shape's centre"),
    Field("rot", Rotation(), IDENTITY, "", "orientation"),
    Field("material", RIGID_MATERIAL, DEFAULTS, "", "contact material for rigid bodies"),
]
MESH_FILE = [
    Field("file", FilePath(".obj", ".usd", ".usda", ".usdc"), REQUIRED, "", "triangle mesh file (OBJ or USD), "
          "relative to the scene file; a closed, consistently oriented mesh is a solid, any other a two-sided "
          "surface"),
    Field("prim", String(), None, "", "USD prim path of the mesh (default: the first mesh in the file)"),
    Field("scale", Number(positive=True), 1.0, "m/unit", "uniform scale from file units to metres"),
]


def read_collider_mesh(spec, ctx: Ctx):
    """Load and check a mesh collider's file now (a broken or degenerate mesh is refused at load)."""
    from ..mesh_shape import checked_mesh
    read_mesh(spec, ctx)
    try:
        vertices, triangles = checked_mesh(spec.vertices, spec.triangles)
    except ValueError as e:
        ctx.child("file").fail(f"{spec.file}: {e}")
    spec.__dict__.update(vertices=vertices, triangles=triangles)


COLLIDERS = {
    "ground": Section([Field("name", String(), None, "", "prim name in the USD"),
                       Field("height", Number(), 0.0, "m", "height along the up axis"),
                       Field("material", RIGID_MATERIAL, DEFAULTS, "", "contact material for rigid bodies"),
                       Field("size", Number(positive=True), 20.0, "m", "side of the square drawn in the USD")],
                      doc="An infinite ground plane, normal along the up axis.", title="collider ground"),
    "sphere": Section(_POSE + [Field("radius", Number(positive=True), REQUIRED, "m", "radius")],
                      doc="A static sphere.", title="collider sphere"),
    "box": Section(_POSE + [Field("half_extents", Vector(3, positive=True), REQUIRED, "m", "half sizes along the "
                                  "box's local x, y, z")], doc="A static box.", title="collider box"),
    "capsule": Section(_POSE + [Field("radius", Number(positive=True), REQUIRED, "m", "radius"),
                                Field("half_height", Number(min=0), REQUIRED, "m", "half length of the segment "
                                      "along the local y axis")], doc="A static capsule.", title="collider capsule"),
    "mesh": Section(_POSE + MESH_FILE, doc="A static triangle mesh (cloth and particles collide with it; rigid "
                    "bodies do not).", checks=[read_collider_mesh], title="collider mesh"),
}

_SHAPE_POSE = [
    Field("pos", Vector(3), (0.0, 0.0, 0.0), "m", "position in the body frame"),
    Field("rot", Rotation(), IDENTITY, "", "orientation in the body frame"),
    Field("density", Number(min=0), 1000.0, "kg/m^3", "density (sets the body's mass and inertia)"),
]
BODY_SHAPES = {
    "box": Section(_SHAPE_POSE + [Field("half_extents", Vector(3, positive=True), REQUIRED, "m", "half sizes")],
                   doc="A box shape of a body.", title="body shape box"),
    "sphere": Section(_SHAPE_POSE + [Field("radius", Number(positive=True), REQUIRED, "m", "radius")],
                      doc="A sphere shape of a body.", title="body shape sphere"),
    "capsule": Section(_SHAPE_POSE + [Field("radius", Number(positive=True), REQUIRED, "m", "radius"),
                                      Field("half_height", Number(min=0), REQUIRED, "m", "half length along "
                                            "local y")], doc="A capsule shape of a body.",
                       title="body shape capsule"),
    "mesh": Section(_SHAPE_POSE + MESH_FILE, doc="A triangle mesh moving with a body: cloth and particles collide "
                    "with it; it adds no mass (give the body `mass` or other shapes) and it cannot touch other "
                    "bodies or colliders (refused at load).", checks=[read_collider_mesh],
                    title="body shape mesh"),
}

BODY = Section([
    Field("name", String(), None, "", "prim name in the USD; default body_<index>"),
    Field("pos", Vector(3), (0.0, 0.0, 0.0), "m", "initial position of the body frame"),
    Field("rot", Rotation(), IDENTITY, "", "initial orientation"),
    Field("vel", Vector(3), (0.0, 0.0, 0.0), "m/s", "initial velocity of the centre of mass"),
    Field("angular_vel", Vector(3), (0.0, 0.0, 0.0), "rad/s", "initial angular velocity (world axes)"),
    Field("mass", Number(positive=True), None, "kg", "mass (default: from the shapes' densities)"),
    Field("shapes", ListOf(Variant("type", BODY_SHAPES), min_len=1), REQUIRED, "", "collision shapes, each with "
          "a `type`: " + ", ".join(BODY_SHAPES)),
    Field("material", RIGID_MATERIAL, DEFAULTS, "", "contact material of every shape of the body"),
    Field("color", Vector(3, min=0), (0.6, 0.6, 0.65), "", "display colour (RGB in [0, 1]) in the USD"),
], doc="A rigid body made of shapes: free, or held by one of `joints`.", title="bodies[]")

OUTPUT = Section([
    Field("path", String(), None, "", "USD file to write (.usd, .usdc or .usda), relative to the working "
          "directory; default out/<scene name>.usd"),
    Field("normals", Boolean(), True, "", "write time-sampled vertex normals of cloth meshes"),
    Field("colliders", Boolean(), True, "", "write the colliders as USD shapes"),
    Field("meters_per_unit", Number(positive=True), 1.0, "m", "the stage's metersPerUnit (the simulation is in "
          "metres; this only labels the file)"),
    Field("save_every", Number(positive=True), 5.0, "s", "save the USD file at least this often as the run goes, "
          "so a late write failure keeps what was saved (less often when saving would take over a tenth of the "
          "time)"),
], doc="What to write.", title="output")

SCENE = Section([
    Field("description", String(), None, "", "free text"),
    Field("sim", SIM, DEFAULTS, "", "time stepping, solver, gravity, device"),
    Field("materials", MappingOf(MATERIAL), {}, "", "named cloth materials"),
    Field("cloth", ListOf(CLOTH), [], "", "cloth objects"),
    Field("particles", ListOf(PARTICLES), [], "", "particle objects"),
    Field("bodies", ListOf(BODY), [], "", "rigid bodies"),
    Field("joints", ListOf(JOINT), [], "", "joints connecting bodies into articulations (docs/articulations.md)"),
    Field("robot", ROBOT, None, "", "a robot imported from a URDF or USD Physics file"),
    Field("colliders", ListOf(Variant("type", COLLIDERS)), [], "", "static colliders, each with a `type`: "
          + ", ".join(COLLIDERS)),
    Field("output", OUTPUT, DEFAULTS, "", "output settings"),
], doc="A scene file's top-level keys.", checks=[lambda spec, ctx: check_scene(spec, ctx)], title="scene")


def check_scene(spec, ctx: Ctx):
    """Cross-references: material names exist; object and collider names are unique; the scene fits in memory."""
    from .memory import check_memory
    check_memory(spec, ctx)
    for i, c in enumerate(spec.cloth):
        if isinstance(c.material, str) and c.material not in spec.materials:
            known = ", ".join(spec.materials) or "none defined"
            ctx.child("cloth").child(i).child("material").fail(f"no material named '{c.material}' (known: {known})")
    seen = {}
    for group, prefix in (("cloth", "cloth"), ("particles", "particles"), ("bodies", "body"), ("colliders", None)):
        for i, item in enumerate(getattr(spec, group)):
            name = item.name or f"{prefix or item.type}_{i}"
            item.__dict__["name"] = name
            if name in seen:
                ctx.child(group).child(i).child("name").fail(f"name '{name}' is already used by {seen[name]}")
            seen[name] = f"{group}[{i}]"
    check_articulation(spec, ctx)
    check_rigid_meshes(spec, ctx)


def check_rigid_meshes(spec, ctx: Ctx):
    """Refuse a rigid contact that involves a mesh (the rigid solvers collide primitives only), naming the pair:
    a body's mesh shape with a collider or another body's shape, or a mesh collider with a body's shape."""
    shapes = [(i, j, s) for i, body in enumerate(spec.bodies) for j, s in enumerate(body.shapes)]
    if not shapes:
        return
    colliders = [(k, c) for k, c in enumerate(spec.colliders)]
    contacts = spec.sim.rigid.body_contacts
    for i, j, s in shapes:
        where = ctx.child("bodies").child(i).child("shapes").child(j)
        others = [f"colliders[{k}] ({c.type})" for k, c in colliders]
        if contacts:
            others += [f"bodies[{i2}].shapes[{j2}] ({s2.type})" for i2, j2, s2 in shapes if i2 != i]
        if s.type == "mesh" and others:
            where.fail(f"rigid contact between bodies[{i}].shapes[{j}] (mesh) and {others[0]} is not supported "
                       "(mesh shapes collide with cloth and particles only)")
        meshes = [k for k, c in colliders if c.type == "mesh"]
        if meshes:
            ctx.child("colliders").child(meshes[0]).fail(
                f"rigid contact between colliders[{meshes[0]}] (mesh) and bodies[{i}].shapes[{j}] ({s.type}) is "
                "not supported (mesh colliders touch cloth and particles only)")

# Sections listed in the generated docs, in order.
DOC_SECTIONS = [SCENE, SIM, XPBD, SEMI_IMPLICIT, CONTACT, PARTICLE_CONTACT, RIGID, MATERIAL, CLOTH, GRID, MESH,
                INLINE_MESH, PARTICLES, PARTICLE_GRID, BODY, *BODY_SHAPES.values(), RIGID_MATERIAL,
                JOINT, ANCHOR, D6_AXIS, LIMITS, DRIVE, ROBOT, ROBOT_JOINT, *COLLIDERS.values(), OUTPUT]
