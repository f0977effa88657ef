"""Run Warp programs on this toolkit: `import warp` resolves to `kernels` (plus `autodiff`'s Tape and optimisers).

`install()` registers a module named `warp` (and `warp.types`, `warp.optim`) in `sys.modules`, so code written for
NVIDIA Warp runs unchanged: `wp.kernel`, `wp.array`, `wp.launch`, ... are `kernels`' own; `wp.Tape` is
`autodiff.Tape`; `warp.optim.Adam`/`SGD` are `autodiff`'s. `warp.render` (`warp_shim.render`: a USD renderer
writing through `sim.usd`), `warp.examples` (`warp_shim.examples`), `warp.autograd` (`warp_shim.autograd`: Warp's
Jacobians and gradient checks), `warp.optim.linear` (`warp_shim.optim_linear`: dense iterative solvers) and `warp.geometry`
(`kernels.geometry`: marching cubes, Delaunay, swept volumes) are imported when a program imports them;
`warp.fem` and `warp.sparse` are refused at import with one line (`warp_shim.out_of_scope`). Kernels compile
without fused multiply-add, as Warp's CPU backend does, so programs compute Warp's numbers.
`python -m warp_shim script.py [args]` runs a script
that does `import warp as wp` this way. This package sits above `kernels` and `autodiff` so that `kernels` itself
never imports `autodiff`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

import autodiff
import kernels
from autodiff import optim as _optim

from .out_of_scope import OutOfScopeError, install_finder

__all__ = ["install", "make_warp_module", "OutOfScopeError"]

#: `warp.<name>` submodules provided by a module of this package, imported on first use (warp.render loads USD).
SUBMODULES = {"warp.render": "warp_shim.render", "warp.examples": "warp_shim.examples",
              "warp.autograd": "warp_shim.autograd", "warp.optim.linear": "warp_shim.optim_linear",
              "warp.geometry": "kernels.geometry"}

#: Warp's deprecated top-level names, resolved on access (with Warp's deprecation warning): name -> (module, name)
DEPRECATED = {"MarchingCubes": ("kernels.geometry", "IsoSurfaceMarchingCubes", "wp.geometry.IsoSurfaceMarchingCubes")}


def _deprecated_attribute(name: str):
    """`wp.MarchingCubes` and the like: the new object itself (so isinstance agrees both ways), after a warning."""
    if name not in DEPRECATED:
        raise AttributeError(f"module 'warp' has no attribute '{name}'")
    module, attribute, new_name = DEPRECATED[name]
    kernels.logger.log_warning(f"wp.{name} is deprecated and will be removed in a future version of Warp. "
                               f"Use {new_name} instead.", category=DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), attribute)


class _OptimPackage(types.ModuleType):
    """`warp.optim`: autodiff's optimisers (every name is autodiff.optim's), as a package so that
    `import warp.optim.linear` finds the dense linear solvers (warp_shim.optim_linear)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_optim, name)


class _AliasLoader(importlib.abc.Loader):
    """Loads `warp.<name>` as the module that provides it (the same module object under both names)."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:
        pass  # the target module ran when it was imported


class _SubmoduleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in SUBMODULES:
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(SUBMODULES[fullname]))
        return None


def make_warp_module() -> types.ModuleType:
    """A module object named `warp` exposing `kernels`' public names, `Tape` and `optim`."""
    module = types.ModuleType("warp", kernels.__doc__)
    for name, value in vars(kernels).items():
        if not name.startswith("__"):
            setattr(module, name, value)
    module.Tape = autodiff.Tape
    module.optim = _OptimPackage("warp.optim", _optim.__doc__)
    module.optim.__path__ = []  # a package: `import warp.optim.linear` consults the finders
    module.__version__ = "1.19.0"  # the Warp API version this shim follows
    module.__path__ = []  # a package, so `import warp.x` consults sys.modules
    module.__getattr__ = _deprecated_attribute  # PEP 562: consulted for names the module lacks
    return module


def install() -> types.ModuleType:
    """Register `warp`, `warp.types` and `warp.optim` in `sys.modules`, and the finders of `warp.render`,
    `warp.examples` and the refused `warp.fem`/`warp.sparse`; returns the `warp` module.

    Raises:
        RuntimeError: the real `warp` package is already imported in this process (both cannot be `warp`).
    """
    existing = sys.modules.get("warp")
    if existing is not None:
        if getattr(existing, "_kernels_shim_", False):
            return existing
        raise RuntimeError("the real `warp` package is already imported in this process; "
                           "install the shim before anything imports warp")
    module = make_warp_module()
    module._kernels_shim_ = True
    # Warp's CPU backend rounds each operation (no fused multiply-add): so do Warp programs run here
    kernels.config.fp_contract = False
    sys.modules["warp"] = module
    sys.modules["warp.types"] = kernels.types
    sys.modules["warp.optim"] = module.optim
    sys.modules["warp.utils"] = kernels.utils
    install_finder()
    if not any(isinstance(f, _SubmoduleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SubmoduleFinder())
    return module
