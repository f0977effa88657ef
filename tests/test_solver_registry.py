"""The Solver interface and the registry: every solver declares its capabilities, scene building picks solvers
by those declarations, the learnable-key refusals come from them, and notify_model_changed takes effect."""

from __future__ import annotations

import numpy as np
import pytest

import kernels as wp
import sim
from sim.optimization.learnable import LEARNABLE, REFUSED, solvers_of
from sim.scene import Scene
from sim.scene.build import CoupledSolver
from sim.solvers import ModelChange, Solver
from sim.solvers.base import CAPABILITIES
from sim.solvers.registry import REGISTERED, SOLVERS, body_solver_name, particle_solver_names, solver_class


def test_every_registered_solver_declares_its_capabilities():
    assert [cls.name for cls in SOLVERS.values()] == [folder for folder, _ in REGISTERED]
    for name, cls in SOLVERS.items():
        assert issubclass(cls, Solver) and getattr(sim, cls.__name__) is cls
        assert cls.role in ("particles", "bodies") and cls.title and cls.simulates
        assert set(cls.simulates) <= set(CAPABILITIES), name
        # every ignored key is a key the solver acts on, and matches some learnable key
        for pattern in cls.ignored_keys:
            matched = [p for p in LEARNABLE if cls.ignores(p) == cls.ignored_keys[pattern]]
            assert matched and all(cls.acts_on(p) for p in matched), (name, pattern)
    assert particle_solver_names() == ("semi_implicit", "xpbd")
    assert body_solver_name(False) == "rigid" and body_solver_name(True) == "featherstone"
    with pytest.raises(KeyError, match="registered: semi_implicit, xpbd, rigid, featherstone"):
        solver_class("implicit")


def test_sim_lists_every_solver_and_loads_its_names_on_first_use():
    """sim's public names are loaded on first use (sim/__init__.py): __all__ holds every registered solver and
    every name it lists resolves; `import sim` and `sim.usd` alone define no solver kernels (a child process)."""
    import subprocess
    import sys

    assert set(sim.solvers.__all__) <= set(sim.__all__)
    assert all(getattr(sim, name) is not None for name in sim.__all__)
    assert sim.self_contact.GAMMA > 0  # a submodule, as after an eager import
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        sim.no_such_name  # noqa: B018
    code = ("import sys, sim, sim.usd; assert not [m for m in sys.modules if m.startswith('sim.solvers')]; "
            "print(sim.SolverXPBD.name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "xpbd", out.stderr


def test_refusals_are_the_declared_ignored_keys():
    assert REFUSED[("xpbd", "cloth.N.material.tri_kd")] == sim.SolverXPBD.ignored_keys["*.tri_kd"]
    assert ("semi_implicit", "cloth.N.material.tri_kd") not in REFUSED
    assert solvers_of("joints.N.q") == ("featherstone",)
    assert solvers_of("colliders.N.pos") == tuple(SOLVERS)
    assert solvers_of("bodies.N.vel") == ("rigid", "featherstone")


CLOTH = "cloth:\n  - {name: sheet, grid: {dim_x: 2, dim_y: 2, cell_x: 0.1, cell_y: 0.1}, pos: [0, 1, 0]}\n"
BALL = "bodies:\n  - {name: ball, pos: [0, 1, 0], shapes: [{type: sphere, radius: 0.1}]}\n"
JOINT = "joints:\n  - {type: revolute, parent: world, child: ball, axis: [0, 0, 1]}\n"


@pytest.mark.parametrize("text,solver_type,expected", [
    (CLOTH, "xpbd", (sim.SolverXPBD,)),
    (CLOTH, "semi_implicit", (sim.SolverSemiImplicit,)),
    (CLOTH + BALL, "xpbd", (sim.SolverRigid, sim.SolverXPBD)),
    (BALL.replace("pos: [0, 1, 0], ", "") + JOINT, "xpbd", (sim.SolverFeatherstone,)),
])
def test_scene_building_picks_the_registered_solvers(tmp_path, text, solver_type, expected):
    path = tmp_path / "s.yaml"
    path.write_text(f"sim: {{frames: 1, solver: {{type: {solver_type}}}}}\n" + text)
    built = Scene.load(str(path)).build(device="cpu")
    solver = built.solver
    parts = (solver.rigid, solver.particles) if isinstance(solver, CoupledSolver) else (solver,)
    assert tuple(type(p) for p in parts) == expected
    assert isinstance(solver, Solver)


def test_notify_model_changed_makes_featherstone_read_replaced_joint_arrays():
    """SolverFeatherstone keeps a struct of the model's joint arrays: a replaced joint_X_p is seen only after
    notify_model_changed(ModelChange.JOINTS) (the body then hangs from the moved anchor)."""
    b = sim.ModelBuilder(up_axis="y", gravity=0.0)
    body = b.add_body(mass=1.0, inertia=np.eye(3) * 0.01)
    b.add_joint_revolute(-1, body, axis=(0.0, 0.0, 1.0), parent_xform=(0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0),
                         child_xform=(0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 1.0))
    model = b.finalize(device="cpu")
    solver = sim.SolverFeatherstone(model)

    def height() -> float:
        s0, s1 = model.state(), model.state()
        solver.step(model, s0, s1, None, 1e-3)
        return float(s1.body_q.numpy()[0, 1])

    assert height() == pytest.approx(1.5, abs=1e-6)
    moved = model.joint_X_p.numpy().copy()
    moved[0, 1] += 1.0
    model.joint_X_p = wp.array(moved, dtype=wp.transform, device="cpu")
    assert height() == pytest.approx(1.5, abs=1e-6)  # not told: the solver still reads the old array
    solver.notify_model_changed(ModelChange.JOINTS)
    assert height() == pytest.approx(2.5, abs=1e-6)
