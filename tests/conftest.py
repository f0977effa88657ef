"""Test fixtures shared by the whole suite: the device parameterisation and a private compile cache."""

import os
import tempfile

import pytest

import kernels as wp

# A fresh cache per test session keeps runs independent of what an earlier run left on disk, unless the caller
# points KERNELS_CACHE_DIR somewhere on purpose (CI may, to reuse builds between steps).
if "KERNELS_CACHE_DIR" not in os.environ:
    wp.config.cache_dir = tempfile.mkdtemp(prefix="kernels-test-cache-")


def _devices():
    """The devices of the `device` fixture: the CPU, and the first GPU when one is usable. KERNELS_TEST_DEVICES
    (comma-separated, e.g. "cuda:0") narrows them: tools/gpu_check.sh runs only the GPU half on a lent GPU."""
    devices = ["cpu"]
    if wp.get_cuda_device_count() > 0:
        devices.append("cuda:0")
    wanted = os.environ.get("KERNELS_TEST_DEVICES")
    if wanted:
        devices = [d for d in devices if d in wanted.split(",")]
    return devices


@pytest.fixture(params=_devices())
def device(request):
    """Every device test runs on the CPU, and on the first GPU when there is one."""
    marker = request.node.get_closest_marker("cpu_only")
    if marker is not None and request.param != "cpu":
        pytest.skip(f"CPU only: {marker.args[0]}")
    return request.param


def pytest_configure(config):
    config.addinivalue_line("markers", "cpu_only(reason): a device test that runs on the CPU alone, and why "
                                       "(skipped on CUDA devices with that reason)")
