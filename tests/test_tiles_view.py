"""Tile subscripts with slices and tile_assign (kernels/compiler/passes/typeinfer_tile_slices.py, kernels/native/
tile_slice.h): selections against numpy's, `t[i]` as a row of a 2-d tile, slice assignment and tile_assign with
gradients by central differences (autodiff.gradcheck), the refusals where Warp's shared views would give another
number, and Warp's values on the same program."""

import importlib.util

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck
from kernels.errors import CompileError

import _warp_reference

M, N = 6, 8


@wp.kernel
def selections(x: wp.array2d(dtype=float), a: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
               c: wp.array(dtype=float), d: wp.array(dtype=float), e: wp.array2d(dtype=float), row: int):
    t = wp.tile_load(x, shape=(M, N))
    wp.tile_store(a, t[1:5, ::3])
    wp.tile_store(b, t[::-2, -3:])
    wp.tile_store(c, t[-1, 1::2])
    wp.tile_store(d, t[row])  # a run-time row
    wp.tile_store(e, t[::2][1:, 2:4])


def test_selections_match_numpy(device):
    data = np.arange(M * N, dtype=np.float32).reshape(M, N)
    outs = [wp.zeros(s, dtype=float, device=device) for s in ((4, 3), (3, 3), (4,), (N,), (2, 2))]
    wp.launch_tiled(selections, dim=[1], inputs=[wp.array(data, device=device), *outs, 4], block_dim=32,
                    device=device)
    want = [data[1:5, ::3], data[::-2, -3:], data[-1, 1::2], data[4], data[::2][1:, 2:4]]
    for got, expect in zip(outs, want):
        np.testing.assert_array_equal(got.numpy(), expect)


@wp.kernel
def updates(x: wp.array2d(dtype=wp.float64), v: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    t = wp.tile_load(x, shape=(M, N))
    w = wp.tile_load(v, shape=(2, 4))
    t[1:5:2, ::2] = w * w  # a product, so each adjoint is weighted by the value
    r = wp.tile_zeros(shape=(3, 3), dtype=wp.float64)
    wp.tile_assign(r, t[0:2, 0:2] * t[0:2, 0:2], offset=(1, 1))
    t[5] = t[0] * 2.0
    wp.tile_store(out, t)
    wp.tile_store(out, r, offset=(0, 0))


def test_slice_assignment_and_tile_assign(device):
    rng = np.random.default_rng(8)
    x, v = rng.normal(size=(M, N)), rng.normal(size=(2, 4))
    out = wp.zeros((M, N), dtype=wp.float64, device=device)
    wp.launch_tiled(updates, dim=[1], inputs=[wp.array(x, dtype=wp.float64, device=device),
                                              wp.array(v, dtype=wp.float64, device=device), out], block_dim=32,
                    device=device)
    t = x.copy()
    t[1:5:2, ::2] = v * v
    r = np.zeros((3, 3))
    r[1:3, 1:3] = t[0:2, 0:2] ** 2
    t[5] = t[0] * 2.0
    t[:3, :3] = r
    np.testing.assert_allclose(out.numpy(), t, rtol=1e-15)

    def fn(xa, va):
        o = wp.zeros((M, N), dtype=wp.float64, device=device, requires_grad=True)
        wp.launch_tiled(updates, dim=[1], inputs=[xa, va, o], block_dim=32, device=device)
        return o

    gradcheck(fn, [wp.array(x, dtype=wp.float64, device=device), wp.array(v, dtype=wp.float64, device=device)])


def _refused(source_line):
    ns = {}
    code = ("import kernels as wp\n"
            "@wp.kernel\n"
            "def k(out: wp.array2d(dtype=float)):\n"
            "    t = wp.tile_ones(shape=(4, 4), dtype=float)\n"
            "    v = wp.tile_ones(shape=(2, 4), dtype=float)\n"
            f"    {source_line}\n"
            "    wp.tile_store(out, t)\n")
    return code, ns


@pytest.mark.parametrize("line, message", [
    ("row = t[1]\n    wp.tile_assign(row, wp.tile_ones(shape=4, dtype=float))", "into a view"),
    ("t[0:2, :] += v", "Compound assignment to a tile view"),
    ("t[0:2, :] = 1.0", "requires a tile of matching shape"),
    ("t[0:3, :] = v", "shape mismatch"),
    ("x = t[4, :]", "out of bounds"),
    ("x = t[2:2, :]", "empty tile"),
])
def test_refusals(device, tmp_path, line, message):
    code, _ = _refused(line)
    path = tmp_path / "refused_kernel.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location("refused_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(CompileError, match=message):
        wp.launch_tiled(module.k, dim=[1], inputs=[wp.zeros((4, 4), dtype=float, device=device)], block_dim=32,
                        device=device)


_PROGRAM = '''
import numpy as np


@wp.kernel
def views(x: wp.array2d(dtype=float), v: wp.array2d(dtype=float), out: wp.array2d(dtype=float),
          rows: wp.array2d(dtype=float)):
    t = wp.tile_load(x, shape=(8, 8))
    w = wp.tile_load(v, shape=(2, 8))
    t[2:6:2, :] = w * 3.0
    c = wp.tile_zeros(shape=(8, 1), dtype=float)
    wp.tile_assign(c, wp.tile_view(t, offset=(0, 5), shape=(8, 1)))
    wp.tile_assign(t, wp.tile_map(wp.sin, c), offset=(0, 1))
    wp.tile_store(out, t)
    wp.tile_store(rows, t[::-3, 1::2])


def run(wp, Tape):
    rng = np.random.default_rng(11)
    x = wp.array(rng.normal(size=(8, 8)).astype(np.float32), requires_grad=True)
    v = wp.array(rng.normal(size=(2, 8)).astype(np.float32), requires_grad=True)
    out = wp.zeros((8, 8), dtype=float, requires_grad=True)
    rows = wp.zeros((3, 4), dtype=float, requires_grad=True)
    tape = Tape()
    with tape:
        wp.launch_tiled(views, dim=[1], inputs=[x, v], outputs=[out, rows], block_dim=32)
    seed = np.arange(64, dtype=np.float32).reshape(8, 8)
    tape.backward(grads={out: wp.array(seed), rows: wp.ones((3, 4), dtype=float)})
    return {"out": out.numpy(), "rows": rows.numpy(), "x_grad": x.grad.numpy(), "v_grad": v.grad.numpy()}
'''


def test_values_and_gradients_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "tile_views")
    for key in warp:
        np.testing.assert_allclose(ours[key], warp[key], rtol=1e-6, atol=1e-6, err_msg=key)


@wp.kernel
def tile_lengths(a: wp.array2d(dtype=float), out: wp.array(dtype=int)):
    x = wp.tile_load(a, shape=(3, 5))
    out[0] = wp.static(len(x))
    out[1] = len(x[0])  # a row's length


def test_len_of_a_tile_is_its_first_axis(device):
    out = wp.zeros(2, dtype=int, device=device)
    wp.launch_tiled(tile_lengths, dim=[1], inputs=[wp.zeros((3, 5), dtype=float, device=device)], outputs=[out],
                    block_dim=8, device=device)
    np.testing.assert_array_equal(out.numpy(), [3, 5])
