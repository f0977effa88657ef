"""A struct instance made at compile time is a constant of kernels (issue 34; Warp's test_static.py):
`wp.static(make_struct(...))` calls the @wp.func from Python and embeds the instance's fields (nested structs,
matrices, transforms, quaternions, scalars). Arrays of structs read back with Warp's numpy layout: a vector or
matrix field is a subarray of its shape (a mat33 field is (3, 3)). Values checked against real warp-lang. As in
Warp, `wp.static` refuses arrays (also inside structs), None and objects of the user's own classes, and reads a
local holding a literal (`n = 3`) as a constant."""

import importlib.util

import numpy as np
import pytest

import kernels as wp

import _warp_reference

_PROGRAM = '''
@wp.struct
class Inner:
    mat: wp.mat33
    vec: wp.vec3
    i: int


@wp.struct
class Outer:
    s: Inner
    tf: wp.transform
    q: wp.quat


@wp.func
def make_inner(mat: wp.mat33, vec: wp.vec3, i: int):
    s = Inner()
    s.mat = mat
    s.vec = vec
    s.i = i
    return s


@wp.func
def make_outer(s: Inner, tf: wp.transform):
    o = Outer()
    o.s = s
    o.tf = tf
    o.q = wp.quat(0.5, 0.5, 0.5, 0.5)
    return o


@wp.kernel
def store(results: wp.array(dtype=Outer), xs: wp.array(dtype=float)):
    c = wp.static(make_outer(make_inner(wp.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0),
                                        wp.vec3(1.0, 2.0, 3.0), 7),
                             wp.transform(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity())))
    results[0] = c
    xs[0] = c.s.mat[2, 1] + c.tf.p[2] + c.q[3] + float(c.s.i)


def run(wp, Tape):
    results = wp.zeros(1, dtype=Outer, device="cpu")
    xs = wp.zeros(1, dtype=float, device="cpu")
    wp.launch(store, dim=1, inputs=[results, xs], device="cpu")
    r = results.numpy()
    return {"mat": r["s"]["mat"], "vec": r["s"]["vec"], "i": r["s"]["i"], "tf": r["tf"], "q": r["q"],
            "xs": xs.numpy()}
'''


def test_values_and_layout_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "static_struct_constant")
    for key in warp:
        assert ours[key].shape == warp[key].shape, key
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)


def test_static_values_warp_refuses_are_refused_in_its_words():
    @wp.struct
    class Holder:
        values: wp.array(dtype=float)

    @wp.struct
    class Outer:
        holder: Holder
        x: float

    def make():
        outer = Outer()
        outer.holder = Holder()
        outer.holder.values = wp.zeros(2, dtype=float)
        return outer

    @wp.kernel(module="unique")
    def k(out: wp.array(dtype=Outer)):
        out[0] = wp.static(make())

    with pytest.raises(wp.CompileError, match=r"Static expression returns an unsupported value: the returned Warp "
                                              r"struct contains .*array cannot be created .* at Outer\.holder\.values"):
        wp.launch(k, dim=1, inputs=[wp.zeros(1, dtype=Outer)])

    @wp.kernel(module="unique")
    def nothing():
        wp.static(print())

    with pytest.raises(wp.CompileError, match="unsupported value: None is returned"):
        wp.launch(nothing, dim=1, inputs=[])


@wp.struct
class _Holder:
    values: wp.array(dtype=float)


_holder = _Holder()
_holder.values = wp.full(2, 3.0, dtype=float)


@wp.kernel(module="unique")
def _reads_a_global_struct_array(out: wp.array(dtype=float)):
    out[0] = _holder.values[0]


def test_an_array_reached_through_a_compile_time_struct_is_refused():
    # it would be read once, at compile time: a later change of the array would be silently ignored
    with pytest.raises(wp.CompileError, match="'_holder.values' is an array reached at compile time"):
        wp.launch(_reads_a_global_struct_array, dim=1, inputs=[wp.zeros(1, dtype=float)])


class _Settings:
    stiffness = 2.0


@wp.kernel(module="unique")
def _static_user_object(out: wp.array(dtype=float)):
    out[0] = wp.static(_Settings()).stiffness


def test_a_user_object_is_refused_as_a_static_value_as_in_warp():
    with pytest.raises(wp.CompileError, match=r"unsupported value: value of type .*_Settings"):
        wp.launch(_static_user_object, dim=1, inputs=[wp.zeros(1, dtype=float)])


@wp.kernel(module="unique")
def _static_with_a_literal_local(out: wp.array(dtype=int)):
    n = 3
    out[0] = wp.static(n * 2 + 1)


def test_a_local_holding_a_literal_is_a_constant_of_static_expressions():
    out = wp.zeros(1, dtype=int)
    wp.launch(_static_with_a_literal_local, dim=1, inputs=[out])
    assert out.numpy()[0] == 7


_UNIT = wp.vec3(1.0, 2.0, 3.0)
_M = wp.mat22(1.0, 2.0, 3.0, 4.0)


@wp.kernel(module="unique")
def _constant_composites_at_run_time_indices(out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = _UNIT[i] + _M[i % 2, 1] + _UNIT[2]


def test_a_global_vector_or_matrix_is_read_at_run_time_indices():
    out = wp.zeros(3, dtype=float)
    wp.launch(_constant_composites_at_run_time_indices, dim=3, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [6.0, 9.0, 8.0])
