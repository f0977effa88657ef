"""Grammar of random scalar and composite expressions for the differential tests against warp-lang.

Every expression is generated typed, the way Warp types it (operands of one type, Python literals as int32 or
float32, comparisons of any two scalars), so that Warp accepts it. Scalar expressions carry their value, computed
here with Warp's semantics, only to keep away from what has no defined value in C (signed overflow, division by
zero, out-of-range float-to-int casts) and from results that a last-bit difference between two correct compilers
could flip (a float comparison, floor or cast too close to its boundary). The reference is Warp, never this value.
"""

from __future__ import annotations

import math
import random

import numpy as np

INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
FLOATS = ("float16", "float32", "float64")
SCALARS = INTS + FLOATS + ("bool",)
_NP = {t: getattr(np, t) for t in INTS + FLOATS}
_NP["bool"] = np.bool_
CONSTANTS = {"K_INT": ("int32", 3), "K_FLOAT": ("float32", 0.75), "K_NEG": ("int32", -5)}


class Rejected(Exception):
    """The expression would have no defined value (or one too close to a boundary); the generator tries again."""


class Expr:
    """Source text, Warp type name and value (a Python int, float or bool) of a generated expression."""

    __slots__ = ("src", "type", "value")

    def __init__(self, src, type, value):
        self.src, self.type, self.value = src, type, value


def _bits(t):
    return np.iinfo(_NP[t]).bits


def _signed(t):
    return np.iinfo(_NP[t]).min < 0


def _wrap(v: int, t: str) -> int:
    info = np.iinfo(_NP[t])
    v %= 2 ** info.bits
    return v - 2 ** info.bits if info.min < 0 and v > info.max else v


def _c_int(v: int, t: str) -> int:
    """The result of a C operation whose operands were promoted to int (or wider) and which is stored in t:
    wraps for types narrower than int and for unsigned types; signed overflow of int32/int64 is undefined."""
    info = np.iinfo(_NP[t])
    if info.min < 0 and info.bits >= 32 and not info.min <= v <= info.max:
        raise Rejected("signed overflow")
    return _wrap(v, t)


def _float(v, t) -> float:
    with np.errstate(all="ignore"):
        r = float(_NP[t](v))
    if not math.isfinite(r) or abs(r) > (500.0 if t == "float16" else 1e6):
        raise Rejected("too large")
    return r


def _margin(t):
    return 2e-2 if t == "float16" else 1e-3


def _away_from(v: float, boundary: float, t: str):
    if abs(v - boundary) <= _margin(t) * max(1.0, abs(v)):
        raise Rejected("too close to a boundary")


def _c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _comparison_type(a: str, b: str) -> str:
    """C's usual arithmetic conversions (Warp emits comparisons as C operators)."""
    if a == b:
        return a
    if a in FLOATS or b in FLOATS:
        widest = max((t for t in (a, b) if t in FLOATS), key=FLOATS.index)
        return "float32" if widest == "float16" else widest
    a, b = ("int32" if t == "bool" or _bits(t) < 32 else t for t in (a, b))
    if a == b:
        return a
    if _bits(a) != _bits(b):
        return a if _bits(a) > _bits(b) else b
    return a if not _signed(a) else b


def _convert(v, src: str, dst: str):
    """C conversion of value v of type src to dst (float-to-int truncates and must be in range)."""
    if dst == "bool":
        return bool(v != 0)
    if dst in FLOATS:
        return _float(float(v), dst)
    if src in FLOATS:
        _away_from(v, round(v), src)
        info = np.iinfo(_NP[dst])
        if not info.min <= math.trunc(v) <= info.max:
            raise Rejected("float out of the integer range")
        return math.trunc(v)
    return _wrap(int(v), dst)


def literal(t: str, v) -> Expr:
    """A literal of type t: a bare Python literal for int32, float32 and bool (what they are in Warp)."""
    if t == "bool":
        return Expr(repr(bool(v)), t, bool(v))
    if t == "int32":
        return Expr(f"({v})" if v < 0 else str(v), t, int(v))
    if t == "float32":
        return Expr(f"({v!r})" if v < 0 else repr(float(v)), t, float(v))
    return Expr(f"wp.{t}({v!r})", t, v if t in FLOATS else int(v))


def random_value(rng: random.Random, t: str):
    """A value every type holds exactly: small ints, multiples of 1/16 in [-4, 4] for floats."""
    if t == "bool":
        return rng.random() < 0.5
    if t in FLOATS:
        return rng.randint(-64, 64) / 16.0
    return rng.randint(-20, 20) if _signed(t) else rng.randint(0, 40)


