"""SIGTERM and SIGHUP stop a command the way Ctrl-C (SIGINT) does: as a KeyboardInterrupt, so outputs are kept.

`timeout`, Slurm, docker and systemd stop jobs with SIGTERM, and a closed terminal sends SIGHUP; Python's default
for both is to die at once, losing what an interrupt keeps (the frames so far, a snapshot, a sweep's summary).

    with interrupts.stop_signals_interrupt():
        try:
            ...
        except KeyboardInterrupt as e:
            return interrupts.exit_code(e)   # 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP)
"""

from __future__ import annotations

import contextlib
import signal
import threading

#: The signals handled like SIGINT.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_active = False  # whether stop_signals_interrupt() is in force (reinstall() puts the handlers back)
_stopping = False  # a stop signal was raised already: later ones must not interrupt the saving of outputs


class Terminated(KeyboardInterrupt):
    """A stop signal (SIGTERM or SIGHUP) raised as an interrupt; `signum` says which."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def exit_code(interrupt: BaseException) -> int:
    """The conventional exit status of a process ended by the interrupt's signal: 128 + its number."""
    return 128 + int(getattr(interrupt, "signum", signal.SIGINT))


def _raise_terminated(signum, frame):
    global _stopping
    if _stopping:
        return  # one stop is enough: the outputs are being saved
    _stopping = True
    raise Terminated(signum)


@contextlib.contextmanager
def stop_signals_interrupt():
    """Within the block, SIGTERM and SIGHUP raise `Terminated` (a KeyboardInterrupt) in the main thread; the
    previous handlers come back afterwards. Elsewhere than in the main thread it does nothing."""
    global _active, _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise_terminated) for s in STOP_SIGNALS}
    _active, _stopping = True, False
    try:
        yield
    finally:
        _active = False
        for s, handler in previous.items():
            signal.signal(s, handler)


def reinstall():
    """Put the handlers back after a library replaced them (ray.init makes SIGTERM exit at once)."""
    if _active and threading.current_thread() is threading.main_thread():
        for s in STOP_SIGNALS:
            signal.signal(s, _raise_terminated)
