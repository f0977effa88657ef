"""Run Warp programs on this toolkit: `import warp` resolves to `kernels` (plus `autodiff`'s Tape and optimisers).

`install()` registers a module named `warp` (and `warp.types`, `warp.optim`) in `sys.modules`, so code written for
NVIDIA Warp runs unchanged: `wp.kernel`, `wp.array`, `wp.launch`, ... are `kernels`' own; `wp.Tape` is
`autodiff.Tape`; `warp.optim.Adam`/`SGD` are `autodiff`'s. `python -m warp_shim script.py [args]` runs a script
that does `import warp as wp` this way. This package sits above `kernels` and `autodiff` so that `kernels` itself
never imports `autodiff`.
"""

from __future__ import annotations

import sys
import types

import autodiff
import kernels
from autodiff import optim as _optim

__all__ = ["install", "make_warp_module"]


def make_warp_module() -> types.ModuleType:
    """A module object named `warp` exposing `kernels`' public names, `Tape` and `optim`."""
    module = types.ModuleType("warp", kernels.__doc__)
    for name, value in vars(kernels).items():
        if not name.startswith("__"):
            setattr(module, name, value)
    module.Tape = autodiff.Tape
    module.optim = _optim
    module.__version__ = "1.19.0"  # the Warp API version this shim follows
    module.__path__ = []  # a package, so `import warp.x` consults sys.modules
    return module


def install() -> types.ModuleType:
    """Register `warp`, `warp.types` and `warp.optim` in `sys.modules`; returns the `warp` module.

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
    sys.modules["warp"] = module
    sys.modules["warp.types"] = kernels.types
    sys.modules["warp.optim"] = _optim
    return module
