"""Cooperative CPU blocks (`wp.config.enable_cpu_blocks`, kernels/runtime/cpu_blocks.py): the block_dim a launch takes
effect with, wp.block_dim() in kernels and the functions they call, launch_tiled lanes of kernels without tiles, the
tape and recorded commands keeping the effective block_dim, the loaded module variants; compared with real
warp-lang where values are compared, gradients gradchecked, and the tile launches that one lane would compute
differently from Warp's cooperative lanes refused."""

import contextlib
import importlib.util

import numpy as np
import pytest

import _warp_reference
import kernels as wp
from autodiff import Tape, gradcheck
from kernels.runtime.cpu_blocks import resolve_launch_block_dim


@contextlib.contextmanager
def _cpu_blocks(enabled=True):
    previous, wp.config.enable_cpu_blocks = wp.config.enable_cpu_blocks, enabled
    try:
        yield
    finally:
        wp.config.enable_cpu_blocks = previous


_PROGRAM = '''
import numpy as np


@wp.func
def nested(value: int):
    return wp.block_dim() * 100000 + value


@wp.kernel
def info_2d(out: wp.array2d(dtype=wp.int32)):
    i, j = wp.tid()
    out[i, j] = nested(i * 100 + j)


@wp.kernel
def counts(out: wp.array(dtype=wp.int32)):
    wp.atomic_add(out, 0, 1)


@wp.kernel
def lanes(out: wp.array2d(dtype=wp.int32)):
    i, lane = wp.tid()
    out[i, lane] = i * 1000 + lane + wp.block_dim() * 10


@wp.kernel
def block_scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i] * float(wp.block_dim())


@wp.func
def size_of_block(_value: float):
    return float(wp.block_dim())


def run(wp, Tape):
    result = {}
    for enabled in (False, True):
        wp.config.enable_cpu_blocks = enabled
        tag = "on" if enabled else "off"
        out = wp.zeros((3, 5), dtype=wp.int32, device="cpu")
        wp.launch(info_2d, dim=(3, 5), outputs=[out], block_dim=4, device="cpu")  # 15 threads: a tail of 3
        result["info_" + tag] = out.numpy()
        count = wp.zeros(1, dtype=wp.int32, device="cpu")
        wp.launch_tiled(counts, dim=[3], inputs=[count], block_dim=8, device="cpu")
        wp.launch(counts, dim=5, inputs=[count], block_dim=4, device="cpu")
        result["count_" + tag] = count.numpy()
        per_lane = wp.full((2, 6), -1, dtype=wp.int32, device="cpu")
        wp.launch_tiled(lanes, dim=[2], inputs=[per_lane], block_dim=6 if enabled else 1, device="cpu")
        result["lanes_" + tag] = per_lane.numpy()
        x = wp.array(np.linspace(-1.0, 2.0, 7, dtype=np.float32), requires_grad=True, device="cpu")
        y = wp.zeros_like(x, requires_grad=True)
        tape = Tape()
        with tape:
            wp.launch(block_scale, dim=7, inputs=[x], outputs=[y], block_dim=4, device="cpu")
        wp.config.enable_cpu_blocks = not enabled  # the tape replays with the block_dim the launch ran with
        tape.backward(grads={y: wp.ones_like(y)})
        wp.config.enable_cpu_blocks = enabled
        result["y_" + tag], result["x_grad_" + tag] = y.numpy(), x.grad.numpy()
        values = wp.ones(3, dtype=float, device="cpu")
        result["map_" + tag] = wp.map(size_of_block, values, block_dim=2).numpy()
    wp.config.enable_cpu_blocks = False
    return result
'''


def test_cpu_blocks_are_warps(tmp_path):
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    warp, ours = _warp_reference.both(_PROGRAM, str(tmp_path), "cpu_blocks")
    assert set(warp) == set(ours)
    for key in warp:
        np.testing.assert_array_equal(ours[key], warp[key], err_msg=key)
    # the figures themselves: Warp's numbers are these (not only whatever both agree on)
    assert ours["info_on"][2, 4] == 4 * 100000 + 204 and ours["info_off"][2, 4] == 100000 + 204
    assert ours["count_on"][0] == 3 * 8 + 5 and ours["count_off"][0] == 3 + 5


def test_resolution_follows_warps_rule():
    cpu = wp.get_device("cpu")
    for enabled in (False, True):
        with _cpu_blocks(enabled):
            for requested in (None, -7, 0, 1):
                assert resolve_launch_block_dim(cpu, requested) == 1
            assert resolve_launch_block_dim(cpu, 2) == (2 if enabled else 1)
            assert resolve_launch_block_dim(cpu, 1024) == (1024 if enabled else 1)
            with pytest.raises(ValueError, match="at most 1024 on CPU, got 1025"):
                resolve_launch_block_dim(cpu, 1025)


