"""kernels.logger: levels gate messages, warnings obey the user's filters and point at the caller, loggers swap."""

import warnings

import pytest

import kernels as wp
from kernels import logger


class _Recorder:
    def __init__(self):
        self.lines = []

    def debug(self, message):
        self.lines.append(("debug", message))

    def info(self, message):
        self.lines.append(("info", message))

    def warning(self, message, category=None, stacklevel=1):
        self.lines.append(("warning", message))

    def error(self, message):
        self.lines.append(("error", message))


@pytest.fixture
def level():
    saved = wp.config.log_level
    yield
    wp.config.log_level = saved


def test_levels_gate_debug_and_info_not_errors(level, capsys):
    wp.config.log_level = wp.LOG_WARNING
    logger.log_debug("hidden debug")
    logger.log_info("hidden info")
    logger.log_error("shown error")
    wp.config.log_level = wp.LOG_DEBUG
    logger.log_debug("shown debug")
    out, err = capsys.readouterr()
    assert out == "shown debug\n"
    assert err == "Warp Error: shown error\n"


def test_warning_format_filter_and_once(level, capsys):
    logger._warnings_seen.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        logger.log_warning("twice", category=UserWarning)
        logger.log_warning("twice", category=UserWarning)
        logger.log_warning("once", category=UserWarning, once=True)
        logger.log_warning("once", category=UserWarning, once=True)
        logger.log_warning("old", category=DeprecationWarning)
        logger.log_warning("old", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        logger.log_warning("filtered", category=RuntimeWarning)
    err = capsys.readouterr().err
    assert err.count("Warp UserWarning: twice\n") == 2
    assert err.count("Warp UserWarning: once\n") == 1
    assert err.count("Warp DeprecationWarning: old\n") == 1
    assert "filtered" not in err
    logger._warnings_seen.clear()


def _warn_from_here():
    logger.log_warning("where", category=UserWarning)


def test_warning_points_at_the_caller(capsys):
    saved = wp.config.verbose_warnings
    wp.config.verbose_warnings = True  # the shown warning names the file and line it points at
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            with logger.ScopedLogger(None):
                _warn_from_here()
    finally:
        wp.config.verbose_warnings = saved
    line = _warn_from_here.__code__.co_firstlineno + 1
    assert capsys.readouterr().err == (f"Warp UserWarning: where ({__file__}:{line})\n"
                                       '  logger.log_warning("where", category=UserWarning)\n')


def test_set_logger_checks_and_scopes_restore():
    original = wp.get_logger()
    with pytest.raises(TypeError):
        wp.set_logger(object())
    with pytest.raises(TypeError):
        wp.Logger()
    recorder = _Recorder()
    with pytest.raises(RuntimeError):
        with wp.ScopedLogger(recorder):
            assert wp.get_logger() is recorder
            logger.log_error("inside")
            raise RuntimeError("boom")
    assert wp.get_logger() is original
    assert recorder.lines == [("error", "inside")]
    wp.set_logger(recorder)
    wp.set_logger(None)
    assert isinstance(wp.get_logger(), logger.LoggerBasic)
    wp.set_logger(original)


def test_scoped_log_level(level):
    wp.config.log_level = wp.LOG_INFO
    with wp.ScopedLogLevel(wp.LOG_ERROR):
        assert wp.config.log_level == wp.LOG_ERROR
    assert wp.config.log_level == wp.LOG_INFO


@wp.kernel
def _noop(a: wp.array(dtype=float)):
    pass


def test_print_launches_goes_to_the_logger(capsys):
    recorder = _Recorder()
    saved = wp.config.print_launches
    wp.config.print_launches = True
    try:
        with wp.ScopedLogger(recorder):
            wp.launch(_noop, dim=1, inputs=[wp.zeros(1, dtype=float)], device="cpu")
    finally:
        wp.config.print_launches = saved
    assert capsys.readouterr().out == ""
    assert len(recorder.lines) == 1 and recorder.lines[0][0] == "info"
    assert recorder.lines[0][1].startswith("kernel: _noop dim: 1")
