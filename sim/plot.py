"""`save_line_plot`: a line plot (a loss curve) as an RGB PNG, drawn with numpy and written with zlib and struct.

No plotting library: the axes, ticks and labels are drawn on a pixel canvas with a small built-in 5x7 bitmap
font, and the PNG is encoded here (8-bit RGB, filter type 0 on every row, one IDAT chunk).
"""

from __future__ import annotations

import math
import struct
import zlib

import numpy as np

from .atomic_file import write_atomic

WHITE = (255, 255, 255)
BLACK = (0, 0, 0)
GRID = (226, 226, 226)
LINE = (31, 119, 180)  # used for nothing but the data, so tests can find the curve by colour

# 5x7 glyphs, rows top to bottom separated by spaces, '#' = ink; g, j, p, q and y have two more rows (descenders).
_FONT_ROWS = {
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.", "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####", "3": "####. ....# ....# .###. ....# ....# ####.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.", "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": "..##. .#... #.... ####. #...# #...# .###.", "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.", "9": ".###. #...# #...# .#### ....# ...#. .##..",
    ".": "..... ..... ..... ..... ..... .##.. .##..", "-": "..... ..... ..... .###. ..... ..... .....",
    "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....", ":": "..... .##.. .##.. ..... .##.. .##.. .....",
    "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.", ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
    "/": "....# ...#. ...#. ..#.. .#... .#... #....", "_": "..... ..... ..... ..... ..... ..... #####",
    "=": "..... ..... ##### ..... ##### ..... .....", ",": "..... ..... ..... ..... .##.. ..#.. .#...",
    "%": "##..# ##.#. ...#. ..#.. .#... .#.## #..##", "?": ".###. #...# ....# ...#. ..#.. ..... ..#..",
    " ": "..... ..... ..... ..... ..... ..... .....",
    "a": "..... ..... .###. ....# .#### #...# .####", "b": "#.... #.... #.##. ##..# #...# #...# ####.",
    "c": "..... ..... .###. #.... #.... #...# .###.", "d": "....# ....# .##.# #..## #...# #...# .####",
    "e": "..... ..... .###. #...# ##### #.... .###.", "f": "..##. .#..# .#... ###.. .#... .#... .#...",
    "g": "..... ..... .#### #...# #...# #...# .#### ....# .###.", "h": "#.... #.... #.##. ##..# #...# #...# #...#",
    "i": "..#.. ..... .##.. ..#.. ..#.. ..#.. .###.", "j": "...#. ..... ..##. ...#. ...#. ...#. ...#. #..#. .##..",
    "k": "#.... #.... #..#. #.#.. ##... #.#.. #..#.", "l": ".##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "m": "..... ..... ##.#. #.#.# #.#.# #...# #...#", "n": "..... ..... #.##. ##..# #...# #...# #...#",
    "o": "..... ..... .###. #...# #...# #...# .###.", "p": "..... ..... ####. #...# #...# #...# ####. #.... #....",
    "q": "..... ..... .#### #...# #...# #...# .#### ....# ....#", "r": "..... ..... #.##. ##..# #.... #.... #....",
    "s": "..... ..... .###. #.... .###. ....# ####.", "t": ".#... .#... ###.. .#... .#... .#..# ..##.",
    "u": "..... ..... #...# #...# #...# #..## .##.#", "v": "..... ..... #...# #...# #...# .#.#. ..#..",
    "w": "..... ..... #...# #...# #.#.# #.#.# .#.#.", "x": "..... ..... #...# .#.#. ..#.. .#.#. #...#",
    "y": "..... ..... #...# #...# #...# #...# .#### ....# .###.", "z": "..... ..... ##### ...#. ..#.. .#... #####",
    "A": ".###. #...# #...# ##### #...# #...# #...#", "B": "####. #...# #...# ####. #...# #...# ####.",
    "C": ".###. #...# #.... #.... #.... #...# .###.", "D": "###.. #..#. #...# #...# #...# #..#. ###..",
    "E": "##### #.... #.... ####. #.... #.... #####", "F": "##### #.... #.... ####. #.... #.... #....",
    "G": ".###. #...# #.... #.### #...# #...# .####", "H": "#...# #...# #...# ##### #...# #...# #...#",
    "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.", "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
    "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#", "L": "#.... #.... #.... #.... #.... #.... #####",
    "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#", "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
    "O": ".###. #...# #...# #...# #...# #...# .###.", "P": "####. #...# #...# ####. #.... #.... #....",
    "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#", "R": "####. #...# #...# ####. #.#.. #..#. #...#",
    "S": ".#### #.... #.... .###. ....# ....# ####.", "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "U": "#...# #...# #...# #...# #...# #...# .###.", "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
    "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.", "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    "Y": "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..", "Z": "##### ....# ...#. ..#.. .#... #.... #####",
}
GLYPH_W, GLYPH_H, ADVANCE = 5, 7, 6  # pixels at scale 1 above the baseline; ADVANCE includes one column of spacing
DESCENT = 2  # rows below the baseline
FONT = {c: np.array([[p == "#" for p in row] for row in rows.split()], dtype=bool) for c, rows in _FONT_ROWS.items()}


