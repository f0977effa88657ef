"""Drive a headless Chromium at a `sim view` page: for the browser test (tests/test_view_browser.py) and the
start-up benchmark (tools/bench_view.py).

Chromium is the system's (Debian's `chromium` package, which .ci/run installs), driven by Playwright's Python
package without Playwright's own browser download. WebGL runs in software (SwiftShader), so no GPU or display is
needed.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import time

import numpy as np

#: Names of a Chromium executable on PATH, in the order tried ($SIM_CHROMIUM, when set, comes first).
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# WebGL without a GPU: SwiftShader, which recent Chromium only allows when asked; root (CI containers) needs
# --no-sandbox
CHROMIUM_ARGS = ("--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist", "--no-sandbox")
# elements viser draws over the 3D canvas: the control panel and notifications (ours: "software WebGL")
OVERLAY_SELECTORS = (".mantine-Paper-root", ".mantine-Notification-root")
_AXES_GIZMO_PX = 100  # the orientation gizmo in the canvas' bottom-left corner (red, green, blue axes)


def find_chromium() -> str | None:
    """The Chromium executable to drive, or None."""
    wanted = os.environ.get("SIM_CHROMIUM")
    if wanted:
        return wanted if os.path.exists(wanted) else shutil.which(wanted)
    return next((path for path in map(shutil.which, CHROMIUM_NAMES) if path), None)


@contextlib.contextmanager
def chromium_page(executable: str, width: int = 1000, height: int = 600):
    """A Playwright page of `width` x `height` CSS pixels (device scale 1: screenshot pixels are CSS pixels)."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=list(CHROMIUM_ARGS))
        try:
            page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=1)
            yield page
        finally:
            browser.close()


def screenshot(page) -> np.ndarray:
    """The page as an (H, W, 3) uint8 RGB image."""
    import imageio.v3 as iio
    return np.asarray(iio.imread(io.BytesIO(page.screenshot(type="png")), extension=".png"))[..., :3]


def canvas_mask(page, shape: tuple) -> np.ndarray:
    """(H, W) bool: pixels where the 3D canvas is seen, not covered by the control panel, a notification or the
    axes gizmo."""
    visible = np.ones(shape[:2], bool)
    for selector in OVERLAY_SELECTORS:
        for box in page.evaluate(f"() => [...document.querySelectorAll('{selector}')].map(e => "
                                 "{const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];})"):
            left, top, right, bottom = (int(round(v)) for v in box)
            visible[max(top, 0):max(bottom, 0), max(left, 0):max(right, 0)] = False
    visible[-_AXES_GIZMO_PX:, :_AXES_GIZMO_PX] = False
    return visible


def color_mask(image: np.ndarray, color, *, hue_tolerance_deg: float = 20.0,
               min_saturation: float = 0.25) -> np.ndarray:
    """(H, W) bool: pixels of `color`'s hue (within `hue_tolerance_deg`) and saturated (at least
    `min_saturation`), whatever their brightness: lighting and tone mapping change a colour's brightness and
    saturation, not its hue."""
    def hue_saturation(rgb):
        rgb = np.asarray(rgb, np.float64)
        high, low = rgb.max(axis=-1), rgb.min(axis=-1)
        chroma = high - low
        r, g, b = np.moveaxis(rgb, -1, 0)
        safe = np.where(chroma > 0, chroma, 1.0)
        hue = np.where(high == r, ((g - b) / safe) % 6, np.where(high == g, (b - r) / safe + 2, (r - g) / safe + 4))
        return 60.0 * hue, np.divide(chroma, high, out=np.zeros_like(high), where=high > 0)
    hue, saturation = hue_saturation(image)
    target, _ = hue_saturation(np.asarray(color, np.float64))
    distance = np.abs((hue - target + 180.0) % 360.0 - 180.0)
    return (distance < hue_tolerance_deg) & (saturation >= min_saturation)


