"""Progress of a long run: a one-line bar on a terminal, plain lines now and then elsewhere (pipes, CI logs, batch
jobs), nothing with --quiet."""

from __future__ import annotations

import sys
import time

#: Off a terminal, a line when another LINE_FRACTION of the work is done and LINE_MIN_S have passed since the last
#: line (or since the start), and in any case after LINE_MAX_S without one: a short run prints nothing, a long one a
#: line every tenth of the way, a very slow one at least a line a minute.
LINE_FRACTION, LINE_MIN_S, LINE_MAX_S = 0.1, 2.0, 60.0


class Progress:
    """`update(done, note)` redraws `[#####.....] done/total unit  note` at most every 0.1 s on a terminal; off a
    terminal it writes `done/total unit (p%)  note` lines as LINE_* say. `close()` ends the bar's line.
    Silent unless `enabled`."""

    def __init__(self, total: int, *, unit: str = "frames", enabled: bool = True, stream=None, width: int = 30):
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.unit, self.width = max(int(total), 1), unit, width
        self.enabled = bool(enabled)
        self.terminal = self.enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0
        self._drawn = False
        self._line_at, self._line_done = time.perf_counter(), 0

    def update(self, done: int, note: str = "", *, force: bool = False):
        if not self.enabled:
            return
        if not self.terminal:
            self._line(done, note)
            return
        now = time.perf_counter()
        if not force and now - self._last < 0.1 and done < self.total:
            return
        self._last = now
        filled = int(self.width * min(done, self.total) / self.total)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {done}/{self.total} {self.unit}  {note}\033[K")
        self.stream.flush()
        self._drawn = True

    def _line(self, done: int, note: str):
        now = time.perf_counter()
        since = now - self._line_at
        further = (done - self._line_done) / self.total
        due = (further >= LINE_FRACTION and since >= LINE_MIN_S) or (done > self._line_done and since >= LINE_MAX_S)
        if not due or done >= self.total:  # the closing summary says the end
            return
        self._line_at, self._line_done = now, done
        percent = 100.0 * done / self.total
        self.stream.write(f"{done}/{self.total} {self.unit} ({percent:.0f}%)" + (f"  {note}" if note else "") + "\n")
        self.stream.flush()

    def close(self):
        if self.terminal and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
