"""sim render: frames checked by pixels against an independent numpy projection of the geometry, videos read back
with ffmpeg, bad input refused with one line and nothing written."""

import os

import numpy as np
import pytest

pytest.importorskip("pxr")
imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")

import sim  # noqa: E402
from sim.cli import main  # noqa: E402
from sim.rendering import RenderError, render  # noqa: E402
from sim.usd import UsdWriter  # noqa: E402

W, H = 160, 120
RED, GREEN = (0.9, 0.12, 0.1), (0.15, 0.8, 0.15)


def _read_png(path) -> np.ndarray:
    """RGB pixels of a PNG as sim.plot.encode_png writes it (8-bit RGB, filter 0 rows), decoded here."""
    import struct
    import zlib
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height = size
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + 3 * width)
    assert np.all(rows[:, 0] == 0)
    return rows[:, 1:].reshape(height, width, 3)


# ---------------------------------------------------------------------------------- independent projection


def _pinhole(eye, look_at, up, fov):
    """World -> pixel (column, row) of a pinhole camera, written out here rather than taken from sim.rendering:
    pixel centres at +0.5, rows downward, vertical field of view `fov` degrees."""
    eye, look_at, up = (np.asarray(v, float) for v in (eye, look_at, up))
    f = (look_at - eye) / np.linalg.norm(look_at - eye)
    r = np.cross(f, up)
    r /= np.linalg.norm(r)
    u = np.cross(r, f)
    t = np.tan(np.radians(fov) / 2)

    def project(p):
        rel = np.asarray(p, float) - eye
        z = rel @ f
        return np.stack([(1 + (rel @ r) / z / (t * W / H)) * W / 2, (1 - (rel @ u) / z / t) * H / 2], -1), z
    return project


def _rasterize(project, triangles, label, zbuffer, labels):
    """Scan-converts world triangles (n, 3, 3): a pixel centre inside a projected triangle takes `label` where the
    triangle's interpolated depth is nearer than what the z-buffer holds."""
    cols, rows = np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)
    for tri in triangles:
        xy, z = project(tri)
        (x0, y0), (x1, y1), (x2, y2) = xy
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        if abs(area) < 1e-12:
            continue
        c0, c1 = int(max(np.floor(xy[:, 0].min()), 0)), int(min(np.ceil(xy[:, 0].max()), W))
        r0, r1 = int(max(np.floor(xy[:, 1].min()), 0)), int(min(np.ceil(xy[:, 1].max()), H))
        if c0 >= c1 or r0 >= r1:
            continue
        px, py = cols[r0:r1, c0:c1], rows[r0:r1, c0:c1]
        a = ((x1 - px) * (y2 - py) - (x2 - px) * (y1 - py)) / area
        b = ((x2 - px) * (y0 - py) - (x0 - px) * (y2 - py)) / area
        c = 1 - a - b
        inside = (a >= 0) & (b >= 0) & (c >= 0)
        # perspective-correct depth: 1/z is linear in screen space
        depth = 1 / (a / z[0] + b / z[1] + c / z[2])
        nearer = inside & (depth < zbuffer[r0:r1, c0:c1])
        zbuffer[r0:r1, c0:c1][nearer] = depth[nearer]
        labels[r0:r1, c0:c1][nearer] = label


def _sphere_pixels(eye, project_fov, centre, radius, zbuffer, labels, label):
    """Analytic ray-sphere intersection for every pixel's ray (the renderer uses a tessellated sphere)."""
    eye_, look_at, up, fov = project_fov
    eye = np.asarray(eye, float)
    f = (np.asarray(look_at, float) - eye)
    f /= np.linalg.norm(f)
    r = np.cross(f, up)
    r /= np.linalg.norm(r)
    u = np.cross(r, f)
    t = np.tan(np.radians(fov) / 2)
    cols, rows = np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)
    d = (f + ((2 * cols / W - 1) * t * W / H)[..., None] * r + ((1 - 2 * rows / H) * t)[..., None] * u)
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    oc = eye - centre
    b = d @ oc
    disc = b * b - (oc @ oc - radius * radius)
    hit = disc >= 0
    dist = -b - np.sqrt(np.where(hit, disc, 0))
    depth = dist * (d @ f)  # along the view axis, as the rasterizer's
    nearer = hit & (dist > 0) & (depth < zbuffer)
    zbuffer[nearer] = depth[nearer]
    labels[nearer] = label


