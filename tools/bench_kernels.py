"""Kernel sources of tools/bench.py. Each is written to a file once per backend, headed by `import kernels as wp`
or `import warp as wp`, so both compilers see the same text; and the child script that times loading a module."""

SMALL_KERNELS = '''
@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def tiny_one_arg(a: wp.array(dtype=float)):
    a[0] = a[0] + 1.0


@wp.kernel
def tiny_eight_args(a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=int),
                    d: wp.array2d(dtype=float), s: float, t: float, k: int, m: int):
    a[0] = b[0] * s + d[0, 1] * t + float(c[0] + k + m)
'''

# A spring chain with damping, aerodynamic drag and lift, and bending: the vec3 math of a cloth or rope step.
SPRING_KERNEL_VEC3 = '''
@wp.kernel
def spring_forces(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), rest: wp.array(dtype=float),
                  ke: float, kd: float, wind: wp.vec3,
                  f: wp.array(dtype=wp.vec3), energy: wp.array(dtype=float)):
    i = wp.tid()
    count = x.shape[0]
    j = (i + 1) % count
    h = (i + count - 1) % count
    xi = x[i]
    vi = v[i]
    d = x[j] - xi
    dv = v[j] - vi
    length = wp.length(d)
    n = wp.normalize(d)
    stretch = length - rest[i]
    rate = wp.dot(n, dv)
    f_spring = n * (ke * stretch + kd * rate)

    # drag and lift of the segment in the wind
    v_rel = 0.5 * (vi + v[j]) - wind
    speed = wp.length(v_rel)
    normal = wp.cross(n, v_rel)
    area = wp.length(normal) + 1.0e-6
    lift_dir = wp.normalize(wp.cross(normal, v_rel) + wp.vec3(0.0, 1.0e-6, 0.0))
    f_drag = wp.cw_mul(v_rel, wp.vec3(0.1, 0.2, 0.1)) * (-speed)
    f_lift = lift_dir * (0.05 * area * speed)

    # bending: turn the segment towards the previous one
    d_prev = xi - x[h]
    bend = wp.cross(wp.normalize(d_prev), n)
    f_bend = wp.cross(bend, n) * (0.01 * ke)

    f[i] = f_spring + f_drag + f_lift + f_bend
    energy[i] = 0.5 * ke * stretch * stretch + 0.5 * wp.dot(vi, vi) + 0.5 * wp.dot(bend, bend)
'''

# The same physics in scalar math on float arrays of shape [count, 3], for a compiler without vec3 builtins.
SPRING_KERNEL_SCALAR = '''
@wp.kernel
def spring_forces(x: wp.array2d(dtype=float), v: wp.array2d(dtype=float), rest: wp.array(dtype=float),
                  ke: float, kd: float, wind_x: float, f: wp.array2d(dtype=float), energy: wp.array(dtype=float)):
    i = wp.tid()
    count = x.shape[0]
    j = (i + 1) % count
    dx = x[j, 0] - x[i, 0]
    dy = x[j, 1] - x[i, 1]
    dz = x[j, 2] - x[i, 2]
    dvx = v[j, 0] - v[i, 0]
    dvy = v[j, 1] - v[i, 1]
    dvz = v[j, 2] - v[i, 2]
    length = wp.sqrt(dx * dx + dy * dy + dz * dz)
    nx = dx / length
    ny = dy / length
    nz = dz / length
    stretch = length - rest[i]
    rate = nx * dvx + ny * dvy + nz * dvz
    s = ke * stretch + kd * rate

    # drag and lift of the segment in the wind
    rx = 0.5 * (v[i, 0] + v[j, 0]) - wind_x
    ry = 0.5 * (v[i, 1] + v[j, 1])
    rz = 0.5 * (v[i, 2] + v[j, 2])
    speed = wp.sqrt(rx * rx + ry * ry + rz * rz)
    cx = ny * rz - nz * ry
    cy = nz * rx - nx * rz
    cz = nx * ry - ny * rx
    area = wp.sqrt(cx * cx + cy * cy + cz * cz) + 1.0e-6
    lift = 0.05 * area * speed

    f[i, 0] = nx * s - 0.1 * rx * speed + lift * (cy * rz - cz * ry)
    f[i, 1] = ny * s - 0.2 * ry * speed + lift * (cz * rx - cx * rz)
    f[i, 2] = nz * s - 0.1 * rz * speed + lift * (cx * ry - cy * rx)
    energy[i] = 0.5 * ke * stretch * stretch + 0.5 * (v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2])
'''

# C = A @ B, one (TM, TN) block of C per tile block, accumulating over K in steps of TK. The tile sizes are
# formatted in as literals so that both compilers see plain constants. 256x64x128 was the fastest of those tried
# for ours at n=1024 on a quiet 2-core AVX2 machine with the register-blocked tile_matmul (GFLOP/s: 64x64x64 32,
# 64x64x128 44, 128x32x128 38, 128x64x128 47, 256x64x128 49; numpy 170-185); Warp CPU ran 3-16 GFLOP/s.
GEMM_TILE = (256, 64, 128)
TILED_GEMM = '''
@wp.kernel
def tiled_gemm(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=({tm}, {tn}), dtype=float)
    for k in range(a.shape[1] // {tk}):
        ta = wp.tile_load(a, shape=({tm}, {tk}), offset=(i * {tm}, k * {tk}))
        tb = wp.tile_load(b, shape=({tk}, {tn}), offset=(k * {tk}, j * {tn}))
        wp.tile_matmul(ta, tb, acc)
    wp.tile_store(c, acc, offset=(i * {tm}, j * {tn}))
'''.format(tm=GEMM_TILE[0], tk=GEMM_TILE[1], tn=GEMM_TILE[2])

# Run in a fresh interpreter: import a kernel module and time loading it (compile or cache hit), nothing else.
COMPILE_CHILD = r'''
import importlib, json, sys, time
backend, kernel_dir, module_name, cache_dir = sys.argv[1:5]
if backend == "ours":
    import kernels as wp
    wp.config.cache_dir = cache_dir
else:
    import warp as wp
    wp.config.log_level = wp.LOG_WARNING
    wp.config.kernel_cache_dir = cache_dir
    wp.init()
sys.path.insert(0, kernel_dir)
module = importlib.import_module(module_name)
t0 = time.perf_counter()
wp.load_module(module, device="cpu")
seconds = time.perf_counter() - t0
cold_builds = None
if backend == "ours":
    from kernels.runtime.module import get_module
    cold_builds = get_module(module_name).cold_builds
print(json.dumps({"seconds": seconds, "cold_builds": cold_builds}))
'''
