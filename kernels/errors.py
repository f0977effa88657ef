"""Exceptions raised by the compiler and the runtime, each naming where in the user's source it happened."""

from __future__ import annotations


class KernelError(RuntimeError):
    """A problem in a kernel or function's source: names the function, the Python file:line and shows the line."""

    def __init__(self, message: str, loc=None, function: str = ""):
        self.message = message
        self.loc = loc
        self.function = function
        super().__init__(self._format())

    def _format(self) -> str:
        # where first, the message last (as a Python traceback ends with the error): a message that ends as Warp's
        # still ends the text, so patterns anchored at the end (`...$`) match as they do with Warp
        where = f"in '{self.function}'" if self.function else ""
        if self.loc is None:
            return f"{where}: {self.message}" if where else self.message
        source = f"\n    {self.loc.source.strip()}" if self.loc.source else ""
        return f"{self.loc.file}:{self.loc.line}: {where}:{source}\n{self.message}"


class CompileError(KernelError):
    """Type errors, undefined names, unsupported constructs: everything found before C++ is generated.

    A RuntimeError, as Warp's `WarpCodegenError` (whose name it also has); the subclasses below are also the
    Python exception of their kind, so `except TypeError` catches a kernel's type error as it does with Warp."""


class CompileTypeError(CompileError, TypeError):
    """A value or annotation of the wrong type in kernel source (Warp's `WarpCodegenTypeError`)."""


class CompileAttributeError(CompileError, AttributeError):
    """An attribute that does not exist (Warp's `WarpCodegenAttributeError`)."""


class CompileIndexError(CompileError, IndexError):
    """A constant index out of range (Warp's `WarpCodegenIndexError`)."""


class CompileKeyError(CompileError, KeyError):
    """A name or key that does not exist (Warp's `WarpCodegenKeyError`)."""

    def __str__(self):  # KeyError would show the message quoted
        return RuntimeError.__str__(self)


class CompileValueError(CompileError, ValueError):
    """A value out of its allowed range (Warp's `WarpCodegenValueError`)."""


class UnsupportedAtomicError(CompileError):
    """An atomic operation on an array whose scalar type has no atomic form (Warp's wording)."""


class ConsumedAtomicError(CompileError):
    """A kernel's backward refused: a value returned by an atomic (a slot taken from a counter) reaches its gradient,
    and the backward, which does not run atomics again, cannot know it (passes/atomic_results.py)."""


class WarpDeterminismError(RuntimeError):
    """Warp's refusal of what deterministic mode cannot run or differentiate reproducibly (`wp.WarpDeterminismError`)."""


class NativeCompileError(Exception):
    """The C++ (or CUDA) compiler rejected generated source: carries the compiler output and the source path."""


class LaunchError(RuntimeError):
    """Bad arguments to `launch`, or an error reported by a kernel at run time (debug-mode bounds checks)."""
