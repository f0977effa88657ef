"""Where saxpy's bandwidth goes on a GPU: our generated kernel against hand-written CUDA variants and torch, on
the same buffers in one run (tools/gpu_check.sh runs it; no use without a GPU).

Variants, all y = a x + y over 10^8 floats (12 bytes per element moved):
- `kernels`: wp.launch of the generated kernel (grid-stride loop, int64 task, strided array access);
- `plain`: one element per thread, int32 index, contiguous pointers (what a CUDA programmer writes first);
- `x4`: four consecutive elements per thread through 16-byte loads and stores (float4);
- `stride4`: four elements per thread a grid apart, the four loads issued before any store;
- `torch`: y.add_(x, alpha=a);
each against the device-to-device copy (cuMemcpyDtoD, bytes read + written). The answer says whether the gap to
copy is our code generation (kernels < plain) or loads in flight per thread (plain < x4 ~ stride4).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kernels as wp  # noqa: E402
from kernels.runtime import cuda_driver as cu  # noqa: E402
from kernels.compiler.nvrtc import compile_source  # noqa: E402
from kernels.runtime.device import current_stream_handle  # noqa: E402
from tools.bench_cuda import DEV, copy_gbps, event_ms, saxpy  # noqa: E402

SOURCE = r"""
extern "C" __global__ void plain(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void x4(float a, const float4* x, float4* y, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 u = x[i], v = y[i];
        v.x = a * u.x + v.x; v.y = a * u.y + v.y; v.z = a * u.z + v.z; v.w = a * u.w + v.w;
        y[i] = v;
    }
}
extern "C" __global__ void stride4(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
    int stride = gridDim.x * blockDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float u[4], v[4];
    #pragma unroll
    for (int k = 0; k < 4; ++k) { int j = i + k * stride; u[k] = j < n ? x[j] : 0.f; v[k] = j < n ? y[j] : 0.f; }
    #pragma unroll
    for (int k = 0; k < 4; ++k) { int j = i + k * stride; if (j < n) y[j] = a * u[k] + v[k]; }
}
"""


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    if wp.get_cuda_device_count() == 0:
        print("no CUDA device")
        return 1
    n, reps = 10**8, 20
    device = wp.get_device(DEV)
    image, log = compile_source(SOURCE, device.arch, "saxpy_probe.cu", "cubin")
    module = cu.module_load(device.ordinal, image)
    fns = {name: cu.module_function(module, name) for name in ("plain", "x4", "stride4")}
    rng = np.random.default_rng(0)
    x_np, y_np = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    x, y = wp.array(x_np, device=DEV), wp.array(y_np, device=DEV)
    stream = current_stream_handle(device.ordinal)
    a = ctypes.c_float(2.0)
    launches = {
        "kernels": lambda: wp.launch(saxpy, dim=n, inputs=[2.0, x, y], device=DEV),
        "plain": lambda: cu.launch(fns["plain"], (n + 255) // 256, 256, stream,
                                   [a, ctypes.c_uint64(x.ptr), ctypes.c_uint64(y.ptr), ctypes.c_int(n)]),
        "x4": lambda: cu.launch(fns["x4"], (n // 4 + 255) // 256, 256, stream,
                                [a, ctypes.c_uint64(x.ptr), ctypes.c_uint64(y.ptr), ctypes.c_int(n // 4)]),
        "stride4": lambda: cu.launch(fns["stride4"], (n // 4 + 255) // 256, 256, stream,
                                     [a, ctypes.c_uint64(x.ptr), ctypes.c_uint64(y.ptr), ctypes.c_int(n)]),
    }
    copy = copy_gbps(n, reps)
    rows = []
    for name, run in launches.items():
        y.assign(y_np)
        run()
        if not np.allclose(y.numpy(), 2.0 * x_np + y_np, rtol=1e-6, atol=1e-6):
            rows.append((name, "WRONG", ""))
            continue
        ms = event_ms(run, reps)
        rows.append((name, f"{12 * n / (ms * 1e-3) / 1e9:.0f}", f"{12 * n / (ms * 1e-3) / 1e9 / copy:.2f}"))
    try:
        import torch
        tx, ty = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda()
        ty.add_(tx, alpha=2.0)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(reps):
            s.record()
            ty.add_(tx, alpha=2.0)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        gbps = 12 * n / (float(np.median(times)) * 1e-3) / 1e9
        rows.append(("torch add_", f"{gbps:.0f}", f"{gbps / copy:.2f}"))
    except ImportError:
        pass
    print(f"saxpy 1e8 on {device.name}: copy {copy:.0f} GB/s")
    print(f"{'variant':12} {'GB/s':>6} {'of copy':>8}")
    for row in rows:
        print(f"{row[0]:12} {row[1]:>6} {row[2]:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
