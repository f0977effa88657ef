"""`python -m sim ...`: the same CLI as the `sim` command."""

import sys

from .cli import main

sys.exit(main())
