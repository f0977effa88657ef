"""The `sim` command (also `python -m sim`): run, validate and describe scene files; optimise parameters; render
USD animations to video; view results in the browser.

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


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (which command, what is wrong, where help is) and exit code 2."""

    def error(self, message):
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def create_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sim", description="Run differentiable physics scenes.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    run = sub.add_parser("run", help="simulate a scene and write a USD file")
    _scene_args(run)
    run.add_argument("--frames", type=_positive_int, help="frames to simulate (default: sim.frames)")
    run.add_argument("--out", help="USD file to write (default: output.path, else out/<scene>.usd)")
    run.add_argument("--device", help="cpu, cuda or cuda:N (default: sim.device)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--split", action="store_true", help="with sim.worlds > 1: one USD file per world "
                     "(<out>_w0.usd, <out>_w1.usd, ...) instead of the worlds side by side in one")
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
    opt.add_argument("--population", type=_positive_int, metavar="N",
                     help="optimise N starts at once as N worlds of one model: the config's start and N-1 drawn "
                          "within the parameters' bounds (or population.starts); the best is reported")
    opt.add_argument("--seed", type=int, help="seed of the population's random starts (default: population.seed)")
    _threads_arg(opt)
    _sweep_parser(sub)
    _render_parser(sub)
    _view_parser(sub)
    return parser


def _render_parser(sub):
    render = sub.add_parser("render", help="render a USD animation to an MP4, a GIF or a PNG (ray cast on the CPU, "
                                           "no display or GPU needed)")
    render.add_argument("usd", help="USD file written by sim run or sim optimize")
    render.add_argument("--out", help="output .mp4, .gif or .png (default: the USD's path with .mp4)")
    render.add_argument("--frame", type=int, metavar="N", help="for a .png: the frame index (default the last)")
    render.add_argument("--frames", metavar="A:B", help="for a video: frames A to B-1 (default all; A or B may be "
                                                        "left out)")
    render.add_argument("--size", default="640x360", metavar="WxH", help="image size in pixels (default 640x360)")
    render.add_argument("--camera", metavar="X,Y,Z", help="eye position (default: framing the whole animation); "
                                                          "negative numbers work too: --camera -1,2,3")
    render.add_argument("--look-at", metavar="X,Y,Z", help="point looked at (default: the animation's centre)")
    render.add_argument("--fov", type=float, default=45.0, metavar="DEG",
                        help="vertical field of view in degrees (default 45)")
    render.add_argument("--no-shadows", dest="shadows", action="store_false", help="no shadow rays (faster)")
    render.add_argument("--quiet", action="store_true", help="no progress bar")
    _threads_arg(render)


