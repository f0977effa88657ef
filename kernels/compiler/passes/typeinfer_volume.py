"""Type inference of Warp's dtype-generic volume builtins: `volume_sample(id, uvw, mode, dtype=T)`,
`volume_sample_grad(id, uvw, mode, grad, dtype=T)`, `volume_lookup(id, i, j, k, dtype=T)` and
`volume_store(id, i, j, k, value)` become the typed builtin of T (builtins/volume.py: VOLUME_SUFFIXES). (`a.dtype(...)`,
with which Warp's volume programs make gradients, is the frontend's generic constructor: `construct_type_of`.)

Mixed into `typeinfer.TypeInference` (which provides `call_arguments`, `static_value`, `call_builtin`, `error`).
"""

from __future__ import annotations

from ... import types as T
from ...builtins.volume import VOLUME_SUFFIXES, gradient_type
from ...typesys import describe

_SAMPLED = (T.float32, T.float64, T.vec3, T.vec3d, T.vec4, T.vec4d)


def _warp_name(t) -> str:
    """Warp's name of a vector or matrix type (vec3f, mat43d), as its messages spell them."""
    if T.is_vector(t) or T.is_matrix(t):
        suffix = {T.float16: "h", T.float32: "f", T.float64: "d"}.get(t._wp_scalar_type_, "")
        return ("vec" if T.is_vector(t) else "mat") + "".join(str(n) for n in t._shape_) + suffix
    return describe(t)


class VolumeForms:
    """`volume_sample`, `volume_sample_grad`, `volume_lookup`, `volume_store` with a value type."""

    def volume_dtype(self, args, op, name, allowed=tuple(VOLUME_SUFFIXES)):
        if "dtype" not in args:
            raise self.error(f"{name}() needs dtype=, the volume's value type", op)
        dtype = T.canonical_type(self.static_value(args["dtype"], op, f"{name}'s dtype"))
        if dtype not in allowed:
            names = ", ".join(T.type_repr(t) for t in allowed)
            raise self.error(f"{name}(): unsupported dtype {T.type_repr(dtype)} (expected one of {names})", op,
                             kind=TypeError)
        return dtype

    def volume_operands(self, op, names, name):
        args = self.call_arguments(op, names + ("dtype",))
        missing = [n for n in names if n not in args]
        if missing:
            raise self.error(f"{name}() missing argument '{missing[0]}'", op)
        return args

    def builtin_volume_sample(self, op):
        names = ("id", "uvw", "sampling_mode")
        args = self.volume_operands(op, names, "volume_sample")
        dtype = self.volume_dtype(args, op, "volume_sample")
        self.call_builtin(op, f"volume_sample_{VOLUME_SUFFIXES[dtype]}", [args[n] for n in names])

    def builtin_volume_sample_grad(self, op):
        names = ("id", "uvw", "sampling_mode", "grad")
        args = self.volume_operands(op, names, "volume_sample_grad")
        dtype = self.volume_dtype(args, op, "volume_sample_grad", _SAMPLED)
        want = gradient_type(dtype)
        if args["grad"].type != want:  # Warp's wording
            raise self.error(f"Incompatible gradient type, expected {_warp_name(want)}, got "
                             f"{_warp_name(args['grad'].type)}", op)
        self.call_builtin(op, f"volume_sample_grad_{VOLUME_SUFFIXES[dtype]}", [args[n] for n in names])

    def builtin_volume_lookup(self, op):
        names = ("id", "i", "j", "k")
        args = self.volume_operands(op, names, "volume_lookup")
        dtype = self.volume_dtype(args, op, "volume_lookup")
        self.call_builtin(op, f"volume_lookup_{VOLUME_SUFFIXES[dtype]}", [args[n] for n in names])

    def builtin_volume_store(self, op):
        names = ("id", "i", "j", "k", "value")
        args = self.call_arguments(op, names)
        missing = [n for n in names if n not in args]
        if missing:
            raise self.error(f"volume_store() missing argument '{missing[0]}'", op)
        value = args["value"]
        dtype = T.canonical_type(value.type) if value.type is not None else None
        if self.is_weak(value) and T.is_scalar(dtype):  # a Python literal: float -> float32, int -> int32
            dtype = T.float32 if T.is_float(dtype) else T.int32
        if dtype not in VOLUME_SUFFIXES:
            raise self.error(f"volume_store(): no volume holds values of type {describe(value.type)}", op,
                             kind=TypeError)
        self.call_builtin(op, f"volume_store_{VOLUME_SUFFIXES[dtype]}", [args[n] for n in names])
