"""kernels.diagnostics: versions read from the components themselves; native libraries checked when loaded."""

import types

import pytest

import kernels as wp
from kernels import diagnostics
from kernels.compiler import build, library_version


def test_native_libraries_report_the_toolkit_version():
    assert diagnostics.get_warp_version() == wp.config.version
    assert diagnostics.get_warp_clang_version() == wp.config.version
    lib = build.load_native_library("runtime")
    # the loaded library answers for itself: another expected version is refused, naming both
    with pytest.raises(RuntimeError, match="Version mismatch") as e:
        library_version.verify_library_version(lib, "runtime", library_version.SYMBOL, "9.9.9")
    assert "9.9.9" in str(e.value) and wp.config.version in str(e.value)


def test_version_check_refusals():
    verify = library_version.verify_library_version
    with pytest.raises(RuntimeError, match="does not export the version symbol 'v'"):
        verify(types.SimpleNamespace(), "lib", "v", "1.0.0")
    with pytest.raises(RuntimeError, match="empty version"):
        verify(types.SimpleNamespace(v=lambda: b""), "lib", "v", "1.0.0")
    with pytest.raises(RuntimeError, match="empty version"):
        verify(types.SimpleNamespace(v=lambda: None), "lib", "v", "1.0.0")

    def boom():
        raise ValueError("native call failed")

    with pytest.raises(RuntimeError, match="Failed to read") as e:
        verify(types.SimpleNamespace(v=boom), "lib", "v", "1.0.0")
    assert isinstance(e.value.__cause__, ValueError)
    verify(types.SimpleNamespace(v=lambda: b"1.0.0"), "lib", "v", "1.0.0")


def test_print_diagnostics(capsys):
    info = wp.print_diagnostics()
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Software"
    assert info["warp_python"] == info["warp_native"] == info["warp_clang"] == wp.config.version
    assert info["host_compiler"] == build.compiler_identity(build.find_cxx()) and info["host_compiler"] in out
    assert info["devices"][0]["alias"] == "cpu"
    assert isinstance(info["debug"], bool) and isinstance(info["cubql_enabled"], bool)
    assert info["libmathdx"] == "" and info["mathdx_enabled"] is False
