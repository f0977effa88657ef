"""A one-line progress bar on a terminal; silent otherwise (pipes, CI logs, --quiet)."""

from __future__ import annotations

import sys
import time


class Progress:
    """`update(done, note)` redraws `[#####.....] done/total unit  note` at most every 0.1 s; `close()` ends the
    line. Disabled unless `enabled` and the stream is a terminal."""

    def __init__(self, total: int, *, unit: str = "frames", enabled: bool = True, stream=None, width: int = 30):
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.unit, self.width = max(int(total), 1), unit, width
        self.enabled = bool(enabled) and hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0
        self._drawn = False

    def update(self, done: int, note: str = "", *, force: bool = False):
        if not self.enabled:
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

    def close(self):
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