class ScalarGrammar:
    """Random typed scalar expressions over kernel parameters, locals, literals and `wp.constant`s."""

    def __init__(self, rng: random.Random, leaves: dict):
        self.rng = rng
        self.leaves = leaves  # type name -> [Expr] (parameters and locals)

    def leaf(self, t: str) -> Expr:
        r = self.rng.random()
        consts = [(n, v) for n, (ct, v) in CONSTANTS.items() if ct == t]
        if consts and r < 0.1:
            name, v = self.rng.choice(consts)
            return Expr(name, t, v)
        if r < 0.35 and t != "bool":  # Warp renders some uses of a bool literal as `False`/`Truell` (C++ errors)
            return literal(t, random_value(self.rng, t))
        return self.rng.choice(self.leaves[t])

    def expr(self, t: str, depth: int) -> Expr:
        for _ in range(50):
            try:
                return self._expr(t, depth)
            except Rejected:
                continue
        return self.leaf(t)

    def _expr(self, t, depth):
        if depth <= 0 or self.rng.random() < 0.2:
            return self.leaf(t)
        forms = [self.binary, self.unary, self.cast, self.select]
        if t == "bool":
            forms = [self.compare, self.compare, self.logic, self.cast]
        elif t in FLOATS:
            forms += [self.math, self.math]
        else:
            forms += [self.bits]
        return self.rng.choice(forms)(t, depth - 1)

    def binary(self, t, d):
        if t == "bool":
            return self.compare(t, d)
        a, b = self.expr(t, d), self.expr(t, d)
        if a.src in CONSTANTS and b.src in CONSTANTS:
            raise Rejected("Warp may type a float wp.constant as uint64 here (a compile error)")
        op = self.rng.choice(["+", "-", "*", "*", "/", "%", "//", "min", "max"])
        if op in ("min", "max"):
            return Expr(f"wp.{op}({a.src}, {b.src})", t, (min if op == "min" else max)(a.value, b.value))
        if t in FLOATS:
            if op in ("/", "%", "//"):
                if abs(b.value) < 0.25:
                    raise Rejected("small divisor")
                q = a.value / b.value
                if op == "//":
                    _away_from(q, math.floor(q + 0.5), t)
                    return Expr(f"({a.src} // {b.src})", t, _float(math.floor(q), t))
                if op == "%":
                    _away_from(q, round(q), t)
                    return Expr(f"({a.src} % {b.src})", t, _float(math.fmod(a.value, b.value), t))
                return Expr(f"({a.src} / {b.src})", t, _float(q, t))
            v = {"+": a.value + b.value, "-": a.value - b.value, "*": a.value * b.value}[op]
            return Expr(f"({a.src} {op} {b.src})", t, _float(v, t))
        if op in ("/", "%", "//"):
            if b.value == 0 or (_signed(t) and b.value == -1 and a.value == np.iinfo(_NP[t]).min):
                raise Rejected("division by zero or overflow")
            q = _c_div(a.value, b.value)
            v = {"/": q, "%": a.value - q * b.value, "//": a.value // b.value}[op]
            return Expr(f"({a.src} {op} {b.src})", t, _c_int(v, t))
        v = {"+": a.value + b.value, "-": a.value - b.value, "*": a.value * b.value}[op]
        return Expr(f"({a.src} {op} {b.src})", t, _c_int(v, t))

    def unary(self, t, d):
        a = self.expr(t, d)
        op = self.rng.choice(["-", "abs"] if t != "bool" else ["not"])
        if op == "not":
            return Expr(f"(not {a.src})", t, not a.value)
        if t in FLOATS:
            return Expr(f"(-{a.src})" if op == "-" else f"wp.abs({a.src})", t, -a.value if op == "-" else abs(a.value))
        if op == "-":
            return Expr(f"(-{a.src})", t, _c_int(-a.value, t))
        if not _signed(t):
            return Expr(f"wp.abs({a.src})", t, a.value)
        return Expr(f"wp.abs({a.src})", t, _c_int(abs(a.value), t))

    def bits(self, t, d):
        a, b = self.expr(t, d), self.expr(t, d)
        op = self.rng.choice(["&", "|", "^", "<<", ">>", "~"])
        if op == "~":
            return Expr(f"(~{a.src})", t, _wrap(~a.value, t))
        if op in ("<<", ">>"):
            width = 64 if _bits(t) == 64 else 32
            if not 0 <= b.value < width or (op == "<<" and a.value < 0):
                raise Rejected("shift out of range")
            v = a.value << b.value if op == "<<" else a.value >> b.value
            if op == "<<" and _bits(t) < 32 and v > 2**31 - 1:
                raise Rejected("shift overflows int")
            return Expr(f"({a.src} {op} {b.src})", t, _c_int(v, t) if op == "<<" else v)
        v = {"&": a.value & b.value, "|": a.value | b.value, "^": a.value ^ b.value}[op]
        return Expr(f"({a.src} {op} {b.src})", t, _wrap(v, t))

    def compare(self, t, d):
        ta, tb = self.rng.choice(SCALARS), self.rng.choice(SCALARS)
        if self.rng.random() < 0.5:
            tb = ta
        a, b = self.expr(ta, d), self.expr(tb, d)
        ct = _comparison_type(ta, tb)
        x, y = _convert(a.value, ta, ct), _convert(b.value, tb, ct)
        if ct in FLOATS and x != y:
            _away_from(x, y, "float16" if "float16" in (ta, tb) else ct)
        op = self.rng.choice(["<", "<=", ">", ">=", "==", "!="])
        v = {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[op]
        if "float16" in (ta, tb) and ta != tb:
            raise Rejected("Warp's half has no mixed comparison")
        return Expr(f"({a.src} {op} {b.src})", "bool", bool(v))

    def logic(self, t, d):
        a, b = self.expr("bool", d), self.expr("bool", d)
        op = self.rng.choice(["and", "or"])
        return Expr(f"({a.src} {op} {b.src})", "bool", (a.value and b.value) if op == "and" else (a.value or b.value))

    def cast(self, t, d):
        src = self.rng.choice(SCALARS)
        a = self.expr(src, d)
        if t == "float16" and src in INTS and abs(a.value) > 500:
            raise Rejected("large")
        if "float16" in (src, t) and "bool" in (src, t):
            raise Rejected("Warp has no conversion between bool and half")
        return Expr(f"wp.{t}({a.src})", t, _convert(a.value, src, t))

    def select(self, t, d):
        c, a, b = self.expr("bool", d), self.expr(t, d), self.expr(t, d)
        if self.rng.random() < 0.5:
            return Expr(f"({a.src} if {c.src} else {b.src})", t, a.value if c.value else b.value)
        return Expr(f"wp.where({c.src}, {a.src}, {b.src})", t, a.value if c.value else b.value)

    def math(self, t, d):
        a = self.expr(t, d)
        f = self.rng.choice(["sin", "cos", "exp", "sqrt", "log", "floor", "ceil", "trunc", "round", "sign",
                             "clamp", "tanh", "atan"])
        v = a.value
        if f == "sqrt":
            return Expr(f"wp.sqrt(wp.abs({a.src}))", t, _float(math.sqrt(abs(v)), t))
        if f == "log":
            if v <= 0.1:
                raise Rejected("log domain")
            return Expr(f"wp.log({a.src})", t, _float(math.log(v), t))
        if f == "exp":
            if abs(v) > 8:
                raise Rejected("exp range")
            return Expr(f"wp.exp({a.src})", t, _float(math.exp(v), t))
        if f in ("floor", "ceil", "trunc"):
            _away_from(v, round(v), t)
            return Expr(f"wp.{f}({a.src})", t, float(getattr(math, f)(v)))
        if f == "round":
            _away_from(v, math.floor(v) + 0.5, t)
            _away_from(v, round(v), t)
            return Expr(f"wp.round({a.src})", t, float(round(v)))
        if f == "sign":
            _away_from(v, 0.0, t)
            return Expr(f"wp.sign({a.src})", t, -1.0 if v < 0 else 1.0)
        if f == "clamp":
            lo, hi = sorted((random_value(self.rng, t), random_value(self.rng, t)))
            lo_e, hi_e = literal(t, lo), literal(t, hi)
            return Expr(f"wp.clamp({a.src}, {lo_e.src}, {hi_e.src})", t, min(max(v, lo), hi))
        return Expr(f"wp.{f}({a.src})", t, _float(getattr(math, f)(v), t))


_COMPOSITES = ("vec3", "vec4", "mat33", "quat", "transform")


class CompositeGrammar:
    """Random expressions over float32/float64 vectors, matrices, quaternions and transforms (no value kept:
    only smooth operations whose results stay finite)."""

    def __init__(self, rng: random.Random, scalar: str):
        self.rng = rng
        self.s = scalar
        self.suffix = "d" if scalar == "float64" else ""

    def ty(self, kind):
        return f"wp.{kind}{self.suffix}"

    def scalar_leaf(self):
        v = random_value(self.rng, self.s)
        return f"wp.{self.s}({v!r})" if self.s == "float64" or self.rng.random() < 0.3 else \
            ("p_s" if self.rng.random() < 0.5 else "q_s")

    def expr(self, kind, depth):
        if depth <= 0 or self.rng.random() < 0.25:
            return self.rng.choice([f"p_{kind}", f"q_{kind}", self.construct(kind)])
        e = self.expr
        d = depth - 1
        forms = {
            "vec3": [lambda: f"({e('vec3', d)} + {e('vec3', d)})", lambda: f"({e('vec3', d)} - {e('vec3', d)})",
                     lambda: f"({self.scalar(d)} * {e('vec3', d)})",
                     lambda: f"wp.cross({e('vec3', d)}, {e('vec3', d)})",
                     lambda: f"({e('mat33', d)} * {e('vec3', d)})",
                     lambda: f"wp.quat_rotate({e('quat', d)}, {e('vec3', d)})",
                     lambda: f"wp.transform_point({e('transform', d)}, {e('vec3', d)})",
                     lambda: f"wp.transform_vector({e('transform', d)}, {e('vec3', d)})",
                     lambda: f"wp.cw_mul({e('vec3', d)}, {e('vec3', d)})", lambda: f"(-{e('vec3', d)})",
                     lambda: f"wp.transform_get_translation({e('transform', d)})"],
            "vec4": [lambda: f"({e('vec4', d)} + {e('vec4', d)})", lambda: f"({e('vec4', d)} * {self.scalar(d)})",
                     lambda: f"wp.cw_mul({e('vec4', d)}, {e('vec4', d)})"],
            "mat33": [lambda: f"({e('mat33', d)} + {e('mat33', d)})", lambda: f"({e('mat33', d)} * {e('mat33', d)})",
                      lambda: f"wp.transpose({e('mat33', d)})", lambda: f"wp.outer({e('vec3', d)}, {e('vec3', d)})",
                      lambda: f"({self.scalar(d)} * {e('mat33', d)})", lambda: f"wp.quat_to_matrix({e('quat', d)})"],
            "quat": [lambda: f"({e('quat', d)} * {e('quat', d)})", lambda: f"wp.quat_inverse({e('quat', d)})",
                     lambda: f"wp.normalize({e('quat', d)})",
                     lambda: f"wp.transform_get_rotation({e('transform', d)})"],
            "transform": [lambda: f"({e('transform', d)} * {e('transform', d)})",
                          lambda: f"wp.transform_inverse({e('transform', d)})",
                          lambda: f"{self.ty('transform')}({e('vec3', d)}, {e('quat', d)})"],
        }[kind]
        return self.rng.choice(forms)()

    def scalar(self, depth):
        if depth <= 0 or self.rng.random() < 0.4:
            return self.scalar_leaf()
        e, d = self.expr, depth - 1
        return self.rng.choice([lambda: f"wp.dot({e('vec3', d)}, {e('vec3', d)})",
                                lambda: f"wp.length({e('vec3', d)})", lambda: f"wp.determinant({e('mat33', d)})",
                                lambda: f"{e('vec3', d)}[{self.rng.randrange(3)}]",
                                lambda: f"{e('mat33', d)}[{self.rng.randrange(3)}, {self.rng.randrange(3)}]",
                                lambda: f"wp.trace({e('mat33', d)})", lambda: f"wp.dot({e('quat', d)}, {e('quat', d)})",
                                lambda: f"({self.scalar(d)} * {self.scalar(d)} + {self.scalar_leaf()})"])()

    def construct(self, kind):
        vals = lambda n: ", ".join(f"wp.{self.s}({random_value(self.rng, self.s)!r})" for _ in range(n))  # noqa: E731
        if kind == "quat":
            return f"wp.normalize({self.ty('quat')}({vals(4)}))" if self.rng.random() < 0.7 else \
                f"wp.quat_from_axis_angle(wp.normalize({self.ty('vec3')}({vals(3)})), wp.{self.s}(0.5))"
        if kind == "transform":
            return f"{self.ty('transform')}({self.ty('vec3')}({vals(3)}), wp.normalize({self.ty('quat')}({vals(4)})))"
        n = {"vec3": 3, "vec4": 4, "mat33": 9}[kind]
        return f"{self.ty(kind)}({vals(n)})"


def _constants_source() -> str:
    return "\n".join(f"{name} = wp.constant({value!r})" for name, (_, value) in CONSTANTS.items()) + "\n"


def scalar_kernel(rng: random.Random, name: str, count: int, depth: int):
    """Source and manifest entry of a kernel computing `count` random scalar expressions: two parameters and
    maybe a local of every scalar type are its leaves; each result goes to an array of its type."""
    leaves, values, params = {}, [], []
    for t in SCALARS:
        leaves[t] = []
        for p in ("a", "b"):
            v = random_value(rng, t)
            leaves[t].append(Expr(f"{p}_{t}", t, v))
            params.append(f"{p}_{t}: wp.{t}")
            values.append([t, v])
    grammar = ScalarGrammar(rng, leaves)
    body = []
    for k, t in enumerate(rng.sample(SCALARS, 3)):
        local = grammar.expr(t, 2)
        body.append(f"    l{k}_{t} = {local.src}")
        leaves[t].append(Expr(f"l{k}_{t}", t, local.value))
    outputs, cases, c_values = [], [], []
    for k in range(count):
        t = rng.choice(SCALARS)
        e = grammar.expr(t, depth)
        params.append(f"o{k}: wp.array(dtype=wp.{t})")
        body.append(f"    o{k}[0] = {e.src}")
        outputs.append(t)
        cases.append(e.src)
        # C's value of an integer or bool case, as this grammar computes it: the judge when Warp disagrees with
        # itself (float results are left to Warp: they may round differently)
        c_values.append(int(e.value) if t not in FLOATS else None)
    src = "@wp.kernel(enable_backward=False)\n" + f"def {name}({', '.join(params)}):\n" + "\n".join(body) + "\n"
    return src, {"name": name, "kind": "scalar", "inputs": values, "outputs": outputs, "cases": cases,
                 "c_values": c_values}


_SHAPES = {"vec3": (3,), "vec4": (4,), "mat33": (3, 3), "quat": (4,), "transform": (7,)}


def _composite_value(rng: random.Random, kind: str) -> list:
    vals = [random_value(rng, "float32") for _ in range(int(np.prod(_SHAPES[kind])))]
    if kind in ("quat", "transform"):
        q = np.array(vals[-4:]) + np.array([0.0, 0.0, 0.0, 0.5])
        vals[-4:] = list(q / np.linalg.norm(q))
    return vals


def composite_kernel(rng: random.Random, name: str, count: int, depth: int, scalar: str):
    """Source and manifest entry of a kernel computing `count` random vector, matrix, quaternion, transform and
    scalar expressions of one float type; composite inputs come in one-element arrays."""
    g = CompositeGrammar(rng, scalar)
    params = [f"p_s: wp.{scalar}", f"q_s: wp.{scalar}"]
    inputs = [[scalar, random_value(rng, scalar)], [scalar, random_value(rng, scalar)]]
    body = []
    for kind in _COMPOSITES:
        for p in ("p", "q"):
            params.append(f"{p.upper()}_{kind}: wp.array(dtype={g.ty(kind)})")
            body.append(f"    {p}_{kind} = {p.upper()}_{kind}[0]")
            inputs.append([kind, _composite_value(rng, kind)])
    outputs, cases = [], []
    for k in range(count):
        kind = rng.choice(_COMPOSITES + ("scalar",))
        e = g.scalar(depth) if kind == "scalar" else g.expr(kind, depth)
        dtype = f"wp.{scalar}" if kind == "scalar" else g.ty(kind)
        params.append(f"o{k}: wp.array(dtype={dtype})")
        body.append(f"    o{k}[0] = {e}")
        outputs.append(kind)
        cases.append(e)
    src = "@wp.kernel(enable_backward=False)\n" + f"def {name}({', '.join(params)}):\n" + "\n".join(body) + "\n"
    return src, {"name": name, "kind": "composite", "scalar": scalar, "inputs": inputs, "outputs": outputs,
                 "cases": cases}


def expression_module(seed: int, scalar_kernels: int, composite_kernels: int, per_kernel: int):
    """(module source without its import line, manifest) of the expression cases of one seed."""
    rng = random.Random(seed)
    parts, manifest = [_constants_source()], []
    for k in range(scalar_kernels):
        src, entry = scalar_kernel(rng, f"scalar_{k}", per_kernel, depth=3)
        parts.append(src)
        manifest.append(entry)
    for k in range(composite_kernels):
        src, entry = composite_kernel(rng, f"composite_{k}", per_kernel, 3, rng.choice(["float32", "float64"]))
        parts.append(src)
        manifest.append(entry)
    return "\n\n".join(parts), manifest
