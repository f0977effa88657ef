"""Grammar of random differentiable kernels for the differential tests against warp-lang.

A kernel reads float arrays (`x[i]`, a neighbour `x[(i + 1) % THREADS]`), a vector array and an array inside a
struct argument, then runs random statements: assignments (new values, copies of existing ones, tuple swaps,
vector components), augmented assignments, branches (nested, with copies on both paths), static and dynamic
loops, and calls of generated `@wp.func`s with early returns. It writes `y[i]` and accumulates into `z[0]`
(atomically, by `wp.atomic_add` or `+=`). Expressions are smooth where the inputs are (divisions by `e*e + 1`,
`exp` of a bounded value), so central differences of the forward check a disputed gradient.
"""

from __future__ import annotations

import random

THREADS = 4
STRUCTS = '''
@wp.struct
class Params32:
    scale: wp.float32
    w: wp.array(dtype=wp.float32)


@wp.struct
class Params64:
    scale: wp.float64
    w: wp.array(dtype=wp.float64)
'''


class KernelGrammar:
    """Random statements and expressions over the float locals of one kernel (float32 or float64)."""

    def __init__(self, rng: random.Random, scalar: str, funcs: list):
        self.rng = rng
        self.s = scalar
        self.funcs = funcs  # names of generated @wp.func(a, b) of this scalar type
        self.names: list = []
        self.counter = 0

    def lit(self, v: float) -> str:
        return repr(v) if self.s == "float32" and v >= 0 else f"wp.{self.s}({v!r})"

    def fresh(self) -> str:
        self.counter += 1
        return f"t{self.counter}"

    def leaf(self) -> str:
        if self.rng.random() < 0.2:
            return self.lit(self.rng.choice([0.5, 1.5, 2.0, -0.75, 0.25]))
        return self.rng.choice(self.names)

    def expr(self, depth: int) -> str:
        if depth <= 0 or self.rng.random() < 0.25:
            return self.leaf()
        e = lambda: self.expr(depth - 1)  # noqa: E731
        one = self.lit(1.0)
        forms = [lambda: f"({e()} + {e()})", lambda: f"({e()} - {e()})", lambda: f"({e()} * {e()})",
                 lambda: f"({e()} * {e()})", lambda: f"wp.sin({e()})", lambda: f"wp.cos({e()})",
                 lambda: f"({e()} / ({(x := e())} * {x} + {one}))", lambda: f"wp.sqrt({(x := e())} * {x} + {one})",
                 lambda: f"wp.exp(wp.sin({e()}))", lambda: f"wp.tanh({e()})", lambda: f"wp.min({e()}, {e()})",
                 lambda: f"wp.max({e()}, {e()})", lambda: f"wp.abs({e()})",
                 lambda: f"({e()} if {self.cond(depth - 1)} else {e()})"]
        if self.funcs:
            forms.append(lambda: f"{self.rng.choice(self.funcs)}({e()}, {e()})")
        return self.rng.choice(forms)()

    def cond(self, depth: int) -> str:
        op = self.rng.choice(["<", ">", "<=", ">="])
        return f"{self.expr(depth)} {op} {self.expr(depth)}"

    def block(self, pad: str, count: int, depth: int, *, loop=False) -> list:
        """`count` statements; `loop` is True inside a loop or branch (no new names), "dynamic" inside a dynamic
        loop."""
        lines = []
        for _ in range(count):
            lines += self.statement(pad, depth, loop=loop)
        return lines or [f"{pad}pass"]

    def statement(self, pad: str, depth: int, *, loop=False) -> list:
        r = self.rng.random()
        kinds = ["assign", "assign", "copy", "aug", "aug", "swap", "component"]
        if depth > 0:
            kinds += ["if", "if", "static_for", "dynamic_for"]
        kind = self.rng.choice(kinds)
        if kind == "swap" and loop == "dynamic":
            kind = "copy"  # Warp's forward value of a swap in a dynamic loop is wrong (docs/warp_compat.md)
        if kind == "assign":
            target = self.fresh() if r < 0.5 or loop else self.rng.choice(self.names)
            if loop and target not in self.names:
                target = self.rng.choice(self.names)  # a name first bound in a loop is not visible after it
            line = f"{pad}{target} = {self.expr(2)}"
            if target not in self.names:
                self.names.append(target)
            return [line]
        if kind == "copy":
            a, b = self.rng.choice(self.names), self.rng.choice(self.names)
            return [f"{pad}{a} = {b}"]
        if kind == "aug":
            a = self.rng.choice(self.names)
            op = self.rng.choice(["+=", "-=", "*="])
            value = self.expr(1) if op != "*=" else f"wp.cos({self.expr(1)})"
            return [f"{pad}{a} {op} {value}"]
        if kind == "swap":
            a, b = self.rng.sample(self.names, 2) if len(self.names) > 1 else (self.names[0], self.names[0])
            return [f"{pad}{a}, {b} = {b}, {a}"]
        if kind == "component":
            a, b = self.rng.choice(self.names), self.rng.choice(self.names)
            k, u = self.rng.randrange(3), self.fresh().replace("t", "u")
            return [f"{pad}{u} = {self.vec()}({a}, {b}, {self.expr(1)})", f"{pad}{u}[{k}] = {self.expr(1)}",
                    f"{pad}{a} = {u}[{self.rng.randrange(3)}] + wp.sin(wp.dot({u}, {u})) * {self.lit(0.125)}"]
        if kind == "if":
            return self.branch(pad, depth, loop)
        # each loop has an index and each vector a name of its own: Warp cannot merge an index after branches
        k = self.fresh().replace("t", "k")
        if kind == "static_for":
            body = self.block(pad + "    ", self.rng.randint(1, 2), depth - 1, loop=loop or True)
            return [f"{pad}for {k} in range({self.rng.randint(1, 3)}):",
                    f"{pad}    {self.rng.choice(self.names)} += wp.{self.s}({k}) * {self.lit(0.25)}", *body]
        body = self.block(pad + "    ", self.rng.randint(1, 2), depth - 1, loop="dynamic")
        return [f"{pad}for {k} in range(n):", *body]

    def branch(self, pad, depth, loop):
        lines = [f"{pad}if {self.cond(1)}:"]
        # a third of the branches bind one name to the same existing value on both paths (issue 30)
        copy = f"{pad}    {self.rng.choice(self.names)} = {self.rng.choice(self.names)}" \
            if self.rng.random() < 0.3 else None
        inner = loop or True  # names first bound in a branch are not visible after it: the loop rule applies
        lines += self.block(pad + "    ", self.rng.randint(1, 2), depth - 1, loop=inner) + ([copy] if copy else [])
        if self.rng.random() < 0.7 or copy:
            if self.rng.random() < 0.3:
                lines.append(f"{pad}elif {self.cond(1)}:")
                lines += self.block(pad + "    ", 1, depth - 1, loop=inner) + ([copy] if copy else [])
            lines.append(f"{pad}else:")
            lines += self.block(pad + "    ", self.rng.randint(1, 2), depth - 1, loop=inner) + ([copy] if copy else [])
        return lines

    def vec(self) -> str:
        return "wp.vec3d" if self.s == "float64" else "wp.vec3"