@wp.kernel
def _squares_times_block(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    i = wp.tid()
    y[i] = x[i] * x[i] * wp.float64(wp.block_dim())


def test_gradient_through_a_block_dim_scaled_kernel():
    x = wp.array(np.linspace(-1.0, 2.0, 9), dtype=wp.float64, requires_grad=True)

    def run(x):
        y = wp.zeros_like(x, requires_grad=True)
        wp.launch(_squares_times_block, dim=9, inputs=[x], outputs=[y], block_dim=4)
        return y

    with _cpu_blocks():
        gradcheck(run, [x])
        y = run(x)
    np.testing.assert_allclose(y.numpy(), 4.0 * x.numpy() ** 2)


@wp.kernel
def _stores_block_dim(out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    out[i] = wp.block_dim()


def test_recorded_command_and_launch_keep_the_effective_block_dim():
    out = wp.zeros(5, dtype=wp.int32)
    with _cpu_blocks():
        command = wp.launch(_stores_block_dim, dim=5, inputs=[out], block_dim=4, record_cmd=True)
        direct = wp.Launch(_stores_block_dim, "cpu", block_dim=4)
    assert command.block_dim == 4 and command.module_exec.block_dim == 4 and direct.block_dim == 4
    assert wp.Launch(_stores_block_dim, "cpu", block_dim=4).block_dim == 1  # CPU blocks off: one lane
    command.launch()  # CPU blocks off by now: the command keeps what it was recorded with
    np.testing.assert_array_equal(out.numpy(), 4)
    with pytest.raises(ValueError, match="at most 1024 on CPU"):
        wp.Launch(_stores_block_dim, "cpu", block_dim=1025)


@wp.kernel(module="unique")
def _loaded_alone(out: wp.array(dtype=wp.int32)):
    out[0] = 1


def test_force_load_records_the_variants_it_loads():
    module, cpu = _loaded_alone.module, wp.get_device("cpu")
    with _cpu_blocks():
        wp.force_load(device="cpu", modules=[module], block_dim=4)
    assert set(module.execs) == {(cpu.context, 4)}
    wp.force_load(device="cpu", modules=[module])  # no block_dim: the variants already loaded
    assert set(module.execs) == {(cpu.context, 4)}
    wp.force_load(device="cpu", modules=[module], block_dim=4)  # CPU blocks off: resolves to 1
    assert set(module.execs) == {(cpu.context, 4), (cpu.context, 1)}
    assert _loaded_alone.lib is not None


@wp.kernel
def _tile_sum_added(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=4)
    s = wp.tile_sum(t)
    wp.atomic_add(out, 0, s[0])


@wp.kernel
def _tile_sum_stored(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=4)
    wp.tile_store(out, wp.tile_sum(t))


def test_tile_kernels_one_lane_would_change_are_refused():
    a = wp.array(np.arange(4, dtype=np.float32))
    out = wp.zeros(1, dtype=float)
    wp.launch_tiled(_tile_sum_added, dim=[1], inputs=[a, out], block_dim=8)  # CPU blocks off: Warp's one lane too
    assert out.numpy()[0] == 6.0
    with _cpu_blocks():
        # each of Warp's 8 lanes adds the sum: one lane here would add it once
        with pytest.raises(wp.LaunchError, match="atomic operation outside tile operations"):
            wp.launch_tiled(_tile_sum_added, dim=[1], inputs=[a, out], block_dim=8)
        with pytest.raises(wp.LaunchError, match="uses tiles and is launched with block_dim=8"):
            wp.launch(_tile_sum_stored, dim=1, inputs=[a, out], block_dim=8)
        out.zero_()
        wp.launch_tiled(_tile_sum_stored, dim=[1], inputs=[a, out], block_dim=8)  # whole-tile work: the same
    assert out.numpy()[0] == 6.0


def test_a_tape_entry_reads_as_warps_launch_record():
    x = wp.array(np.ones(3, dtype=np.float32), requires_grad=True)
    y = wp.zeros_like(x, requires_grad=True)

    @wp.kernel
    def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]

    with _cpu_blocks():
        with Tape() as tape:
            wp.launch(double, dim=3, inputs=[x], outputs=[y], block_dim=2)
    kernel, dim, _, inputs, outputs, device, block_dim, _ = tape.launches[0]
    assert (kernel, dim, inputs[0], outputs[0], device.alias, block_dim) == (double, (3,), x, y, "cpu", 2)
