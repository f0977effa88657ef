"""Where the toolkit's messages go: Warp's pluggable logger (`wp.set_logger`, `wp.Logger`, `log_warning`, ...).

Debug and info messages are gated by `config.log_level` (the `logging` module's numbers, `config.LOG_*`); errors
always pass. The default logger, `LoggerBasic`, writes debug/info lines to stdout, errors to stderr after
"Warp Error: ", and sends warnings through `warnings.warn`, so that the user's warning filters apply, printed as
"Warp <Category>: message". Any object with the four methods (`Logger`) can take its place, e.g. an adapter to a
framework's own logging.
"""

from __future__ import annotations

import linecache
import sys
import warnings
from typing import Protocol, runtime_checkable

from . import config
from .config import LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_WARNING

__all__ = ["LOG_DEBUG", "LOG_ERROR", "LOG_INFO", "LOG_WARNING", "Logger", "LoggerBasic", "ScopedLogLevel",
           "ScopedLogger", "get_logger", "log_debug", "log_error", "log_info", "log_warning", "set_logger"]

_METHODS = ("debug", "info", "warning", "error")


@runtime_checkable
class Logger(Protocol):
    """What a logger offers: four methods, one per level. A protocol: not instantiated, only satisfied."""

    def debug(self, message: str) -> None:
        """A debug-level message (compile details)."""

    def info(self, message: str) -> None:
        """An info-level message (launch traces, notices)."""

    def warning(self, message: str, category=None, stacklevel: int = 1) -> None:
        """A warning; `stacklevel` is ready for `warnings.warn(message, category, stacklevel=stacklevel)` inside
        this method (it points at the user's code that caused the warning)."""

    def error(self, message: str) -> None:
        """An error message (always shown)."""


def _format(message, category, filename, lineno, line=None) -> str:
    text = f"Warp {category.__name__}: {message}"
    if getattr(config, "verbose_warnings", False):
        text += f" ({filename}:{lineno})"
        source = line if line is not None else linecache.getline(filename, lineno)
        if source:
            text += f"\n  {source.strip()}"
    return text + "\n"


def _show_on_stderr(message, category, filename, lineno, file=None, line=None):
    # looked up at call time: a test or a program may have replaced sys.stderr
    sys.stderr.write(_format(message, category, filename, lineno, line))


class LoggerBasic:
    """The default logger: debug/info -> stdout, warnings -> `warnings.warn` (filters apply) shown on stderr,
    errors -> stderr."""

    def debug(self, message: str) -> None:
        sys.stdout.write(message + "\n")

    def info(self, message: str) -> None:
        sys.stdout.write(message + "\n")

    def warning(self, message: str, category=None, stacklevel: int = 1) -> None:
        with warnings.catch_warnings():
            # only how the warning is shown changes; whether it is shown stays with the user's filters
            warnings.showwarning = _show_on_stderr
            warnings.warn(message, category, stacklevel=stacklevel)

    def error(self, message: str) -> None:
        sys.stderr.write("Warp Error: " + message + "\n")


_active: Logger = LoggerBasic()
#: (category, message) pairs already shown by a deduplicating log_warning (once=True, or any DeprecationWarning).
_warnings_seen: set = set()


def _check_logger(logger) -> None:
    if not isinstance(logger, Logger) or not all(callable(getattr(logger, m, None)) for m in _METHODS):
        raise TypeError("logger must implement the Logger protocol (debug(message), info(message), "
                        f"warning(message, category, stacklevel), error(message)), got {type(logger)!r}")


def set_logger(logger: Logger | None) -> None:
    """Make `logger` the one every message goes to; None restores a fresh `LoggerBasic`.

    Raises:
        TypeError: `logger` lacks one of the four methods.
    """
    global _active
    if logger is None:
        _active = LoggerBasic()
        return
    _check_logger(logger)
    _active = logger


def get_logger() -> Logger:
    """The logger messages go to now."""
    return _active


def log_debug(message: str) -> None:
    """Send a debug message, if `config.log_level` is at most LOG_DEBUG."""
    if config.log_level <= LOG_DEBUG:
        _active.debug(message)


def log_info(message: str) -> None:
    """Send an info message, if `config.log_level` is at most LOG_INFO."""
    if config.log_level <= LOG_INFO:
        _active.info(message)


def log_warning(message: str, category=None, stacklevel: int = 1, once: bool = False) -> None:
    """Send a warning, if `config.log_level` is at most LOG_WARNING.

    Args:
        message: the warning's text.
        category: a Warning subclass (None: UserWarning, as `warnings.warn`).
        stacklevel: 1 points the warning at the function that called log_warning, 2 at its caller, ...
        once: show a (category, message) pair once per process, wherever it comes from. Deprecation warnings
            are always shown once.
    """
    if config.log_level > LOG_WARNING:
        return
    dedup = once or category is DeprecationWarning
    key = (category, message)
    if dedup and key in _warnings_seen:
        return
    # +2: log_warning's own frame and the logger's warning() frame sit between the caller and warnings.warn
    # (a logger calls warnings.warn in its warning(), so the level it gets is ready to use there)
    _active.warning(message, category=category, stacklevel=stacklevel + 2)
    if dedup:
        _warnings_seen.add(key)


def log_error(message: str) -> None:
    """Send an error message; errors are never filtered by the log level."""
    _active.error(message)


class ScopedLogger:
    """`with ScopedLogger(logger) as scope:` sends messages to `logger` (None: a fresh LoggerBasic) inside the
    block, and restores the previous logger after it, also when the block raises."""

    def __init__(self, logger: Logger | None):
        if logger is not None:
            _check_logger(logger)
        self.logger = logger if logger is not None else LoggerBasic()
        self._saved = None

    def __enter__(self):
        global _active
        self._saved = _active
        _active = self.logger
        return self

    def __exit__(self, *exc):
        global _active
        # restored as it was, without checking it again: a check failing here would hide the block's exception
        _active = self._saved
        return False


class ScopedLogLevel:
    """`with ScopedLogLevel(level):` sets `config.log_level` inside the block and restores it after."""

    def __init__(self, level: int):
        self.level = level
        self._saved = None

    def __enter__(self):
        self._saved = config.log_level
        config.log_level = self.level
        return self

    def __exit__(self, *exc):
        config.log_level = self._saved
        return False
