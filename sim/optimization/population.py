"""`sim optimize CONFIG --population N`: N starts of one optimisation learned at once, as N worlds of one model.

Member k is world k (sim.worlds: N, docs/worlds.md): its learned parameters write only world k's rows, its loss
terms read only world k's objects, bodies and joints, and it has an optimiser of its own (Adam's moments and step
count, gradient clipping and convergence are per member, exactly as in a run of that start alone). One rollout
steps every world with one launch per kernel; the Tape differentiates the sum of the members' losses, whose
gradient with respect to member k's parameters is member k's own gradient (worlds never interact).

Starts: member k takes `population.starts[k]` where listed (keys not listed keep the config's start), else member
0 takes the config's own start and the others are drawn, with `population.seed`, uniformly within each
parameter's bounds (log-uniformly with `log: true`). Keys shared by all worlds (colliders, sim.contact.mu) cannot
differ per member and are refused.
"""

from __future__ import annotations

import math

import numpy as np

import kernels as wp

from .params import LearnedParameter

#: key prefixes of what all worlds share (static colliders are world -1; contact settings are the model's)
SHARED_KEYS = ("colliders.", "sim.")


@wp.kernel
def add_member_loss(part: wp.array(dtype=float), total: wp.array(dtype=float)):
    wp.atomic_add(total, 0, part[0])


class WorldView:
    """The built scene as world `world` sees it: that world's objects, bodies and joints (what learned keys and
    loss terms name), everything else the whole scene's (model, substeps, colliders)."""

    def __init__(self, built, world: int):
        self._built = built
        self.world = world
        self.objects = [o for o in built.objects if o.world == world]
        self.bodies = [b for b in built.bodies if b.world == world]
        self.joints = [j for j in built.joints if j.world == world]

    def joint(self, name: str):
        return next((j for j in self.joints if j.name == name), None)

    def __getattr__(self, name):
        return getattr(self._built, name)


class MemberOptimizers:
    """One optimiser per member, stepped together; `state_dict` joins theirs (the snapshot's format: per-parameter
    state arrays in the order of the members' parameters, one after another)."""

    def __init__(self, optimizers: list):
        self.members = optimizers

    def member_grad_norms(self) -> list:
        return [o.grad_norm() for o in self.members]

    def grad_norm(self) -> float:
        """The norm of every member's gradient together (loss.csv's column)."""
        return math.sqrt(sum(n * n for n in self.member_grad_norms()))

    def step(self, active=None):
        """Step the members whose entry of `active` is true (all when None)."""
        for k, o in enumerate(self.members):
            if active is None or active[k]:
                o.step()

    def state_dict(self) -> dict:
        dicts = [o.state_dict() for o in self.members]
        state = {name: [a for d in dicts for a in d["state"][name]] for name in dicts[0]["state"]}
        return {"kind": "population", "members": [{k: v for k, v in d.items() if k != "state"} for d in dicts],
                "state": state}

    def load_state_dict(self, d: dict):
        if d.get("kind") != "population" or len(d.get("members", ())) != len(self.members):
            raise ValueError(f"the snapshot is not of a population of {len(self.members)} members")
        start = 0
        for o, head in zip(self.members, d["members"]):
            n = len(o.params)
            o.load_state_dict({**head, "state": {name: arrays[start:start + n] for name, arrays in d["state"].items()}})
            start += n


def member_starts(cfg, size: int, params0: list, seed: int) -> list:
    """Per member, per config parameter: the start in the scene's units, or None for the config's own start.
    `params0` are member 0's LearnedParameters (their bounds, log flag and size); random starts are drawn with
    `seed`. Raises the config's error for a random start without bounds."""
    rng = np.random.default_rng(seed)
    listed = cfg.spec.population.starts or []
    out = []
    for k in range(size):
        row = []
        for i, (p, cp) in enumerate(zip(params0, cfg.spec.parameters)):
            given = listed[k].get(cp.path) if k < len(listed) else None
            if given is not None:
                row.append(np.asarray(given, np.float64))
            elif k < len(listed) or k == 0:
                row.append(None)  # the config's start (a listed member that does not name this key keeps it)
            else:
                row.append(_draw(cfg, i, p, rng))
        out.append(row)
    return out


def _draw(cfg, i: int, p: LearnedParameter, rng) -> np.ndarray:
    if p.bounds is None:
        raise cfg.error(("parameters", i, "bounds"), f"{p.path}: a population draws its starts within bounds: give "
                        "bounds: [lower, upper], or list the starts in population.starts")
    lo, hi = p.bounds  # in the variable's space: log(value) with log: true
    x = rng.uniform(lo, hi, size=p.size)
    return (np.exp(x) if p.log else x).reshape(p.shape)


def check_population_keys(cfg):
    """Refuse, at the parameter's key, a learned key that all worlds share."""
    for i, p in enumerate(cfg.spec.parameters):
        if p.path.startswith(SHARED_KEYS):
            raise cfg.error(("parameters", i, "path"), f"{p.path}: shared by every world of a population (static "
                            "colliders and contact settings are the model's), so members cannot differ in it: "
                            "learn it without --population")
    for k, start in enumerate(cfg.spec.population.starts or []):
        known = {p.path for p in cfg.spec.parameters}
        for path in start:
            if path not in known:
                raise cfg.error(("population", "starts", k, path), f"{path} is not one of the learned parameters "
                                f"({', '.join(sorted(known))})")
