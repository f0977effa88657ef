"""`sim render` / `sim.render`: a USD animation to an MP4, a GIF or a PNG, ray cast on the CPU with the toolkit's own
kernels (no OpenGL, display or GPU needed).

    import sim
    sim.render("out/cloth.usd", out="cloth.mp4")                       # every frame, a camera framing them all
    sim.render("out/cloth.usd", out="last.png", frame=120, size="800x600")
    sim.render("out/arm.usd", out="arm.gif", frames="0:60", camera=(1.5, -1.5, 1.0), look_at=(0, 0, 0.4))
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from .. import interrupts
from .camera import Camera, frame_camera
from .output import FORMATS

__all__ = ["render", "RenderError", "RenderResult", "Camera", "frame_camera", "FORMATS"]

MAX_SIZE = 8192  # pixels along either side


class RenderError(ValueError):
    """Bad input to `render` (a file that cannot be played, an unknown option value): str() is one line naming
    the file or option and what was expected. Nothing has been written."""


@dataclass
class RenderResult:
    """What `render` wrote: the output path, the frame indices rendered, the image size, the camera used, and
    the time spent ray casting (and encoding) [s]."""

    out: str
    frames: range
    width: int
    height: int
    camera: Camera
    seconds: float

    @property
    def frames_per_second(self) -> float:
        return len(self.frames) / max(self.seconds, 1e-9)


def render(path, out, *, frame: int | None = None, frames=None, size=(640, 360), camera=None, look_at=None,
           fov: float = 45.0, shadows: bool = True, progress: bool = False, device=None) -> RenderResult:
    """Render the USD animation at `path` (any file `sim run`, `sim optimize` or `UsdWriter` writes) to `out`.

    Args:
        path: the USD file.
        out: .mp4 or .gif (the frames `frames` at the file's fps) or .png (the one frame `frame`).
        frame: for a .png, the frame index (0 .. frame count - 1); default the last frame.
        frames: for a video, (start, stop) or "A:B", Python slice style (stop excluded, either may be left out
            in the string form); default all frames.
        size: (width, height) or "WxH" [pixels]; even numbers for an MP4.
        camera: eye position (x, y, z) or "X,Y,Z" [stage units]; default: placed to frame the whole animation.
        look_at: point looked at, (x, y, z) or "X,Y,Z"; default the centre of the animation's box.
        fov: vertical field of view [degrees], in (0, 180).
        shadows: cast shadow rays toward the light.
        progress: draw a progress bar on a terminal.
        device: kernels device to ray cast on (default the CPU).

    Returns:
        RenderResult.

    Raises:
        RenderError: a missing or unreadable file, a file without time samples, an option value out of range.
        OutputWriteError: the output could not be written (what was there before is kept).
    """
    from ..playback import PlaybackError, load
    from ..scene.progress import Progress
    from .output import VideoWriter, write_png
    from .raycast import FrameRaster

    out = os.fspath(out)
    extension = os.path.splitext(out)[1].lower()
    if extension not in FORMATS:
        raise RenderError(f"--out {out}: unsupported extension {extension or '(none)'!r}; use .mp4, .gif or .png")
    if os.path.isdir(out):
        raise RenderError(f"--out {out}: is a directory")
    width, height = parse_size(size)
    if extension == ".mp4" and (width % 2 or height % 2):
        raise RenderError(f"--size {width}x{height}: an MP4 needs an even width and height")
    eye = None if camera is None else parse_vector(camera, "--camera")
    target = None if look_at is None else parse_vector(look_at, "--look-at")
    fov = _parse_fov(fov)
    if extension == ".png" and frames is not None:
        raise RenderError("--frames: a .png holds one frame; choose it with --frame N")
    if extension != ".png" and frame is not None:
        raise RenderError(f"--frame: a {extension} holds several frames; choose them with --frames A:B")
    try:
        playback = load(path)
    except PlaybackError as e:
        raise RenderError(str(e)) from None
    count = playback.frame_count
    if extension == ".png":
        chosen = _parse_frame(frame, count)
        span = range(chosen, chosen + 1)
    else:
        span = parse_frames(frames, count)
    low, high = playback.bounds()
    try:
        view = frame_camera(low, high, playback.up_axis, width=width, height=height, fov=fov, eye=eye,
                            look_at=target)
    except ValueError as e:
        raise RenderError(f"--camera: {e}") from None

    raster = FrameRaster(playback, shadows=shadows, device=device)
    bar = Progress(len(span), enabled=progress)
    start = time.perf_counter()
    try:
        if extension == ".png":
            write_png(out, raster.render(span[0], view))
        else:
            with VideoWriter(out, width, height, playback.fps) as writer:
                for done, index in enumerate(span, 1):
                    interrupts.raise_if_stopped()  # a stop a library swallowed (pxr's import does) is not lost
                    writer.append(raster.render(index, view))
                    bar.update(done)
    finally:
        bar.close()
    return RenderResult(out, span, width, height, view, time.perf_counter() - start)


# ------------------------------------------------------------------------------------------------ options


def parse_size(size) -> tuple[int, int]:
    """(width, height) from "WxH" or a pair; RenderError unless both are integers in [16, MAX_SIZE]."""
    if isinstance(size, str):
        parts = size.lower().split("x")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise RenderError(f"--size {size}: expected WIDTHxHEIGHT in pixels, e.g. 640x360")
        width, height = (int(p) for p in parts)
    else:
        try:
            width, height = (int(v) for v in size)
        except (TypeError, ValueError):
            raise RenderError(f"size {size!r}: expected (width, height) in pixels") from None
    if not (16 <= width <= MAX_SIZE and 16 <= height <= MAX_SIZE):
        raise RenderError(f"--size {width}x{height}: width and height must be between 16 and {MAX_SIZE} pixels")
    return width, height


def parse_vector(value, option: str) -> np.ndarray:
    """(3,) float64 from "X,Y,Z" or a sequence of three numbers; RenderError unless three finite numbers."""
    text = value if isinstance(value, str) else None
    try:
        items = text.split(",") if text is not None else list(value)
        v = np.array([float(x) for x in items], np.float64)
    except (TypeError, ValueError):
        v = None
    if v is None or v.shape != (3,) or not np.all(np.isfinite(v)):
        shown = value if text is not None else repr(value)
        raise RenderError(f"{option} {shown}: expected three numbers X,Y,Z")
    return v


def parse_frames(frames, count: int) -> range:
    """The frame indices of "A:B" (or (A, B), or None for all), checked against the file's `count` frames."""
    if frames is None:
        return range(count)
    if isinstance(frames, str):
        parts = frames.split(":")
        try:
            if len(parts) != 2:
                raise ValueError
            start = int(parts[0]) if parts[0].strip() else 0
            stop = int(parts[1]) if parts[1].strip() else count
        except ValueError:
            raise RenderError(f"--frames {frames}: expected START:STOP (frame indices, STOP excluded), "
                              f"e.g. 0:60") from None
    else:
        try:
            start, stop = (int(v) for v in frames)
        except (TypeError, ValueError):
            raise RenderError(f"frames {frames!r}: expected (start, stop)") from None
    if not 0 <= start < stop <= count:
        raise RenderError(f"--frames {start}:{stop}: the file has {count} frames; expected 0 <= START < STOP "
                          f"<= {count}")
    return range(start, stop)


def _parse_frame(frame, count: int) -> int:
    if frame is None:
        return count - 1
    if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)):
        raise RenderError(f"--frame {frame!r}: expected a frame index (an integer)")
    if not 0 <= frame < count:
        raise RenderError(f"--frame {frame}: the file has {count} frames; expected 0 <= N < {count}")
    return int(frame)


def _parse_fov(fov) -> float:
    try:
        value = float(fov)
    except (TypeError, ValueError):
        raise RenderError(f"--fov {fov!r}: expected a number of degrees") from None
    if not (math.isfinite(value) and 0.0 < value < 180.0):
        raise RenderError(f"--fov {fov}: expected a vertical field of view in degrees, 0 < FOV < 180")
    return value

