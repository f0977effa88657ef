"""What Warp's example programs need from the language and the shim (issue 34): loops over a query held in a
variable, Python's scoping of a variable first assigned in a loop, `wp.ScopedTimer`, and `warp_shim`'s
`warp.render`, `warp.examples` and refusals. Warp's examples themselves run in tests/warp_compat."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernels as wp
from autodiff import gradcheck


@wp.kernel
def count_neighbours_twice(grid: wp.uint64, points: wp.array[wp.vec3], radius: float, first: wp.array[int],
                           second: wp.array[int]):
    i = wp.tid()
    neighbours = wp.hash_grid_query(grid, points[i], radius)
    n = int(0)
    for j in neighbours:
        if wp.length(points[j] - points[i]) <= radius:
            n += 1
    first[i] = n
    m = int(0)
    for j in neighbours:  # the query is used up, as in Warp: no iteration
        m += 1
    second[i] = m


def test_loop_over_a_query_held_in_a_variable():
    rng = np.random.default_rng(3)
    p = rng.random((200, 3)).astype(np.float32)
    points = wp.array(p, dtype=wp.vec3)
    grid = wp.HashGrid(8, 8, 8)
    grid.build(points, 0.15)
    first, second = wp.zeros(200, dtype=int), wp.zeros(200, dtype=int)
    wp.launch(count_neighbours_twice, dim=200, inputs=[grid.id, points, 0.15, first, second])
    # brute force, in the kernel's float32 arithmetic
    d = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(-1, dtype=np.float32))
    np.testing.assert_array_equal(first.numpy(), (d <= np.float32(0.15)).sum(1))
    assert not second.numpy().any()


@wp.kernel
def last_iteration_value(x: wp.array[float], n: int, y: wp.array[float]):
    t = float(0.0)
    for k in range(n):
        d = x[0] * float(k + 1) + wp.sin(t)
        t = t + d * x[1]
    y[0] = d * t  # d: read after the loop, its last iteration's value (Python's scoping, as Warp allows)


def test_variable_first_assigned_in_a_loop_is_read_after_it():
    x = wp.array(np.array([0.7, 0.3]), dtype=float)
    y = wp.zeros(1, dtype=float)
    wp.launch(last_iteration_value, dim=1, inputs=[x, 4, y])
    t = 0.0
    for k in range(4):
        d = 0.7 * (k + 1) + np.sin(t)
        t = t + d * 0.3
    assert y.numpy()[0] == pytest.approx(d * t, rel=1e-5)


def test_variable_first_assigned_in_a_loop_gradient():
    def fn(x):
        y = wp.zeros(1, dtype=wp.float64, requires_grad=True)
        wp.launch(last_iteration_value64, dim=1, inputs=[x, 3, y])
        return y

    gradcheck(fn, [wp.array(np.array([0.7, 0.3]), dtype=wp.float64)])


@wp.kernel
def last_iteration_value64(x: wp.array[wp.float64], n: int, y: wp.array[wp.float64]):
    t = wp.float64(0.0)
    for k in range(n):
        d = x[0] * wp.float64(k + 1) + wp.sin(t)
        t = t + d * x[1]
    y[0] = d * t


@wp.kernel
def assigned_in_nested_loops(x: wp.array[float], flag: int, y: wp.array[float]):
    total = float(0.0)
    if flag != 0:
        for c in range(3):
            for s in range(2):
                last = x[s] * float(c + 1)  # read after both loops
                total += last
        y[1] = last
    else:
        for last in range(4):  # the same name as a loop variable in the other branch: not read after the loops
            total += float(last)
    y[0] = total


def test_variable_first_assigned_in_nested_loops():
    x = wp.array(np.array([0.5, 2.0]), dtype=float)
    y = wp.zeros(2, dtype=float)
    wp.launch(assigned_in_nested_loops, dim=1, inputs=[x, 1, y])
    np.testing.assert_allclose(y.numpy(), [2.5 * (1 + 2 + 3), 2.0 * 3], rtol=1e-6)
    wp.launch(assigned_in_nested_loops, dim=1, inputs=[x, 0, y])
    assert y.numpy()[0] == 6.0


@wp.kernel
def loop_variable_reused_in_a_while(ancestor: wp.array[int], h: wp.array[float]):
    i = wp.tid()
    for a in range(3):
        for d in range(a):
            h[d] += 1.0
        j = ancestor[i]
        while j >= 0:
            for d in range(2):  # `d` again: assigned by its loop before any read, never carried out of the while
                h[d] += 10.0
            j = ancestor[j]


def test_a_loop_variable_reused_in_an_inner_loop_is_not_carried():
    h = wp.zeros(2, dtype=float)
    wp.launch(loop_variable_reused_in_a_while, dim=1, inputs=[wp.array(np.array([1, -1]), dtype=int), h])
    np.testing.assert_array_equal(h.numpy(), [2.0 + 30.0, 1.0 + 30.0])


def test_scoped_timer_records_and_prints(capsys):
    times = {}
    with wp.ScopedTimer("block", dict=times) as timer:
        sum(range(1000))
    with wp.ScopedTimer("quiet", print=False, dict=times):
        pass
    with wp.ScopedTimer("off", active=False) as off:
        pass
    assert times["block"] == [timer.elapsed] and timer.elapsed > 0.0 and len(times["quiet"]) == 1
    assert off.elapsed == 0.0
    assert capsys.readouterr().out == f"block took {timer.elapsed:.2f} ms\n"


def test_synchronizing_a_program_that_used_no_gpu_loads_no_cuda_driver():
    """wp.synchronize() (and each ScopedTimer's exit) waits only for the CUDA devices the program used: with none,
    it returns without loading the driver (which cost 47 ms of a small CPU example's run)."""
    import subprocess
    import sys

    code = ("import kernels as wp\n"
            "from kernels.runtime import cuda_driver\n"
            "a = wp.zeros(4)\n"
            "wp.synchronize()\n"
            "with wp.ScopedTimer('t', print=False):\n"
            "    pass\n"
            "print(cuda_driver._driver is None and cuda_driver._count is None)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stdout + out.stderr


def _profiled_work():
    return sum(range(1000))


def test_scoped_timer_detailed_profiles_the_block(capsys):
    with wp.ScopedTimer("profiled", detailed=True) as timer:
        _profiled_work()
    out = capsys.readouterr().out
    assert "function calls" in out.splitlines()[0]  # pstats' header: "<n> function calls in <t> seconds"
    assert "_profiled_work" in out  # the block's own Python calls are in the statistics
    assert out.endswith(f"profiled took {timer.elapsed:.2f} ms\n")


def test_transform_expand():
    t = wp.transform_expand([1, 2, 3, 0.0, 0.0, 0.6, 0.8])
    assert t == wp.transformf(p=(1.0, 2.0, 3.0), q=(0.0, 0.0, 0.6, 0.8))
    with pytest.raises(ValueError, match="7 numbers"):
        wp.transform_expand([1, 2, 3])


RENDER_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import warp as wp
    import warp.render
    import warp.examples
    import os

    r = wp.render.UsdRenderer(sys.argv[1], fps=30)
    r.render_ground(size=5.0)
    for frame in range(3):
        r.begin_frame(frame / 30.0)
        r.render_points("points", np.full((4, 3), float(frame)), radius=0.1, colors=(1.0, 0.0, 0.0))
        r.render_mesh("tri", np.eye(3) * (frame + 1), np.array([0, 1, 2]))
        r.render_sphere("ball", (0.0, frame, 0.0), (0.0, 0.0, 0.0, 1.0), 0.5)
        r.render_ref("bunny", os.path.join(warp.examples.get_asset_directory(), "bunny.usd"),
                     (frame, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0))
        r.end_frame()
    r.save()
    try:
        wp.render.OpenGLRenderer()
    except RuntimeError as e:
        print("refused:", e)
""")


def test_usd_renderer_writes_through_the_toolkit_writer(tmp_path):
    pytest.importorskip("warp", reason="warp-lang (a test extra) holds the example assets")
    from pxr import Usd, UsdGeom

    script, stage_path = tmp_path / "render.py", tmp_path / "out.usd"
    script.write_text(RENDER_SCRIPT)
    out = subprocess.run([sys.executable, "-m", "warp_shim", str(script), str(stage_path)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "refused: warp.render.OpenGLRenderer" in out.stdout and "sim view" in out.stdout
    stage = Usd.Stage.Open(str(stage_path))
    assert stage.GetTimeCodesPerSecond() == 30 and (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0, 2)
    points = UsdGeom.Points(stage.GetPrimAtPath("/World/points"))
    np.testing.assert_allclose(np.array(points.GetPointsAttr().Get(2)), np.full((4, 3), 2.0))
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/tri"))
    np.testing.assert_allclose(np.array(mesh.GetPointsAttr().Get(1)), np.eye(3) * 2)
    ball = UsdGeom.Xformable(stage.GetPrimAtPath("/World/ball"))
    assert ball.ComputeLocalToWorldTransform(1).ExtractTranslation()[1] == pytest.approx(1.0)
    bunny = stage.GetPrimAtPath("/World/bunny")
    assert bunny.HasAuthoredReferences() and any(p.IsA(UsdGeom.Mesh) for p in Usd.PrimRange(bunny))


def test_importing_warp_render_does_not_import_the_simulator(tmp_path):
    # Warp programs import warp.render at their top whether or not they render; importing `sim` (its solvers'
    # kernels defined) cost small examples 0.6-0.8 s, most of their run. `sim` comes when a renderer is made.
    script = tmp_path / "imports_render.py"
    script.write_text("import sys\nimport warp as wp\nimport warp.render\n"
                      "print(sorted(m for m in sys.modules if m == 'sim' or m.startswith('sim.')))\n")
    out = subprocess.run([sys.executable, "-m", "warp_shim", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_fem_and_sparse_are_refused_in_one_line(tmp_path):
    script = tmp_path / "uses_fem.py"
    script.write_text("import warp as wp\nimport warp.sparse\n")
    out = subprocess.run([sys.executable, "-m", "warp_shim", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"{script}:2: warp.sparse (Warp's sparse-matrix library) is out of scope for this toolkit's Warp shim: "
        "only the kernel layer (warp, warp.optim, warp.render, warp.examples) is provided"]


def test_shim_compiles_without_fused_multiply_add():
    # Warp's CPU backend rounds every operation; warp_shim makes kernels do the same (tests/warp_compat's
    # examples then agree with Warp to the bit)
    code = ("import warp_shim, kernels; from kernels.compiler.build import cpu_flags; a = cpu_flags(False); "
            "warp_shim.install(); print('-ffp-contract=off' in a, '-ffp-contract=off' in cpu_flags(False))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "True"], out.stderr


def test_a_builtin_is_callable_without_its_prefix_and_an_unknown_name_is_refused():
    @wp.kernel
    def bare(out: wp.array(dtype=float)):
        out[0] = sin(0.5) + wp.cos(0.5)  # noqa: F821  (resolved as Warp does: a builtin's own name)
        expect_eq(2, 2)  # noqa: F821

    out = wp.zeros(1, dtype=float)
    wp.launch(bare, 1, [out])
    assert out.numpy()[0] == pytest.approx(np.sin(0.5) + np.cos(0.5), rel=1e-6)

    @wp.kernel
    def unknown(out: wp.array(dtype=float)):
        out[0] = not_a_builtin(1.0)  # noqa: F821

    with pytest.raises(wp.CompileError, match="'not_a_builtin' is not defined"):
        wp.launch(unknown, 1, [out])


def test_a_func_native_snippet_runs_in_a_kernel():
    @wp.func_native("return a + b;")
    def add_native(a: float, b: float) -> float: ...

    @wp.kernel
    def uses(out: wp.array(dtype=float)):
        out[0] = add_native(1.0, 2.0)

    out = wp.zeros(1, dtype=float)
    wp.launch(uses, 1, [out])
    assert out.numpy()[0] == 3.0  # more in tests/test_func_native.py


def test_device_listing():
    devices = wp.get_devices()
    assert devices[0] == wp.get_device("cpu") and devices[1:] == wp.get_cuda_devices()
    assert len(wp.get_cuda_devices()) == wp.get_cuda_device_count()
    assert wp.is_device_available("cpu") and wp.is_device_available(wp.get_device("cpu"))
    assert not wp.is_device_available("cuda:99")