def wait_for(predicate, timeout_s: float, interval_s: float = 0.1):
    """Polls `predicate()` until it returns something truthy (returned), or raises TimeoutError."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"still false after {timeout_s:g} s")
        time.sleep(interval_s)


def project_triangles(vertices, faces, camera: dict, width: int, height: int) -> np.ndarray:
    """(height, width) bool: the pixels whose centres lie in the pinhole projection of any triangle.

    Independent of the viewer's renderer: numpy's own perspective projection of the world-space triangles through
    the camera the page reports (`position`, `look_at`, `up` [stage units], vertical `fov` [rad]). Pixel (0, 0)
    is the top-left one; every vertex must be in front of the camera."""
    eye = np.asarray(camera["position"], np.float64)
    forward = np.asarray(camera["look_at"], np.float64) - eye
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.asarray(camera["up"], np.float64))
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    relative = np.asarray(vertices, np.float64) - eye
    depth = relative @ forward
    if np.any(depth <= 0):
        raise ValueError("a vertex is behind the camera")
    focal = 0.5 * height / np.tan(0.5 * float(camera["fov"]))
    u = 0.5 * width + focal * (relative @ right) / depth
    v = 0.5 * height + focal * (relative @ down) / depth
    mask = np.zeros((height, width), bool)
    for a, b, c in np.asarray(faces):
        xs, ys = u[[a, b, c]], v[[a, b, c]]
        x0, x1 = max(int(np.floor(xs.min())), 0), min(int(np.ceil(xs.max())), width - 1)
        y0, y1 = max(int(np.floor(ys.min())), 0), min(int(np.ceil(ys.max())), height - 1)
        if x0 > x1 or y0 > y1:
            continue
        px, py = np.meshgrid(np.arange(x0, x1 + 1) + 0.5, np.arange(y0, y1 + 1) + 0.5)
        edges = [(xs[i], ys[i], xs[(i + 1) % 3], ys[(i + 1) % 3]) for i in range(3)]
        sides = [(x2 - x1_) * (py - y1_) - (y2 - y1_) * (px - x1_) for x1_, y1_, x2, y2 in edges]
        inside = (np.all([s >= 0 for s in sides], axis=0) | np.all([s <= 0 for s in sides], axis=0))
        mask[y0:y1 + 1, x0:x1 + 1] |= inside
    return mask


def iou(a: np.ndarray, b: np.ndarray, where: np.ndarray) -> float:
    """Intersection over union of two masks, counting only the pixels of `where`."""
    a, b = a & where, b & where
    union = np.count_nonzero(a | b)
    return np.count_nonzero(a & b) / union if union else 1.0


#: Colours of the known animation of `write_drape_usd`: cloth, ball, ground, crate, particles.
DRAPE_COLORS = {"cloth": (0.85, 0.15, 0.10), "ball": (0.30, 0.50, 0.80), "ground": (0.80, 0.80, 0.78),
                "crate": (0.20, 0.65, 0.30), "grains": (0.90, 0.75, 0.15)}


def drape_cloth(frame: int, fps: float) -> np.ndarray:
    """World positions (33 * 33, 3) [m] of the known cloth at `frame`: the 1.6 m square of scenes/cloth.yaml
    (32 x 32 cells) falling from 1.3 m and settling over a tent round the 0.5 m ball (3 cm above it: a circle cap
    joined to the cone tangent to it, so no triangle cuts the ball), down to the ground."""
    u = np.linspace(-0.8, 0.8, 33)
    x, z = np.meshgrid(u, u, indexing="ij")
    radius, center, slope = 0.53, 0.5, 1.2  # ball radius + 3 cm [m], ball centre height [m], tent slope
    r = np.hypot(x, z)
    touch = radius * slope / np.hypot(1.0, slope)  # where the cone touches the circle
    cap = center + np.sqrt(np.clip(radius * radius - r * r, 0.0, None))
    cone = center + radius * np.hypot(1.0, slope) - slope * r
    rest = np.maximum(np.where(r < touch, cap, cone), 0.02)
    t = frame / fps
    y = np.maximum(1.3 - 0.5 * 9.81 * t * t, rest)
    return np.stack([x, y, z], axis=-1).reshape(-1, 3)


def drape_faces() -> np.ndarray:
    """Triangles (2 * 32 * 32, 3) of the known cloth, counter-clockwise seen from above (+y)."""
    i, j = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    a = (i * 33 + j).ravel()
    return np.concatenate([np.stack([a, a + 1, a + 34], 1), np.stack([a, a + 34, a + 33], 1)])


def write_drape_usd(path: str, frames: int = 120, fps: float = 60.0) -> str:
    """A USD file like `sim run scenes/cloth.yaml` writes, with motion known in closed form: the cloth of
    `drape_cloth` over a ball on a ground square, a crate (rigid body) sliding and turning beside it, and 25
    particles falling onto the ground."""
    from sim.usd import UsdWriter
    grid = np.stack(np.meshgrid(np.linspace(-0.2, 0.2, 5), np.linspace(-0.2, 0.2, 5), indexing="ij"), -1)
    grains = np.concatenate([grid.reshape(-1, 2)[:, :1] - 1.3, np.zeros((25, 1)), grid.reshape(-1, 2)[:, 1:]], 1)
    with UsdWriter(path, fps=fps, up_axis="y") as w:
        w.add_mesh("cloth", drape_cloth(0, fps), drape_faces(), normals=True, color=DRAPE_COLORS["cloth"])
        w.add_points("grains", grains + [0, 1.0, 0], 0.03, color=DRAPE_COLORS["grains"])
        w.add_collider("ball", kind="sphere", pos=(0, 0.5, 0), radius=0.5, color=DRAPE_COLORS["ball"])
        w.add_collider("ground", kind="plane", width=2.0, length=2.0, color=DRAPE_COLORS["ground"])
        w.add_body("crate", [dict(kind="box", half_extents=(0.15, 0.15, 0.15), color=DRAPE_COLORS["crate"])],
                   pos=(1.3, 0.15, 0.6))
        for frame in range(frames):
            t = frame / fps
            height = 0.03 + max(1.0 - 0.5 * 9.81 * t * t, 0.0)
            w.write_frame(frame, points={"cloth": drape_cloth(frame, fps), "grains": grains + [0, height, 0]},
                          bodies={"crate": ((1.3, 0.15, 0.6 - 0.6 * t), (0, np.sin(t / 2), 0, np.cos(t / 2)))})
    return path
