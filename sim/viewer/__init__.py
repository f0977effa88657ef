"""`sim view`: play a USD file this toolkit wrote, or a scene as it simulates, in any browser (a local viser server).

    import sim
    sim.view("out/cloth.usd")                 # serves http://127.0.0.1:8080/ until Ctrl-C
    sim.view("scenes/cloth.yaml")             # simulates and shows each frame as it is computed
    v = sim.view("out/cloth.usd", port=0, block=False); print(v.url); ...; v.close()

The page has play/pause, a frame slider and a speed menu; cloth shows as shaded meshes, particles as points,
colliders and rigid bodies (articulation links included) as their shapes moving with their time-sampled poses, the
camera framed on the scene and the scene's up axis up (docs/viewing.md).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from .. import interrupts
from .server import DEFAULT_HOST, DEFAULT_PORT, Viewer, ViewerError

__all__ = ["view", "Viewer", "ViewerError", "DEFAULT_HOST", "DEFAULT_PORT", "has_display", "is_scene_file"]

_SCENE_EXTENSIONS = (".yaml", ".yml")


def has_display() -> bool:
    """Whether a browser window could open here: on Linux and the BSDs only with $DISPLAY or $WAYLAND_DISPLAY (an
    ssh session or a container has neither); macOS and Windows always have a desktop."""
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def is_scene_file(path) -> bool:
    """A scene (YAML) rather than a USD file, by its extension."""
    return os.fspath(path).lower().endswith(_SCENE_EXTENSIONS)


def view(source, *, port: int = DEFAULT_PORT, host: str = DEFAULT_HOST, open_browser: bool | None = None,
         block: bool = True, frames: int | None = None, overrides=(), device=None, progress: bool = False,
         say=print) -> Viewer:
    """Serve a web page that plays `source`.

    Args:
        source: a USD file (.usd, .usda, .usdc) written by this toolkit, a scene file (.yaml, .yml), a
            `sim.Scene`, or a `sim.playback.Playback`. A scene is simulated (no file is written) and each frame
            shows as soon as it is computed.
        port: TCP port (0: any free port; `Viewer.port` says which).
        host: address to listen on; the default serves this machine only.
        open_browser: open the page in the default browser; None: when there is a display (`has_display`).
        block: serve (and simulate) until Ctrl-C, then stop the server and raise the KeyboardInterrupt; with
            False, return at once with the server running (a scene simulates in a background thread) and
            `Viewer.close()` to stop it.
        frames, overrides, device: for a scene: frames to simulate (default sim.frames), "key.path=value"
            overrides, the device (default the scene's sim.device).
        progress: a progress bar on the terminal while a scene simulates.
        say: where the address and notes go (one line each).

    Returns:
        The running Viewer (`url`, `port`, `close()`), when `block` is False.

    Raises:
        sim.playback.PlaybackError: a missing or unreadable USD file, or one without time samples (the last
            found once the server is up: it is stopped before the error is raised).
        sim.SceneError: an invalid scene file or override.
        ViewerError: the port is in use or the host cannot be listened on.
        KeyboardInterrupt: Ctrl-C (or SIGTERM/SIGHUP under the CLI) while blocking; the server is stopped first.
    """
    from ..scene import Scene
    playback, scene, usd_path = None, None, None
    if isinstance(source, Scene):
        scene = source
    elif hasattr(source, "tracks") and hasattr(source, "times"):
        playback = source
    elif is_scene_file(source):
        scene = Scene.load(os.fspath(source), overrides)
    else:
        usd_path = os.fspath(source)
        _check_usd_file(usd_path)
    title = os.path.basename(usd_path or (scene.path if scene is not None else playback.path) or "playback")
    viewer = Viewer(host=host, port=port, title=f"sim view · {title}")
    try:
        # the address first: a browser loads the page (a second or so) while the file is read
        say(f"viewing {title} at {viewer.url}" + ("  (Ctrl-C stops)" if block else ""))
        if open_browser if open_browser is not None else has_display():
            import webbrowser
            threading.Thread(target=webbrowser.open, args=(viewer.url,), daemon=True).start()
        if usd_path is not None:
            from ..playback import load
            viewer.set_status(f"**{title}**: reading the file")
            playback = load(usd_path)
        if playback is not None:
            viewer.show(playback)
            viewer.set_status(f"**{title}**: {playback.frame_count} frames at {playback.fps:g} fps")
        if scene is not None:
            live = _LiveRun(viewer, scene, frames=frames, device=device, progress=progress, say=say)
            if block:
                live.run()
            else:
                threading.Thread(target=live.run, name="sim-view-simulation", daemon=True).start()
        if not block:
            return viewer
        while True:  # the server and the player run in their own threads; this one waits for Ctrl-C
            interrupts.raise_if_stopped()  # a stop swallowed while the file was read (pxr's import eats them)
            time.sleep(0.2)
    except BaseException as e:
        viewer.close()
        stop = interrupts.stopped()
        if stop is not None and not isinstance(e, KeyboardInterrupt):
            raise stop from None  # an error of a half-imported pxr, after a stop it swallowed: the stop is the news
        raise


def _check_usd_file(path: str) -> None:
    """PlaybackError for what can be told without reading the stage (before anything is served): a missing file,
    a folder, or a file that starts with none of USD's headers (binary crate, text, zipped package)."""
    from ..playback import PlaybackError
    if not os.path.exists(path):
        raise PlaybackError(f"{path}: no such file")
    if os.path.isdir(path):
        raise PlaybackError(f"{path}: is a directory, not a USD file")
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise PlaybackError(f"{path}: cannot be read ({e.strerror})") from None
    if not head.startswith((b"PXR-USDC", b"#usda", b"PK\x03\x04")):
        raise PlaybackError(f"{path}: not a USD file (it starts with none of USD's headers: 'PXR-USDC', '#usda' "
                            "or a .usdz archive's)")


class _LiveRun:
    """A scene simulated into a PlaybackRecorder whose frames the viewer shows as they come."""

    def __init__(self, viewer: Viewer, scene, *, frames, device, progress: bool, say):
        self.viewer, self.scene, self.device, self.progress, self.say = viewer, scene, device, progress, say
        self.frames = scene.spec.sim.frames if frames is None else int(frames)
        self.error = None  # the SimulationError that stopped the run, if one did

    def run(self) -> None:
        from ..scene import SimulationError
        from .recorder import PlaybackRecorder
        self.viewer.set_status(f"**{self.scene.name}**: building the scene")
        started = time.perf_counter()
        try:
            result = self.scene.run(frames=self.frames, device=self.device, progress=self.progress,
                                    record=PlaybackRecorder.factory(on_frame=self._frame))
        except SimulationError as e:
            self.error = e
            print(f"error: {e}", file=sys.stderr)
            self.viewer.finish(f"**{self.scene.name}**: stopped: {e}")
            return
        seconds = time.perf_counter() - started
        self.viewer.finish(f"**{self.scene.name}**: simulated {result.frames} frames in {seconds:.1f} s")

    def _frame(self, recorder) -> None:
        count = recorder.playback.frame_count
        if count == 1:
            self.viewer.show(recorder.playback, live=True)
        self.viewer.set_status(f"**{self.scene.name}**: simulating, frame {count - 1} of {self.frames}")
