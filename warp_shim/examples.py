"""`warp.examples` for Warp programs run through the shim: where the installed warp-lang keeps its examples."""

from __future__ import annotations

import importlib.machinery
import os

__all__ = ["get_source_directory", "get_asset_directory"]


def get_source_directory() -> str:
    """The `warp/examples` folder of the installed warp-lang package.

    Raises:
        FileNotFoundError: warp-lang is not installed (its examples and their assets come only with it).
    """
    # PathFinder searches sys.path itself: `warp` in sys.modules is the shim, which has no files
    spec = importlib.machinery.PathFinder.find_spec("warp")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            folder = os.path.join(location, "examples")
            if os.path.isdir(folder):
                return os.path.realpath(folder)
    raise FileNotFoundError("warp.examples: the warp-lang package is not installed, and its example assets come "
                            "with it (pip install warp-lang)")


def get_asset_directory() -> str:
    """The assets (meshes, NanoVDB volumes, images) of warp-lang's examples; FileNotFoundError without warp-lang."""
    return os.path.join(get_source_directory(), "assets")
