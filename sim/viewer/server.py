"""`Viewer`: a local viser web server that plays a `sim.playback.Playback` in any browser.

    viewer = Viewer(host="127.0.0.1", port=8080, title="cloth.usd")
    viewer.show(sim.playback.load("out/cloth.usd"))
    print(viewer.url)          # open it in a browser; play, pause, frame slider, speed
    ...
    viewer.close()

Frames are not uploaded ahead: the page gets frame 0's geometry when the scene is shown, then, while it plays,
only what changes each frame (a deforming track's vertices, a rigid track's pose). So the first frame shows as soon
as the page connects, whatever the length of the animation, and a playback that grows while it is shown (a live
simulation, `show(..., live=True)`) needs nothing more than its new frames.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import numpy as np

from .camera import FIELD_OF_VIEW_DEG, framing_camera
from .nodes import TrackNode

#: The port `sim view` serves on unless told otherwise.
DEFAULT_PORT = 8080
#: Only this machine can open the page unless told otherwise (`--host 0.0.0.0` serves every interface).
DEFAULT_HOST = "127.0.0.1"
#: Playback speeds offered, as multiples of real time.
SPEEDS = ("0.1x", "0.25x", "0.5x", "1x", "2x", "4x")
_TICK_S = 1.0 / 60.0  # how often the play head moves: the browser draws at most 60 frames a second anyway


class ViewerError(Exception):
    """The viewer cannot start (its port is in use, its host cannot be listened on): one line for the user."""


@contextlib.contextmanager
def _quiet_viser():
    """viser prints a banner when it starts and a line when it stops, on its own console; the caller prints the
    address itself, in the CLI's words."""
    import rich
    console = rich.get_console()
    was = console.quiet
    console.quiet = True
    try:
        yield
    finally:
        console.quiet = was


