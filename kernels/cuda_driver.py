"""Thin access to the CUDA driver through cuda-python, loaded lazily; absent driver or GPU means zero devices."""

from __future__ import annotations

_count = None


def device_count() -> int:
    global _count
    if _count is None:
        _count = 0
        try:
            from cuda.bindings import driver
            (err,) = driver.cuInit(0)
            if err == driver.CUresult.CUDA_SUCCESS:
                err, n = driver.cuDeviceGetCount()
                if err == driver.CUresult.CUDA_SUCCESS:
                    _count = int(n)
        except Exception:  # no cuda-python, no driver library: a CPU-only machine
            _count = 0
    return _count


def synchronize_all():
    """Wait for all work of the current CUDA context; raises naming the driver call if it fails."""
    if device_count() == 0:
        return
    from cuda.bindings import driver
    (err,) = driver.cuCtxSynchronize()
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuCtxSynchronize failed: {err.name}")
