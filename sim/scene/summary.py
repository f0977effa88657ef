"""The physical summary `sim run` ends with: per object (cloth, particle group, rigid body) its height at the last
frame and the lowest it went, its largest speed, and its energy (kinetic + gravitational potential) at the last frame.

Heights are along the scene's up axis, measured from 0 (where the ground of a scene usually is); the potential
energy is zero there too. A particle object's height is its centre of mass at the last frame, its lowest the lowest
particle centre over the run and its speed the fastest particle's; a body's are those of its centre of mass. Fixed
particles (mass 0) and kinematic bodies carry no energy.
"""

from __future__ import annotations

import math

import numpy as np

from ..spatial import quat_rotate

#: objects listed one per line; the rest are counted in one line (the total covers them all)
MAX_ROWS = 8


class PhysicalSummary:
    """`Scene.run` feeds it every frame (`observe(frame, state)`, frame 0 first, finite states only); `lines()` is
    the summary, `rows` the numbers: (kind, name, height [m], lowest [m], largest speed [m/s], kinetic [J],
    potential [J]) per object, at the last frame observed."""

    def __init__(self, built):
        m = built.model
        self.built = built
        self.up = int(m.up_axis)
        self.gravity = np.asarray(list(m.gravity), dtype=np.float64)
        self.particle_mass = m.particle_mass.numpy().astype(np.float64) if m.particle_count else None
        if built.bodies:
            self.body_mass = m.body_mass.numpy().astype(np.float64)
            self.body_com = m.body_com.numpy().astype(np.float64)
            self.body_inertia = m.body_inertia.numpy().astype(np.float64)
        count = len(built.objects) + len(built.bodies)
        self.lowest = np.full(count, math.inf)
        self.fastest = np.zeros(count)
        self.frames = 0
        self._last = None  # (particle q, qd, body com, body q, body qd) of the last frame observed

    def observe(self, frame: int, state):
        """Take `state` (the state after `frame`) into the running extremes."""
        self.frames = frame
        q = qd = com = body_q = body_qd = None
        i = 0
        if self.particle_mass is not None:
            q = state.particle_q.numpy().astype(np.float64)
            qd = state.particle_qd.numpy().astype(np.float64)
            for o in self.built.objects:
                self.lowest[i] = min(self.lowest[i], float(q[o.start:o.stop, self.up].min()))
                self.fastest[i] = max(self.fastest[i], float(np.linalg.norm(qd[o.start:o.stop], axis=1).max()))
                i += 1
        if self.built.bodies:
            body_q = state.body_q.numpy().astype(np.float64)
            body_qd = state.body_qd.numpy().astype(np.float64)
            com = body_q[:, :3] + quat_rotate(body_q[:, 3:7], self.body_com)
            rows = [b.index for b in self.built.bodies]
            n = len(rows)
            self.lowest[i:i + n] = np.minimum(self.lowest[i:i + n], com[rows, self.up])
            self.fastest[i:i + n] = np.maximum(self.fastest[i:i + n], np.linalg.norm(body_qd[rows, 3:6], axis=1))
        self._last = (q, qd, com, body_q, body_qd)

    @property
    def rows(self) -> list:
        if self._last is None:
            return []
        q, qd, com, body_q, body_qd = self._last
        out, i = [], 0
        for o in self.built.objects:
            m = self.particle_mass[o.start:o.stop]
            x, v = q[o.start:o.stop], qd[o.start:o.stop]
            total = m.sum()
            height = float((m @ x[:, self.up]) / total) if total > 0 else float(x[:, self.up].mean())
            kinetic = 0.5 * float(m @ (v * v).sum(axis=1))
            potential = -float(m @ (x @ self.gravity))
            out.append((o.kind, o.name, height, self.lowest[i], self.fastest[i], kinetic, potential))
            i += 1
        for b in self.built.bodies:
            j, m = b.index, self.body_mass[b.index]
            w, v = body_qd[j, :3], body_qd[j, 3:6]
            w_body = quat_rotate(body_q[j, 3:7] * np.array([-1.0, -1.0, -1.0, 1.0]), w)  # inertia is in body axes
            kinetic = 0.5 * m * float(v @ v) + 0.5 * float(w_body @ self.body_inertia[j] @ w_body)
            potential = -m * float(com[j] @ self.gravity)
            out.append(("body", b.name, float(com[j, self.up]), self.lowest[i], self.fastest[i], kinetic, potential))
            i += 1
        return out

    def world_rows(self) -> list:
        """With several worlds (sim.worlds), a row per world over its objects: ("world", "K", height [m] (its
        object's, when it has one; else None), lowest [m], largest speed [m/s], kinetic [J], potential [J])."""
        worlds = [o.world for o in self.built.objects] + [b.world for b in self.built.bodies]
        out = []
        for k in range(self.built.world_count):
            mine = [r for r, w in zip(self.rows, worlds) if w == k]
            if not mine:
                continue
            height = mine[0][2] if len(mine) == 1 else None
            out.append(("world", str(k), height, min(r[3] for r in mine), max(r[4] for r in mine),
                        sum(r[5] for r in mine), sum(r[6] for r in mine)))
        return out

    def lines(self) -> list:
        """A header and a line per object (per world with several worlds; at most MAX_ROWS, then one for the
        rest), and the total."""
        rows = self.world_rows() if self.built.world_count > 1 else self.rows
        if not rows:
            return []
        labels = [f"{kind} {name}" for kind, name, *_ in rows[:MAX_ROWS]]
        width = max([len(label) for label in labels] + [len("total"), len(f"{len(rows)} more")])
        columns = ("height [m]", "lowest [m]", "max speed [m/s]", "kinetic [J]", "potential [J]", "energy [J]")
        axis = "xyz"[self.up]
        out = [f"physics   frame {self.frames}; heights along {axis}, lowest over the run; energy = kinetic + "
               "gravitational potential (0 at height 0)" + (", summed over each world's objects" if
                                                             self.built.world_count > 1 else ""),
               "  " + " " * width + "".join(f"  {c:>{len(c)}}" for c in columns)]

        def line(label, values):
            cells = ["" if v is None else f"{v:.4g}" for v in values]
            return "  " + f"{label:<{width}}" + "".join(f"  {t:>{len(c)}}" for t, c in zip(cells, columns))

        for label, (_, _, height, lowest, fastest, kinetic, potential) in zip(labels, rows):
            out.append(line(label, (height, lowest, fastest, kinetic, potential, kinetic + potential)))
        rest = rows[MAX_ROWS:]
        if rest:
            out.append(line(f"{len(rest)} more", (None, min(r[3] for r in rest), max(r[4] for r in rest),
                                                 sum(r[5] for r in rest), sum(r[6] for r in rest),
                                                 sum(r[5] + r[6] for r in rest))))
        if len(rows) > 1:
            kinetic, potential = sum(r[5] for r in rows), sum(r[6] for r in rows)
            out.append(line("total", (None, None, None, kinetic, potential, kinetic + potential)))
        return out