def _classify(image) -> np.ndarray:
    """1 where the pixel is red (the first object's hue), 2 where green, 0 elsewhere (grey ground, bluish sky):
    shading scales a colour, so its hue tells which object a pixel shows."""
    rgb = image.astype(float) + 1
    red = (rgb[..., 0] > 1.8 * rgb[..., 1]) & (rgb[..., 0] > 1.8 * rgb[..., 2])
    green = (rgb[..., 1] > 1.8 * rgb[..., 0]) & (rgb[..., 1] > 1.8 * rgb[..., 2])
    return np.where(red, 1, np.where(green, 2, 0))


def _iou(a, b) -> float:
    return float((a & b).sum() / max((a | b).sum(), 1))


# --------------------------------------------------------------------------------------------------- scenes


def _draped_cloth(n=16, half=0.36):
    """A grid over x, z in [-half, half] lifted onto a cap 3 cm above a sphere of radius 0.5 at (0, 0.5, 0), so
    the cloth covers the sphere's top and its lower half shows: points (n+1)^2 x 3 and triangles."""
    xs = np.linspace(-half, half, n + 1)
    x, z = np.meshgrid(xs, xs)
    y = 0.5 + np.sqrt(0.53 ** 2 - x * x - z * z)
    points = np.stack([x, y, z], -1).reshape(-1, 3)
    k = np.arange(n * (n + 1)).reshape(n, n + 1)[:, :n].reshape(-1)
    tris = np.concatenate([np.stack([k, k + n + 1, k + 1], 1), np.stack([k + 1, k + n + 1, k + n + 2], 1)])
    return points, tris


@pytest.fixture(scope="module")
def cloth_usd(tmp_path_factory):
    """A cloth draped over a sphere on the ground: 3 frames, the cloth sinking 1 cm per frame."""
    path = tmp_path_factory.mktemp("render") / "drape.usda"
    points, tris = _draped_cloth()
    with UsdWriter(path, fps=24) as w:
        w.add_mesh("cloth", points, tris, color=RED)
        w.add_collider("ball", kind="sphere", pos=(0, 0.5, 0), radius=0.5, color=GREEN)
        w.add_collider("ground", kind="plane", width=3, length=3)
        for frame in range(3):
            w.write_frame(frame, points={"cloth": points - (0, 0.01 * frame, 0)})
    return path, points, tris


def test_cloth_over_sphere_is_where_the_projection_says(cloth_usd, tmp_path):
    path, points, tris = cloth_usd
    eye, look_at, fov = (0.9, 1.1, 1.3), (0.0, 0.5, 0.0), 45.0
    out = tmp_path / "drape.png"
    render(path, out, frame=1, size=(W, H), camera=eye, look_at=look_at, fov=fov)
    image = _read_png(out)
    assert image.shape == (H, W, 3)

    project = _pinhole(eye, look_at, (0, 1, 0), fov)
    zbuffer, labels = np.full((H, W), np.inf), np.zeros((H, W), int)
    world = points - (0, 0.01, 0)
    _rasterize(project, world[tris], 1, zbuffer, labels)
    _sphere_pixels(eye, (eye, look_at, (0, 1, 0), fov), np.array([0, 0.5, 0]), 0.5, zbuffer, labels, 2)
    got = _classify(image)
    cloth_iou, ball_iou = _iou(got == 1, labels == 1), _iou(got == 2, labels == 2)
    assert (labels == 1).sum() > 1000 and (labels == 2).sum() > 1000  # both really in view
    assert cloth_iou >= 0.9, cloth_iou
    assert ball_iou >= 0.9, ball_iou


