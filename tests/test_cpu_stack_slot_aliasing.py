"""The CPU backend's compiler flags against a GCC wrong-code bug: two stack variables that share one stack slot,
seen as objects of unrelated types by type-based alias analysis (docs/cpu_compiler_bug.md).

A builtin with two results (`wp.quat_to_axis_angle`) is a struct returned in two registers and stored into a stack
temporary; its fields go into a vec4 that is indexed at run time. When GCC does not inline the builtin, it puts the
temporary and the vec4 in one slot (their lifetimes do not overlap), removes the copy between them (same address),
and then, by type (the struct's type against float), moves or deletes the store of the second register: components
2 and 3 read stale stack memory (Warp's test_quat_to_axis_angle_grad_float32_cpu gave 0.0 for them). Both programs
below are valid C++; each is compiled with exactly the flags the CPU backend uses (build.cpu_flags) and must give
the analytic axis and angle.
"""

import ctypes
import math
import re
import subprocess

import numpy as np
import pytest

import kernels as wp
from kernels.compiler.build import NATIVE_DIR, cpu_flags, find_cxx
from kernels.compiler.render_adjoint import render_adjoint_function, render_adjoint_kernel
from kernels.compiler.render_module import ModuleSource
from kernels.runtime.module import _callees

# q = (0.3, 0.5, 0.1, 0.8): not normalised on purpose; axis = v / |v|, angle = 2 atan2(|v|, w)
QUAT = (0.3, 0.5, 0.1, 0.8)


def analytic_axis_angle(q) -> list:
    v = np.array(q[:3], dtype=np.float64)
    s = float(np.linalg.norm(v))
    return [*(v / s), 2.0 * math.atan2(s, q[3])]


# Plain C++, no toolkit header: the smallest form of the pattern (the GCC 12.2 -O3 build reads all four
# components from a slot it never stored).
STANDALONE = r"""
#include <cmath>
struct vec3 { float c[3]; vec3() { for (int i = 0; i < 3; ++i) c[i] = 0.0f; } };
struct vec4 { float c[4]; vec4() { for (int i = 0; i < 4; ++i) c[i] = 0.0f; } };
struct quat { float x, y, z, w; };
struct axis_angle { vec3 v0; float v1; };

__attribute__((noinline)) static axis_angle to_axis_angle(const quat& q) {
    axis_angle r;
    float s = std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z);
    r.v1 = 2.0f * std::atan2(s, q.w);
    if (s > 0.0f) { r.v0.c[0] = q.x / s; r.v0.c[1] = q.y / s; r.v0.c[2] = q.z / s; }
    return r;
}

__attribute__((noinline)) static void scribble_stack() {  // as in PROBE below
    volatile float fill[4096];
    for (int i = 0; i < 4096; ++i) fill[i] = __builtin_nanf("");
}

extern "C" __attribute__((visibility("default"))) void probe(const quat* quats, int coord, float* sum) {
    scribble_stack();
    for (long t = 0; t < 1; ++t) {  // a loop as in a kernel's launch, here over one quaternion
        vec3 axis;
        float angle;
        {
            axis_angle r = to_axis_angle(quats[t]);
            axis = r.v0;
            angle = r.v1;
        }
        const float values[] = {axis.c[0], axis.c[1], axis.c[2], angle};
        vec4 a;
        for (int i = 0; i < 4; ++i) a.c[i] = values[i];
        *sum = *sum + a.c[coord];
    }
}
"""


@wp.kernel(module="stack_slot_aliasing")
def axis_angle_component(q: wp.array(dtype=wp.quat), total: wp.array(dtype=float), coord: int):
    tid = wp.tid()
    axis = wp.vec3()
    angle = float(0.0)
    wp.quat_to_axis_angle(q[tid], axis, angle)
    a = wp.vec4(axis[0], axis[1], axis[2], angle)
    wp.atomic_add(total, 0, a[coord])


