"""Problem sizes and repeat counts of tools/bench.py (full and --quick), and its section names."""

from __future__ import annotations

from dataclasses import dataclass

try:
    from . import bench_contention
except ImportError:  # run as a script: tools/ is on sys.path
    from tools import bench_contention


@dataclass(frozen=True)
class Settings:
    """Problem sizes and repeat counts of one run."""

    saxpy_count: int  # elements of the saxpy arrays (float32)
    saxpy_repeats: int  # timed runs, best kept
    launch_count: int  # launches per timed round
    launch_rounds: int  # timed rounds, best kept
    compile_repeats: int  # cold and warm subprocess runs, best kept
    spring_count: int  # springs of the autodiff benchmark
    spring_repeats: int  # timed runs, best kept
    gemm_size: int  # rows and columns of the square GEMM matrices (a multiple of every GEMM_TILE size)
    gemm_repeats: int  # timed runs, best kept
    cloth_sizes: tuple  # cells per side of the benchmark cloths
    cloth_frames: dict  # frames (of bench_sim.SUBSTEPS substeps) per run, by solver
    cloth_repeats: int  # timed runs, best kept
    rigid_boxes: tuple  # (nx, ny, nz) lattice of falling boxes, ny layers
    rigid_steps: int  # steps per run (of bench_rigid.DT)
    rigid_grad_boxes: tuple  # lattice of the forward+backward scene
    rigid_grad_steps: int  # steps per forward+backward run
    rigid_repeats: int  # timed runs, best kept
    articulation_steps: int  # forward steps per articulation run
    articulation_grad_steps: int  # steps per forward+backward articulation run
    articulation_repeats: int  # timed runs, best kept
    optim_repeats: int  # timed iterations, best kept
    optim_memory_frames: int  # frames of the memory comparison (of the scene's substeps each)
    contention_seconds: float = 3.0  # measured time of each process of the contention section
    contention_workloads: tuple = bench_contention.WORKLOADS
    sweep_runs: int = 16  # cloth runs of the sweep section (0: skipped)
    sweep_frames: int = 60
    cloth_contact: tuple = (64, 48)  # cells per side and frames of the cloth drop (tools/bench_cloth_contact.py)
    render: tuple = (120, 640, 360)  # frames of cloth.yaml, width, height of `sim render` (tools/bench_render.py)
    mesh: tuple = (80, 10)  # cells per side of the height field and timed runs (tools/bench_mesh.py)
    rigid_baseline: bool = True  # run the tree before issue 36 beside ours (tools/bench_rigid_baseline.py)


FULL = Settings(saxpy_count=10**7, saxpy_repeats=10, launch_count=20000, launch_rounds=5, compile_repeats=3,
                spring_count=10**6, spring_repeats=10, gemm_size=1024, gemm_repeats=5, cloth_sizes=(32, 64),
                cloth_frames={"semi_implicit": 60, "xpbd": 4}, cloth_repeats=2,
                rigid_boxes=(10, 10, 10), rigid_steps=300, rigid_grad_boxes=(5, 4, 5), rigid_grad_steps=100,
                rigid_repeats=2, articulation_steps=500, articulation_grad_steps=200, articulation_repeats=8,
                optim_repeats=3, optim_memory_frames=40)
QUICK = Settings(saxpy_count=2 * 10**6, saxpy_repeats=3, launch_count=2000, launch_rounds=3, compile_repeats=1,
                 spring_count=2 * 10**5, spring_repeats=3, gemm_size=1024, gemm_repeats=3, cloth_sizes=(32,),
                 cloth_frames={"semi_implicit": 4, "xpbd": 1}, cloth_repeats=1,
                 rigid_boxes=(10, 10, 10), rigid_steps=90, rigid_grad_boxes=(5, 4, 5), rigid_grad_steps=100,
                 rigid_repeats=1, articulation_steps=100, articulation_grad_steps=50, articulation_repeats=1,
                 optim_repeats=1, optim_memory_frames=32, contention_seconds=0.5,
                 contention_workloads=("xpbd32",), sweep_runs=0, cloth_contact=(8, 8),
                 render=(12, 160, 90), mesh=(16, 2), rigid_baseline=False)

SECTIONS = ("saxpy", "launch", "compile", "autodiff", "gemm", "cloth", "rigid", "articulation", "optim", "contention",
            "sweep", "cloth_contact", "render", "view", "worlds", "mesh")
