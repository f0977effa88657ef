"""Animations side by side in one video (what `sim optimize` writes as progress.mp4: the rollout with the initial
parameters next to the one with the learned parameters), each panel labelled, all seen by one camera."""

from __future__ import annotations

import os

import numpy as np

from .. import interrupts
from .camera import frame_camera
from .output import VideoWriter

LABEL_SCALE = 2  # of the 5x7 font of sim/plot.py


def side_by_side(paths: list, out, *, labels: list | None = None, size=(320, 240), shadows: bool = True,
                 device=None) -> str:
    """Render the USD animations `paths` next to each other into the video `out` (.mp4 or .gif).

    Every panel is `size` = (width, height) pixels and seen by the same camera, which frames all the animations
    together, so a difference between panels is a difference of the motions. An animation shorter than the
    longest holds its last frame. The frame rate is the first file's.

    Returns:
        The output path.
    """
    from ..playback import load
    from ..plot import draw_text
    from .raycast import FrameRaster

    playbacks = [load(p) for p in paths]
    boxes = [p.bounds() for p in playbacks]
    low = np.min([b[0] for b in boxes], axis=0)
    high = np.max([b[1] for b in boxes], axis=0)
    width, height = (int(v) for v in size)
    camera = frame_camera(low, high, playbacks[0].up_axis, width=width, height=height)
    rasters = [FrameRaster(p, shadows=shadows, device=device) for p in playbacks]
    frames = max(p.frame_count for p in playbacks)
    with VideoWriter(os.fspath(out), width * len(paths), height, playbacks[0].fps) as writer:
        for frame in range(frames):
            interrupts.raise_if_stopped()  # a stop a library swallowed (pxr's import does) is not lost
            panels = [r.render(min(frame, p.frame_count - 1), camera) for r, p in zip(rasters, playbacks)]
            for panel, label in zip(panels, labels or []):
                draw_text(panel, label, 6, 6, LABEL_SCALE)
            writer.append(np.concatenate(panels, axis=1))
    return os.fspath(out)
