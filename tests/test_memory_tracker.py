"""kernels.runtime.memory_tracker: allocations counted with their sizes, frees seen, scopes per thread, labels."""

import gc
import io
import threading

import numpy as np
import pytest

import kernels as wp
from kernels.runtime import memory_tracker


def test_counts_sizes_and_frees():
    with wp.ScopedMemoryTracker("sizes", print=False) as tracker:
        tracker.clear()
        a = wp.zeros(1000, dtype=wp.float32, device="cpu")
        b = wp.zeros((10, 3), dtype=wp.vec3d, device="cpu")
        c = wp.array(np.arange(5, dtype=np.int64), dtype=wp.int64)  # a copy: new memory
        view = wp.array(np.arange(5, dtype=np.int64), dtype=wp.int64, copy=False)  # the caller's memory
        s = memory_tracker.stats()
        assert s["total_count"] == 3 and s["live_count"] == 3
        assert s["total_bytes"] == 4000 + 10 * 3 * 3 * 8 + 5 * 8 == s["current_bytes"]
        del a
        gc.collect()
        after = memory_tracker.stats()
    assert after["current_bytes"] == s["current_bytes"] - 4000 and after["live_count"] == 2
    assert after["peak_bytes"] == s["current_bytes"]  # the peak stays
    buf = io.StringIO()
    tracker.report(file=buf)  # after the block: what was recorded
    text = buf.getvalue()
    assert text.startswith("Allocation Tracking Report\n")
    assert "array[vec3d, (10, 3)] : test_memory_tracker.py:" in text and "test_counts_sizes_and_frees()" in text
    del b, c, view


def test_scopes_threads_and_native_labels():
    def worker(name):
        with wp.ScopedMemoryTracker(name, print=False):
            with wp.ScopedMemoryTracker("inner", print=False):
                wp.zeros(8, dtype=float)

    with wp.ScopedMemoryTracker("root", print=False) as tracker:
        tracker.clear()
        threads = [threading.Thread(target=worker, args=(f"thread_{k}",)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with wp.ScopedMemoryTracker("grid", print=False):
            grid = wp.HashGrid(4, 4, 4, device="cpu")
        text = memory_tracker.report_text()
    for scope in ("thread_0/inner", "thread_1/inner", "root/grid"):
        assert f"    {scope}:" in text
    assert "root/grid : (native:hashgrid)" in text
    del grid


def test_off_unless_asked(capsys):
    assert not memory_tracker.is_enabled()
    with pytest.raises(RuntimeError, match="not active"):
        wp.print_memory_report()
    memory_tracker.reset()
    wp.zeros(10)
    assert memory_tracker.stats()["total_count"] == 0
    wp.config.track_memory = True
    try:
        wp.zeros(10)
        wp.print_memory_report()
    finally:
        wp.config.track_memory = False
    assert "    global:\n      cpu: 1 allocs, 40 B" in capsys.readouterr().out
