"""Where the viewer's camera starts: a pinhole that frames a box of the scene, seen from the front, slightly above."""

from __future__ import annotations

import numpy as np

#: Vertical field of view of the viewer's camera [degrees] (`sim render`'s default too).
FIELD_OF_VIEW_DEG = 45.0
# the camera looks from this far round from the front (towards +x) and this far above the horizon [degrees]
_AZIMUTH_DEG, _ELEVATION_DEG = 30.0, 25.0


def up_vector(up_axis: str) -> np.ndarray:
    """The unit vector of a stage's up axis, "Y" or "Z" (either case), shape (3,)."""
    return np.eye(3)[{"y": 1, "z": 2}[up_axis.lower()]]


def framing_camera(lower, upper, up_axis: str, fov_deg: float = FIELD_OF_VIEW_DEG) -> dict:
    """A camera that sees the whole box [lower, upper] (its bounding sphere fits the vertical field of view).

    Args:
        lower, upper: corners of the box to frame [stage units], shape (3,) each.
        up_axis: the stage's up axis, "Y" or "Z".
        fov_deg: vertical field of view [degrees].

    Returns:
        {"position": eye (3,), "look_at": the box's centre (3,), "up": up vector (3,)}, float64, stage units.
        "Front" is +z for a Y-up stage and -y for a Z-up one (the side a right-handed stage shows its x axis to
        the right).
    """
    lower, upper = np.asarray(lower, np.float64), np.asarray(upper, np.float64)
    center = 0.5 * (lower + upper)
    # a flat or single-point box still needs a distance: 5 cm is the smallest scene worth framing
    radius = max(0.5 * float(np.linalg.norm(upper - lower)), 0.05)
    azimuth, elevation = np.radians(_AZIMUTH_DEG), np.radians(_ELEVATION_DEG)
    side, front, up = np.sin(azimuth) * np.cos(elevation), np.cos(azimuth) * np.cos(elevation), np.sin(elevation)
    direction = np.array([side, up, front]) if up_axis.lower() == "y" else np.array([side, -front, up])
    distance = radius / np.sin(0.5 * np.radians(fov_deg)) * 1.05  # 5% margin round the sphere
    return {"position": center + distance * direction, "look_at": center, "up": up_vector(up_axis)}
