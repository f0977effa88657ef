"""Test fixtures shared by the whole suite: the device parameterisation and a private compile cache."""

import os
import tempfile

import pytest

import kernels as wp

# A fresh cache per test session keeps runs independent of what an earlier run left on disk, unless the caller
# points KERNELS_CACHE_DIR somewhere on purpose (CI may, to reuse builds between steps).
# Under pytest-xdist (the README's test command runs one worker per core) the workers of one run share one cache,
# named by the run's id, so a module one worker built is loaded by the others instead of built again; concurrent
# builds of one entry are safe (kernels/compiler/build.py renames whole entries into place).
if "KERNELS_CACHE_DIR" not in os.environ:
    _run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if _run_id:
        wp.config.cache_dir = os.path.join(tempfile.gettempdir(), f"kernels-test-cache-{_run_id}")
        os.makedirs(wp.config.cache_dir, mode=0o700, exist_ok=True)
    else:
        wp.config.cache_dir = tempfile.mkdtemp(prefix="kernels-test-cache-")
    # ... and so do the processes the tests start (`sim` commands, tools, Warp's files): what the suite built is
    # loaded there, not built again in the user's cache (cold on CI); xdist's workers inherit it from the controller.
    os.environ["KERNELS_CACHE_DIR"] = wp.config.cache_dir

# The first cold compile of the session says so on stderr (config.compile_notice); which test compiles first depends
# on the selection, and tests compare stderr line by line: off in this process (tests/test_first_run.py checks it
# in processes of its own).
wp.config.compile_notice = False

# The suite runs taped rollouts as the `sim` CLI does, with freed host blocks kept for reuse
# (kernels/runtime/host_memory.py; importing kernels no longer sets it). tests/test_architecture.py checks that the
# import alone does not.
wp.keep_freed_host_memory()
# Every compile in the suite checks the IR against its schema after every pass (passes/verify.py), also in the
# child processes some tests start (the Warp suite runs each of its files in one).
wp.config.verify_ir = True
os.environ["KERNELS_VERIFY_IR"] = "1"


if os.environ.get("KERNELS_EMULATE_CUDA") == "1":  # the emulated cuda:0 of tests/_cuda_emulation.py, session-wide
    from _cuda_emulation import install as _install_emulation
    _install_emulation(pytest.MonkeyPatch())


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
    marker = request.node.get_closest_marker("cuda_gap")
    if marker is not None and request.param != "cpu":
        # a capability the CUDA backend lacks yet: the test must fail there with the refusal that says so
        request.applymarker(pytest.mark.xfail(reason=f"not on CUDA yet: {marker.args[0]}", raises=wp.LaunchError,
                                              strict=True))
    return request.param


def pytest_configure(config):
    config.addinivalue_line("markers", "cpu_only(reason): a device test that runs on the CPU alone, and why "
                                       "(skipped on CUDA devices with that reason)")
    config.addinivalue_line("markers", "cuda_gap(reason): a device test of a capability the CUDA backend lacks "
                                       "yet; on CUDA devices it must fail with a LaunchError (strict xfail)")


def pytest_runtest_logreport(report):
    """KERNELS_TEST_REPORT=path: append each test's outcome (and the end of a failure's report) to `path` as it
    happens, so that a run cut short by a time limit (tools/gpu_check.sh on a lent GPU) still says what ran."""
    path = os.environ.get("KERNELS_TEST_REPORT")
    if not path or (report.when != "call" and report.outcome == "passed"):
        return
    if getattr(report, "node", None) is not None:  # pytest-xdist's controller relaying a worker's report
        return
    outcome = "XFAIL" if getattr(report, "wasxfail", None) is not None else report.outcome.upper()
    line = f"{outcome} {report.nodeid} ({report.when}, {report.duration:.1f} s)\n"
    if report.outcome == "failed":
        text = str(report.longrepr)
        line += "    " + text[-1500:].replace("\n", "\n    ") + "\n"
    elif report.outcome == "skipped" and isinstance(report.longrepr, tuple):
        line += f"    {report.longrepr[2]}\n"
    with open(path, "a") as f:
        f.write(line)
