"""sim: differentiable particle, cloth and rigid-body simulation built on the kernel language.

    import sim
    b = sim.ModelBuilder(up_axis="y")
    b.add_cloth_grid(pos=(0, 2, 0), rot=sim.quat_identity(), vel=(0, 0, 0), dim_x=32, dim_y=32, cell_x=0.05,
                     cell_y=0.05, mass=0.1, fix_left=True)
    b.add_ground_plane()
    model = b.finalize(device="cpu", requires_grad=True)
    solver = sim.SolverSemiImplicit(model)      # or sim.SolverXPBD(model, iterations=10)
    s0, s1 = model.state(), model.state()
    solver.step(model, s0, s1, control=None, dt=1e-3)

Rigid bodies: `body = b.add_body(pos=(0, 1, 0), angular_velocity=(0, 2, 0))`, then shapes with `body=body`
(their density gives the mass), and `sim.SolverRigid(model)`; particles collide with shapes carried by bodies.
Articulations: joints between bodies (`b.add_joint_revolute(parent, child, axis=...)`, ...), simulated in joint
coordinates by `sim.SolverFeatherstone(model)`; `sim.eval_fk` / `sim.eval_ik`; robots from files with
`sim.import_urdf(path, b)`, `sim.import_usd_physics(path, b)` and `sim.import_mjcf(path, b)` (through the
`mujoco` package) (docs/articulations.md).
"""

from .articulation import eval_fk, eval_ik
from .builder import ModelBuilder, quat_from_axis_angle, quat_identity
from .hashgrid import HashGrid
from .importers import ImporterError, ImportResult, ImportWarning, import_mjcf, import_urdf, import_usd_physics
from .particle_contact import eval_particle_contacts, solve_particle_contacts
from .reductions import center_of_mass, kinetic_energy, potential_energy_gravity
from .worlds import sum_worlds, world_center_of_mass, world_kinetic_energy
from .joints import (JOINT_BALL, JOINT_D6, JOINT_FIXED, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE,
                     JointDofConfig)
from .model import (PARTICLE_ACTIVE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_PLANE, SHAPE_SPHERE, ContactParams, Control,
                    Model, State)
from . import solvers
from .solvers import *  # noqa: F401,F403  every Solver* class

__all__ = ["ModelBuilder", "Model", "State", "Control", "ContactParams", "quat_identity", "quat_from_axis_angle",
           "HashGrid", "eval_particle_contacts", "solve_particle_contacts", "center_of_mass", "kinetic_energy",
           "potential_energy_gravity", "eval_fk", "eval_ik", "JointDofConfig", "JOINT_PRISMATIC", "JOINT_REVOLUTE",
           "JOINT_BALL", "JOINT_FIXED", "JOINT_FREE", "JOINT_D6", "import_urdf", "import_usd_physics", "import_mjcf",
           "ImporterError", "ImportResult", "ImportWarning", "sum_worlds", "world_center_of_mass",
           "world_kinetic_energy",
           "SHAPE_SPHERE", "SHAPE_BOX", "SHAPE_CAPSULE", "SHAPE_PLANE", "PARTICLE_ACTIVE"] + solvers.__all__

# Scenes and USD output load pxr and YAML on first use, so `import sim` stays light.
_LAZY = {"Scene": ("sim.scene", "Scene"), "SceneError": ("sim.scene", "SceneError"),
         "SimulationError": ("sim.scene", "SimulationError"), "UsdWriter": ("sim.usd", "UsdWriter"),
         "load_mesh": ("sim.mesh_io", "load_mesh"), "MeshFormatError": ("sim.mesh_io", "MeshFormatError"),
         "optimize": ("sim.optimization", "optimize"), "load_optimize_config": ("sim.optimization", "load_config"),
         "sweep": ("sim.sweeps", "sweep"), "render": ("sim.rendering", "render"),
         "RenderError": ("sim.rendering", "RenderError"),
         "view": ("sim.viewer", "view")}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'sim' has no attribute '{name}'")
