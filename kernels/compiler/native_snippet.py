"""`@wp.func_native`: Warp's functions written as C++ snippets, accepted at definition and refused where used.

kernels generates every kernel from its own IR (frontend -> passes -> render), with forward and adjoint derived
together; a C++ snippet would bypass the IR, its type checks and the adjoint pass. A program that defines such a
function still loads; a kernel that calls one is a CompileError naming it, at its line.
"""

from __future__ import annotations

__all__ = ["NativeSnippet", "func_native"]


class NativeSnippet:
    """A function defined by `@wp.func_native(snippet, adj_snippet=..., replay_snippet=...)`."""

    def __init__(self, pyfunc, snippet: str, adj_snippet: str | None, replay_snippet: str | None):
        self.func = pyfunc
        self.key = f"{pyfunc.__module__}.{pyfunc.__qualname__}"
        self.snippet, self.adj_snippet, self.replay_snippet = snippet, adj_snippet, replay_snippet
        self.__name__ = pyfunc.__name__
        self.__doc__ = pyfunc.__doc__

    def refusal(self) -> str:
        return (f"'{self.__name__}' is a wp.func_native C++ snippet, which kernels does not compile (kernels are "
                "generated from its own IR, with their adjoints): write it as a @wp.func")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(self.refusal())


def func_native(snippet: str, adj_snippet: str | None = None, replay_snippet: str | None = None):
    """Decorator: Warp's C++-snippet function (see the module docstring: calling it from a kernel is refused)."""
    if not isinstance(snippet, str):
        raise TypeError(f"wp.func_native takes the snippet's C++ source as a string, got {type(snippet).__name__}")

    def decorate(pyfunc):
        return NativeSnippet(pyfunc, snippet, adj_snippet, replay_snippet)

    return decorate
