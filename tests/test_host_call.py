"""Kernel builtins called from Python scope run the builtin itself (a one-thread CPU kernel) and return its value."""

import numpy as np
import pytest

import kernels as wp

import _warp_reference


def test_scalar_builtins_from_python_match_the_kernel_results():
    # Warp's host values: Python numbers for float32/int32/bool, values of the scalar type for the others
    assert wp.abs(-1.5) == 1.5 and type(wp.abs(-1.5)) is float
    assert wp.abs(wp.float64(-2.0)) == 2.0 and isinstance(wp.abs(wp.float64(-2.0)), wp.float64)
    assert wp.min(3, 5) == 3
    np.testing.assert_allclose(wp.cos(0.5), np.cos(np.float32(0.5)), rtol=1e-6)


def test_composite_builtins_from_python():
    assert wp.length(wp.vec3(3.0, 4.0, 0.0)) == 5.0
    assert list(wp.normalize(wp.vec3(0.0, 2.0, 0.0))) == [0.0, 1.0, 0.0]
    assert isinstance(wp.quat_identity(), wp.quat) and list(wp.quat_identity()) == [0.0, 0.0, 0.0, 1.0]
    m = wp.matrix_from_cols(wp.vec2(1.0, 2.0), wp.vec2(3.0, 4.0))
    np.testing.assert_array_equal(np.array(m).reshape(2, 2), [[1.0, 3.0], [2.0, 4.0]])


def test_a_user_func_calling_builtins_runs_from_python():
    @wp.func
    def hypot(x: float, y: float):
        return wp.sqrt(x * x + y * y)

    assert hypot(3.0, 4.0) == 5.0


def test_kernel_only_builtins_and_bad_arguments_are_refused():
    with pytest.raises(RuntimeError, match="only be called inside kernels"):
        wp.tid()
    with pytest.raises(RuntimeError, match="^Couldn't find a function 'length' compatible with the arguments 'float'$"):
        wp.length(1.0)
    with pytest.raises(TypeError, match="non-Warp array types"):
        wp.length([1.0, 2.0])


