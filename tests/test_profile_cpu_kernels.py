"""tools/profile_cpu_kernels.py: the per-kernel profile of the many-world cloth step, and its hand-written C++
triangle loops doing the kernel's arithmetic (a benchmark's comparison is only worth its figures if the two compute
the same forces)."""

import numpy as np

import kernels as wp
from tools import profile_cpu_kernels as profile


def test_profile_rows_and_hand_written_triangle_loops(tmp_path):
    wp.config.cpu_threads = 1
    runner, rows, step_us = profile.profile_step(worlds=2, steps=1, repeats=1)
    model = runner.model
    by_name = {row[0]: row for row in rows}
    # one launch per kernel per step, each over all elements of both worlds
    assert by_name["eval_triangle_forces"][2:4] == (1.0, model.tri_count)
    assert by_name["eval_bending_forces"][3] == model.edge_count
    assert by_name["eval_shape_contact_forces"][3] % model.particle_count == 0
    assert by_name["integrate_particles"][3] == model.particle_count
    assert step_us > 0 and all(row[4] > 0 for row in rows)

    comparison = profile.triangle_comparison(runner, repeats=1, folder=str(tmp_path))
    assert [row[0] for row in comparison][0].startswith("generated")
    # the same forces: only the placement of fused multiply-adds differs (the membrane strain 0.5 (|f|^2 - 1)
    # cancels, which magnifies rounding); a wrong index, pose layout or formula is off by orders more
    for name, us, ns, difference in comparison[1:]:
        assert difference < 1e-3, (name, difference)
        assert us > 0 and ns > 0
    assert "eval_triangle_forces" in profile.render(rows, step_us, 2, comparison)


def test_xpbd_profile_counts_each_iteration_launch():
    """--solver xpbd: the constraint kernels run once per Jacobi iteration, the per-step ones once."""
    wp.config.cpu_threads = 1
    runner, rows, step_us = profile.profile_step(worlds=2, steps=1, repeats=1, solver="xpbd")
    model, iterations = runner.model, runner.solver.iterations
    by_name = {row[0]: row for row in rows}
    assert by_name["solve_triangle_edges"][2:4] == (float(iterations), 3 * model.tri_count)
    assert by_name["solve_shape_contacts"][2] == float(iterations)
    assert by_name["predict_positions"][2:4] == (1.0, model.particle_count)
    assert by_name["place_shapes"][2:4] == (1.0, model.shape_count)
    text = profile.render(rows, step_us, 2, None, "xpbd")
    assert text.startswith("cloth 32x32 XPBD, 2 worlds") and "solve_bending" in text


def test_flop_counts_cover_every_kernel_of_the_step():
    semi = {"eval_triangle_forces", "eval_bending_forces", "eval_shape_contact_forces", "integrate_particles"}
    xpbd = {"solve_triangle_edges", "solve_bending", "solve_shape_contacts", "gather_corrections",
            "apply_corrections", "predict_positions", "update_velocities"}
    assert set(profile.FLOPS_PER_ELEMENT) == semi | xpbd
    assert all(isinstance(v, int) and v > 0 for v in profile.FLOPS_PER_ELEMENT.values())


def test_two_thread_profile_reports_wall_time_and_shared_launches(monkeypatch):
    """--threads 2: every launch above the parallel threshold says whether both pool threads took part."""
    monkeypatch.setattr(wp.config, "cpu_threads", 2)
    monkeypatch.setattr(wp.config, "cpu_parallel_threshold", 256)
    runner, rows, step_us = profile.profile_step(worlds=2, steps=2, repeats=1)
    by_name = {row[0]: row for row in rows}
    for name in ("eval_triangle_forces", "eval_bending_forces", "integrate_particles"):
        wall, shared = by_name[name][6:8]
        assert wall > 0 and 0.0 <= shared <= 1.0
    assert by_name["place_shapes"][7] is None  # 3 shapes: below the threshold, never parallel
    assert "shared" in profile.render(rows, step_us, 2, None, threads=2)
