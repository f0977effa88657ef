"""Where rendered frames go: a PNG (one frame), or an MP4 or GIF video encoded by the ffmpeg binary that the
`imageio-ffmpeg` wheel ships (so no system ffmpeg is needed). Every file is written to a temporary beside its
target and renamed over it when complete: an error or an interruption never leaves half a file.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from ..atomic_file import remove_stale_temporaries, temporary_path, write_atomic, write_failure

#: output extensions and what they hold
FORMATS = {".mp4": "H.264 video", ".gif": "animated GIF", ".png": "one frame as a PNG image"}
_VIDEO_QUALITY = 7  # imageio-ffmpeg's 0-10 scale; 7 keeps cloth folds sharp at a few hundred kB per 120 frames


def write_png(path, image: np.ndarray):
    """`image` (height, width, 3) uint8 as an RGB PNG at `path`, atomically."""
    from ..plot import encode_png
    write_atomic(path, encode_png(np.ascontiguousarray(image)))


class VideoWriter:
    """Frames appended one by one to an MP4 (H.264, yuv420p: plays in browsers and players) or a GIF (a palette
    computed from all frames, looping) at `path`; `close()` finishes the file and renames it into place,
    `abort()` (or an exception inside `with`) removes the temporary.

    Args:
        path: .mp4 or .gif.
        width, height: frame size [pixels]; an MP4's must be even (yuv420p halves the colour resolution).
        fps: frames per second of playback.
    """

    def __init__(self, path, width: int, height: int, fps: float):
        import imageio_ffmpeg
        self.path = os.fspath(path)
        extension = os.path.splitext(self.path)[1].lower()
        if extension not in (".mp4", ".gif"):
            raise ValueError(f"{self.path}: a video must be .mp4 or .gif")
        if extension == ".mp4" and (width % 2 or height % 2):
            raise ValueError(f"{self.path}: an MP4's width and height must be even, got {width}x{height}")
        self.size = (int(width), int(height))
        self.frames = 0
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        remove_stale_temporaries(self.path)
        self._temporary = temporary_path(self.path)
        if extension == ".mp4":
            options = dict(codec="libx264", pix_fmt_out="yuv420p", quality=_VIDEO_QUALITY,
                           output_params=["-movflags", "+faststart"])
        else:  # one palette for the whole clip (palettegen sees every frame), looping forever
            options = dict(codec="gif", pix_fmt_out="pal8",
                           output_params=["-vf", "split[a][b];[a]palettegen=stats_mode=full[p];[b][p]paletteuse",
                                          "-loop", "0"])
        self._writer = imageio_ffmpeg.write_frames(self._temporary, self.size, fps=float(fps),
                                                   macro_block_size=1, ffmpeg_log_level="error", **options)
        try:
            self._writer.send(None)  # starts ffmpeg
        except BaseException:
            self.abort()
            raise

    def append(self, image: np.ndarray):
        """One frame, (height, width, 3) uint8."""
        if image.shape != (self.size[1], self.size[0], 3) or image.dtype != np.uint8:
            raise ValueError(f"expected a uint8 frame of shape {(self.size[1], self.size[0], 3)}, got "
                             f"{image.dtype} {image.shape}")
        try:
            self._writer.send(np.ascontiguousarray(image))
        except OSError as e:
            self.abort()
            raise write_failure(self.path, e) from None
        self.frames += 1

    def close(self) -> str:
        """Finish the file and rename it into place; returns the path."""
        try:
            self._writer.close()
            os.replace(self._temporary, self.path)
        except BaseException as e:
            self.abort()
            if isinstance(e, OSError):
                raise write_failure(self.path, e) from None
            if isinstance(e, RuntimeError):  # ffmpeg's own failure (imageio-ffmpeg raises RuntimeError)
                raise write_failure(self.path, OSError(str(e).strip().splitlines()[-1])) from None
            raise
        return self.path

    def abort(self):
        with contextlib.suppress(Exception):
            self._writer.close()
        with contextlib.suppress(OSError):
            os.remove(self._temporary)

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is None:
            self.close()
        else:
            self.abort()
