"""`wp.static(len(x))` of a run-time variable whose type fixes its length (a vector, matrix, quaternion or
transform parameter, constructor result or builtin result): the same lengths as real Warp's."""

import numpy as np
import pytest

import _warp_reference

_PROGRAM = '''
@wp.kernel
def lengths(v1: wp.vec2, out: wp.array(dtype=float), n: wp.array(dtype=int)):
    v2 = wp.vec3()
    m = wp.identity(n=wp.static(len(v1) + len(v2) + 1), dtype=float)
    out[0] = wp.ddot(m, m)
    t = wp.transform_identity(float)
    q = wp.quat_identity()
    a = wp.mat22()
    s = wp.spatial_vector()
    n[0] = wp.static(len(t))
    n[1] = wp.static(len(q))
    n[2] = wp.static(len(a))
    n[3] = wp.static(len(s))


def run(wp, Tape):
    out, n = wp.zeros(1, dtype=float), wp.zeros(4, dtype=int)
    wp.launch(lengths, 1, inputs=(wp.vec2(), out, n))
    return {"ddot": out.numpy(), "lengths": n.numpy()}
'''


def test_static_len_of_runtime_variables_matches_warp(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "static_len")
    for name in warp:
        np.testing.assert_array_equal(ours[name], warp[name], err_msg=name)
    np.testing.assert_array_equal(ours["lengths"], [7, 4, 2, 6])


def test_static_len_of_a_scalar_is_refused():
    import kernels as wp

    @wp.kernel
    def scalar_len(x: float, n: wp.array(dtype=int)):
        n[0] = wp.static(len(x))

    with pytest.raises(Exception, match=r"len\(\) of a float32"):
        wp.launch(scalar_len, 1, inputs=(1.0, wp.zeros(1, dtype=int)))