def test_a_box_on_the_ground_is_where_the_projection_says(tmp_path):
    """A rotated box body resting on the ground, seen from a z-up stage's usual side."""
    path = tmp_path / "box.usd"
    angle = 0.5
    rot = (0.0, 0.0, np.sin(angle / 2), np.cos(angle / 2))
    half = np.array([0.3, 0.2, 0.25])
    with UsdWriter(path, fps=30, up_axis="z") as w:
        w.add_body("crate", shapes=[dict(kind="box", half_extents=tuple(half), color=RED)])
        w.add_collider("ground", kind="plane", rot=(np.sin(np.pi / 4), 0, 0, np.cos(np.pi / 4)))
        for frame in range(2):
            w.write_frame(frame, bodies={"crate": ((0.1 * frame, 0, half[2]), rot)})
    eye, look_at, fov = (1.2, -1.6, 1.1), (0.1, 0.0, 0.2), 45.0
    out = tmp_path / "box.png"
    render(path, out, frame=1, size=(W, H), camera=eye, look_at=look_at, fov=fov)
    image = _read_png(out)

    c, s = np.cos(angle), np.sin(angle)
    rotation = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * half
    world = corners @ rotation.T + (0.1, 0, half[2])
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7), (2, 7, 6),
             (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    project = _pinhole(eye, look_at, (0, 0, 1), fov)
    zbuffer, labels = np.full((H, W), np.inf), np.zeros((H, W), int)
    _rasterize(project, world[np.array(faces)], 1, zbuffer, labels)
    got = _classify(image)
    assert (labels == 1).sum() > 1000
    assert _iou(got == 1, labels == 1) >= 0.9
    # the ground fills the lower rows outside the box: grey (all channels within a few percent)
    ground_rows = image[-10:][labels[-10:] == 0].astype(float)
    assert np.all(np.ptp(ground_rows, axis=-1) < 0.08 * 255)


def test_default_camera_frames_the_whole_animation(cloth_usd, tmp_path):
    path, points, _ = cloth_usd
    result = render(path, tmp_path / "f.png", frame=0, size=(W, H))
    cam = result.camera
    project = _pinhole(cam.eye, cam.look_at, (0, 1, 0), cam.fov)
    # the box around the cloth (every frame) and the sphere: all of it in view, and filling the view
    low = np.minimum(points.min(axis=0) - (0, 0.02, 0), (-0.5, 0.0, -0.5))
    high = np.maximum(points.max(axis=0), (0.5, 1.0, 0.5))
    corners = np.array([[x, y, z] for x in (low[0], high[0]) for y in (low[1], high[1]) for z in (low[2], high[2])])
    xy, z = project(corners)
    assert np.all(z > 0) and np.all((xy >= 0) & (xy <= (W, H)))
    margin = np.minimum(xy, (W, H) - xy) / (W, H)
    assert margin.min() < 0.1  # framed, not lost in the distance


@pytest.mark.parametrize("extension", [".mp4", ".gif"])
def test_videos_read_back_with_their_frame_count_and_size(cloth_usd, tmp_path, extension):
    path, _, _ = cloth_usd
    out = tmp_path / f"clip{extension}"
    result = render(path, out, size=(W, H))
    assert list(result.frames) == [0, 1, 2]
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(out))
    assert frames == 3
    reader = imageio_ffmpeg.read_frames(str(out), output_params=["-fps_mode", "passthrough"])
    meta = next(reader)
    decoded = [np.frombuffer(f, np.uint8).reshape(H, W, 3) for f in reader]
    assert meta["size"] == (W, H) and len(decoded) == 3
    still = tmp_path / "still.png"
    render(path, still, frame=2, size=(W, H))
    difference = np.abs(decoded[2].astype(int) - _read_png(still).astype(int)).mean()
    assert difference < 6, difference  # lossy (H.264, a 256-colour palette), but the same picture
    assert [p for p in os.listdir(tmp_path) if "simtmp" in p] == []


def test_frames_option_selects_a_range(cloth_usd, tmp_path):
    path, _, _ = cloth_usd
    result = sim.render(path, out=tmp_path / "part.mp4", frames="1:", size="64x48")
    assert list(result.frames) == [1, 2]
    assert imageio_ffmpeg.count_frames_and_secs(str(tmp_path / "part.mp4"))[0] == 2


def test_side_by_side_panels_share_one_camera(cloth_usd, tmp_path):
    """Two animations in one video: twice the width, the longer's frame count, each panel the animation's own
    frame as `render` draws it with the same camera, and its label in the corner."""
    from sim.rendering.compare import side_by_side
    path, points, tris = cloth_usd
    short = tmp_path / "short.usda"
    with UsdWriter(short, fps=24) as w:
        w.add_mesh("cloth", points, tris, color=RED)
        w.add_collider("ball", kind="sphere", pos=(0, 0.5, 0), radius=0.5, color=GREEN)
        w.add_collider("ground", kind="plane", width=3, length=3)
        for frame in range(2):
            w.write_frame(frame, points={"cloth": points + (0, 0.1 * frame, 0)})
    out = side_by_side([path, short], tmp_path / "both.mp4", labels=["initial", "learned"], size=(W, H))
    assert imageio_ffmpeg.count_frames_and_secs(out)[0] == 3
    reader = imageio_ffmpeg.read_frames(out, output_params=["-fps_mode", "passthrough"])
    assert next(reader)["size"] == (2 * W, H)
    last = np.frombuffer(list(reader)[-1], np.uint8).reshape(H, 2 * W, 3)
    left, right = _classify(last[:, :W]), _classify(last[:, W:])
    assert _iou(left == 1, right == 1) < 0.8  # the cloth sank in one and rose in the other
    assert last[6:20, 6:40].min() < 60  # the label's dark glyphs


