"""The results table of a sweep: one row per run, appended to DIR/results.csv as each run finishes (so finished
rows survive a lost worker or an interrupted driver) and mirrored to DIR/results.parquet.

Parquet needs pyarrow; without it only the CSV is written and the reason is said once. A parquet mirror that
cannot be written (full disk, ...) is said once too, and removed so that it never disagrees with the CSV; the sweep
goes on with the CSV alone. A CSV that cannot be written stops the sweep with OutputWriteError. At the end both
files are rewritten in run order.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import time

from ..atomic_file import write_atomic, write_failure
from .metrics import metric_columns

#: Statuses of a finished run that `--resume` keeps; `error` rows (an unexpected exception) are run again.
COMPLETE = ("ok", "invalid", "blowup")
RESULTS_CSV, RESULTS_PARQUET = "results.csv", "results.parquet"
TRAILING = ["status", "error", "seconds", "host", "node"]


def columns(axes: list, metrics: list) -> list:
    """Column order: run number, run key, the axis values, the metrics, then status, error, seconds, host, Ray node."""
    return ["run", "key"] + list(axes) + metric_columns(metrics) + TRAILING


class ResultsTable:
    """Rows of one sweep in `out_dir`. `resume=True` keeps the complete rows already there (`done_keys`)."""

    PARQUET_EVERY_S = 2.0  # rewriting parquet costs O(rows): mirror at most this often while rows stream in

    def __init__(self, out_dir: str, cols: list, *, resume: bool = False, say=print):
        os.makedirs(out_dir, exist_ok=True)
        self.cols, self.say = cols, say
        self.csv_path = os.path.join(out_dir, RESULTS_CSV)
        self.parquet_path = os.path.join(out_dir, RESULTS_PARQUET)
        self.rows = [r for r in read_csv(self.csv_path) if r.get("status") in COMPLETE] if resume else []
        self._parquet = _parquet_writer(say)
        self._last_parquet = 0.0
        if self._parquet is None or not resume:
            _remove(self.parquet_path)  # an earlier sweep's mirror must not stand for this one's rows
        self._rewrite_csv()  # drops incomplete rows of a previous attempt, or starts the file over

    @property
    def done_keys(self) -> set:
        return {r["key"] for r in self.rows}

    def add(self, row: dict):
        """Append one finished run (flushed to disk before returning)."""
        self.rows.append(row)
        try:
            with open(self.csv_path, "a", newline="", encoding="utf-8") as f:
                csv.DictWriter(f, self.cols, extrasaction="ignore").writerow(_cells(row, self.cols))
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise write_failure(self.csv_path, e) from None
        if time.monotonic() - self._last_parquet >= self.PARQUET_EVERY_S:
            self._write_parquet()

    def close(self) -> list:
        """Rewrite both files in run order; returns the rows in that order."""
        self.rows.sort(key=lambda r: int(r["run"]))
        self._rewrite_csv()
        self._write_parquet()
        return self.rows

    def _rewrite_csv(self):
        text = io.StringIO(newline="")
        writer = csv.DictWriter(text, self.cols, extrasaction="ignore")
        writer.writeheader()
        for row in self.rows:
            writer.writerow(_cells(row, self.cols))
        write_atomic(self.csv_path, text.getvalue().encode("utf-8"))

    def _write_parquet(self):
        self._last_parquet = time.monotonic()
        if self._parquet is None:
            return
        try:
            self._parquet(self.parquet_path, [_cells(r, self.cols) for r in self.rows], self.cols)
        except OSError as e:  # pyarrow's own errors are OSErrors too
            self._parquet = None
            _remove(self.parquet_path)
            self.say(f"warning: {write_failure(self.parquet_path, e)}; the sweep goes on with "
                     f"{self.csv_path} alone (it has every row)")


def read_csv(path: str) -> list:
    """Rows of a results.csv, cells parsed back to numbers (or lists) where they were written as such."""
    if not os.path.isfile(path):
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return [{k: _parse(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _cells(row: dict, cols: list) -> dict:
    """Lists (vector axis values) become JSON text so that CSV and parquet columns hold one type each."""
    return {c: json.dumps(row[c]) if isinstance(row.get(c), (list, tuple)) else row.get(c) for c in cols}


def _parse(text: str):
    if text == "":
        return ""
    try:
        value = json.loads(text)
    except ValueError:
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(text, text)
    return value if not isinstance(value, (dict, str)) else text


def _parquet_writer(say):
    """A function writing rows to a parquet file, or None (said once) when pyarrow is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        say("note: results.parquet skipped: pyarrow is not installed (pip install pyarrow); results.csv has "
            "every row")
        return None

    def write(path: str, rows: list, cols: list):
        arrays = {}
        for c in cols:
            values = [_column_value(r[c]) for r in rows]
            kind = _column_type(values, pa)
            if kind == pa.string():
                values = [None if v is None else str(v) for v in values]
            arrays[c] = pa.array(values, type=kind)
        buffer = pa.BufferOutputStream()
        pq.write_table(pa.table(arrays), buffer)
        write_atomic(path, buffer.getvalue().to_pybytes())
    return write


def _remove(path: str):
    with contextlib.suppress(OSError):
        os.remove(path)


def _column_value(v):
    return None if v == "" else v


def _column_type(values: list, pa):
    """float64 for numeric columns (NaN kept), string when any cell is text (JSON lists, messages)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.float64() if any(isinstance(v, float) for v in present) else pa.int64()
    if present and all(isinstance(v, bool) for v in present):
        return pa.bool_()
    return pa.string()
