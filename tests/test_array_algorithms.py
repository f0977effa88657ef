"""wp.utils' whole-array algorithms (kernels/runtime/array_algorithms.py): against numpy, and against real Warp's
results on the same inputs; bad input refused with Warp's errors."""

import numpy as np
import pytest

import _warp_reference
import kernels as wp


def test_scan_sort_rle_sum_inner_cast_against_numpy():
    rng = np.random.default_rng(0)
    x = rng.integers(-50, 50, 1000).astype(np.int32)
    out = wp.zeros(1000, dtype=wp.int32)
    wp.utils.array_scan(wp.array(x, dtype=wp.int32), out, inclusive=False)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([[0], np.cumsum(x)[:-1]]))

    v = rng.random((100, 3)).astype(np.float32)
    vout = wp.zeros(100, dtype=wp.vec3)
    wp.utils.array_scan(wp.array(v, dtype=wp.vec3), vout)
    np.testing.assert_array_equal(vout.numpy(), np.cumsum(v, axis=0, dtype=np.float32))

    keys = np.concatenate([rng.normal(size=200).astype(np.float32), np.zeros(200, np.float32)])
    keys[:4] = [-0.0, 0.0, -0.0, np.float32(-1e-30)]
    values = np.arange(400, dtype=np.int32)
    k, val = wp.array(keys, dtype=float), wp.array(values, dtype=wp.int32)
    wp.utils.radix_sort_pairs(k, val, 200)
    # a radix sort orders IEEE bit patterns: -0.0 before 0.0, equal keys stable
    order = sorted(range(200), key=lambda i: (keys[i], not np.signbit(keys[i]), i))
    np.testing.assert_array_equal(val.numpy()[:200], order)

    runs = np.repeat(np.array([3, 7, 1, 3, 1], np.int32), [3, 4, 1, 2, 3])
    rv, rl = wp.zeros(len(runs), dtype=wp.int32), wp.zeros(len(runs), dtype=wp.int32)
    n = wp.utils.runlength_encode(wp.array(runs, dtype=wp.int32), rv, rl)
    assert n == 5 and rv.numpy()[:5].tolist() == [3, 7, 1, 3, 1] and rl.numpy()[:5].tolist() == [3, 4, 1, 2, 3]

    a = rng.random((4, 5))
    total = wp.utils.array_sum(wp.array(a, dtype=wp.float64), axis=1)
    np.testing.assert_allclose(total.numpy(), a.sum(axis=1, keepdims=True), rtol=1e-12)
    assert wp.utils.array_inner(wp.array(a, dtype=wp.float64), wp.array(a, dtype=wp.float64)) == pytest.approx(
        (a * a).sum(), rel=1e-12)

    f = wp.zeros(6, dtype=wp.int32)
    wp.utils.array_cast(wp.array(np.array([[1.7, -2.5, 3.0], [4.2, 5.9, -6.1]], np.float32), dtype=wp.vec3), f)
    assert f.numpy().tolist() == [1, -2, 3, 4, 5, -6]


def test_bad_input_is_refused():
    with pytest.raises(RuntimeError, match="data types do not match"):
        wp.utils.array_scan(wp.zeros(3, dtype=wp.int32), wp.zeros(3, dtype=float))
    with pytest.raises(RuntimeError, match="2\\*count"):
        wp.utils.radix_sort_pairs(wp.zeros(3, dtype=wp.int32), wp.zeros(3, dtype=wp.int32), 2)
    with pytest.raises(RuntimeError, match="contiguous keys"):
        wp.utils.segmented_sort_pairs(wp.zeros(8, dtype=wp.int32)[::2], wp.zeros(4, dtype=wp.int32), 2,
                                      wp.array([0, 2], dtype=wp.int32))
    with pytest.raises(ValueError, match="segments must satisfy"):
        wp.utils.segmented_sort_pairs(wp.zeros(8, dtype=wp.int32), wp.zeros(8, dtype=wp.int32), 4,
                                      wp.array([0, 6], dtype=wp.int32))
    with pytest.raises(IndexError, match="out of bounds"):
        wp.utils.array_sum(wp.zeros((2, 2), dtype=float), axis=2)


_PROGRAM = '''
import numpy as np


def run(wp, Tape):
    rng = np.random.default_rng(5)
    out = {}
    x = rng.random(5000).astype(np.float32)
    scan = wp.zeros(5000, dtype=wp.float32)
    wp.utils.array_scan(wp.array(x, dtype=wp.float32), scan)
    out["scan"] = scan.numpy()
    keys = np.concatenate([rng.integers(0, 1 << 20, 3000).astype(np.int32), np.zeros(3000, np.int32)])
    k, v = wp.array(keys, dtype=wp.int32), wp.array(np.arange(6000, dtype=np.int32), dtype=wp.int32)
    wp.utils.radix_sort_pairs(k, v, 3000, 4, 12)
    out["sorted_keys"], out["sorted_values"] = k.numpy()[:3000], v.numpy()[:3000]
    fk = wp.array(np.concatenate([rng.normal(size=500), np.zeros(500)]).astype(np.float32), dtype=wp.float32)
    fv = wp.array(np.arange(1000, dtype=np.int32), dtype=wp.int32)
    wp.utils.segmented_sort_pairs(fk, fv, 500, wp.array([0, 100, 250, 500], dtype=wp.int32))
    out["segmented_keys"], out["segmented_values"] = fk.numpy()[:500], fv.numpy()[:500]
    runs = rng.integers(0, 3, 400).astype(np.int32)
    rv, rl, rc = (wp.zeros(400, dtype=wp.int32) for _ in range(3))
    wp.utils.runlength_encode(wp.array(runs, dtype=wp.int32), rv, rl, run_count=rc)
    out["run_values"], out["run_lengths"], out["run_count"] = rv.numpy(), rl.numpy(), rc.numpy()
    m = rng.random((30, 7))
    out["sum_axis0"] = wp.utils.array_sum(wp.array(m, dtype=wp.float64), axis=0).numpy()
    out["inner"] = np.asarray(wp.utils.array_inner(wp.array(m, dtype=wp.float64), wp.array(m, dtype=wp.float64)))
    # same shapes: Warp 1.19's flattening path (arrays of different dimensions) reads float64 input wrongly
    cast = wp.zeros((3, 7), dtype=wp.float16)
    wp.utils.array_cast(wp.array(m[:3] * 100.0, dtype=wp.float64), cast)
    out["cast"] = cast.numpy()
    return out
'''


def test_results_are_warps(tmp_path):
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "array_algorithms")
    for key, value in warp.items():
        if key in ("sum_axis0", "inner"):  # summation order may differ: a few ulps
            np.testing.assert_allclose(ours[key], value, rtol=1e-13, err_msg=key)
        else:
            np.testing.assert_array_equal(ours[key], value, err_msg=key)
