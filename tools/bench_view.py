"""The view section of tools/bench.py (also `python tools/bench_view.py`): how soon `sim view` of a USD file shows
its first frame in a browser. Target: within 3 s of the command starting.

The file is `out/cloth.usd` as `sim run scenes/cloth.yaml` writes it (simulated here first: 120 frames of a 33 x 33
cloth over a ball). A headless Chromium (the system's, tools/browser_view.py) is started before the clock runs, as
a user's browser is; then `python -m sim view FILE --port 0 --no-browser` starts, and the page is opened as soon as
the address is printed. Measured from the command's start: the address printed (interpreter, imports, reading the
file, server up), and the first screenshot in which the cloth's colour covers pixels (the page loaded, its
WebGL, in software here, drew frame 0). Each is the best of a few runs.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

if __package__ in (None, ""):  # run as a script: tools/ is on sys.path, the repository root is not
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import browser_view  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_S = 3.0
_CLOTH_PIXELS = 200  # pixels of the cloth's colour that say the scene is drawn


def _cloth_usd(folder: str) -> tuple:
    """scenes/cloth.yaml simulated into `folder`; (path, the cloth's display colour)."""
    import sim
    scene = sim.Scene.load(os.path.join(ROOT, "scenes", "cloth.yaml"))
    path = scene.run(out=os.path.join(folder, "cloth.usd")).output
    from sim import playback
    cloth = next(t for t in playback.load(path).tracks if t.name.endswith("cloth"))
    return path, cloth.color


def _one_start(page, path: str, color) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "sim", "view", path, "--port", "0", "--no-browser"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        serving = time.perf_counter() - start
        url = re.search(r"http://\S+", line)
        if url is None:
            raise RuntimeError(f"sim view printed no address: {line!r} {proc.stderr.read()[-2000:]}")
        page.goto(url.group(0))

        def drawn():
            return np.count_nonzero(browser_view.color_mask(browser_view.screenshot(page), color)) > _CLOTH_PIXELS
        browser_view.wait_for(drawn, 60.0, interval_s=0.0)
        first = time.perf_counter() - start
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    page.goto("about:blank")
    return {"serving_s": serving, "first_frame_s": first}


def measure(quick: bool, repeats: int = 3) -> dict:
    """{"serving_s", "first_frame_s", "frames", "runs"}, best of `repeats`; {"skipped": why} in quick mode or
    without Chromium."""
    if quick:
        return {"skipped": "skipped in --quick (it simulates scenes/cloth.yaml first); run tools/bench.py --only view"}
    chromium = browser_view.find_chromium()
    if chromium is None:
        return {"skipped": "skipped: no Chromium (apt-get install chromium)"}
    with tempfile.TemporaryDirectory(prefix="bench-view-") as folder:
        path, color = _cloth_usd(folder)
        from sim import playback
        frames = playback.load(path).frame_count
        with browser_view.chromium_page(chromium) as page:
            runs = [_one_start(page, path, color) for _ in range(repeats)]
    best = {key: min(run[key] for run in runs) for key in runs[0]}
    return dict(best, frames=frames, runs=repeats)


def render(result: dict) -> str:
    if "skipped" in result:
        return f"view: {result['skipped']}"
    verdict = "meets" if result["first_frame_s"] <= TARGET_S else "misses"
    return (f"view (sim view of out/cloth.usd, {result['frames']} frames; best of {result['runs']}): address printed "
            f"after {result['serving_s']:.2f} s, first frame drawn in headless Chromium (software WebGL) after "
            f"{result['first_frame_s']:.2f} s from the command's start ({verdict} the {TARGET_S:g} s target)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    print(render(measure(quick=parser.parse_args().quick)))
