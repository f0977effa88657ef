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
    devices = ["cpu"]
    if wp.get_cuda_device_count() > 0:
        devices.append("cuda:0")
    return devices


@pytest.fixture(params=_devices())
def device(request):
    """Every device test runs on the CPU, and on the first GPU when there is one."""
    return request.param
