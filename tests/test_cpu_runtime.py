"""The CPU runtime's thread pool (kernels/runtime/thread_pool.py, native/thread_pool.cpp): the thread count comes from
`wp.config.cpu_threads`, $KERNELS_NUM_THREADS, $OMP_NUM_THREADS or the usable cores (affinity and cgroup quota);
launches use no more threads than that; results do not depend on the thread count (bit for bit without atomics);
launches from two Python threads at once and launches in a forked child are safe; `sim --threads` sets it."""

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import kernels as wp
from autodiff import Tape
from kernels.runtime import thread_pool as runtime

pytestmark = pytest.mark.skipif(wp.config.cpu_runtime != "pool", reason="tests of the pool runtime")


@pytest.fixture
def threads_setting():
    """Restores wp.config.cpu_threads after the test."""
    before = wp.config.cpu_threads
    yield
    wp.config.cpu_threads = before
    runtime.apply()


@wp.kernel
def busy_work(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    acc = float(0.0)
    for k in range(200):
        acc = acc + wp.sin(v * float(k) * 0.001)
    y[i] = acc


@wp.kernel
def atomic_total(x: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i] * x[i])


@wp.kernel
def gather_loss(x: wp.array(dtype=float), idx: wp.array(dtype=int), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.sin(x[idx[i]]) * x[i])


N = 200_000


def _inputs():
    rng = np.random.default_rng(7)
    return wp.array(rng.uniform(-1.0, 1.0, N).astype(np.float32), dtype=float)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_the_thread_count_setting_is_honoured(threads_setting, count):
    wp.config.cpu_threads = count
    x, y = _inputs(), wp.zeros(N, dtype=float)
    seen = set()
    for _ in range(5):
        wp.launch(busy_work, N, inputs=[x, y])  # tens of milliseconds: every worker wakes up in time
        assert runtime.threads() == count
        used = runtime.last_launch_threads() if count > 1 else {0}
        assert used <= set(range(count)), f"threads {sorted(used)} ran a launch limited to {count}"
        seen |= used
    assert len(seen) == count, f"{count} threads asked for, {sorted(seen)} took part"


def test_environment_and_setting_precedence(tmp_path):
    probe = ("import json, kernels as wp; from kernels.runtime import thread_pool as runtime; "
             "print(json.dumps(runtime.resolve_threads()))")

    def resolved(**env):
        full = {k: v for k, v in os.environ.items() if k not in ("KERNELS_NUM_THREADS", "OMP_NUM_THREADS")}
        full.update(env)
        out = subprocess.run([sys.executable, "-c", probe], env=full, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert resolved() == runtime.available_cpus()
    assert resolved(OMP_NUM_THREADS="3") == 3
    assert resolved(OMP_NUM_THREADS="2,1") == 2
    assert resolved(KERNELS_NUM_THREADS="5", OMP_NUM_THREADS="3") == 5
    bad = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, KERNELS_NUM_THREADS="many"))
    assert bad.returncode != 0 and "$KERNELS_NUM_THREADS must be a positive integer" in bad.stderr


def test_bad_thread_counts_are_refused(threads_setting):
    wp.config.cpu_threads = 0
    with pytest.raises(ValueError, match="wp.config.cpu_threads must be a positive integer"):
        runtime.apply()


def test_available_cpus_follow_the_affinity_mask():
    assert runtime.available_cpus() <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize("files, expected", [
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu.max": "150000 100000\n"}, 1.5),
    ({"cpu/cpu.cfs_quota_us": "200000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 2.0),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
])
def test_cgroup_cpu_quota(tmp_path, files, expected):
    for rel, text in files.items():
        path = tmp_path / "cg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "self_cgroup").write_text("0::/\n" if "cpu.max" in files else "4:cpu,cpuacct:/\n")
    assert runtime.cgroup_cpu_quota(str(tmp_path / "cg"), str(tmp_path / "self_cgroup")) == expected


def test_results_are_bit_identical_across_thread_counts_without_atomics(threads_setting):
    x = _inputs()
    results = []
    for count in (1, 2, 3, 4):
        wp.config.cpu_threads = count
        y = wp.zeros(N, dtype=float)
        wp.launch(busy_work, N, inputs=[x, y])
        results.append(y.numpy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_atomics_and_gradients_agree_across_thread_counts(threads_setting):
    x = _inputs()
    idx = wp.array(np.random.default_rng(1).integers(0, N, N).astype(np.int32), dtype=int)
    totals, grads = [], []
    for count in (1, 2, 3):
        wp.config.cpu_threads = count
        total = wp.zeros(1, dtype=float)
        wp.launch(atomic_total, N, inputs=[x, total])
        totals.append(total.numpy()[0])
        xg = wp.array(x.numpy(), dtype=float, requires_grad=True)
        loss = wp.zeros(1, dtype=float, requires_grad=True)
        tape = Tape()
        with tape:
            wp.launch(gather_loss, N, inputs=[xg, idx, loss])
        tape.backward(loss=loss)
        grads.append(xg.grad.numpy().copy())
    np.testing.assert_allclose(totals, totals[0], rtol=1e-4)
    for g in grads[1:]:
        np.testing.assert_allclose(g, grads[0], rtol=1e-5, atol=1e-6)


def test_launches_from_two_python_threads_at_once(threads_setting):
    wp.config.cpu_threads = 2
    x = _inputs()
    expected = wp.zeros(N, dtype=float)
    wp.launch(busy_work, N, inputs=[x, expected])
    expected = expected.numpy()
    failures = []

    def worker():
        y = wp.zeros(N, dtype=float)
        for _ in range(10):
            y.zero_()
            wp.launch(busy_work, N, inputs=[x, y])
            if not np.array_equal(y.numpy(), expected):
                failures.append("a launch from a second Python thread gave a different result")

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_launches_in_parallel(threads_setting):
    wp.config.cpu_threads = 2
    x = _inputs()
    y = wp.zeros(N, dtype=float)
    wp.launch(busy_work, N, inputs=[x, y])  # the pool's workers exist in the parent
    expected = y.numpy().copy()
    pid = os.fork()
    if pid == 0:  # the child: its pool has no workers until the next launch starts them
        code = 1
        try:
            y2 = wp.zeros(N, dtype=float)
            wp.launch(busy_work, N, inputs=[x, y2])
            code = 0 if np.array_equal(y2.numpy(), expected) and runtime.threads() == 2 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_sim_threads_option(threads_setting, tmp_path):
    from sim import cli
    scene = os.path.join(os.path.dirname(__file__), "..", "scenes", "cloth.yaml")
    out = tmp_path / "cloth.usda"
    code = cli.main(["run", scene, "--frames", "1", "--out", str(out), "--quiet", "--threads", "1"])
    assert code == 0
    assert wp.config.cpu_threads == 1 and runtime.threads() == 1
    with pytest.raises(SystemExit):
        cli.main(["run", scene, "--threads", "0"])
