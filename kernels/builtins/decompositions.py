"""Matrix decompositions (Warp's svd3, svd2, qr3, eig3), in Warp's two forms: out-parameters
(`wp.svd3(A, U, sigma, V)` writes into the caller's variables) and results (`U, sigma, V = wp.svd3(A)`).

Native code and conventions (orderings, signs, behaviour at repeated values): kernels/native/decompositions.h.
All are differentiable with respect to A; the values passed in as out-parameters are ignored and get no gradient.
"""

from __future__ import annotations

from .registry import M, S, V, add_builtin

F = S("T", "float")
GROUP = "decompositions"


def _decomposition(name, size, outputs, out_names, doc):
    """Declare both forms of a decomposition of a `size` x `size` matrix giving `outputs` (patterns)."""
    add_builtin(name, (M(size, size, F),), tuple(outputs), group=GROUP, arg_names=("A",), doc=doc)
    add_builtin(name, (M(size, size, F),) + tuple(outputs), None, group=GROUP,
                mutates_arg=tuple(range(1, 1 + len(outputs))), arg_names=("A",) + out_names,
                doc=f"{doc}; written into {', '.join(out_names)}")


_decomposition("svd3", 3, (M(3, 3, F), V(3, F), M(3, 3, F)), ("U", "sigma", "V"),
               "A = U diag(sigma) V^T: U, V rotations, |sigma| decreasing, sigma[2] with the sign of det(A)")
_decomposition("svd2", 2, (M(2, 2, F), V(2, F), M(2, 2, F)), ("U", "sigma", "V"),
               "A = U diag(sigma) V^T: U, V orthogonal, sigma >= 0 decreasing")
_decomposition("qr3", 3, (M(3, 3, F), M(3, 3, F)), ("Q", "R"),
               "A = Q R: Q a rotation, R upper triangular (gradients need a full-rank A)")
_decomposition("eig3", 3, (M(3, 3, F), V(3, F)), ("Q", "d"),
               "symmetric A = Q diag(d) Q^T: Q a rotation, d increasing; reads (A + A^T) / 2")
