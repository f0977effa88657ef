"""repr() of vector, quaternion and transform values is Warp's (`vec3f([1.0, 2.0, 3.0])`, components of a scalar
type other than float32/int32 spelled with it), compared with real Warp's text."""

import numpy as np
import pytest

import kernels as wp

import _warp_reference

_PROGRAM = '''
import numpy as np


def run(wp, Tape):
    values = [wp.vec2i(1, -2), wp.vec3f(1.0e-8, 1.5e10, 3.0), wp.vec3(0.1, 0.2, 0.3), wp.vec4d(1.0, 2.0, 3.0, 4.0),
              wp.vec3h(1.0, 2.5, 3.0), wp.vec2ub(1, 2), wp.vec2l(1, 2), wp.quatf(0.0, 0.0, 0.0, 1.0),
              wp.quatd(0.5, 0.5, 0.5, 0.5), wp.transformf((1.0, 2.0, 3.0), (0.0, 0.0, 0.0, 1.0))]
    return {"reprs": np.array([repr(v) for v in values])}
'''


def test_reprs_are_warps(tmp_path):
    pytest.importorskip("warp", reason="warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "value_repr")
    assert list(ours["reprs"]) == list(warp["reprs"])


def test_a_list_of_vectors_reads_back():
    assert repr([wp.vec2i(0, 1), wp.vec2i(1, 2)]) == "[vec2i([0, 1]), vec2i([1, 2])]"
