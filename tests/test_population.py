"""`sim optimize --population N`: N starts optimised at once as N worlds of one model give what the same starts give
run one by one; keys shared by the worlds and random starts without bounds are refused at their config key;
outputs name the best member and keep every member's loss curve."""

from __future__ import annotations

import os

import numpy as np
import pytest
import yaml

import kernels as wp
from sim.cli import main
from sim.optimization import load_config, optimize
from sim.scene import SceneError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BALL = os.path.join(ROOT, "configs", "ball_bounce.yaml")
STARTS = [[1.0, 0.0, 0.0], [1.7, 3.7, 0.7], [2.2, 1.0, -1.0]]


def _config(text_extra: str = "", overrides=()):
    with open(BALL) as f:
        text = f.read().replace("scene: ../scenes/", f"scene: {os.path.join(ROOT, 'scenes')}/")
    return load_config(BALL, list(overrides), text=text + text_extra)


def _listed(starts) -> str:
    return "population:\n  starts:\n" + "".join(f"    - {{particles.0.vel: {s}}}\n" for s in starts)


def test_the_best_member_is_the_best_of_the_same_starts_run_one_by_one():
    cpu = wp.get_device("cpu")
    together = optimize(_config(_listed(STARTS)), iterations=3, write=False, device=cpu)
    alone = [optimize(_config(f"set: ['particles.0.vel={s}']\n"), iterations=3, write=False, device=cpu)
             for s in STARTS]
    finals = [r.final_loss for r in alone]
    assert together.best_member == int(np.argmin(finals))
    assert len(together.members) == len(STARTS)
    for member, one in zip(together.members, alone):
        # the worlds are independent: the same rollouts, gradients and Adam steps as alone (no atomics between
        # the particles of a world here: equal to float rounding)
        np.testing.assert_allclose(member["final_loss"], one.final_loss, rtol=1e-5)
        np.testing.assert_allclose(member["learned"]["particles.0.vel"], one.params["particles.0.vel"], rtol=1e-5,
                                   atol=1e-6)
    assert together.params == together.members[together.best_member]["learned"]
    np.testing.assert_allclose(together.losses, alone[together.best_member].losses, rtol=1e-5)


def test_member_zero_starts_where_the_config_does_and_the_others_within_the_bounds():
    cfg = _config()
    result = optimize(cfg, iterations=1, write=False, population=5, seed=3, device=wp.get_device("cpu"))
    starts = [np.asarray(m["start"]["particles.0.vel"]) for m in result.members]
    np.testing.assert_allclose(starts[0], [1.0, 0.0, 0.0])
    for s in starts[1:]:
        assert np.all((s >= -8.0) & (s <= 8.0)) and not np.allclose(s, starts[0])
    again = optimize(_config(), iterations=1, write=False, population=5, seed=3, device=wp.get_device("cpu"))
    assert [m["start"] for m in again.members] == [m["start"] for m in result.members]  # seeded


def test_a_random_start_needs_bounds():
    cfg = _config(overrides=["parameters=[{path: particles.0.vel}]"])
    with pytest.raises(SceneError, match=r"parameters\[0\]\.bounds.*draws its starts within bounds"):
        optimize(cfg, iterations=1, write=False, population=2)


def test_a_key_all_worlds_share_is_refused():
    cfg = _config(overrides=["parameters=[{path: sim.contact.mu, bounds: [0.1, 1.0]}]",
                             "loss=[{type: com_target, object: ball, target: [1.85, 0.98, 0.45]}]"])
    with pytest.raises(SceneError, match=r"sim\.contact\.mu: shared by every world"):
        optimize(cfg, iterations=1, write=False, population=2)


def test_a_listed_start_of_an_unknown_key_is_refused():
    cfg = _config("population:\n  starts:\n    - {particles.0.pos: [0, 1, 0]}\n")
    with pytest.raises(SceneError, match=r"particles\.0\.pos is not one of the learned parameters"):
        optimize(cfg, iterations=1, write=False)


def test_cli_population_writes_every_members_curve_and_names_the_best(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["optimize", BALL, "--population", "3", "--iterations", "3", "--out-dir", str(out), "--quiet",
                 "--set", "output.usd=false"])
    assert code == 0
    printed = capsys.readouterr().out
    summary = yaml.safe_load((out / "population.yaml").read_text())
    best = summary["best"]
    assert f"best      member {best} of 3" in printed
    header = (out / "loss.csv").read_text().splitlines()[0]
    assert header == "iteration,best_loss,grad_norm,loss_0,loss_1,loss_2"
    rows = np.loadtxt(out / "loss.csv", delimiter=",", skiprows=1)
    assert rows.shape == (3, 6)
    np.testing.assert_allclose(rows[:, 1], rows[:, 3:].min(axis=1))
    assert (out / "params.yaml").read_text().startswith(f"# member {best} of a population of 3")
    # resumable: three more iterations continue every member where it stopped
    code = main(["optimize", BALL, "--population", "3", "--iterations", "6", "--out-dir", str(out), "--quiet",
                 "--set", "output.usd=false", "--resume"])
    assert code == 0
    rows = np.loadtxt(out / "loss.csv", delimiter=",", skiprows=1)
    assert rows.shape == (6, 6) and list(rows[:, 0]) == [0, 1, 2, 3, 4, 5]
