"""The pinhole camera of `sim render`: eye, look-at point, vertical field of view, the scene's up axis up.

Without an eye given, `frame_camera` places one that sees a whole animation: it looks at the centre of the
objects' box over every frame from the front, to one side and above, far enough back that the sphere around
that box fits the narrower of the two fields of view.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# direction from the target to the default eye for a y-up scene (in front, to the right, above); a z-up scene
# uses the same direction turned by (x, y, z) -> (x, -z, y), so both look the same way at their ground
_DEFAULT_VIEW_Y_UP = np.array([0.55, 0.45, 1.0])


@dataclass
class Camera:
    """A pinhole camera.

    Attributes:
        eye: (3,) position [stage units].
        look_at: (3,) point the camera looks at [stage units].
        up: (3,) world up direction (the scene's up axis); the image's vertical is its part across the view.
        fov: vertical field of view [degrees], in (0, 180).
        width, height: image size [pixels].
    """

    eye: np.ndarray
    look_at: np.ndarray
    up: np.ndarray
    fov: float
    width: int
    height: int

    def basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unit (forward, right, image up) vectors, right-handed: right = forward x up."""
        forward = _unit(self.look_at - self.eye)
        right = np.cross(forward, self.up)
        if np.linalg.norm(right) < 1e-6:  # looking straight along the up axis: any horizontal right will do
            right = np.cross(forward, np.roll(self.up, 1))
        right = _unit(right)
        return forward, right, np.cross(right, forward)

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pixel coordinates (n, 2) as (column, row), with (0, 0) the top-left pixel's corner and pixel centres at
        +0.5, and depth along the view (n,) [stage units] of world `points` (n, 3)."""
        forward, right, up = self.basis()
        rel = np.asarray(points, np.float64) - self.eye
        depth = rel @ forward
        tan_half = math.tan(math.radians(self.fov) / 2)
        sx = (rel @ right) / depth / (tan_half * self.width / self.height)
        sy = (rel @ up) / depth / tan_half
        return np.stack([(sx + 1) * self.width / 2, (1 - sy) * self.height / 2], axis=1), depth


def frame_camera(low, high, up_axis: str, *, width: int, height: int, fov: float = 45.0, eye=None,
                 look_at=None) -> Camera:
    """A camera for the box [low, high] (the animation's bounds): `eye` and `look_at` as given, else the look-at
    point is the box's centre and the eye is placed so the box's bounding sphere fills the view."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    up = np.array([0.0, 1.0, 0.0]) if up_axis.upper() == "Y" else np.array([0.0, 0.0, 1.0])
    centre = (low + high) / 2
    target = centre if look_at is None else np.asarray(look_at, np.float64)
    if eye is None:
        view = _DEFAULT_VIEW_Y_UP if up_axis.upper() == "Y" else _DEFAULT_VIEW_Y_UP[[0, 2, 1]] * (1, -1, 1)
        eye = target + _unit(view) * _fitting_distance(low, high, target, -_unit(view), up, fov, width / height)
    camera = Camera(np.asarray(eye, np.float64), target, up, float(fov), int(width), int(height))
    if np.linalg.norm(camera.look_at - camera.eye) < 1e-9:
        raise ValueError("the camera's eye and look-at point are the same point")
    return camera


def _fitting_distance(low, high, target, forward, up, fov: float, aspect: float, margin: float = 0.92) -> float:
    """Distance from `target` back along `forward` at which the 8 corners of the box [low, high] all project
    within `margin` of the image's half-width and half-height: for a corner at c (relative to the target), at
    distance d its depth is d + c.f, and |c.r| <= margin tan(half fov) (d + c.f) solves to a lower bound on d."""
    probe = Camera(target - forward, target, up, fov, 1, 1)
    _, right, image_up = probe.basis()
    tan_y = math.tan(math.radians(fov) / 2)
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1])
                        for z in (low[2], high[2])]) - target
    along = corners @ forward
    need = np.concatenate([np.abs(corners @ right) / (margin * tan_y * aspect) - along,
                           np.abs(corners @ image_up) / (margin * tan_y) - along])
    size = float(np.linalg.norm(high - low))
    return max(float(need.max()), 0.5 * size, 1e-3)  # never inside the box: half its diagonal at least


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)