def save_line_plot(path, ys, *, xs=None, title: str = "loss", log_y="auto", width: int = 640, height: int = 400,
                   x_label: str = "iteration", y_label: str = ""):
    """Plot `ys` against `xs` (default 0, 1, 2, ...) as a line and write it to `path` as an RGB PNG.

    Non-finite values (and, on a log axis, values <= 0) are skipped, breaking the line there; an isolated point
    is drawn as a dot. The file is written to a temporary file in the same folder and renamed over `path`.

    Args:
        path: output file.
        ys: values, a 1-d sequence.
        xs: x positions, same length as `ys`; None: the indices.
        title: drawn centred above the plot.
        log_y: True, False, or "auto": logarithmic when every finite value is positive and they span more than
            two decades.
        width, height: image size [pixels], at least 160 x 120.
        x_label: drawn under the x axis.
        y_label: drawn along the y axis, reading upward ("": none).
    """
    ys = np.asarray(ys, dtype=np.float64).reshape(-1)
    xs = np.arange(ys.size, dtype=np.float64) if xs is None else np.asarray(xs, dtype=np.float64).reshape(-1)
    if xs.size != ys.size:
        raise ValueError(f"xs has {xs.size} values and ys {ys.size}")
    if log_y not in ("auto", True, False):
        raise ValueError(f"log_y must be True, False or 'auto', got {log_y!r}")
    if width < 160 or height < 120:
        raise ValueError(f"the image must be at least 160 x 120 pixels, got {width} x {height}")
    use_log = _choose_log(ys) if log_y == "auto" else bool(log_y)
    pixels = render_line_plot(xs, ys, title=title, x_label=x_label, log_y=use_log, width=width, height=height,
                              y_label=y_label)
    write_atomic(path, encode_png(pixels))


def _choose_log(ys) -> bool:
    finite = ys[np.isfinite(ys)]
    return bool(finite.size and np.all(finite > 0) and finite.max() > 100.0 * finite.min())


# ------------------------------------------------------------------------------------------------ drawing