def test_builtins_with_several_results_return_a_tuple():
    axis, angle = wp.quat_to_axis_angle(wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), 0.5))
    np.testing.assert_allclose(list(axis), [0.0, 0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(angle, 0.5, atol=1e-6)


def test_arrays_from_outside_and_lists_are_refused_in_kernels():
    outside = wp.array([1.0, 2.0], dtype=float)

    def reads_outside(out: wp.array(dtype=float)):
        out[0] = outside[0]

    def builds_a_list(out: wp.array(dtype=float)):
        x = [1.0, 2.0]
        out[0] = 1.0

    out = wp.zeros(1, dtype=float)
    with pytest.raises(TypeError, match="Invalid external reference type.*pass it as a kernel argument"):
        wp.launch(wp.kernel(reads_outside, module="unique"), 1, inputs=[out])
    with pytest.raises(RuntimeError, match="List constructs are not supported in kernels"):
        wp.launch(wp.kernel(builds_a_list, module="unique"), 1, inputs=[out])


@wp.kernel
def _make_transforms(vs: wp.array(dtype=wp.vec3), qs: wp.array(dtype=wp.quat), out: wp.array(dtype=wp.transform)):
    out[0] = wp.transformation(p=vs[0], q=qs[0])
    out[1] = wp.transformation(vs[0], qs[0])
    out[2] = wp.transformation(2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)


def test_transformation_constructor_in_kernels_and_python():
    vs = wp.array([[2.0, 3.0, 4.0]], dtype=wp.vec3)
    qs = wp.array([[5.0, 6.0, 7.0, 8.0]], dtype=wp.quat)
    out = wp.zeros(3, dtype=wp.transform)
    wp.launch(_make_transforms, 1, inputs=[vs, qs, out])
    np.testing.assert_array_equal(out.numpy(), np.tile(np.arange(2.0, 9.0), (3, 1)))
    t = wp.transformation(p=wp.vec3(1.0, 2.0, 3.0), q=wp.quat_identity(), dtype=wp.float64)
    assert isinstance(t, wp.transformd) and list(t) == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]


# Host values as Warp gives them: a builtin's result in Python scope and a vector's or matrix's component, for
# every scalar width, with and without `config.legacy_scalar_return_types`
_HOST_VALUES = """
import numpy as np


def run(wp, Tape):
    def probe(legacy):
        wp.config.legacy_scalar_return_types = legacy
        try:
            got = [wp.sin(1.25), wp.sin(wp.float64(1.25)), wp.sin(wp.float16(1.25)), wp.invert(wp.int8(5)),
                   wp.invert(wp.uint64(5)), wp.invert(7), wp.length(wp.vec2f(3.0, 4.5)), wp.length(wp.vec2d(3.0, 4.5)),
                   wp.mul(wp.vec2f(1.23, 2.34), wp.float32(3.45))[1], wp.mul(wp.vec2d(1.23, 2.34), wp.float64(3.45))[1],
                   wp.vec3h(1.5, 2.0, 3.0)[0], wp.vec3ub(1, 2, 3)[2], wp.mat22d(1.0, 2.0, 3.0, 4.0)[1, 0],
                   wp.mat22(1.0, 2.0, 3.0, 4.0)[1][1], wp.vec2i(-4, 9)[1]]
        finally:
            wp.config.legacy_scalar_return_types = False
        return np.array([type(x).__name__ for x in got]), np.array([float(x) for x in got])

    types, values = probe(False)
    legacy_types, legacy_values = probe(True)
    return {"types": types, "values": values, "legacy_types": legacy_types, "legacy_values": legacy_values}
"""


def test_host_values_have_warps_types_and_values(tmp_path):
    warp, ours = _warp_reference.both(_HOST_VALUES, str(tmp_path), "host_values")
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


# Overload resolution in Python scope as Warp's: exact argument types (a Python int is an int32 and wraps, a float a
# float32; no promotion), keyword arguments by each overload's own parameter names and defaults, compile-time
# dtype arguments; the refusal message names the arguments' types
_RESOLUTION = """
import numpy as np


def run(wp, Tape):
    refused = []
    for f, args in ((wp.mul, (wp.int16(3), 4)), (wp.mul, (4, np.int8(3))), (wp.min, (wp.vec3f(), wp.vec3d())),
                    (wp.add, (wp.float64(1.0), 2.0)), (wp.length, (1.0,)), (wp.mul, (wp.float16(2.0), 2.0))):
        try:
            f(*args)
            refused.append("")
        except RuntimeError as e:
            refused.append(str(e))
    state = wp.rand_init(42)
    position = wp.vec3f(0.25, 0.5, 0.75)
    eye = wp.mat44f(1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 1.0, 3.0, 0.0, 0.0, 0.0, 1.0)
    values = [wp.invert(-1234567890123456789), wp.mul(-1234567890, -1234567890), wp.max(a=wp.vec3f(3.0, 1.0, 2.0)),
              *wp.curlnoise(xyz=position, state=state), *wp.curlnoise(state, position, wp.uint32(2), 2.0, 0.5),
              *wp.transform_point(point=position, mat=eye), *wp.transform_point(xform=eye, point=position),
              wp.mul(wp.uint8(200), wp.uint8(3)), wp.sin(np.float64(0.5))]
    identities = [bytes(wp.quat_identity(dtype=t)) + bytes(wp.transform_identity(dtype=t))
                  for t in (wp.float16, wp.bfloat16, wp.float32, wp.float64)]
    return {"refused": np.array(refused), "values": np.array([float(v) for v in values]),
            "identities": np.concatenate([np.frombuffer(b, dtype=np.uint8) for b in identities]),
            "identity_quat_none": np.array(list(wp.quat_identity(dtype=None)))}
"""


def test_python_scope_overload_resolution_is_warps(tmp_path):
    warp, ours = _warp_reference.both(_RESOLUTION, str(tmp_path), "host_resolution")
    assert set(ours) == set(warp)
    for key, value in warp.items():
        np.testing.assert_array_equal(ours[key], value, err_msg=key)


def test_dtype_to_numpy_gives_numpy_scalar_types_as_warp():
    assert wp.dtype_to_numpy(wp.int16) is np.int16 and wp.dtype_to_numpy(wp.float32) is np.float32
    assert wp.dtype_to_numpy(wp.bfloat16) is np.uint16  # the storage type, as in Warp
    with pytest.raises(TypeError, match="Cannot convert"):
        wp.dtype_to_numpy(wp.vec3)


def test_a_host_call_runs_at_once_under_a_tape_or_a_capture_and_keeps_no_state():
    # it is not one of the Tape's launches, a graph capture does not defer it, a result does not alias the next
    from autodiff import Tape

    tape = Tape()
    with tape:
        assert wp.length(wp.vec3(3.0, 4.0, 0.0)) == 5.0
    assert len(tape.launches) == 0
    with wp.ScopedCapture(device="cpu") as capture:
        assert wp.length(wp.vec3(6.0, 8.0, 0.0)) == 10.0
    assert capture.graph is not None
    first = wp.normalize(wp.vec3(0.0, 2.0, 0.0))
    second = wp.normalize(wp.vec3(3.0, 0.0, 0.0))
    assert list(first) == [0.0, 1.0, 0.0] and list(second) == [1.0, 0.0, 0.0]


def test_host_calls_from_several_python_threads_get_their_own_results():
    import threading

    results, wrong = {}, []

    def worker(k):
        for i in range(200):
            x = float(k * 1000 + i)
            if wp.abs(-x) != x:
                wrong.append((k, i))
        results[k] = True

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and not wrong
