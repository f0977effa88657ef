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

# Every public name is loaded on first use (PEP 562), so that `import sim` and its light modules (sim.usd, which
# `warp.render`'s UsdRenderer writes through) do not define the solvers' kernels: that took 0.3-0.5 s of every
# small Warp example's run. `from sim import X`, `sim.X` and `sim.submodule` work as if loaded eagerly.
_PUBLIC = {
    "sim.articulation": ("eval_fk", "eval_ik"),
    "sim.builder": ("ModelBuilder", "quat_from_axis_angle", "quat_identity"),
    "sim.hashgrid": ("HashGrid",),
    "sim.importers": ("ImporterError", "ImportResult", "ImportWarning", "import_mjcf", "import_urdf",
                      "import_usd_physics"),
    "sim.particle_contact": ("eval_particle_contacts", "solve_particle_contacts"),
    "sim.reductions": ("center_of_mass", "kinetic_energy", "potential_energy_gravity"),
    "sim.worlds": ("sum_worlds", "world_center_of_mass", "world_kinetic_energy"),
    "sim.joints": ("JOINT_BALL", "JOINT_D6", "JOINT_FIXED", "JOINT_FREE", "JOINT_PRISMATIC", "JOINT_REVOLUTE",
                   "JointDofConfig"),
    "sim.model": ("PARTICLE_ACTIVE", "SHAPE_BOX", "SHAPE_CAPSULE", "SHAPE_PLANE", "SHAPE_SPHERE", "ContactParams",
                  "Control", "Model", "State"),
    # every registered solver class (sim/solvers/registry.py; tests/test_solver_registry.py checks the list)
    "sim.solvers": ("Solver", "ModelChange", "SolverFeatherstone", "SolverRigid", "SolverSemiImplicit",
                    "SolverXPBD"),
}
_LAZY = {name: (module, name) for module, names in _PUBLIC.items() for name in names}
__all__ = list(_LAZY)

# not in __all__: scenes, USD output, optimisation, sweeps, rendering and the viewer
_LAZY.update({"Scene": ("sim.scene", "Scene"), "SceneError": ("sim.scene", "SceneError"),
              "SimulationError": ("sim.scene", "SimulationError"), "UsdWriter": ("sim.usd", "UsdWriter"),
              "load_mesh": ("sim.mesh_io", "load_mesh"), "MeshFormatError": ("sim.mesh_io", "MeshFormatError"),
              "optimize": ("sim.optimization", "optimize"),
              "load_optimize_config": ("sim.optimization", "load_config"),
              "sweep": ("sim.sweeps", "sweep"), "render": ("sim.rendering", "render"),
              "RenderError": ("sim.rendering", "RenderError"), "view": ("sim.viewer", "view")})


def __getattr__(name):
    import importlib

    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        try:  # a submodule, as `import sim` followed by `sim.self_contact` finds it once loaded
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module 'sim' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