def test_cli_renders_and_reports(cloth_usd, tmp_path, capsys):
    path, _, _ = cloth_usd
    out = tmp_path / "cli.png"
    assert main(["render", str(path), "--out", str(out), "--frame", "0", "--size", "64x48",
                 "--camera", "-1.5,1.2,2", "--look-at", "0,0.5,0", "--fov", "50", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "rendered  1 frame at 64x48" in text and str(out) in text
    assert _read_png(out).shape == (48, 64, 3)


@pytest.mark.parametrize("args,message", [
    (["{missing}", "--out", "{out}.mp4"], "missing.usd: no such file"),
    (["{text}", "--out", "{out}.mp4"], "notes.usda: not a USD file USD can read"),
    (["{still}", "--out", "{out}.mp4"], "still.usda: the file has no time samples"),
    (["{usd}", "--out", "{out}.avi"], "unsupported extension '.avi'"),
    (["{usd}", "--out", "{out}.mp4", "--size", "65x48"], "an MP4 needs an even width and height"),
    (["{usd}", "--out", "{out}.mp4", "--size", "wide"], "--size wide: expected WIDTHxHEIGHT"),
    (["{usd}", "--out", "{out}.mp4", "--size", "8x8"], "between 16 and"),
    (["{usd}", "--out", "{out}.mp4", "--frames", "2:9"], "--frames 2:9: the file has 3 frames"),
    (["{usd}", "--out", "{out}.mp4", "--frames", "two"], "--frames two: expected START:STOP"),
    (["{usd}", "--out", "{out}.png", "--frame", "3"], "--frame 3: the file has 3 frames"),
    (["{usd}", "--out", "{out}.png", "--frames", "0:2"], "a .png holds one frame"),
    (["{usd}", "--out", "{out}.mp4", "--frame", "1"], "choose them with --frames A:B"),
    (["{usd}", "--out", "{out}.mp4", "--camera", "1,2"], "--camera 1,2: expected three numbers X,Y,Z"),
    (["{usd}", "--out", "{out}.mp4", "--look-at", "a,b,c"], "--look-at a,b,c: expected three numbers"),
    (["{usd}", "--out", "{out}.mp4", "--fov", "180"], "--fov 180.0: expected a vertical field of view"),
    (["{usd}", "--out", "{out}.mp4", "--camera-pos", "1,2,3"], "unrecognized arguments: --camera-pos"),
    (["{usd}", "--out", "{out}.mp4", "--camera", "0,1,0", "--look-at", "0,1,0"], "are the same point"),
])
def test_bad_input_is_one_line_and_exit_2_with_nothing_written(cloth_usd, tmp_path, capsys, args, message):
    folder = tmp_path / "outputs"
    folder.mkdir()
    (tmp_path / "notes.usda").write_text("not USD at all\n")
    with UsdWriter(tmp_path / "still.usda") as w:
        w.add_collider("ball", kind="sphere", radius=1)
    names = dict(missing=tmp_path / "missing.usd", text=tmp_path / "notes.usda", still=tmp_path / "still.usda",
                 usd=cloth_usd[0], out=folder / "result")
    argv = ["render"] + [a.format(**names) for a in args]
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert os.listdir(folder) == []


def test_python_api_refuses_bad_values(cloth_usd, tmp_path):
    path, _, _ = cloth_usd
    with pytest.raises(RenderError, match=r"size \(1, 2, 3\)"):
        render(path, tmp_path / "x.mp4", size=(1, 2, 3))
    with pytest.raises(RenderError, match="--frame 1.5"):
        render(path, tmp_path / "x.png", frame=1.5)


def test_an_interrupted_video_leaves_no_file(cloth_usd, tmp_path, monkeypatch):
    from sim.rendering import raycast
    path, _, _ = cloth_usd
    calls = []
    original = raycast.FrameRaster.render

    def stop_at_second(self, frame, camera):
        calls.append(frame)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(self, frame, camera)
    monkeypatch.setattr(raycast.FrameRaster, "render", stop_at_second)
    out = tmp_path / "cut.mp4"
    out.write_bytes(b"earlier")
    assert main(["render", str(path), "--out", str(out), "--size", "64x48", "--quiet"]) == 130
    assert out.read_bytes() == b"earlier" and sorted(os.listdir(tmp_path)) == ["cut.mp4"]
