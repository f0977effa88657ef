"""Our replacement of `warp.tests.unittest_utils` for running Warp's shipped tests on `kernels` (CPU only).

Warp's test modules do `from warp.tests.unittest_utils import *`; this module gives them the helpers they use
(device lists, test registration, output capture, array assertions), written against the public API only.
"""

import contextlib
import ctypes
import ctypes.util
import functools
import io
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import warp as wp

try:  # as Warp's own helper: tests reading USD assets need usd-core (a dependency of this toolkit)
    from pxr import Usd, UsdGeom  # noqa: F401

    USD_AVAILABLE = True
except ImportError:
    USD_AVAILABLE = False
test_mode = "basic"

try:
    LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
except OSError:
    LIBC = None


def get_cpu_test_devices():
    return [wp.get_device("cpu")]


def get_test_devices(mode=None):
    """The CPU only: the compatibility harness does not run CUDA."""
    return [wp.get_device("cpu")]


def get_cuda_test_devices(mode=None):
    return []


def get_selected_cuda_test_devices(mode=None):
    return []


def get_selected_cuda_test_devices_with_mempool(mode=None):
    return []


get_cuda_test_devices_with_mempool = get_selected_cuda_test_devices_with_mempool
# Warp 1.19 keeps the CPU in these lists (its CPU capture allocates through the host allocator, and needs no CUDA
# driver to load modules), so the tests gated by them are CPU tests of Warp's baseline
get_test_devices_with_graph_capture_allocation = get_test_devices
get_test_devices_with_cuda_graph_module_load = get_test_devices
get_test_devices_with_graph_capture_allocation_and_cuda_graph_module_load = get_test_devices


def get_cuda_device_pair_with_peer_access_support(devices=None):
    return None


get_cuda_device_pair_with_mempool_access_support = get_cuda_device_pair_with_peer_access_support


@contextlib.contextmanager
def suppress_native_error_output():
    yield


def make_isolated_kernel(func, **kwargs):
    """A kernel in a module of its own, so that a deliberately broken kernel cannot affect its neighbours."""
    key = f"{func.__module__}.{func.__qualname__}:{func.__code__.co_firstlineno}"
    return wp.kernel(func, module=key, **kwargs)


class StreamCapture:
    """Capture a standard stream at the file-descriptor level (native printf included)."""

    def __init__(self, stream_name):
        self.stream_name = stream_name

    def begin(self):
        if LIBC is not None:
            LIBC.fflush(None)
        self.saved = getattr(sys, self.stream_name)
        self.saved.flush()
        self.target = os.dup(self.saved.fileno())
        self.tempfile = io.TextIOWrapper(tempfile.TemporaryFile(buffering=0), encoding="utf-8", errors="replace",
                                         newline="", write_through=True)
        os.dup2(self.tempfile.fileno(), self.saved.fileno())
        setattr(sys, self.stream_name, self.tempfile)

    def end(self):
        if LIBC is not None:
            LIBC.fflush(None)
        os.dup2(self.target, self.saved.fileno())
        os.close(self.target)
        self.tempfile.seek(0)
        text = self.tempfile.buffer.read()
        self.tempfile.close()
        setattr(sys, self.stream_name, self.saved)
        return text.decode("utf-8", errors="replace")


class StdErrCapture(StreamCapture):
    def __init__(self):
        super().__init__("stderr")


class StdOutCapture(StreamCapture):
    def __init__(self):
        super().__init__("stdout")


class CheckOutput:
    """Fail the test if it prints anything to stdout (as Warp's harness does: e.g. a failed wp.expect_eq)."""

    def __init__(self, test):
        self.test = test

    def __enter__(self):
        self.capture = StdOutCapture()
        self.capture.begin()

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            wp.synchronize()
        finally:
            text = self.capture.end()
        if text:
            print(text.rstrip())
        if exc_type is None and text.strip():
            self.test.fail(f"Unexpected output:\n'{text.rstrip()}'")


