"""The `sim` command (also `python -m sim`): run, validate and describe scene files; optimise parameters.

Exit codes: 0 success, 2 invalid input (scene, override or option; nothing is written; also an output folder that
holds earlier results without --resume or --overwrite, or that another run is writing into), 3 the simulation blew
up (non-finite values; the frames before stay in a valid USD file), 4 an output could not be written (full disk,
read-only file system: one line naming the file and the cause; what was saved before is kept), 130 interrupted by
SIGINT, 143 by SIGTERM, 129 by SIGHUP (all three alike: frames so far kept, snapshot saved, sweep summary said).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from . import interrupts

EXIT_OK, EXIT_INPUT, EXIT_BLOWUP, EXIT_WRITE = 0, 2, 3, 4  # interrupts: 128 + the signal (interrupts.exit_code)


def _scene_args(p: argparse.ArgumentParser):
    p.add_argument("scene", help="scene YAML file")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a scene key, e.g. --set sim.substeps=32 --set cloth.0.mass=0.2 (repeatable)")


def create_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sim", description="Run differentiable physics scenes.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="simulate a scene and write a USD file")
    _scene_args(run)
    run.add_argument("--frames", type=_positive_int, help="frames to simulate (default: sim.frames)")
    run.add_argument("--out", help="USD file to write (default: output.path, else out/<scene>.usd)")
    run.add_argument("--device", help="cpu, cuda or cuda:N (default: sim.device)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--no-capture", dest="capture", action="store_false",
                     help="launch every step from Python instead of replaying a captured frame")
    _threads_arg(run)
    validate = sub.add_parser("validate", help="parse and check a scene, run nothing")
    _scene_args(validate)
    info = sub.add_parser("info", help="what a scene contains: objects, counts, solver, dt, frames, output")
    _scene_args(info)
    opt = sub.add_parser("optimize", help="learn scene parameters by gradient descent through the simulation")
    opt.add_argument("config", help="optimisation config YAML file")
    opt.add_argument("--iterations", type=_positive_int, help="iterations (default: the config's)")
    opt.add_argument("--out-dir", help="output folder (default: output.dir, else out/<config>)")
    opt.add_argument("--resume", action="store_true", help="continue from the output folder's snapshot")
    opt.add_argument("--overwrite", action="store_true", help="start over in an output folder that holds a "
                                                              "snapshot, replacing its results")
    opt.add_argument("--device", help="cpu, cuda or cuda:N (default: the scene's sim.device)")
    opt.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                     help="override a config key, e.g. --set optimizer.lr=0.05 (repeatable)")
    opt.add_argument("--quiet", action="store_true", help="no progress bar")
    opt.add_argument("--no-capture", dest="capture", action="store_false",
                     help="launch every step from Python instead of replaying a captured iteration")
    _threads_arg(opt)
    _sweep_parser(sub)
    return parser


def _sweep_parser(sub):
    sweep = sub.add_parser("sweep", help="many runs of a scene or optimisation over a grid of overrides, on Ray "
                                         "(or local processes without it); one row per run in results.csv")
    sweep.add_argument("sweep", help="sweep YAML file (configs/sweeps/)")
    sweep.add_argument("--address", help="Ray cluster to run on: auto (the cluster this machine is in) or "
                                         "ray://host:port (default: start a local Ray for this sweep)")
    sweep.add_argument("--workers", type=_positive_int, metavar="N",
                       help="runs in flight at once (default: as many as the CPUs allow)")
    sweep.add_argument("--threads-per-run", type=_positive_int, default=1, metavar="K",
                       help="kernel threads of each run, and CPUs each Ray task asks for (default 1)")
    sweep.add_argument("--resume", action="store_true", help="run only the runs without a complete row in "
                                                             "the output folder")
    sweep.add_argument("--overwrite", action="store_true", help="start over in an output folder that holds "
                                                                "results, replacing them")
    sweep.add_argument("--out-dir", help="output folder (default: out/sweeps/<sweep name>)")
    sweep.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                       help="override applied to every run (repeatable)")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")


def _threads_arg(p: argparse.ArgumentParser):
    p.add_argument("--threads", type=_positive_int, metavar="N",
                   help="CPU threads for kernel launches (default: $KERNELS_NUM_THREADS, else $OMP_NUM_THREADS, "
                        "else every core this process may use); several simulations side by side run best with "
                        "cores / processes each")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("kernels-sim")
    except PackageNotFoundError:  # run from a source tree that was not installed
        import kernels
        return kernels.__version__


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def main(argv=None) -> int:
    from kernels.cache_trust import CacheTrustError

    from .atomic_file import OutputWriteError
    try:
        with interrupts.stop_signals_interrupt():
            return _main(argv)
    except CacheTrustError as e:  # the compile cache could run someone else's code: one line, nothing run
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except OutputWriteError as e:  # full disk, read-only file system: one line, what was saved before is kept
        print(f"error: {e}", file=sys.stderr)
        return EXIT_WRITE


def _stopped(interrupt: KeyboardInterrupt) -> str:
    """'interrupted' for Ctrl-C, 'stopped by SIGTERM' (or SIGHUP) for a stop signal."""
    return str(interrupt) if isinstance(interrupt, interrupts.Terminated) else "interrupted"


def _main(argv=None) -> int:
    args = create_parser().parse_args(argv)
    if getattr(args, "threads", None) is not None:
        import kernels
        kernels.config.cpu_threads = args.threads
    from .scene import Scene, SceneError, SimulationError
    if args.command == "optimize":
        return _optimize(args)
    if args.command == "sweep":
        return _sweep(args)
    warning = None
    try:
        scene = Scene.load(args.scene, args.overrides)
        warning = scene.stability_warning()
        if warning and args.command in ("validate", "run"):
            print(f"warning: {warning}", file=sys.stderr)
        if args.command == "validate":
            crowding = scene.crowding_warning()
            if crowding:
                print(f"warning: {crowding}", file=sys.stderr)
            print(f"{args.scene}: ok; memory {scene.memory_line()}")
            return EXIT_OK
        if args.command == "info":
            print(scene.describe())
            return EXIT_OK
        device = _device(args.device or scene.spec.sim.device)
        result = scene.run(frames=args.frames, out=args.out, device=device, progress=not args.quiet,
                           capture=args.capture)
    except SceneError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except SimulationError as e:
        print(f"error: {e}", file=sys.stderr)
        if warning:
            print(f"note: {warning}", file=sys.stderr)
        _summary(e.result, scene, stopped=True)
        return EXIT_BLOWUP
    except KeyboardInterrupt as e:
        print(_stopped(e), file=sys.stderr)
        if getattr(e, "result", None) is not None:
            _summary(e.result, scene, stopped=True)
        return interrupts.exit_code(e)
    _summary(result, scene)
    return EXIT_OK


def _optimize(args) -> int:
    from .optimization import load_config, optimize
    from .scene import SceneError, SimulationError
    try:
        cfg = load_config(args.config, args.overrides)
        device = _device(args.device or cfg.scene.spec.sim.device)
        result = optimize(cfg, iterations=args.iterations, out_dir=args.out_dir, resume=args.resume,
                          overwrite=args.overwrite, progress=not args.quiet, device=device, capture=args.capture)
    except SceneError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except (SimulationError, FloatingPointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BLOWUP
    except KeyboardInterrupt as e:
        print(f"{_stopped(e)}: continue with --resume (the snapshot is saved)", file=sys.stderr)
        return interrupts.exit_code(e)
    losses = result.losses
    status = "converged" if result.converged else "done"
    print(f"{status} after {result.iterations} iterations: loss {losses[0]:.6g} -> {losses[-1]:.6g}"
          if losses else "nothing to do")
    for path, value in result.params.items():
        shown = value if not isinstance(value, list) or len(value) <= 4 else f"[{len(value)} values]"
        print(f"learned   {path} = {shown}")
    for what, error in result.final_errors.items():
        degrees = f" ({math.degrees(error):.3g} deg)" if what.endswith("[rad]") else ""
        print(f"final     {what}: {error:.4g}{degrees} from its target")
    rollout = "checkpointed" if result.checkpointed else "full tape"
    print(f"time      {result.seconds_per_iteration:.2f} s per iteration; peak memory of one iteration "
          f"{result.peak_memory_bytes / 2**20:.1f} MiB ({rollout})")
    print(f"output    {result.out_dir}: " + ", ".join(os.path.basename(f) for f in result.files))
    return EXIT_OK


def _sweep(args) -> int:
    """Exit 0 when the sweep finished (failed runs are rows, not a failed sweep), 2 for an invalid sweep file."""
    from .scene import SceneError
    from .sweeps import sweep
    try:
        sweep(args.sweep, args.address, workers=args.workers, threads_per_run=args.threads_per_run,
              resume=args.resume, overwrite=args.overwrite, out_dir=args.out_dir, progress=not args.quiet,
              overrides=args.overrides, say=print)
    except SceneError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt as e:
        print(f"{_stopped(e)}: finished rows are kept; continue with --resume", file=sys.stderr)
        return interrupts.exit_code(e)
    return EXIT_OK


def _device(name: str):
    """The device named on the command line, or SceneError (exit 2) when it does not exist here."""
    import kernels as wp
    from .scene import SceneError
    try:
        device = wp.get_device(name)
    except (ValueError, RuntimeError) as e:
        raise SceneError("--device", (), str(e)) from None
    return device


def _summary(result, scene, stopped: bool = False):
    fps = scene.spec.sim.fps
    head = "stopped after" if stopped else "simulated"
    print(f"{head} {result.frames} frames ({result.frames / fps:.2f} s at {fps:g} fps), {result.steps} steps, "
          f"{result.steps_per_second:,.0f} steps/s")
    print(f"compile   {result.compile_seconds:.2f} s ({result.compile_kind})")
    if result.output:
        print(f"output    {result.output}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
