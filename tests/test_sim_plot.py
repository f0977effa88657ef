"""sim.plot: the PNG decodes (signature, IHDR, CRCs, IDAT size) with a small decoder written here, the curve is
drawn in its colour where the data says, and awkward series (one point, constant, NaN/inf, empty) still plot."""

import os
import struct
import zlib

import numpy as np
import pytest

from sim.plot import LINE, save_line_plot

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def decode_png(data: bytes) -> np.ndarray:
    """Pixels [height, width, 3] of an 8-bit RGB, non-interlaced PNG whose rows all use filter type 0; asserts
    the signature, every chunk's CRC and the size of the decompressed image data."""
    assert data[:8] == SIGNATURE
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, f"bad CRC in {kind}"
        chunks.append((kind, body))
        pos += 12 + length
    assert pos == len(data)
    assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour, compression, filtering, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    assert len(raw) == height * (1 + 3 * width)
    rows = np.frombuffer(raw, np.uint8).reshape(height, 1 + 3 * width)
    assert np.all(rows[:, 0] == 0)  # filter type None on every row
    return rows[:, 1:].reshape(height, width, 3)


def plot(tmp_path, ys, **kw):
    path = tmp_path / "plot.png"
    save_line_plot(path, ys, **kw)
    return decode_png(path.read_bytes())


def line_pixels(pixels):
    """(rows, columns) of the pixels in the line colour."""
    return np.nonzero(np.all(pixels == LINE, axis=2))


def test_png_decodes_with_the_requested_size(tmp_path):
    pixels = plot(tmp_path, [3.0, 2.0, 1.5, 1.2], width=300, height=200)
    assert pixels.shape == (200, 300, 3)
    assert np.any(np.all(pixels == 0, axis=2))  # axes and labels in black
    assert len(line_pixels(pixels)[0]) > 100


@pytest.mark.parametrize("ys", [np.linspace(5.0, 1.0, 50), 100.0 * np.exp(-np.arange(80) / 8.0)],
                         ids=["linear", "log"])
def test_a_decreasing_series_is_drawn_higher_on_the_left(tmp_path, ys):
    rows, cols = line_pixels(plot(tmp_path, ys))
    quarter = (cols.max() - cols.min()) // 4
    left, right = rows[cols < cols.min() + quarter], rows[cols > cols.max() - quarter]
    assert left.size and right.size
    assert left.mean() + 50 < right.mean()  # image rows grow downwards


def test_log_axis_spreads_decades_evenly(tmp_path):
    """On the log axis (four decades: "auto" picks it), 1e4 -> 100 and 100 -> 1 take the same height; on the
    linear one the first drop is nearly all of it."""
    ys = [1e4, 100.0, 1.0]

    def row_at(pixels, col):
        rows = np.nonzero(np.all(pixels[:, col] == LINE, axis=1))[0]
        return rows.mean()

    for log_y in ("auto", False):
        pixels = plot(tmp_path, ys, log_y=log_y)
        _, cols = line_pixels(pixels)
        c0, c2 = cols.min() + 1, cols.max() - 1
        c1 = (c0 + c2) // 2
        first, second = row_at(pixels, c1) - row_at(pixels, c0), row_at(pixels, c2) - row_at(pixels, c1)
        if log_y == "auto":
            assert first == pytest.approx(second, abs=3)
        else:
            assert first > 5 * second


@pytest.mark.parametrize("ys", [[2.5], [4.0, 4.0, 4.0], [1.0, np.nan, 3.0, np.inf, 2.0, -np.inf, 1.5],
                                [np.nan, np.nan], [], [0.0, -1.0, 1e-3]],
                         ids=["one_point", "constant", "non_finite", "all_nan", "empty", "non_positive"])
def test_awkward_series_still_plot(tmp_path, ys):
    pixels = plot(tmp_path, ys, log_y="auto", width=320, height=240)
    assert pixels.shape == (240, 320, 3)
    finite = [y for y in ys if np.isfinite(y)]
    assert (len(line_pixels(pixels)[0]) > 0) == bool(finite)


def test_forced_log_axis_skips_non_positive_values(tmp_path):
    rows, cols = line_pixels(plot(tmp_path, [10.0, 0.0, -5.0, 1.0, 0.1], log_y=True))
    assert rows.size  # the positive values are drawn, the others are gaps


def test_xs_and_title_with_any_characters(tmp_path):
    pixels = plot(tmp_path, [1.0, 4.0, 9.0], xs=[0.5, 1.0, 2.5], title="Loss: spring ke (N/m) #3 ~ \u00e9")
    assert len(line_pixels(pixels)[0]) > 0


def test_y_label_reads_upward_left_of_the_axis(tmp_path):
    """The y label is the glyphs of the font turned a quarter counter-clockwise, in a column of its own."""
    from sim.plot import FONT, GLYPH_H
    labelled = plot(tmp_path, [3.0, 2.0, 1.0], y_label="L")
    strip = labelled[:, 4:4 + GLYPH_H + 2]
    ink = np.all(strip == 0, axis=2)
    rows, cols = np.nonzero(ink)
    turned = ink[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    np.testing.assert_array_equal(turned, np.rot90(FONT["L"]))


def test_written_atomically_over_an_existing_file(tmp_path):
    path = tmp_path / "loss.png"
    path.write_bytes(b"old")
    save_line_plot(path, [1.0, 0.5])
    decode_png(path.read_bytes())
    assert os.listdir(tmp_path) == ["loss.png"]  # no temporary file left behind
    with pytest.raises(ValueError):
        save_line_plot(path, [1.0, 0.5], xs=[0.0])
    decode_png(path.read_bytes())  # a failed call leaves the previous plot intact


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="log_y"):
        save_line_plot(tmp_path / "a.png", [1.0], log_y="yes")
    with pytest.raises(ValueError, match="pixels"):
        save_line_plot(tmp_path / "a.png", [1.0], width=10, height=10)
