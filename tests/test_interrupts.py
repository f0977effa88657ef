"""A stop that a library swallows is not lost: USD's Python module loader turns an exception raised while `pxr`
imports (a SIGTERM's `Terminated`, a Ctrl-C's KeyboardInterrupt) into a printed warning, which used to leave
`sim view` waiting forever and `sim run` going on to its last frame."""

import faulthandler
import os
import signal

import pytest

from sim import interrupts


def _swallowed(signum):
    """Deliver `signum` to this process where a library catches every exception, as pxr's loader does."""
    try:
        os.kill(os.getpid(), signum)
        for _ in range(1000):  # the handler runs between bytecodes of the main thread
            pass
    except BaseException:  # noqa: BLE001  the library's own `except`
        return True
    return False


@pytest.mark.parametrize("signum, kind", [(signal.SIGTERM, interrupts.Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_a_swallowed_stop_is_raised_again(signum, kind):
    with interrupts.stop_signals_interrupt():
        assert interrupts.stopped() is None
        interrupts.raise_if_stopped()  # nothing came: nothing raised
        assert _swallowed(signum)
        with pytest.raises(kind) as caught:
            interrupts.raise_if_stopped()
        assert interrupts.exit_code(caught.value) == 128 + signum
    assert interrupts.stopped() is None  # outside the block nothing is pending


def test_view_stops_on_a_stop_swallowed_while_the_file_was_read():
    """`sim.view(..., block=True)` waits for a stop; one swallowed before the wait still ends it (143)."""
    import numpy as np

    from sim.playback import Playback, Track
    from sim.viewer import view

    points = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 0.5, 0], [1, 0.5, 0], [0, 1.5, 0]]], np.float32)
    track = Track(name="/World/p", kind="points", vertices=points[0], faces=None, radii=np.full(3, 0.1, np.float32),
                  color=np.ones(3, np.float32), positions=points, transforms=None)
    playback = Playback(tracks=[track], times=np.arange(2.0), fps=30.0, up_axis="Y")
    faulthandler.dump_traceback_later(60, exit=True)  # a lost stop would wait forever: end the test run instead
    try:
        with interrupts.stop_signals_interrupt():
            assert _swallowed(signal.SIGTERM)
            with pytest.raises(interrupts.Terminated) as caught:
                view(playback, port=0, open_browser=False, block=True, say=lambda line: None)
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert interrupts.exit_code(caught.value) == 143


def test_a_stop_while_the_cli_imports_is_one_line(monkeypatch, capsys):
    """A stop that comes before a command's own handling (while `sim` imports its modules): one line, 128 + signal."""
    from sim import cli

    def stopped_while_importing(argv):
        raise interrupts.Terminated(signal.SIGTERM)

    monkeypatch.setattr(cli, "_main", stopped_while_importing)
    assert cli.main(["run", "x.yaml"]) == 143
    assert capsys.readouterr().err.strip() == "stopped by SIGTERM"


def test_a_stop_that_a_library_re_raises_as_a_plain_interrupt_keeps_its_signal():
    """Ray's native wait turns what a signal handler raised into a new, plain KeyboardInterrupt: a sweep stopped by
    SIGTERM said 'interrupted' and exited 130. The signal that came wins over the exception's type."""
    from sim.cli import _stopped

    def ray_like_wait():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
        except KeyboardInterrupt:
            raise KeyboardInterrupt() from None
        raise AssertionError("the signal was not delivered")

    with pytest.raises(interrupts.Terminated) as left:
        with interrupts.stop_signals_interrupt():
            with pytest.raises(KeyboardInterrupt) as caught:
                ray_like_wait()
            assert type(caught.value) is KeyboardInterrupt
            assert interrupts.exit_code(caught.value) == 143 and _stopped(caught.value) == "stopped by SIGTERM"
            raise caught.value
    assert interrupts.exit_code(left.value) == 143
    assert interrupts.exit_code(KeyboardInterrupt()) == 130  # outside the block a plain interrupt is a Ctrl-C
    with interrupts.stop_signals_interrupt():
        assert _swallowed(signal.SIGINT)
        assert interrupts.exit_code(KeyboardInterrupt()) == 130 and _stopped(KeyboardInterrupt()) == "interrupted"
