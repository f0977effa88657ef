"""`sim view` in a real browser: headless Chromium opens the page, the cloth's colour covers the pixels where an
independent numpy projection of the cloth says it must, and the GUI's pause button and frame slider work.

Skipped only when no Chromium is installed (.ci/run installs Debian's `chromium`). Set SIM_VIEW_SCREENSHOT=path to
keep the last screenshot (docs/viewing.png is one).
"""

import os
import shutil

import numpy as np
import pytest

from tools.browser_view import (DRAPE_COLORS, canvas_mask, chromium_page, color_mask, drape_cloth, drape_faces,
                                find_chromium, iou, project_triangles, screenshot, wait_for, write_drape_usd)

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium to drive (apt-get install chromium; .ci/run "
                                                         "installs it when missing)")
FPS, FRAMES = 60.0, 60
WIDTH, HEIGHT = 800, 480


def _settled(page, timeout_s: float = 30.0) -> np.ndarray:
    """A screenshot once the picture stops changing (software WebGL takes a few frames to catch up)."""
    shots = [screenshot(page)]

    def same_twice():
        page.wait_for_timeout(250)
        shots.append(screenshot(page))
        return np.array_equal(shots[-1], shots[-2])
    wait_for(same_twice, timeout_s, interval_s=0.0)
    return shots[-1]


def _cloth_iou(page, image: np.ndarray, camera: dict, frame: int) -> float:
    """IoU of the cloth-coloured pixels and the numpy projection of the cloth at `frame`, over the canvas pixels
    no overlay covers."""
    expected = project_triangles(drape_cloth(frame, FPS), drape_faces(), camera, image.shape[1], image.shape[0])
    seen = color_mask(image, DRAPE_COLORS["cloth"])
    return iou(seen, expected, canvas_mask(page, image.shape))


def test_view_page_shows_the_cloth_and_its_slider_moves_it(tmp_path):
    import sim
    path = write_drape_usd(str(tmp_path / "drape.usd"), frames=FRAMES, fps=FPS)
    viewer = sim.view(path, port=0, block=False, open_browser=False, say=lambda line: None)
    try:
        with chromium_page(CHROMIUM, WIDTH, HEIGHT) as page:
            page.goto(viewer.url)
            wait_for(viewer.page_cameras, 30)
            close = page.locator(".mantine-Notification-root button")  # "software WebGL": a GPU-less browser
            if close.count():
                close.first.click(force=True)
            assert viewer.playing
            # force: while the page plays, software WebGL keeps its main thread so busy that Playwright's wait for a
            # "stable" button takes seconds; the server seeing the click is what is checked
            page.get_by_role("button", name="Pause").click(force=True)
            wait_for(lambda: not viewer.playing, 10)
            slider = page.get_by_role("slider")
            slider.focus()
            page.keyboard.press("Home")
            wait_for(lambda: viewer.frame == 0, 10)
            first = _settled(page)
            camera = viewer.page_cameras()[0]
            assert (camera["width"], camera["height"]) == (WIDTH, HEIGHT)
            assert _cloth_iou(page, first, camera, 0) >= 0.9

            page.keyboard.press("End")
            wait_for(lambda: viewer.frame == FRAMES - 1, 10)
            last = _settled(page)
            assert _cloth_iou(page, last, viewer.page_cameras()[0], FRAMES - 1) >= 0.9
            changed = np.abs(first.astype(int) - last.astype(int)).max(axis=-1) > 30
            assert np.count_nonzero(changed & canvas_mask(page, first.shape)) > 0.02 * WIDTH * HEIGHT
            if os.environ.get("SIM_VIEW_SCREENSHOT"):
                page.screenshot(path=str(tmp_path / "shot.png"))
                shutil.copyfile(tmp_path / "shot.png", os.environ["SIM_VIEW_SCREENSHOT"])

            page.get_by_role("button", name="Play").click()
            wait_for(lambda: viewer.playing and viewer.frame != FRAMES - 1, 10)
    finally:
        viewer.close()