def render_line_plot(xs, ys, *, title, x_label, log_y, width, height, y_label: str = "") -> np.ndarray:
    """The plot as pixels, shape [height, width, 3], uint8."""
    valid = np.isfinite(xs) & np.isfinite(ys) & ((ys > 0) if log_y else True)
    ty = np.log10(np.where(valid, ys, 1.0)) if log_y else ys  # the y axis is linear in ty
    valid &= (np.abs(ty) < 1e300) & (np.abs(xs) < 1e300)  # so that spans of the axes stay finite
    y_lo, y_hi = _padded_range(ty[valid], pad=0.05, fallback=(0.0, 1.0))
    x_lo, x_hi = _padded_range(xs[valid], pad=0.0, fallback=(0.0, 1.0))
    y_ticks = _log_ticks(y_lo, y_hi) if log_y else [(v, v) for v in _nice_ticks(y_lo, y_hi)]
    x_ticks = [(v, v) for v in _nice_ticks(x_lo, x_hi, integer=bool(np.all(xs[valid] == np.round(xs[valid]))))]

    canvas = np.empty((height, width, 3), np.uint8)
    canvas[...] = WHITE
    y_labels = [(_format_number(v), t) for v, t in y_ticks]
    label_column = GLYPH_H + DESCENT + 8 if y_label else 0  # the y label, turned, left of the tick labels
    left = min(max([_text_width(s, 1) for s, _ in y_labels] + [0]) + 14 + label_column, width // 2)
    top, right, bottom = 2 * (GLYPH_H + DESCENT) + 12, 18, 2 * GLYPH_H + DESCENT + 22
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(x):
        return left + (x - x_lo) / (x_hi - x_lo) * (plot_w - 1)

    def py(t):
        return top + (y_hi - t) / (y_hi - y_lo) * (plot_h - 1)

    for label, t in y_labels:
        row = int(round(py(t)))
        canvas[row, left + 1:left + plot_w] = GRID
        canvas[row, left - 5:left] = BLACK
        _draw_text(canvas, label, left - 8 - _text_width(label, 1), row - GLYPH_H // 2, 1)
    for v, _ in x_ticks:
        col = int(round(px(v)))
        canvas[top:top + plot_h - 1, col] = GRID
        canvas[top + plot_h:top + plot_h + 5, col] = BLACK
        label = _format_number(v)
        _draw_text(canvas, label, col - _text_width(label, 1) // 2, top + plot_h + 8, 1)
    canvas[top:top + plot_h, left] = BLACK
    canvas[top + plot_h - 1, left:left + plot_w] = BLACK
    _draw_text(canvas, title, (width - _text_width(title, 2)) // 2, 6, 2)
    _draw_text(canvas, x_label, left + (plot_w - _text_width(x_label, 1)) // 2, height - GLYPH_H - DESCENT - 5, 1)
    if y_label:
        _draw_turned_text(canvas, y_label, 4, top + plot_h // 2)
    _draw_series(canvas, [px(x) for x in xs], [py(t) for t in ty], valid)
    return canvas


def _draw_series(canvas, cols, rows, valid):
    """Connect consecutive valid points; a valid point with no valid neighbour becomes a 5x5 dot."""
    n = len(cols)
    for i in range(n):
        if not valid[i]:
            continue
        if i + 1 < n and valid[i + 1]:
            _draw_line(canvas, cols[i], rows[i], cols[i + 1], rows[i + 1])
        elif not (i > 0 and valid[i - 1]):
            c, r = int(round(cols[i])), int(round(rows[i]))
            _fill(canvas, r - 2, r + 3, c - 2, c + 3, LINE)


def _draw_line(canvas, x0, y0, x1, y1):
    """A 2-pixel-wide line: a 2x2 brush stamped at every step of the longer axis."""
    steps = int(max(abs(x1 - x0), abs(y1 - y0), 1.0) + 1)
    for s in range(steps + 1):
        f = s / steps
        c, r = int(round(x0 + f * (x1 - x0))), int(round(y0 + f * (y1 - y0)))
        _fill(canvas, r, r + 2, c, c + 2, LINE)


def _fill(canvas, r0, r1, c0, c1, colour):
    h, w, _ = canvas.shape
    canvas[max(r0, 0):max(min(r1, h), 0), max(c0, 0):max(min(c1, w), 0)] = colour


def _text_width(text: str, scale: int) -> int:
    return max(len(text) * ADVANCE - 1, 0) * scale


def _draw_text(canvas, text: str, x: int, y: int, scale: int, colour=BLACK):
    """Draw `text` with its top-left corner at column x, row y; unknown characters draw as '?'."""
    for k, ch in enumerate(text):
        glyph = FONT.get(ch, FONT["?"])
        rows, cols = np.nonzero(glyph)
        for r, c in zip(rows, cols):
            x0, y0 = x + (k * ADVANCE + c) * scale, y + r * scale
            _fill(canvas, y0, y0 + scale, x0, x0 + scale, colour)


def draw_text(canvas, text: str, x: int, y: int, scale: int = 1, colour=BLACK):
    """Draw `text` in the 5x7 font into an RGB uint8 canvas [height, width, 3], its top-left corner at column x,
    row y, each font pixel a `scale` x `scale` square (clipped at the canvas' edges)."""
    _draw_text(canvas, text, x, y, scale, colour)


def _draw_turned_text(canvas, text: str, x: int, centre_row: int):
    """`text` turned a quarter counter-clockwise (reading upward), its left edge at column x, centred on a row."""
    strip = np.empty((GLYPH_H + DESCENT, _text_width(text, 1), 3), np.uint8)
    strip[...] = WHITE
    _draw_text(strip, text, 0, 0, 1)
    turned = np.rot90(strip)
    top = max(centre_row - turned.shape[0] // 2, 0)
    rows = min(turned.shape[0], canvas.shape[0] - top)
    canvas[top:top + rows, x:x + turned.shape[1]] = turned[:rows]


# ------------------------------------------------------------------------------------------------ axes


def _padded_range(values, *, pad: float, fallback) -> tuple:
    """(lo, hi) covering `values`, widened by `pad` of the span; a single value gets a unit-sized range."""
    if values.size == 0:
        return fallback
    lo, hi = float(values.min()), float(values.max())
    if hi - lo <= 1e-12 * max(abs(lo), abs(hi), 1e-300):
        half = 0.5 * max(abs(lo) * 0.1, 1.0) if abs(lo) < 1e12 else abs(lo) * 0.1
        return lo - half, hi + half
    margin = (hi - lo) * pad
    return lo - margin, hi + margin


def _nice_ticks(lo: float, hi: float, *, target: int = 5, integer: bool = False) -> list:
    """Round values (1, 2 or 5 times a power of ten apart) inside [lo, hi]."""
    raw = (hi - lo) / target
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    if integer:
        step = max(step, 1.0)
    digits = max(0, -math.floor(math.log10(step))) + 1
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + 1e-9 * step and len(ticks) < 4 * target:
        ticks.append(round(k * step, digits) + 0.0)  # + 0.0 turns -0.0 into 0.0
        k += 1
    return ticks


def _log_ticks(lo: float, hi: float) -> list:
    """(value, log10 value) ticks for a log axis spanning [lo, hi] in log10 units: powers of ten, thinned to at
    most 8; round values in linear space when the range holds fewer than two powers of ten."""
    decades = list(range(math.ceil(lo), math.floor(hi) + 1))
    if len(decades) >= 2:
        stride = -(-len(decades) // 8)
        return [(10.0 ** d, float(d)) for d in decades[::stride]]
    values = [v for v in _nice_ticks(10.0 ** lo, 10.0 ** hi) if v > 0]
    return [(v, math.log10(v)) for v in values]


def _format_number(v: float) -> str:
    """Short label: up to 4 significant digits, exponent without '+' or leading zeros (1e-5, 2.5e7)."""
    if v == 0:
        return "0"
    text = f"{v:.4g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


# ------------------------------------------------------------------------------------------------ PNG


def encode_png(pixels: np.ndarray) -> bytes:
    """PNG bytes of an RGB image, shape [height, width, 3], uint8."""
    height, width, channels = pixels.shape
    if channels != 3 or pixels.dtype != np.uint8:
        raise ValueError(f"expected uint8 pixels of shape [height, width, 3], got {pixels.dtype} {pixels.shape}")
    raw = np.zeros((height, 1 + 3 * width), np.uint8)  # a 0 byte (filter type None) starts every row
    raw[:, 1:] = pixels.reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, RGB, deflate, filter 0, no interlace
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
            + _chunk(b"IEND", b""))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
