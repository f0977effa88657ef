"""`python -m warp_shim script.py [args...]`: run a Warp script (`import warp as wp`) on this toolkit."""

import os
import runpy
import sys
import traceback

from . import OutOfScopeError, install
from .render import RendererUnavailable

_SHIM_DIR = os.path.dirname(os.path.abspath(__file__))


def _where(error: BaseException) -> str:
    """`file:line` of the program's line that reached the refused feature (the innermost frame outside the shim
    and the import machinery)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith(_SHIM_DIR) and not f.filename.startswith("<frozen")]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m warp_shim SCRIPT.py [ARGS...]\n"
              "Runs SCRIPT with `import warp` resolved to this toolkit (kernels + autodiff).")
        return 0 if argv else 2
    install()
    sys.argv = list(argv)
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except (OutOfScopeError, RendererUnavailable) as e:
        # not a bug of the program: a Warp feature this toolkit does not provide, said in one line
        print(f"{_where(e)}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
