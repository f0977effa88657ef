"""A mass-spring chain hanging from a pin, relaxing under gravity: the README's first example.

Shows the kernel language (a @wp.func, vec3 math, atomics on a force array), launching on the CPU, and a gradient
through the whole relaxation with a Tape: d(final tip height) / d(spring stiffness of each spring).
Run: python examples/springs.py [--n 16] [--steps 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import kernels as wp
from autodiff import Tape


@wp.func
def spring_force(a: wp.vec3, b: wp.vec3, rest: float, ke: float):
    d = b - a
    l = wp.length(d)
    return d * (ke * (l - rest) / wp.max(l, 1.0e-6))


@wp.kernel
def springs(x: wp.array(dtype=wp.vec3), idx: wp.array2d(dtype=int), rest: wp.array(dtype=float),
            ke: wp.array(dtype=float), f: wp.array(dtype=wp.vec3)):
    s = wp.tid()
    i, j = idx[s, 0], idx[s, 1]
    fs = spring_force(x[i], x[j], rest[s], ke[s])
    wp.atomic_add(f, i, fs)
    wp.atomic_sub(f, j, fs)


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3), dt: float,
              x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    if i == 0:  # the first particle is pinned
        x_out[i] = x[i]
        v_out[i] = v[i]
        return
    g = wp.vec3(0.0, -9.81, 0.0)
    vn = (v[i] + (f[i] + g) * dt) * 0.98
    v_out[i] = vn
    x_out[i] = x[i] + vn * dt


@wp.kernel
def tip_height(x: wp.array(dtype=wp.vec3), tip: int, loss: wp.array(dtype=float)):
    loss[0] = x[tip][1]


def simulate(n: int, steps: int, dt: float, ke: wp.array, tape: Tape | None = None):
    """Relax a chain of `n` particles for `steps` steps; returns the list of position arrays (one per step)."""
    x0 = np.zeros((n, 3), np.float32)
    x0[:, 1] = -np.arange(n) * 0.1  # hanging straight down from the pinned first particle, springs at rest
    idx = wp.array(np.stack([np.arange(n - 1), np.arange(1, n)], 1).astype(np.int32), dtype=int)
    rest = wp.full(n - 1, 0.1, dtype=float)
    xs = [wp.array(x0, dtype=wp.vec3, requires_grad=True)]
    vs = [wp.zeros(n, dtype=wp.vec3, requires_grad=True)]
    for _ in range(steps):
        f = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
        wp.launch(springs, dim=n - 1, inputs=[xs[-1], idx, rest, ke, f])
        xs.append(wp.zeros(n, dtype=wp.vec3, requires_grad=True))
        vs.append(wp.zeros(n, dtype=wp.vec3, requires_grad=True))
        wp.launch(integrate, dim=n, inputs=[xs[-2], vs[-2], f, dt, xs[-1], vs[-1]])
    return xs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16, help="particles in the chain")
    parser.add_argument("--steps", type=int, default=1000, help="time steps of 1 ms")
    args = parser.parse_args()

    ke = wp.full(args.n - 1, 2000.0, dtype=float, requires_grad=True)
    t0 = time.perf_counter()
    wp.load_module(__name__)
    compile_s = time.perf_counter() - t0

    tape = Tape()
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    t0 = time.perf_counter()
    with tape:
        xs = simulate(args.n, args.steps, 1.0e-3, ke)
        wp.launch(tip_height, dim=1, inputs=[xs[-1], args.n - 1, loss])
    forward_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tape.backward(loss=loss)
    backward_s = time.perf_counter() - t0

    grad = ke.grad.numpy()
    print(f"chain of {args.n} particles, {args.steps} steps")
    print(f"tip height after relaxing: {loss.numpy()[0]:+.4f} m")
    print(f"d(tip height)/d(stiffness): first spring {grad[0]:+.3e}, last spring {grad[-1]:+.3e} m/(N/m)")
    print(f"compile/load {compile_s:.2f} s, forward {forward_s * 1e3:.1f} ms, backward {backward_s * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
