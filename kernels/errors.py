"""Exceptions raised by the compiler and the runtime, each naming where in the user's source it happened."""

from __future__ import annotations


class KernelError(Exception):
    """A problem in a kernel or function's source: names the function, the Python file:line and shows the line."""

    def __init__(self, message: str, loc=None, function: str = ""):
        self.message = message
        self.loc = loc
        self.function = function
        super().__init__(self._format())

    def _format(self) -> str:
        where = f" in '{self.function}'" if self.function else ""
        if self.loc is None:
            first, _, rest = self.message.partition("\n")
            return f"{first}{where}" + (f"\n{rest}" if rest else "")
        first, _, rest = self.message.partition("\n")
        text = f"{self.loc.file}:{self.loc.line}: {first}{where}" + (f"\n{rest}" if rest else "")
        if self.loc.source:
            text += f"\n    {self.loc.source.strip()}"
        return text


class CompileError(KernelError):
    """Type errors, undefined names, unsupported constructs: everything found before C++ is generated."""


class CompileTypeError(CompileError, TypeError):
    """A CompileError that is a type error in Python's terms too (Warp raises TypeError for these)."""


class CompileValueError(CompileError, ValueError):
    """A CompileError about a bad compile-time value (an axis out of range, an unsupported rank)."""


class UnsupportedAtomicError(CompileError):
    """An atomic operation on an array whose scalar type has no atomic form. The location and source line come
    first and Warp's wording last, so that the message ends as Warp's does."""

    def _format(self) -> str:
        where = f" in '{self.function}'" if self.function else ""
        if self.loc is None:
            return f"{where.strip()}: {self.message}" if where else self.message
        source = f"\n    {self.loc.source.strip()}" if self.loc.source else ""
        return f"{self.loc.file}:{self.loc.line}{where}:{source}\n{self.message}"


class NativeCompileError(Exception):
    """The C++ (or CUDA) compiler rejected generated source: carries the compiler output and the source path."""


class LaunchError(RuntimeError):
    """Bad arguments to `launch`, or an error reported by a kernel at run time (debug-mode bounds checks)."""