def assert_array_equal(result, expect):
    np.testing.assert_equal(result.numpy(), expect.numpy())


def assert_np_equal(result, expect, tol=0.0):
    if tol != 0.0:
        np.testing.assert_allclose(result.flatten(), expect.flatten(), atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(result, expect)


def run_python_subprocess(source, *args, timeout=60, hide_gpu=False, env_updates=None):
    """Run Python source in a child interpreter whose `warp` is this toolkit."""
    env = os.environ.copy()
    env.update(env_updates or {})
    # the child sees what this process sees: `warp` is kernels, `warp.tests` the wheel's files with our helpers
    here = os.path.dirname(os.path.abspath(__file__))
    prelude = (f"import sys as _s; _s.path.insert(0, {here!r}); import runner as _r; "
               "_r.install_kernels_alias(_r.wheel_tests_dir())\n")
    return subprocess.run([sys.executable, "-u", "-c", prelude + source, *args], check=False, capture_output=True,
                          text=True, timeout=timeout, env=env)


def run_test_in_subprocess(test, *, timeout=600, hide_gpu=False, env_updates=None):
    """Isolation is not needed on the CPU-only harness: run the test body in this process."""
    return False


def sanitize_identifier(s):
    s = str(s)
    return s if s.isidentifier() else re.sub(r"\W|^(?=\d)", "_", s)


def create_test_func(func, device, check_output, device_check=None, enable_cpu_blocks=False, **kwargs):
    @functools.wraps(func)
    def test_func(self):
        # as Warp's harness: the test runs with cooperative CPU blocks when it asks for them (kernels refuses a
        # tiled launch then, since its CPU blocks run as one lane: an error, never a different result)
        previous = getattr(wp.config, "enable_cpu_blocks", False)
        if enable_cpu_blocks:
            wp.config.enable_cpu_blocks = True
        try:
            if device_check is not None:
                device_check(self, device)
            if check_output:
                with CheckOutput(self):
                    func(self, device, **kwargs)
            else:
                func(self, device, **kwargs)
        finally:
            wp.config.enable_cpu_blocks = previous

    return test_func


def skip_test_func(self):
    self.skipTest("No suitable devices to run the test.")


def add_function_test(cls, name, func, devices=None, check_output=True, device_check=None, **kwargs):
    if devices is None:
        setattr(cls, name, create_test_func(func, None, check_output, device_check=device_check, **kwargs))
    elif isinstance(devices, list):
        if not devices:
            setattr(cls, name, skip_test_func)
        for device in devices:
            setattr(cls, name + "_" + sanitize_identifier(device),
                    create_test_func(func, device, check_output, device_check=device_check, **kwargs))
    else:
        setattr(cls, name + "_" + sanitize_identifier(devices),
                create_test_func(func, devices, check_output, device_check=device_check, **kwargs))


def add_kernel_test(cls, kernel, dim, name=None, expect=None, inputs=None, devices=None, inputs_factory=None):
    if inputs is not None and inputs_factory is not None:
        raise ValueError("Only one of `inputs` and `inputs_factory` may be provided.")

    def test_func(self, device):
        args = list(inputs_factory(device) if inputs_factory is not None else (inputs or []))
        if expect:
            result = wp.array(expect, dtype=int, device=device)
            output = wp.zeros_like(result)
            args.append(output)
        with CheckOutput(self):
            wp.launch(kernel, dim=dim, inputs=args, device=device)
        if expect:
            assert_array_equal(output, result)

    test_func.__wrapped_kernel__ = kernel
    if name is None:
        name = kernel.key
    for d in devices if devices is not None else get_test_devices():
        def test_func_wrapper(test, device=d):
            test_func(test, device)

        test_func_wrapper.__wrapped_kernel__ = kernel
        setattr(cls, name + "_" + sanitize_identifier(d), test_func_wrapper)


def add_function_test_register_kernel(cls, name, func, devices=None, **kwargs):
    func(None, None, **kwargs, register_kernels=True)
    add_function_test(cls, name, func, devices=devices, **kwargs)