# The kernel's own generated source, with the builtin called through a function GCC may not inline (in Warp's
# test_quat module GCC chose not to inline it: ~100 other kernels in the same translation unit), and an entry
# that runs the kernel's forward launch on one thread (the plain-add path) on a stack of NaNs.
PROBE = r"""
// Fills the stack below the caller's frame with NaN, where the next call's frame will be: a value read from a slot
// that was never stored shows as NaN, not as what an earlier call happened to leave there.
__attribute__((noinline)) static void scribble_stack() {
    volatile float fill[4096];
    for (int i = 0; i < 4096; ++i) fill[i] = __builtin_nanf("");
}

extern "C" WP_EXPORT void probe(const float* q, int coord, float* sum) {
    scribble_stack();
    ENTRY_args args;
    args.q.data = (wp::quat_t<wp::float32>*)q;
    args.q.ndim = 1; args.q.shape[0] = 1; args.q.strides[0] = sizeof(wp::quat_t<wp::float32>);
    args.total.data = sum;
    args.total.ndim = 1; args.total.shape[0] = 1; args.total.strides[0] = sizeof(float);
    args.coord = coord;
    wp::launch_bounds_t lb;
    lb.ndim = 1; lb.size = 1; lb.shape[0] = 1;
    ENTRY_forward(&lb, &args, wp::int64(1) << 40);
}
"""

OUT_OF_LINE = ("__attribute__((noinline)) static wp::quat_axis_angle_t<wp::float32> "
               "out_of_line_quat_to_axis_angle(const wp::quat_t<wp::float32>& q) { return wp::quat_to_axis_angle(q); }")


def generated_source() -> str:
    """The C++ of a module holding `axis_angle_component` alone (as the runtime assembles it), the builtin call
    made through OUT_OF_LINE, and PROBE."""
    kernel = axis_angle_component
    kernel.compile_ir()
    entry = f"k0_{kernel.name}"
    src = ModuleSource("cpu", False)
    for fn in _callees(kernel.ir):
        src.add_function(fn)
    text = src.source([src.render_kernel(kernel.ir, entry, render_adjoint_kernel)], render_adjoint_function)
    text, calls = re.subn(r"\bwp::quat_to_axis_angle\(", "out_of_line_quat_to_axis_angle(", text)
    assert calls >= 1, "the generated forward calls wp::quat_to_axis_angle"
    include = '#include "builtin.h"\n'
    assert include in text
    text = text.replace(include, include + OUT_OF_LINE + "\n", 1)
    return text + PROBE.replace("ENTRY", entry)


def build_and_probe(source: str, folder) -> list:
    """Compile `source` with the CPU backend's compiler and release flags; its probe(q, coord, sum) for coords
    0..3, each from sum = 0."""
    path = folder / "probe.cpp"
    path.write_text(source)
    lib_path = folder / "probe.so"
    proc = subprocess.run([*find_cxx(), *cpu_flags(False), f"-I{NATIVE_DIR}", str(path), "-o", str(lib_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    probe = ctypes.CDLL(str(lib_path)).probe
    probe.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    probe.restype = None
    q = (ctypes.c_float * 4)(*QUAT)
    out = []
    for coord in range(4):
        total = ctypes.c_float(0.0)
        probe(q, coord, ctypes.byref(total))
        out.append(total.value)
    return out


@pytest.mark.parametrize("which", ["standalone", "generated"])
def test_shared_stack_slot_keeps_both_result_registers(which, tmp_path):
    source = STANDALONE if which == "standalone" else generated_source()
    got = build_and_probe(source, tmp_path)
    np.testing.assert_allclose(got, analytic_axis_angle(QUAT), rtol=1e-5, atol=1e-6,
                               err_msg=f"{which}: axis x, y, z and angle of {QUAT}")


def test_kernel_launch_axis_angle_components():
    q = wp.array(np.array([QUAT], dtype=np.float32), dtype=wp.quat)
    got = []
    for coord in range(4):
        total = wp.zeros(1, dtype=float)
        wp.launch(axis_angle_component, dim=1, inputs=(q, total, coord))
        got.append(float(total.numpy()[0]))
    np.testing.assert_allclose(got, analytic_axis_angle(QUAT), rtol=1e-5, atol=1e-6)