def check_port_free(host: str, port: int) -> None:
    """ViewerError unless `port` on `host` can be listened on now (port 0: any free port, always fine).

    viser would silently take the next free port instead; a user who asked for one (or a bookmarked address)
    must hear that it is taken."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ViewerError(f"--host {host}: not a host name or address of this machine ({e.strerror})") from None
    if port == 0:
        return
    for family, kind, proto, _, address in infos[:1]:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is free
            try:
                s.bind(address)
            except OSError as e:
                if e.errno in (98, 48, 10048):  # EADDRINUSE on Linux, macOS, Windows
                    raise ViewerError(f"--port {port}: port {port} on {host} is in use by another program; "
                                      "pick another with --port (0: any free port)") from None
                raise ViewerError(f"--host {host}: cannot listen there ({e.strerror})") from None


class Viewer:
    """A viser server with play, pause, a frame slider and a speed menu, showing one playback at a time.

    Args:
        host: address to listen on ("127.0.0.1": this machine only; "0.0.0.0": every interface).
        port: TCP port; 0 picks a free one (`port` then says which).
        title: shown at the top of the page's control panel.

    Raises:
        ViewerError: the port is in use, or the host cannot be listened on.
    """

    def __init__(self, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, title: str = "sim view"):
        import viser
        check_port_free(host, port)
        with _quiet_viser():
            self._server = viser.ViserServer(host=host, port=port, label=title, verbose=False)
        self.host, self.port = host, self._server.get_port()
        if port and self.port != port:  # taken between the check and the bind
            self.close()
            raise ViewerError(f"--port {port}: port {port} on {host} is in use by another program; pick another "
                              "with --port (0: any free port)")
        self._lock = threading.RLock()
        self._playback = None
        self._nodes: list[TrackNode] = []
        self._shown = -1  # the frame the nodes show
        self._head = 0.0  # the play head [frames], fractional so that slow speeds still advance
        self._playing, self._speed, self._live = True, 1.0, False
        self._stop = threading.Event()
        self._build_gui()
        self._thread = threading.Thread(target=self._play_loop, name="sim-view-player", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------------------------------------ public

    @property
    def url(self) -> str:
        """The page's address; "localhost" for a server on every interface."""
        host = "localhost" if self.host in ("0.0.0.0", "::", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/"

    @property
    def frame(self) -> int:
        """The frame shown (0-based), -1 before a playback is shown."""
        return self._shown

    @property
    def playing(self) -> bool:
        return self._playing

    def page_cameras(self) -> list:
        """The camera of each open page, as the browser reports it: dicts of `position`, `look_at`, `up` (3,)
        [stage units], vertical `fov` [rad], `width` and `height` [pixels]."""
        cameras = []
        for client in self._server.get_clients().values():
            c = client.camera
            cameras.append({"position": np.array(c.position), "look_at": np.array(c.look_at),
                            "up": np.array(c.up_direction), "fov": float(c.fov), "width": int(c.image_width),
                            "height": int(c.image_height)})
        return cameras

    def show(self, playback, *, live: bool = False) -> None:
        """Show `playback` from its frame 0 (playing), the camera framed on the whole animation (on frame 0
        when `live`). With `live`, frames added to the playback later are played as they come, the play head
        waiting at the newest one, until `finish()`."""
        from ..playback import PlaybackError
        if playback.frame_count < 1:
            raise PlaybackError("the playback has no frames to show")
        scene = self._server.scene
        with self._lock:
            for node in self._nodes:
                node.handle.remove()
            scene.set_up_direction("+z" if playback.up_axis.upper() == "Z" else "+y")
            self._nodes = [TrackNode(scene, i, track) for i, track in enumerate(playback.tracks)]
            self._playback, self._live, self._shown, self._head = playback, live, 0, 0.0
            self._frame_camera(playback, 1 if live else playback.frame_count)
            self._slider.max = max(playback.frame_count - 1, 1)
            self._slider.disabled = playback.frame_count < 2
            self._slider.value = 0
            self._update_time_label()

    def finish(self, note: str | None = None) -> None:
        """A live playback is complete: the play head loops over it from now on. `note` goes to the panel."""
        with self._lock:
            self._live = False
        if note:
            self.set_status(note)

    def set_status(self, text: str) -> None:
        """One line of status in the control panel (what is being simulated, what went wrong); markdown."""
        self._status.content = text

    @property
    def status(self) -> str:
        return self._status.content

    def show_frame(self, frame: int) -> None:
        """Show `frame` (clamped to the frames there are); the play head moves there."""
        with self._lock:
            if self._playback is None:
                return
            frame = int(min(max(frame, 0), self._playback.frame_count - 1))
            if int(self._head) != frame:  # keep the fraction when the player itself moved here
                self._head = float(frame)
            if frame != self._shown:
                with self._server.atomic():
                    for node in self._nodes:
                        node.show(frame)
                self._shown = frame
                self._update_time_label()
        if self._slider.value != frame:
            self._slider.value = frame

    def set_playing(self, playing: bool) -> None:
        with self._lock:
            self._playing = bool(playing)
        self._play_button.label = "Pause" if playing else "Play"

    def close(self) -> None:
        """Stop the player and the server (the port is free again). Safe to call twice."""
        self._stop.set()
        thread = getattr(self, "_thread", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)
        server, self._server = getattr(self, "_server", None), None
        if server is not None:
            with _quiet_viser():
                server.stop()

    # ------------------------------------------------------------------------------------------------ inner

    def _build_gui(self) -> None:
        gui = self._server.gui
        # the share button would tunnel the page through viser's public relay: not for local simulation results
        gui.configure_theme(show_share_button=False, control_width="medium")
        self._status = gui.add_markdown("waiting for frames")
        self._play_button = gui.add_button("Pause", hint="play or pause the animation")
        self._slider = gui.add_slider("Frame", min=0, max=1, step=1, initial_value=0, disabled=True)
        self._speed_menu = gui.add_dropdown("Speed", SPEEDS, initial_value="1x", hint="multiple of real time")
        self._time_label = gui.add_markdown("")

        @self._play_button.on_click
        def _(_event) -> None:
            self.set_playing(not self._playing)

        @self._slider.on_update
        def _(event) -> None:
            if event.client_id is None:  # the player's or show_frame's own assignment: shown already
                return
            frame = int(self._slider.value)
            self.show_frame(frame)
            # the page that moved the slider may still hold older values from the player in flight, which would
            # put its thumb back; so the value goes out again after them (viser sends only a changed value)
            self._slider.value = frame - 1 if frame > 0 else frame + 1
            self._slider.value = frame

        @self._speed_menu.on_update
        def _(_event) -> None:
            self._speed = float(self._speed_menu.value.rstrip("x"))

    def _frame_camera(self, playback, stop: int) -> None:
        lower, upper = playback.bounds(0, stop, include_ground=False)
        if not np.all(np.isfinite(lower)) or np.any(lower > upper):  # nothing but the ground
            lower, upper = playback.bounds(0, stop, include_ground=True)
        pose = framing_camera(lower, upper, playback.up_axis)
        camera = self._server.initial_camera
        camera.fov = np.radians(FIELD_OF_VIEW_DEG)
        camera.up = pose["up"]
        camera.look_at = pose["look_at"]
        camera.position = pose["position"]
        for client in self._server.get_clients().values():  # pages already open follow the new scene
            with client.atomic():
                client.camera.up_direction = pose["up"]
                client.camera.fov = np.radians(FIELD_OF_VIEW_DEG)
                client.camera.position = pose["position"]
                client.camera.look_at = pose["look_at"]

    def _update_time_label(self) -> None:
        pb, frame = self._playback, self._shown
        last = pb.frame_count - 1
        seconds = (pb.times[[frame, last]] - pb.times[0]) / pb.fps  # times are time codes
        self._time_label.content = f"frame {frame} of {last} · {seconds[0]:.3f} s of {seconds[1]:.3f} s"

    def _play_loop(self) -> None:
        """Moves the play head at `speed` times real time; wraps at the end, or waits at the newest frame of a live
        playback. Also widens the slider as a live playback grows."""
        last = time.monotonic()
        while not self._stop.wait(_TICK_S):
            now = time.monotonic()
            elapsed, last = now - last, now
            with self._lock:
                pb = self._playback
                if pb is None:
                    continue
                count = pb.frame_count
                if self._slider.max != max(count - 1, 1):
                    self._slider.max = max(count - 1, 1)
                    self._slider.disabled = count < 2
                if not self._playing or count < 2:
                    continue
                self._head += elapsed * pb.fps * self._speed
                if self._head > count - 1:
                    self._head = float(count - 1) if self._live else self._head % count
                frame = int(self._head)
            try:
                self.show_frame(frame)
            except Exception:  # noqa: BLE001  a server stopping under the player: the loop ends with it
                if self._stop.is_set():
                    return
                raise
