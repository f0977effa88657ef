"""Argument packing is one layout for both backends: the ctypes structures the launcher fills (launch.args_ctype,
ArrayDescriptor, LaunchBounds, struct ctypes) match the C++ structs of the generated source, field by field, as
compiled for the CPU (g++) and for CUDA (NVRTC, sm_90). The checks are static_asserts appended to the generated
module, so a mismatch is a compile error naming the field. No GPU needed."""

import ctypes
import os
import subprocess
import tempfile

import pytest

import kernels as wp
from kernels.compiler.build import NATIVE_DIR, find_cxx
from kernels.runtime.launch import LaunchBounds, args_ctype
from kernels.compiler.nvrtc import compile_source, render_cuda_source, resource_report


@wp.struct
class Body:
    mass: wp.float16
    pose: wp.transform
    alive: wp.bool
    forces: wp.array(dtype=wp.vec3)
    inertia: wp.mat33d


@wp.kernel
def mixed(flag: wp.bool, small: wp.int8, half: wp.float16, body: Body, x: wp.array(dtype=wp.vec3),
          grid: wp.array2d(dtype=wp.float64), q: wp.quat, n: wp.int64, m: wp.mat22, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = float(small) + float(half) + float(n) + m[0, 0] + q[3] + x[i][0] + float(grid[0, 0]) + \
        float(body.mass) + body.pose.p[0]
    if flag and body.alive:
        out[i] = out[i] + body.forces[i][1] + float(body.inertia[0, 0])


def _asserts(entry: str) -> str:
    """static_asserts of the args struct's size and every field's offset, from the ctypes mirror."""
    c = args_ctype(mixed)
    lines = [f"static_assert(sizeof({entry}_args) == {ctypes.sizeof(c)}, \"size of {entry}_args\");"]
    for name, _ in c._fields_:
        lines.append(f"static_assert(__builtin_offsetof({entry}_args, {name}) == {getattr(c, name).offset}, "
                     f"\"offset of {name}\");")
    lines.append(f"static_assert(sizeof(wp::launch_bounds_t) == {ctypes.sizeof(LaunchBounds)}, \"bounds\");")
    return "\n".join(lines) + "\n"


def _nvrtc_offsetof():
    """Skip, saying why, where this NVRTC's front end lacks __builtin_offsetof (NVRTC 13.0 on the lent GPU
    machines: 'type name is not allowed'); test_the_cuda_args_layout_read_on_the_gpu checks the layout there."""
    try:
        compile_source("struct S { int a; float b; };\nstatic_assert(__builtin_offsetof(S, b) == 4, \"b\");\n",
                       90, "probe.cu", "ptx")
    except wp.NativeCompileError:
        from cuda.bindings import nvrtc
        pytest.skip("this NVRTC (%d.%d) has no __builtin_offsetof; the layout is read on the GPU instead"
                    % tuple(nvrtc.nvrtcVersion()[1:]))


def test_the_cuda_args_struct_matches_the_launchers_layout():
    _nvrtc_offsetof()
    source = render_cuda_source([mixed])
    # compiled to PTX for sm_90 (no GPU needed); __builtin_offsetof: NVRTC has no <cstddef>
    compile_source(source + _asserts("k0_mixed"), 90, "layout.cu", "ptx")


def test_the_cuda_args_layout_read_on_the_gpu():
    """The offsets of the args struct's fields as the device code sees them, written by a kernel, against the
    launcher's ctypes mirror."""
    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device is usable here (the static_assert test checks the layout without one)")
    from kernels.runtime import cuda_driver as cu
    from kernels.runtime.device import current_stream_handle
    c = args_ctype(mixed)
    names = [name for name, _ in c._fields_]
    probe = ("extern \"C\" __global__ void layout_probe(unsigned long long* out) {\n"
             "    k0_mixed_args a;\n    const char* base = (const char*)&a;\n"
             "    out[0] = sizeof(k0_mixed_args);\n    out[1] = sizeof(wp::launch_bounds_t);\n"
             + "".join(f"    out[{2 + k}] = (const char*)&a.{n} - base;\n" for k, n in enumerate(names)) + "}\n")
    device = wp.get_device("cuda:0")
    image, _ = compile_source(render_cuda_source([mixed]) + probe, device.arch, "layout_probe.cu", "cubin")
    fn = cu.module_function(cu.module_load(device.ordinal, image), "layout_probe")
    out = wp.zeros(2 + len(names), dtype=wp.uint64, device=device)
    cu.launch(fn, 1, 1, current_stream_handle(device.ordinal), [ctypes.c_uint64(out.ptr)])
    got = out.numpy().tolist()
    expected = [ctypes.sizeof(c), ctypes.sizeof(LaunchBounds)] + [getattr(c, n).offset for n in names]
    assert got == expected, dict(zip(["size", "bounds size"] + names, zip(got, expected)))


def test_the_cpu_args_struct_matches_the_launchers_layout():
    from kernels.compiler.render import CPU
    from kernels.compiler.render_module import ModuleSource
    from kernels.runtime.module import _callees
    mixed.compile_ir()
    src = ModuleSource(CPU, False)
    for fn in _callees(mixed.ir):
        src.add_function(fn)
    part = src.render_kernel(mixed.ir, "k0_mixed")
    text = src.source([part]) + _asserts("k0_mixed")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "layout.cpp")
        with open(path, "w") as f:
            f.write(text)
        proc = subprocess.run([*find_cxx(), "-std=c++17", "-fsyntax-only", f"-I{NATIVE_DIR}", path],
                              capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_a_wrong_layout_is_caught():
    _nvrtc_offsetof()
    source = render_cuda_source([mixed])
    with pytest.raises(wp.NativeCompileError, match="offset of n"):
        compile_source(source + "static_assert(__builtin_offsetof(k0_mixed_args, n) == 3, \"offset of n\");\n", 90,
                       "bad.cu", "ptx")


def test_cubin_for_sm90_reports_registers_and_spills():
    image, log = compile_source(render_cuda_source([mixed]), 90, "mixed.cu", "cubin")
    assert image[:4] == b"\x7fELF"  # machine code, not PTX
    report = resource_report(log)
    assert set(report) == {"k0_mixed_cuda_forward", "k0_mixed_cuda_backward"}
    for use in report.values():
        assert 0 < use["registers"] <= 255 and use["spill_bytes"] >= 0 and use["stack_bytes"] >= 0
