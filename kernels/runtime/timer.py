"""`wp.ScopedTimer`: time a block of host code (launches synchronised on exit), as Warp programs do."""

from __future__ import annotations

import builtins
import cProfile
import time
from .device import synchronize

__all__ = ["ScopedTimer"]


class ScopedTimer:
    """Context manager that measures the wall time of its block, in milliseconds, and prints it.

        with wp.ScopedTimer("step", dict=timers):   # prints "step took 1.23 ms", appends 1.23 to timers["step"]
            wp.launch(...)

    Launches on the CPU run before `launch` returns, and the timer synchronises the current device on exit (as
    Warp's does with `synchronize=True`), so the time covers the block's kernels on any device.

    Args:
        name: label printed with the time.
        active: when False, the timer measures nothing and prints nothing (`elapsed` stays 0.0).
        print: print "`name` took `elapsed` ms" on exit.
        detailed: profile the block's Python with cProfile and print its statistics (sorted by own time) before
            the time line, as Warp does.
        use_nvtx, color, cuda_filter, skip_tape: Warp's CUDA profiler options; accepted and ignored (this toolkit
            has no per-kernel profiler), so Warp programs run unchanged.
        dict: a dict of lists; the elapsed time [ms] is appended to `dict[name]`.
        synchronize: synchronise the current device on entry as well as on exit.
        report_func: called as `report_func([], elapsed)` on exit (Warp passes its CUDA activity list first).

    Attributes:
        elapsed: wall time of the block [ms], set on exit.
    """

    indent = -1  # nesting depth of active timers, for the indented printout Warp gives nested timers

    def __init__(self, name: str, active: bool = True, print: bool = True, detailed: bool = False,
                 dict: dict | None = None, use_nvtx: bool = False, color="rapids", synchronize: bool = False,
                 cuda_filter: int = 0, report_func=None, skip_tape: bool = False):
        self.name = name
        self.active = bool(active)
        self.print = print
        self.dict = dict
        self.synchronize = synchronize
        self.report_func = report_func
        self.detailed = detailed
        self._profile = None
        self.elapsed = 0.0
        self._start = 0.0
        if self.dict is not None:
            self.dict.setdefault(name, [])

    def __enter__(self) -> ScopedTimer:
        if self.active:
            if self.synchronize:
                _synchronize()
            ScopedTimer.indent += 1
            if self.detailed:
                self._profile = cProfile.Profile()
                self._profile.enable()
            self._start = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if not self.active:
            return
        _synchronize()
        self.elapsed = (time.perf_counter() - self._start) * 1000.0
        ScopedTimer.indent -= 1
        if self._profile is not None:
            self._profile.disable()
            self._profile.print_stats(sort="tottime")
            self._profile = None
        if self.dict is not None:
            self.dict[self.name].append(self.elapsed)
        if self.report_func is not None:
            self.report_func([], self.elapsed)
        if self.print:
            builtins.print(f"{'  ' * (ScopedTimer.indent + 1)}{self.name} took {self.elapsed:.2f} ms")


def _synchronize() -> None:

    synchronize()
