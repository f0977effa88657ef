"""`sim view` without a browser: the live recorder agrees with the USD reader, the camera frames the scene, the
CLI refuses bad input with one line and exit 2, serves the page, and stops on Ctrl-C or SIGTERM."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

from sim import cli, playback
from sim.scene import Scene
from sim.viewer import Viewer, ViewerError, has_display
from sim.viewer.camera import framing_camera
from sim.viewer.recorder import PlaybackRecorder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# every kind of track a scene makes: cloth, particles, a body of two shapes, static colliders of each kind
SCENE = """
sim: {frames: 4, substeps: 2}
cloth:
  - name: sheet
    grid: {dim_x: 3, dim_y: 3, cell_x: 0.1, cell_y: 0.1}
    pos: [-0.15, 1.0, -0.15]
    rot: {axis: [1, 0, 0], angle: 90}
    mass: 0.01
particles:
  - {name: grains, points: [[0.5, 1.0, 0.0], [0.6, 1.2, 0.0]], radius: 0.02}
bodies:
  - name: crate
    pos: [1.0, 0.5, 0.0]
    angular_vel: [0.0, 3.0, 1.0]
    shapes: [{type: box, half_extents: [0.1, 0.2, 0.1]}, {type: sphere, pos: [0.0, 0.3, 0.0], radius: 0.1}]
colliders:
  - {type: ground}
  - {type: sphere, name: ball, pos: [0.0, 0.3, 0.0], radius: 0.2}
  - {type: capsule, name: bar, pos: [-1.0, 0.3, 0.0], radius: 0.05, half_height: 0.3}
  - {type: box, name: wall, pos: [0.0, 0.3, -1.0], rot: {axis: [0, 1, 0], angle: 30}, half_extents: [0.5, 0.3, 0.02]}
