"""Optimisation through the simulation: every shipped config lowers its loss in a short run and writes its
outputs; checkpointed rollouts give the full tape's gradient; resuming after an interruption gives the same
result as running straight through; bad configs are refused with file, line and key path; the loss terms and the
parameter kernels pass gradcheck."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest
import yaml

import kernels as wp
from autodiff import gradcheck
from sim import losses
from sim.cli import main
from sim.optimization import Problem, load_config, optimize
from sim.optimization import assign as P
from sim.scene import SceneError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {name: os.path.join(ROOT, "configs", f"{name}.yaml")
           for name in ("cloth_throw", "ball_bounce", "cloth_stiffness_fit")}
SHORT = {"cloth_throw": ["frames=10"], "ball_bounce": ["frames=40"], "cloth_stiffness_fit": ["frames=8"]}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_shipped_config_lowers_its_loss_and_writes_outputs(name, tmp_path):
    cfg = load_config(CONFIGS[name], SHORT[name])
    result = optimize(cfg, iterations=4, out_dir=str(tmp_path))
    assert result.iterations == 4 and result.losses[-1] < result.losses[0], result.losses
    names = sorted(os.listdir(tmp_path))
    assert names == ["final.usd", "initial.usd", "loss.csv", "loss.png", "params.yaml", "progress.mp4", "snapshot.npz"]
    with open(tmp_path / "loss.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0][:3] == ["iteration", "loss", "grad_norm"] and len(rows) == 5
    assert [int(r[0]) for r in rows[1:]] == [0, 1, 2, 3]
    assert float(rows[-1][1]) == pytest.approx(result.losses[-1])
    assert open(tmp_path / "loss.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    learned = yaml.safe_load(open(tmp_path / "params.yaml"))
    for path, value in result.params.items():
        node = learned
        for part in path.split("."):
            node = node[int(part)] if part.isdigit() else node[part]
        assert node == pytest.approx(value)


@pytest.mark.parametrize("name", ["cloth_throw", "cloth_stiffness_fit", "ball_bounce"])
def test_captured_iterations_give_the_losses_and_parameters_of_launched_ones(name):
    cfg = load_config(CONFIGS[name], SHORT[name])
    replayed = optimize(cfg, iterations=4, write=False, capture=True)
    launched = optimize(cfg, iterations=4, write=False, capture=False)
    assert replayed.losses == launched.losses
    assert replayed.params == launched.params


def test_final_usd_replays_the_learned_parameters(tmp_path):
    from pxr import Usd, UsdGeom
    cfg = load_config(CONFIGS["ball_bounce"], ["frames=20"])
    result = optimize(cfg, iterations=2, out_dir=str(tmp_path))
    stage = Usd.Stage.Open(str(tmp_path / "final.usd"))
    ball = UsdGeom.Points(stage.GetDefaultPrim().GetChild("ball"))
    end = np.asarray(ball.GetPointsAttr().Get(20))[0]
    # the same rollout through Problem with the learned velocity
    cfg2 = load_config(CONFIGS["ball_bounce"], ["frames=20", "optimizer.lr=1e-12"])
    problem = Problem(cfg2)
    problem.params[0].allocate(problem.built.model.device, result.params["particles.0.vel"])
    built = problem.built
    state0 = built.model.state()
    problem.params[0].apply(built, state0)
    state, scratch = state0, built.model.state()
    for frame in range(1, 21):
        state, scratch = built.step_frame(state, scratch, frame)
    np.testing.assert_allclose(end, state.particle_q.numpy()[0], atol=1e-5)


def _gradient(cfg) -> tuple:
    problem = Problem(cfg)
    loss, _ = problem.loss_and_gradient()
    return loss, [p.variable.grad.numpy().copy() for p in problem.params], problem


@pytest.mark.parametrize("every", [None, 7])
def test_checkpointed_rollout_gives_the_full_tapes_gradient(every):
    base = ["frames=6"]
    full_loss, full_grad, p_full = _gradient(load_config(CONFIGS["cloth_throw"], base))
    extra = ["checkpoint.above_steps=1"] + ([f"checkpoint.every={every}"] if every else [])
    ck_loss, ck_grad, p_ck = _gradient(load_config(CONFIGS["cloth_throw"], base + extra))
    assert not p_full.checkpointed and p_ck.checkpointed
    assert ck_loss == pytest.approx(full_loss, rel=1e-6)
    for a, b in zip(ck_grad, full_grad):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_interrupted_run_resumes_to_the_same_result(tmp_path, monkeypatch):
    args = ["frames=10"]
    straight = optimize(load_config(CONFIGS["cloth_throw"], args), iterations=5, out_dir=str(tmp_path / "a"))
    # interrupted by Ctrl-C during the 4th iteration, through the CLI, then resumed
    calls = {"n": 0}
    original = Problem.loss_and_gradient

    def interrupted(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return original(self, *a, **k)

    monkeypatch.setattr(Problem, "loss_and_gradient", interrupted)
    out = str(tmp_path / "b")
    cli = ["optimize", CONFIGS["cloth_throw"], "--set", "frames=10", "--iterations", "5", "--out-dir", out, "--quiet"]
    assert main(cli) == 130
    with open(os.path.join(out, "loss.csv")) as f:
        assert len(list(csv.reader(f))) == 4, "the three finished iterations are kept"
    monkeypatch.setattr(Problem, "loss_and_gradient", original)
    assert main(cli + ["--resume"]) == 0
    assert open(os.path.join(out, "loss.csv")).read() == open(tmp_path / "a" / "loss.csv").read()
    assert yaml.safe_load(open(os.path.join(out, "params.yaml"))) == \
        yaml.safe_load(open(tmp_path / "a" / "params.yaml"))
    assert straight.losses[-1] < straight.losses[0]


def test_resume_without_snapshot_or_with_another_config_is_refused(tmp_path, capsys):
    cli = ["optimize", CONFIGS["cloth_throw"], "--set", "frames=5", "--iterations", "1", "--out-dir",
           str(tmp_path), "--quiet"]
    assert main(cli + ["--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    assert main(cli) == 0
    with pytest.raises(ValueError, match="different config"):
        optimize(load_config(CONFIGS["cloth_throw"], ["frames=6"]), iterations=2, out_dir=str(tmp_path),
                 resume=True)


BAD = [
    ("unknown parameter path", "parameters:\n  - path: cloth.0.colour\n", 8, "parameters[0].path: cloth.0.colour: "
     "not a learnable parameter"),
    ("non-differentiable parameter", "parameters:\n  - path: sim.contact.ke\n", 8,
     "sim.contact.ke: not a learnable parameter"),
    ("time stepping is not learnable", "parameters:\n  - path: sim.substeps\n", 8, "sim.substeps: not a learnable"),
    ("object index out of range", "parameters:\n  - path: cloth.3.vel\n", 8, "cloth.3.vel: no cloth object 3"),
    ("log of a vector", "parameters:\n  - {path: cloth.0.vel, log: true}\n", 8, "log: true applies to positive"),
    ("missing data file", "loss:\n  - {type: trajectory, object: cloth, file: nothere.npz}\n", 10,
     "loss[0].file: file not found"),
    ("unknown object", "loss:\n  - {type: com_target, object: flag, target: [0, 0, 0]}\n", 10,
     "loss[0].object: no object named 'flag'"),
    ("frame past the end", "loss:\n  - {type: com_target, object: cloth, frame: 99, target: [0, 0, 0]}\n", 10,
     "loss[0].frame: frame 99 is past the last simulated frame 30"),
    ("unknown loss type", "loss:\n  - {type: chamfer, object: cloth}\n", 10, "loss[0].type: expected one of"),
    ("unknown optimizer key", "optimizer: {type: adam, learning_rate: 0.1}\n", 12,
     "optimizer.learning_rate: unknown key"),
    ("regulariser of an unlearned parameter", "loss:\n  - {type: param_l2, param: cloth.0.mass}\n", 10,
     "loss[0].param: 'cloth.0.mass' is not one of the learned parameters"),
    ("missing scene", "scene: nothere.yaml\n", 1, "scene: file not found"),
    ("learned twice", "parameters:\n  - path: cloth.0.vel\n  - path: cloth.0.vel\n", 9,
     "parameters[1].path: cloth.0.vel is learned twice"),
    ("init of a vector", "parameters:\n  - {path: cloth.0.vel, init: 1.0}\n", 8,
     "parameters[0].init: init is for scalar parameters; cloth.0.vel has 3 components"),
    ("negative init in log space", "parameters:\n  - {path: cloth.0.mass, init: -1.0, log: true}\n", 8,
     "parameters[0].init: log: true needs a positive init, got -1"),
    ("trajectory array missing", "loss:\n  - {type: trajectory, object: cloth, file: data.npz, key: frames}\n", 10,
     "loss[0].file: data.npz has no array 'frames' (it has: positions)"),
]

def _config_text(replace: str, scene: str) -> str:
    """A valid config with one section replaced; parameters sit on lines 7-8, loss on 9-10, optimizer on 12."""
    lines = {"scene": f"scene: {scene}\n", "description": "description: test\n",
             "pad": "# padding so that sections start on fixed lines\n" * 4,
             "parameters": "parameters:\n  - path: cloth.0.vel\n",
             "loss": "loss:\n  - {type: com_target, object: cloth, target: [1, 0, 1]}\n",
             "iterations": "iterations: 2\n", "optimizer": "optimizer: {type: adam}\n"}
    lines[replace.split(":", 1)[0]] = replace
    return "".join(lines[k] for k in ("scene", "description", "pad", "parameters", "loss", "iterations", "optimizer"))


@pytest.mark.parametrize("name,section,line,message", BAD, ids=[b[0] for b in BAD])
def test_bad_config_is_refused_with_file_line_and_key(name, section, line, message, tmp_path, capsys):
    np.savez(tmp_path / "data.npz", positions=np.zeros((3, 169, 3), np.float32))
    path = tmp_path / "bad.yaml"
    path.write_text(_config_text(section, os.path.join(ROOT, "scenes", "cloth_throw.yaml")))
    out = tmp_path / "out"
    assert main(["optimize", str(path), "--out-dir", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}:{line}: "), err
    assert message in err, err
    assert not out.exists(), "nothing may be written"


def test_a_colliders_position_and_rotation_are_not_learned_together(tmp_path, capsys):
    """Both write the collider's pose: the second would undo the first, so the config is refused."""
    path = tmp_path / "pose.yaml"
    path.write_text("scene:\n  cloth:\n    - grid: {dim_x: 2, dim_y: 2, cell_x: 0.1, cell_y: 0.1}\n"
                    "  colliders:\n    - {type: box, pos: [0, -1, 0], half_extents: [1, 0.1, 1]}\n"
                    "parameters:\n  - path: colliders.0.pos\n  - path: colliders.0.rot\n"
                    "loss:\n  - {type: com_target, object: cloth_0, target: [0, 0, 0]}\n")
    out = tmp_path / "out"
    assert main(["optimize", str(path), "--out-dir", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:8: parameters[1].path: colliders.0.rot and colliders.0.pos set the same pose" in err, err
    assert not out.exists()


def test_inline_scene_errors_point_into_the_config(tmp_path):
    path = tmp_path / "inline.yaml"
    path.write_text("scene:\n  cloth:\n    - grid: {dim_x: 2, dim_y: 2, cell_x: 0.1, cell_y: 0.1}\n      mass: -1\n"
                    "parameters:\n  - path: cloth.0.vel\nloss:\n  - {type: com_target, object: cloth_0, "
                    "target: [0, 0, 0]}\n")
    with pytest.raises(SceneError, match=rf"{path}:4: cloth\[0\]\.mass: expected a positive number"):
        load_config(str(path))


# ---------------------------------------------------------------------------------------------------- gradients


def _object(count: int, start: int = 1):
    from sim.scene import SceneObject
    return SceneObject("o", "particles", start, start + count, np.zeros(count), (0, 0, 0))


class _Model:
    def __init__(self, mass):
        self.particle_mass, self.device = mass, mass.device


class _State:
    def __init__(self, q):
        self.particle_q = q


def test_gradcheck_center_of_mass_loss():
    rng = np.random.default_rng(1)
    q = wp.array(rng.standard_normal((5, 3)), dtype=wp.vec3, requires_grad=True)
    m = wp.array(rng.uniform(0.5, 2.0, 5), dtype=float, requires_grad=True)
    term = losses.CenterOfMassTarget(_object(3), 1, (0.1, 0.2, 0.3), weight=2.0)

    def fn(q, m):
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        term.evaluate(_Model(m), 1, _State(q), loss)
        return loss

    gradcheck(fn, [q, m])


def test_gradcheck_positions_and_trajectory_losses():
    rng = np.random.default_rng(2)
    q = wp.array(rng.standard_normal((6, 3)), dtype=wp.vec3, requires_grad=True)
    target = rng.standard_normal((4, 3))
    positions = losses.PositionsTarget(_object(4, 2), 3, target, weight=0.5)
    trajectory = losses.TrajectoryMatch(_object(4, 2), {3: target, 5: target + 1}, weight=2.0)

    def fn(q):
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        positions.evaluate(_Model(wp.zeros(6, dtype=float)), 3, _State(q), loss)
        trajectory.evaluate(_Model(wp.zeros(6, dtype=float)), 5, _State(q), loss)
        return loss

    gradcheck(fn, [q])


@pytest.mark.parametrize("log", [0, 1])
def test_gradcheck_parameter_kernels(log):
    rng = np.random.default_rng(3)
    var = wp.array(rng.uniform(0.5, 1.5, 6), dtype=float, requires_grad=True)
    src = wp.array(np.array([0, 3, 3], np.int32), dtype=wp.int32)
    rows = wp.array(np.array([2, 0, 1], np.int32), dtype=wp.int32)
    base = wp.array(rng.standard_normal((3, 3)), dtype=wp.vec3)
    rot = wp.array(np.tile([0.0, 0.0, 0.0, 1.0], (3, 1)), dtype=wp.quat)

    def fn(var):
        f = wp.zeros(4, dtype=float, requires_grad=True)
        col = wp.zeros((4, 2), dtype=float, requires_grad=True)
        v3 = wp.zeros(3, dtype=wp.vec3, requires_grad=True)
        comp = wp.zeros(3, dtype=wp.vec3, requires_grad=True)
        xf = wp.zeros(3, dtype=wp.transform, requires_grad=True)
        wp.launch(P.assign_float, dim=3, inputs=[var, log, src, rows], outputs=[f])
        wp.launch(P.assign_column, dim=3, inputs=[var, log, src, rows, 1], outputs=[col])
        wp.launch(P.assign_vec3, dim=3, inputs=[var, src, rows], outputs=[v3])
        wp.launch(P.assign_vec3_component, dim=3, inputs=[var, log, src, rows, 2, base], outputs=[comp])
        wp.launch(P.assign_position, dim=3, inputs=[var, src, rows, rot], outputs=[xf])
        return [f, col, v3, comp, xf]

    gradcheck(fn, [var])


RIGID = """scene:
  sim: {fps: 60, frames: 30, substeps: 16}
  bodies:
    - {name: puck, pos: [0, 0.1, 0], vel: [2.0, 0, 0], shapes: [{type: box, half_extents: [0.1, 0.1, 0.1]}]}
  colliders:
    - {type: ground, material: {mu: 0.5}}
parameters:
  - {path: bodies.0.vel, bounds: [-5, 5]}
  - {path: colliders.0.material.mu, bounds: [0.05, 2.0]}
  - {path: bodies.0.material.restitution, bounds: [0.0, 1.0]}
loss:
  - {type: com_target, object: puck, target: [0.7, 0.1, 0.2]}
optimizer: {type: adam, lr: 0.05}
iterations: 4
"""


def test_rigid_body_velocity_and_friction_are_learned(tmp_path):
    path = tmp_path / "rigid.yaml"
    path.write_text(RIGID)
    result = optimize(load_config(str(path)), out_dir=str(tmp_path / "out"))
    assert result.losses[-1] < 0.5 * result.losses[0], result.losses
    assert result.params["colliders.0.material.mu"] != pytest.approx(0.5)
    loss_full, grad_full, _ = _gradient(load_config(str(path)))
    loss_ck, grad_ck, problem = _gradient(load_config(str(path), ["checkpoint.above_steps=1"]))
    assert problem.checkpointed and loss_ck == pytest.approx(loss_full, rel=1e-6)
    for a, b in zip(grad_ck, grad_full):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_body_mass_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "rigid.yaml"
    path.write_text(RIGID.replace("bodies.0.material.restitution", "bodies.0.mass"))
    with pytest.raises(SceneError, match=r"parameters\[2\]\.path: bodies.0.mass: not learnable with the rigid "
                                         r"solver: SolverRigid reads the inverse mass"):
        Problem(load_config(str(path)))


def test_gradcheck_spatial_part_and_body_center_loss():
    rng = np.random.default_rng(4)
    var = wp.array(rng.standard_normal(3), dtype=float, requires_grad=True)
    base = wp.array(rng.standard_normal((1, 6)), dtype=wp.spatial_vector)
    rows = wp.array(np.array([1], np.int32), dtype=wp.int32)
    src = wp.array(np.array([0], np.int32), dtype=wp.int32)
    q = np.concatenate([rng.standard_normal((2, 3)), np.tile([0.0, 0.6, 0.0, 0.8], (2, 1))], axis=1)
    body_q = wp.array(q, dtype=wp.transform, requires_grad=True)
    com = wp.array(rng.standard_normal((2, 3)), dtype=wp.vec3, requires_grad=True)

    class Body:
        index = 1

    term = losses.BodyCenterTarget(Body(), 1, (0.1, 0.2, 0.3), weight=1.5)

    def fn(var, body_q, com):
        outs = []
        for part in (0, 1):
            out = wp.zeros(2, dtype=wp.spatial_vector, requires_grad=True)
            wp.launch(P.assign_spatial_part, dim=1, inputs=[var, src, rows, part, base], outputs=[out])
            outs.append(out)
        loss = wp.zeros(1, dtype=float, requires_grad=True)

        class M:
            body_com, device = com, com.device

        class S:
            pass

        S.body_q = body_q
        term.evaluate(M, 1, S, loss)
        return outs + [loss]

    gradcheck(fn, [var, body_q, com])


def test_gradcheck_control_forces_reach_the_particles():
    from sim.scene import Scene
    scene = Scene.from_string("particles:\n  - points: [[0, 0, 0], [1, 0, 0], [2, 0, 0]]\n"
                              "    forces: [[1, 2, 3], [4, 5, 6]]\n")
    built = scene.build("cpu", requires_grad=True)
    obj = built.objects[0]

    def fn(forces):
        obj.forces = forces
        return built.control(2).particle_f  # frame 2: the list's second force on every particle

    gradcheck(fn, [obj.forces])
    assert built.control(3) is None, "frames past the list get no control"


def test_non_finite_loss_stops_with_exit_code_3(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(Problem, "loss_and_gradient", lambda self, measure_memory=False: (float("nan"), 0))
    out = tmp_path / "out"
    code = main(["optimize", CONFIGS["cloth_throw"], "--set", "frames=2", "--out-dir", str(out), "--quiet"])
    assert code == 3
    assert "iteration 0: the loss is nan" in capsys.readouterr().err


COLLISION = """sim:
  fps: 60
  frames: 30
  substeps: 2
  gravity: 0.0
  solver: {type: xpbd, iterations: 4}
  particle_contact: {enabled: true, mu: 0.0}
particles:
  - {name: a, points: [[-0.2, 0.0, 0.0]], vel: [1.0, 0.0, 0.0], mass: 2.0, radius: 0.05}
  - {name: b, points: [[0.2, 0.0, 0.0]], vel: [-1.0, 0.0, 0.0], mass: 1.0, radius: 0.05}
"""


def test_mass_learned_through_an_xpbd_collision_converges(tmp_path):
    """Particle a (2 kg) hits particle b (1 kg) head-on (XPBD particle contact); b's place after the collision
    says how heavy a was. Starting from 1 kg, `sim optimize` learns a's mass back to 2 kg."""
    from sim.scene import Scene
    built = Scene.from_string(COLLISION).build("cpu")
    state, scratch = built.model.state(), built.model.state()
    for frame in range(1, 31):
        state, scratch = built.step_frame(state, scratch, frame)
    target = state.particle_q.numpy()[1].astype(float).tolist()
    assert target[0] > 0.1, "the collision turned b back (alone it would end at x = -0.3 m)"
    config = {"scene": yaml.safe_load(COLLISION),
              "parameters": [{"path": "particles.0.mass", "log": True, "init": 1.0, "bounds": [0.1, 10.0]}],
              "loss": [{"type": "com_target", "object": "b", "target": target}],
              "optimizer": {"type": "adam", "lr": 0.05}, "iterations": 150, "tolerance": 1.0e-7}
    path = tmp_path / "collision.yaml"
    path.write_text(yaml.safe_dump(config))
    result = optimize(load_config(str(path)), write=False)
    assert result.converged and result.losses[-1] <= 1e-7, result.losses[-5:]
    assert result.params["particles.0.mass"] == pytest.approx(2.0, rel=1e-2)
