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
_pending = None  # the signal number of the last stop (SIGINT included) raised within stop_signals_interrupt()


class Terminated(KeyboardInterrupt):
    """A stop signal (SIGTERM or SIGHUP) raised as an interrupt; `signum` says which."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def exit_code(interrupt: BaseException) -> int:
    """The conventional exit status of a process ended by the interrupt's signal: 128 + its number."""
    return 128 + int(getattr(identified(interrupt), "signum", signal.SIGINT))


def identified(interrupt: BaseException) -> BaseException:
    """`interrupt`, or the `Terminated` of the stop signal that caused it where a library replaced the exception.

    Ray's native wait loop checks for signals itself and raises a new, plain KeyboardInterrupt for whatever the
    handler raised, so a sweep stopped by SIGTERM would say 'interrupted' and exit 130. Within
    `stop_signals_interrupt()` the signal that came is known (`_pending`) and wins over the exception's type."""
    if isinstance(interrupt, Terminated) or not isinstance(interrupt, KeyboardInterrupt):
        return interrupt
    if _active and _pending in STOP_SIGNALS:
        return Terminated(_pending)
    return interrupt


def _raise_terminated(signum, frame):
    global _stopping, _pending
    if _stopping:
        return  # one stop is enough: the outputs are being saved
    _stopping, _pending = True, signum
    raise Terminated(signum)


def _raise_interrupt(signum, frame):
    global _pending
    _pending = signum  # every Ctrl-C interrupts, as Python's own handler does: a second one stops the saving too
    raise KeyboardInterrupt


def stopped() -> KeyboardInterrupt | None:
    """The interrupt of a stop signal (or Ctrl-C) raised within `stop_signals_interrupt()`, None when none came.

    A library can swallow the exception a signal handler raises: USD's Python module loader turns any exception
    raised while `pxr` imports into a printed warning. A stop that came then would be lost (a viewer waiting forever,
    a run going on to its end), so long-running loops call `raise_if_stopped()`, and code that fails while a stop
    is known to be pending raises the stop instead of its own, secondary error."""
    if not _active or _pending is None:
        return None
    return KeyboardInterrupt() if _pending == signal.SIGINT else Terminated(_pending)


def raise_if_stopped() -> None:
    """Raise the stop that came (see `stopped`) again; nothing when none came."""
    interrupt = stopped()
    if interrupt is not None:
        raise interrupt


@contextlib.contextmanager
def stop_signals_interrupt():
    """Within the block, SIGTERM and SIGHUP raise `Terminated` (a KeyboardInterrupt) in the main thread, Ctrl-C its
    KeyboardInterrupt as usual, and each is remembered (`stopped`); the previous handlers come back afterwards.
    Elsewhere than in the main thread it does nothing."""
    global _active, _stopping, _pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise_terminated) for s in STOP_SIGNALS}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where the caller chose to ignore it
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _raise_interrupt)
    _active, _stopping, _pending = True, False, None
    try:
        yield
    except KeyboardInterrupt as e:  # leave the block as the stop that came, whoever re-raised it on the way
        stop = identified(e)
        if stop is e:
            raise
        raise stop from e
    finally:
        _active = False
        for s, handler in previous.items():
            signal.signal(s, handler)


def reinstall():
    """Put the handlers back after a library replaced them (ray.init makes SIGTERM exit at once)."""
    if _active and threading.current_thread() is threading.main_thread():
        for s in STOP_SIGNALS:
            signal.signal(s, _raise_terminated)
