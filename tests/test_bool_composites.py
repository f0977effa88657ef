"""Vectors and matrices of bools in kernels (Warp's `wp.types.vector(length=3, dtype=bool)`, `matrix(..., dtype=bool)`):
constructed zero, filled and from components, read and written by component and row; values against real Warp."""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape

import _warp_child
import _warp_reference

_PROGRAM = '''
vec3b = wp.types.vector(length=3, dtype=bool)
vec2b = wp.types.vector(length=2, dtype=bool)
mat22b = wp.types.matrix((2, 2), dtype=bool)


@wp.kernel
def k(flags: wp.array(dtype=bool), vecs: wp.array(dtype=vec3b), mats: wp.array(dtype=mat22b),
      out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    f = flags[i]
    v = vec3b(f, not f, True)
    z = vec3b()
    s = vec3b(f)
    m = mat22b(f, False, not f, True)
    row = vec2b(True, f)
    m[0] = row
    m[1, 0] = f
    v[1] = True
    vecs[3 * i] = v
    vecs[3 * i + 1] = z
    vecs[3 * i + 2] = s
    mats[2 * i] = m
    mats[2 * i + 1] = wp.types.matrix(False, True, f, f, shape=(2, 2))
    out[i] = wp.where(m[1, 0], 1, 0) + wp.where(v[2], 2, 0) + wp.where(m[1][1], 4, 0)


def run(wp, Tape):
    flags = wp.array([True, False], dtype=bool, device="cpu")
    vecs = wp.zeros(6, dtype=vec3b, device="cpu")
    mats = wp.zeros(4, dtype=mat22b, device="cpu")
    out = wp.zeros(2, dtype=wp.int32, device="cpu")
    wp.launch(k, dim=2, inputs=[flags, vecs, mats, out], device="cpu")
    return {"vecs": vecs.numpy(), "mats": mats.numpy(), "out": out.numpy()}
'''


def test_bool_vectors_and_matrices_in_kernels(tmp_path):
    path = tmp_path / "bool_composites.py"
    path.write_text("import numpy as np\nimport kernels as wp\n\n\n" + _PROGRAM)
    out = _warp_child.load_module(str(path), "bool_composites").run(wp, Tape)
    t, f = True, False
    np.testing.assert_array_equal(out["vecs"], [[t, t, t], [f, f, f], [t, t, t], [f, t, t], [f, f, f], [f, f, f]])
    np.testing.assert_array_equal(out["mats"], [[[t, t], [t, t]], [[f, t], [t, t]],
                                                [[t, f], [f, t]], [[f, t], [f, f]]])
    np.testing.assert_array_equal(out["out"], [7, 6])


def test_bool_vectors_and_matrices_in_kernels_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both("import numpy as np\n\n\n" + _PROGRAM, str(tmp_path), "bool_composites")
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
