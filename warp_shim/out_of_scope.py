"""`import warp.fem` / `import warp.sparse` through the shim: one line saying they are out of scope."""

from __future__ import annotations

import importlib.abc
import sys

__all__ = ["OutOfScopeError", "OUT_OF_SCOPE", "install_finder"]

#: Warp libraries built above the kernel layer that this toolkit does not provide, with what they are.
OUT_OF_SCOPE = {
    "warp.fem": "Warp's finite-element library",
    "warp.sparse": "Warp's sparse-matrix library",
}


class OutOfScopeError(ImportError):
    """A Warp library outside this toolkit's scope was imported."""


class _OutOfScopeFinder(importlib.abc.MetaPathFinder):
    """Refuses the out-of-scope packages (and their submodules) at import, before any other finder."""

    def find_spec(self, fullname, path=None, target=None):
        for package, what in OUT_OF_SCOPE.items():
            if fullname == package or fullname.startswith(package + "."):
                raise OutOfScopeError(f"{package} ({what}) is out of scope for this toolkit's Warp shim: "
                                      "only the kernel layer (warp, warp.optim, warp.render, warp.examples) is "
                                      "provided", name=fullname)
        return None


def install_finder() -> None:
    """Put the refusing finder first on `sys.meta_path` (once)."""
    if not any(isinstance(f, _OutOfScopeFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _OutOfScopeFinder())