"""


def test_recorded_scene_gives_the_tracks_its_usd_file_gives(tmp_path):
    """What `sim view scene.yaml` shows is what `sim view` of the file `sim run` writes shows: same tracks, names,
    kinds, colours, faces and world vertices at every frame."""
    scene = Scene.from_string(SCENE, str(tmp_path / "scene.yaml"))
    path = str(tmp_path / "scene.usda")
    scene.run(out=path)
    from_file = playback.load(path)
    recorders = []
    frames_seen = []

    def make(**settings):
        recorders.append(PlaybackRecorder(on_frame=lambda r: frames_seen.append(r.playback.frame_count),
                                          **settings))
        return recorders[0]
    result = scene.run(record=make)
    live = recorders[0].playback
    assert result.output is None and recorders[0].closed
    assert frames_seen == [1, 2, 3, 4, 5]  # frame 0 and the 4 simulated, each announced as it came
    assert (live.fps, live.up_axis, live.frame_count) == (from_file.fps, from_file.up_axis, from_file.frame_count)
    np.testing.assert_array_equal(live.times, from_file.times)
    assert [t.name for t in live.tracks] == [t.name for t in from_file.tracks]
    for mine, theirs in zip(live.tracks, from_file.tracks):
        assert (mine.kind, mine.is_ground) == (theirs.kind, theirs.is_ground), mine.name
        np.testing.assert_allclose(mine.color, theirs.color, atol=1e-6, err_msg=mine.name)
        if mine.faces is not None:
            np.testing.assert_array_equal(mine.faces, theirs.faces, err_msg=mine.name)
        else:
            np.testing.assert_allclose(mine.radii, theirs.radii, rtol=1e-6)
        for frame in range(live.frame_count):
            np.testing.assert_allclose(mine.world_vertices(frame), theirs.world_vertices(frame), atol=2e-5,
                                       err_msg=f"{mine.name} frame {frame}")
    crate = [t for t in live.tracks if t.name.startswith("/World/crate/")]
    assert len(crate) == 2 and all(t.transforms is not None and t.positions is None for t in crate)
    moved = crate[0].world_vertices(4) - crate[0].world_vertices(0)
    assert np.linalg.norm(moved, axis=1).max() > 1e-3  # the body did turn and fall: a real check of its poses


def _project(point, camera, width=1600, height=900):
    """Pixel of `point` through the camera (independent pinhole arithmetic), and its depth."""
    eye = camera["position"]
    forward = (camera["look_at"] - eye) / np.linalg.norm(camera["look_at"] - eye)
    right = np.cross(forward, camera["up"])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    rel = np.asarray(point) - eye
    focal = 0.5 * height / np.tan(np.radians(45.0) / 2)
    depth = rel @ forward
    return np.array([width / 2 + focal * rel @ right / depth, height / 2 + focal * rel @ down / depth]), depth


@pytest.mark.parametrize("up_axis", ["Y", "Z"])
def test_framing_camera_sees_every_corner_of_the_box_with_up_up(up_axis):
    lower, upper = np.array([-0.8, 0.0, -0.3]), np.array([0.8, 1.3, 0.5])
    camera = framing_camera(lower, upper, up_axis)
    up = camera["up"]
    assert up[{"Y": 1, "Z": 2}[up_axis]] == 1.0
    assert (camera["position"] - camera["look_at"]) @ up > 0  # from above
    corners = np.array([[x, y, z] for x in (lower[0], upper[0]) for y in (lower[1], upper[1])
                        for z in (lower[2], upper[2])])
    for corner in corners:
        pixel, depth = _project(corner, camera)
        assert depth > 0 and 0 <= pixel[0] <= 1600 and 0 <= pixel[1] <= 900, corner
    top, _ = _project(camera["look_at"] + up, camera)
    assert top[1] < 450  # the up axis points up the screen


def test_viewer_serves_its_page_and_frees_its_port(tmp_path):
    from tools.browser_view import write_drape_usd
    pb = playback.load(write_drape_usd(str(tmp_path / "d.usd"), frames=5))
    viewer = Viewer(port=0)
    try:
        viewer.show(pb)
        assert viewer.frame == 0
        viewer.set_playing(False)
        viewer.show_frame(3)
        assert viewer.frame == 3
        viewer.show_frame(99)  # clamped to the last frame
        assert viewer.frame == 4
        page = urllib.request.urlopen(viewer.url, timeout=10).read().decode()
        assert "<html" in page.lower()
        port = viewer.port
    finally:
        viewer.close()
    Viewer(port=port).close()  # the port is free again: a second viewer gets it


def test_a_live_scene_that_blows_up_stays_on_show_with_its_error(tmp_path, capsys):
    import sim
    from tools.browser_view import wait_for
    bad = Scene.from_string("sim: {fps: 10, frames: 50, substeps: 1, solver: {type: semi_implicit}}\n"
                            "cloth:\n  - name: sheet\n    grid: {dim_x: 4, dim_y: 4, cell_x: 0.1, cell_y: 0.1}\n"
                            "    material: {tri_ke: 1.0e8, tri_ka: 1.0e8}\n    vel: [0, 0, 5]\n",
                            str(tmp_path / "bad.yaml"))
    viewer = sim.view(bad, port=0, block=False, open_browser=False, say=lambda line: None)
    try:
        wait_for(lambda: "stopped" in viewer.status, 120)
        assert "cloth 'sheet'" in viewer.status
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "cloth 'sheet'" in err
        shown = viewer.frame
        viewer.show_frame(10**6)
        assert viewer.frame >= shown >= 0 and viewer.frame < 50  # the frames before the blow-up, and no more
    finally:
        viewer.close()


def test_has_display_follows_the_environment(monkeypatch):
    if not sys.platform.startswith("linux"):
        pytest.skip("the $DISPLAY rule is Linux's")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert not has_display()
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    assert has_display()


def _view(argv, capsys):
    code = cli.main(["view", *argv])
    err = capsys.readouterr().err
    return code, err


def test_cli_refuses_missing_non_usd_and_unsampled_files(tmp_path, capsys):
    from sim.usd import UsdWriter
    text = tmp_path / "notes.usd"
    text.write_text("this is not USD\n")
    still = tmp_path / "still.usda"
    with UsdWriter(still) as w:
        w.add_collider("ball", kind="sphere", radius=0.5)
    for path, words in ((tmp_path / "missing.usd", "no such file"), (text, "not a USD file"),
                        (still, "no time samples")):
        code, err = _view([str(path), "--no-browser"], capsys)
        assert code == 2, err
        assert err.count("\n") == 1 and err.startswith("error: ") and words in err and str(path) in err, err


def test_cli_refuses_a_port_in_use_a_bad_host_and_scene_options_for_a_usd(tmp_path, capsys):
    from tools.browser_view import write_drape_usd
    path = write_drape_usd(str(tmp_path / "d.usd"), frames=3)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = _view([path, "--port", str(port), "--no-browser"], capsys)
    assert code == 2 and err.count("\n") == 1 and f"--port {port}" in err and "in use" in err, err
    code, err = _view([path, "--host", "no-such-host.invalid", "--no-browser"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--host no-such-host.invalid" in err, err
    code, err = _view([path, "--frames", "3", "--no-browser"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--frames" in err, err
    code, err = _view([str(tmp_path / "missing.yaml"), "--no-browser"], capsys)
    assert code == 2 and err.count("\n") == 1 and "missing.yaml" in err, err
    with pytest.raises(SystemExit) as info:
        cli.main(["view", path, "--port", "70000"])
    assert info.value.code == 2


def _start(argv, tmp_path):
    """`python -m sim view ARGV --port 0 --no-browser` in a subprocess; (process, url) once it serves."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "sim", "view", *argv, "--port", "0", "--no-browser"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    match = re.search(r"http://\S+", line)
    if match is None:
        proc.kill()
        raise AssertionError(f"no address printed: {line!r} {proc.communicate()}")
    return proc, match.group(0)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_cli_serves_a_usd_until_stopped(tmp_path, signum, code):
    from tools.browser_view import write_drape_usd
    path = write_drape_usd(str(tmp_path / "d.usd"), frames=5)
    proc, url = _start([path], tmp_path)
    try:
        assert "<html" in urllib.request.urlopen(url, timeout=10).read().decode().lower()
        # the address is printed before the file is read; a signal while the stage loads can still hang the
        # viewer's shutdown (a known race, see the issue note): stop it once the tiny file is shown
        time.sleep(3.0)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert "viewer stopped" in err and "Traceback" not in err, err


def test_cli_simulates_a_scene_while_serving_it(tmp_path):
    scene = tmp_path / "scene.yaml"
    scene.write_text(SCENE)
    proc, url = _start([str(scene), "--frames", "3"], tmp_path)
    try:
        assert "<html" in urllib.request.urlopen(url, timeout=10).read().decode().lower()
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err
