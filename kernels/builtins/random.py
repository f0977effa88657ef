"""Random numbers (Warp 1.19's "Random" group) and debug printing.

An RNG state is a uint32 made by `rand_init(seed[, offset])`; every draw advances it with the PCG hash
(Jarzynski & Olano 2020), so `rng = wp.rand_init(seed, tid); a = wp.randf(rng); b = wp.randf(rng)` gives a != b.
Results are deterministic for a seed, offset and call order, and identical on the CPU and CUDA. None of these
builtins is differentiable except the noise functions' coordinate; printf/print are declared differentiable
with an empty adjoint (see below).

Native code: kernels/native/random.h (draws take the state by reference and advance it),
kernels/native/noise.h (Perlin noise, differentiable w.r.t. the coordinate) and kernels/native/debug_print.h.
"""

from __future__ import annotations

from .. import types as T
from .registry import A, AnyType, S, add_builtin

SEED = S("I", "int")
U32, I32, F32 = T.uint32, T.int32, T.float32
GROUP = "random"


def _draw(name, args, ret, doc, arg_names=("state",)):
    """A draw: reads the state (first argument) and advances it; the caller's state variable is rebound."""
    add_builtin(name, args, ret, group=GROUP, doc=doc, arg_names=arg_names, differentiable=False, mutates_first=True)


add_builtin("rand_init", (SEED,), U32, group=GROUP, differentiable=False, arg_names=("seed",),
            doc="RNG state from a seed")
add_builtin("rand_init", (SEED, S("J", "int")), U32, group=GROUP, differentiable=False, arg_names=("seed", "offset"),
            doc="RNG state from a seed shared by a launch and a per-thread offset (usually wp.tid())")

_draw("randi", (U32,), I32, "uniform int32 in [-2^31, 2^31)")
_draw("randi", (U32, I32, I32), I32, "uniform int32 in [low, high) (modulo reduction)", ("state", "low", "high"))
_draw("randu", (U32,), U32, "uniform uint32 in [0, 2^32)")
_draw("randu", (U32, U32, U32), U32, "uniform uint32 in [low, high) (modulo reduction)", ("state", "low", "high"))
_draw("randf", (U32,), F32, "uniform float32 in [0, 1), a multiple of 2^-24")
_draw("randf", (U32, F32, F32), F32, "uniform float32 in [low, high)", ("state", "low", "high"))
_draw("randn", (U32,), F32, "standard normal float32 (Box-Muller, two uniform draws)")

_draw("poisson", (U32, F32), U32, "Poisson-distributed count with rate lam (Knuth below 10, PTRS rejection above)",
      ("state", "lam"))
_draw("sample_cdf", (U32, A(F32)), I32, "index drawn from a tabulated CDF (non-decreasing, ending at 1): the first "
      "entry >= a uniform draw", ("state", "cdf"))

_draw("sample_unit_ring", (U32,), T.vec2, "uniform point on the unit circle")
_draw("sample_unit_disk", (U32,), T.vec2, "uniform point in the unit disk")
_draw("sample_unit_square", (U32,), T.vec2, "uniform point in [-0.5, 0.5)^2")
_draw("sample_triangle", (U32,), T.vec2, "uniform barycentric (u, v) in a triangle; w = 1 - u - v")
_draw("sample_unit_sphere_surface", (U32,), T.vec3, "uniform point on the unit sphere")
_draw("sample_unit_sphere", (U32,), T.vec3, "uniform point in the unit ball")
_draw("sample_unit_hemisphere_surface", (U32,), T.vec3, "uniform point on the unit hemisphere z >= 0")
_draw("sample_unit_hemisphere", (U32,), T.vec3, "uniform point in the unit half-ball z >= 0")
_draw("sample_unit_cube", (U32,), T.vec3, "uniform point in [-0.5, 0.5)^3")

# ---- gradient noise (native: kernels/native/noise.h) ----------------------------------------------------------
# Warp's Perlin noise to the bit. The state picks the field and is not advanced; the coordinate gets a gradient
# (analytic), the state, periods, octaves, lacunarity and gain none.

_NOISE_POINTS = ((F32, "x"), (T.vec2, "xy"), (T.vec3, "xyz"), (T.vec4, "xyzt"))
for _k, (_point, _name) in enumerate(_NOISE_POINTS):
    add_builtin("noise", (U32, _point), F32, group=GROUP, arg_names=("state", _name),
                doc=f"{_k + 1}-d Perlin noise at `{_name}` of the field `state` (one lattice cell per unit, values "
                    "centred on zero)")
    _periods = ("px", "py", "pz", "pt")[: _k + 1]
    add_builtin("pnoise", (U32, _point) + (I32,) * (_k + 1), F32, group=GROUP, arg_names=("state", _name) + _periods,
                doc=f"{_k + 1}-d Perlin noise that repeats every {', '.join(_periods)} units (periods > 0)")
_OCTAVES = S("O", "int")
for _point, _name, _ret in ((T.vec2, "xy", T.vec2), (T.vec3, "xyz", T.vec3), (T.vec4, "xyzt", T.vec3)):
    add_builtin("curlnoise", (U32, _point, _OCTAVES, F32, F32), _ret, group=GROUP,
                arg_names=("state", _name, "octaves", "lacunarity", "gain"),
                defaults={"octaves": 1, "lacunarity": 2.0, "gain": 0.5},
                doc="divergence-free field from Perlin noise: octave i at lacunarity^i times the point with weight "
                    "gain^i; 2-d: the rotated noise gradient, 3-d/4-d: the curl of three noise fields (the first "
                    "three axes)")

# ---- debug printing -------------------------------------------------------------------------------------------

# printf(fmt, *args): fmt is a compile-time string, rendered as a C string literal; 0 to 8 values.
# Printing yields nothing, so it contributes nothing to a gradient: differentiable (with an empty adjoint), which lets
# kernels print values that carry gradients. It is a side effect, so the backward pass does not print again.
for _n in range(9):
    add_builtin("printf", (AnyType("FMT"),) + tuple(AnyType(f"A{k}") for k in range(_n)), None, native="printf",
                group="debug", side_effect=True,
                arg_names=("fmt",) + tuple(f"arg{k}" for k in range(_n)),
                doc="C printf (float16 printed through double); on CUDA, lines of different threads interleave")
add_builtin("print", (AnyType("A"),), None, native="print", group="debug", side_effect=True,
            arg_names=("value",), doc="print a scalar, vector, matrix, quaternion or transform on one line")
