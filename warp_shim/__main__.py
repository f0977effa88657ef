"""`python -m warp_shim script.py [args...]`: run a Warp script (`import warp as wp`) on this toolkit."""

import runpy
import sys

from . import install


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m warp_shim SCRIPT.py [ARGS...]\n"
              "Runs SCRIPT with `import warp` resolved to this toolkit (kernels + autodiff).")
        return 0 if argv else 2
    install()
    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