def func_source(rng: random.Random, name: str, scalar: str) -> str:
    """A @wp.func(a, b) of one scalar type with early returns (in branches and in a loop) and a final one."""
    g = KernelGrammar(rng, scalar, [])
    g.names = ["a", "b"]
    lines = ["@wp.func", f"def {name}(a: wp.{scalar}, b: wp.{scalar}):"]
    body = []
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if r < 0.4:
            body.append(f"    if {g.cond(1)}:")
            body.append(f"        return {g.expr(2) if rng.random() < 0.7 else rng.choice(g.names)}")
        elif r < 0.55:
            body.append("    for k in range(2):")
            body.append(f"        if {g.cond(1)}:")
            body.append(f"            return {rng.choice(g.names)}")
            body.append(f"        a = {g.expr(1)}")
        else:
            body += g.statement("    ", 0)
    body.append(f"    return {g.expr(2)}")
    return "\n".join(lines + body) + "\n"


def kernel_source(rng: random.Random, name: str, scalar: str, funcs: list) -> str:
    """A kernel(x, v, p, n, y, z) of one float type; see the module docstring."""
    s = scalar
    vec = "wp.vec3d" if s == "float64" else "wp.vec3"
    params = "Params64" if s == "float64" else "Params32"
    g = KernelGrammar(rng, s, funcs)
    lines = ["@wp.kernel",
             f"def {name}(x: wp.array(dtype=wp.{s}), v: wp.array(dtype={vec}), p: {params}, n: int,",
             f"        y: wp.array(dtype=wp.{s}), z: wp.array(dtype=wp.{s})):",
             "    i = wp.tid()",
             "    a = x[i]",
             f"    b = x[(i + 1) % {THREADS}]",
             f"    c = v[i][{rng.randrange(3)}] + wp.dot(v[i], v[i]) * {g.lit(0.25)}",
             "    d = p.w[i] * p.scale"]
    g.names = ["a", "b", "c", "d"]
    lines += g.block("    ", rng.randint(3, 6), 2)
    lines.append(f"    y[i] = {g.expr(2)}")
    if rng.random() < 0.5:
        lines.append(f"    wp.atomic_add(z, 0, {g.expr(1)})")
    else:
        lines.append(f"    z[0] += {g.expr(1)}")
    return "\n".join(lines) + "\n"


def _values(rng: random.Random, n: int) -> list:
    return [round(rng.uniform(-1.5, 1.5), 4) for _ in range(n)]


def gradient_module(seed: int, count: int, funcs_per_type: int = 6, float32_share: float = 0.25):
    """(module source without its import line, source of the float64 twins, manifest) of `count` random kernels
    and their @wp.funcs. A float32 kernel has a float64 twin of the same structure (same random draws), whose
    finite differences judge a disputed float32 gradient (float32 ones are too coarse)."""
    rng = random.Random(seed)
    parts, twins, manifest = [STRUCTS], [], []
    funcs = {"float32": [], "float64": []}
    for k in range(funcs_per_type):
        state = rng.getstate()
        for s in ("float32", "float64"):
            rng.setstate(state)  # the twins' functions are the same functions in float64
            funcs[s].append(f"f_{s}_{k}")
            parts.append(func_source(rng, funcs[s][-1], s))
    for k in range(count):
        s = "float32" if rng.random() < float32_share else "float64"
        name = f"grad_{k}"
        state = rng.getstate()
        parts.append(kernel_source(rng, name, s, funcs[s]))
        entry = {"name": name, "kind": "gradient", "scalar": s}
        if s == "float32":
            end = rng.getstate()
            rng.setstate(state)
            twins.append(kernel_source(rng, name + "_f64", "float64", funcs["float64"]))
            rng.setstate(end)
            entry["twin"] = name + "_f64"
        entry.update({"n": rng.randint(0, 3), "x": _values(rng, THREADS),
                      "v": [_values(rng, 3) for _ in range(THREADS)],
                      "w": _values(rng, THREADS), "scale": rng.choice([0.5, 1.5, -2.0]),
                      "wy": _values(rng, THREADS), "wz": _values(rng, 1)})
        manifest.append(entry)
    return "\n\n".join(parts), "\n\n".join(twins), manifest