def _vector_values_attached(argv: list) -> list:
    """`--camera -1,2,3` as `--camera=-1,2,3`: argparse takes a value starting with '-' for an option."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in ("--camera", "--look-at") and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and "," in argv[i + 1]:
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _view_parser(sub):
    from .viewer import DEFAULT_HOST, DEFAULT_PORT
    view = sub.add_parser("view", help="play a USD file, or a scene as it simulates, in the browser (a local web "
                                       "server; Ctrl-C stops it)")
    view.add_argument("source", help="USD file written by sim run / sim optimize, or a scene YAML file")
    view.add_argument("--port", type=_port, default=DEFAULT_PORT,
                      help=f"TCP port to serve on (default {DEFAULT_PORT}; 0: any free port)")
    view.add_argument("--host", default=DEFAULT_HOST,
                      help=f"address to listen on (default {DEFAULT_HOST}: this machine only; 0.0.0.0: every "
                           "interface, for a browser on another machine)")
    view.add_argument("--no-browser", dest="browser", action="store_false", default=None,
                      help="do not open a browser (the default when there is no display: no $DISPLAY or "
                           "$WAYLAND_DISPLAY on Linux)")
    view.add_argument("--frames", type=_positive_int, help="a scene: frames to simulate (default: sim.frames)")
    view.add_argument("--device", help="a scene: cpu, cuda or cuda:N (default: sim.device)")
    view.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                      help="a scene: override a key, e.g. --set sim.substeps=32 (repeatable)")
    _threads_arg(view)


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
    sweep.add_argument("--batch", type=_positive_int, metavar="N",
                       help="step N runs together as the worlds of one model per task (default: the file's batch, "
                            "else 1); each run keeps the row it gives alone")


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
    import kernels
    from kernels.compiler.cache_trust import CacheTrustError

    # taped rollouts allocate fresh arrays every step: keep freed host blocks for reuse (kernels/runtime/host_memory.py)
    kernels.keep_freed_host_memory()

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
    except KeyboardInterrupt as e:  # a stop before a command began its work (while the modules import): nothing done
        print(_stopped(e), file=sys.stderr)
        return interrupts.exit_code(e)


def _stopped(interrupt: KeyboardInterrupt) -> str:
    """'interrupted' for Ctrl-C, 'stopped by SIGTERM' (or SIGHUP) for a stop signal."""
    interrupt = interrupts.identified(interrupt)
    return str(interrupt) if isinstance(interrupt, interrupts.Terminated) else "interrupted"


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got '{text}'") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {value}")
    return value


def _main(argv=None) -> int:
    args = create_parser().parse_args(_vector_values_attached(list(sys.argv[1:] if argv is None else argv)))
    if getattr(args, "threads", None) is not None:
        import kernels
        kernels.config.cpu_threads = args.threads
    from .scene import Scene, SceneError, SimulationError
    if args.command == "optimize":
        return _optimize(args)
    if args.command == "sweep":
        return _sweep(args)
    if args.command == "render":
        return _render(args)
    if args.command == "view":
        return _view(args)
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
                           capture=args.capture, summary=True, split=args.split)
    except SceneError as e:
        print(f"error: {_input_error(e, args.scene, args.command)}", file=sys.stderr)
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
                          overwrite=args.overwrite, progress=not args.quiet, device=device, capture=args.capture,
                          population=args.population, seed=args.seed)
    except SceneError as e:
        print(f"error: {_input_error(e, args.config, 'optimize')}", file=sys.stderr)
        return EXIT_INPUT
    except (SimulationError, FloatingPointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BLOWUP
    except KeyboardInterrupt as e:
        print(f"{_stopped(e)}: continue with --resume (the snapshot is saved)", file=sys.stderr)
        return interrupts.exit_code(e)
    if result.members:
        _population_summary(result)
    losses = result.losses
    status = "converged" if result.converged else "done"
    print(f"{status} after {result.iterations} iterations: loss {losses[0]:.6g} -> {result.final_loss:.6g}"
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


def _population_summary(result):
    """One line per member (start, final loss, status), best first, then which member the lines below are."""
    order = sorted(result.members, key=lambda m: (not math.isfinite(m["final_loss"]), m["final_loss"]))
    for m in order[:8]:
        start = ", ".join(f"{k} = {_short(v)}" for k, v in m["start"].items())
        print(f"member {m['member']:<3} final loss {m['final_loss']:.6g} ({m['status']}) from {start}")
    if len(order) > 8:
        print(f"... {len(order) - 8} more members in population.yaml")
    if result.best_member is not None:
        print(f"best      member {result.best_member} of {len(result.members)}:")


def _short(value):
    if isinstance(value, list):
        return f"[{len(value)} values]" if len(value) > 4 else "[" + ", ".join(f"{v:.4g}" for v in value) + "]"
    return f"{value:.4g}"


def _guarded(work, input_errors: tuple, *, stopped: str, describe=str) -> int:
    """The exit code of `work()` (which prints its result and returns EXIT_OK), or, for one of `input_errors`,
    one error line (`describe(error)`) and EXIT_INPUT, or, when interrupted or stopped by a signal, a line saying
    so and what was kept (`stopped`) and the signal's exit code."""
    try:
        return work()
    except input_errors as e:
        print(f"error: {describe(e)}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt as e:
        print(f"{_stopped(e)}: {stopped}", file=sys.stderr)
        return interrupts.exit_code(e)


def _sweep(args) -> int:
    """Exit 0 when the sweep finished (failed runs are rows, not a failed sweep), 2 for an invalid sweep file."""
    from .scene import SceneError
    from .sweeps import sweep

    def work():
        sweep(args.sweep, args.address, workers=args.workers, threads_per_run=args.threads_per_run,
              resume=args.resume, overwrite=args.overwrite, out_dir=args.out_dir, progress=not args.quiet,
              overrides=args.overrides, say=print, batch=args.batch)
        return EXIT_OK

    return _guarded(work, (SceneError,), stopped="finished rows are kept; continue with --resume",
                    describe=lambda e: _input_error(e, args.sweep, "sweep"))


def _input_error(error, path: str, command: str) -> str:
    """The error line: a file made for another command (an optimisation config given to `sim run`, ...) says
    which command runs it; any other error is itself."""
    from .file_kinds import wrong_command
    about_file = error.where == path or error.where.startswith(f"{path}:")
    return (wrong_command(path, command) if about_file else None) or str(error)


def _render(args) -> int:
    """Exit 0 with the file written, 2 for bad input (nothing written), 130/143/129 when stopped (nothing
    written either: the video is renamed into place only when complete)."""
    from .rendering import RenderError, render
    out = args.out or os.path.splitext(args.usd)[0] + ".mp4"

    def work():
        result = render(args.usd, out, frame=args.frame, frames=args.frames, size=args.size, camera=args.camera,
                        look_at=args.look_at, fov=args.fov, shadows=args.shadows, progress=not args.quiet)
        frames = len(result.frames)
        print(f"rendered  {frames} frame{'s' if frames != 1 else ''} at {result.width}x{result.height} in "
              f"{result.seconds:.1f} s ({result.frames_per_second:.1f} frames/s)")
        print(f"output    {result.out}")
        return EXIT_OK

    return _guarded(work, (RenderError,), stopped="nothing written")


def _view(args) -> int:
    """Serve until Ctrl-C (exit 130); exit 2 for a bad file, scene, port or host, before anything is served."""
    from .playback import PlaybackError
    from .scene import SceneError
    from .viewer import ViewerError, is_scene_file, view
    scene_only = [flag for flag, given in (("--frames", args.frames is not None), ("--device", args.device),
                                           ("--set", args.overrides)) if given]

    def work():
        if scene_only and not is_scene_file(args.source):
            raise ViewerError(f"{', '.join(scene_only)}: only for a scene file (.yaml), not {args.source}")
        device = None
        if is_scene_file(args.source):
            from .scene import Scene
            scene = Scene.load(args.source, args.overrides)
            device = _device(args.device or scene.spec.sim.device)
            source = scene
        else:
            source = args.source
        view(source, port=args.port, host=args.host, open_browser=args.browser, frames=args.frames, device=device,
             progress=True, say=print)
        return EXIT_OK

    return _guarded(work, (PlaybackError, SceneError, ViewerError), stopped="viewer stopped")


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
    worlds = scene.spec.sim.worlds
    per_world = f" ({worlds} worlds: {worlds * result.steps_per_second:,.0f} world-steps/s)" if worlds > 1 else ""
    print(f"{head} {result.frames} frames ({result.frames / fps:.2f} s at {fps:g} fps), {result.steps} steps, "
          f"{result.steps_per_second:,.0f} steps/s{per_world}")
    print(f"compile   {result.compile_seconds:.2f} s ({result.compile_kind})")
    outputs = getattr(result, "outputs", ()) or ((result.output,) if result.output else ())
    if len(outputs) > 1:
        print(f"output    {len(outputs)} files, one per world: {outputs[0]} ... {outputs[-1]}")
    elif outputs:
        print(f"output    {outputs[0]}" + (f" ({worlds} worlds side by side)" if worlds > 1 else ""))
    if result.physics is not None:
        print("\n".join(result.physics.lines()))
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
