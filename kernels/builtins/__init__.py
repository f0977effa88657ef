"""The builtin table, declared by group. Importing this package registers every builtin."""

from . import core  # noqa: F401  (registration side effects)
from .registry import BUILTINS, add_builtin, resolve, signatures  # noqa: F401

from . import (decompositions, expect, geometry, quat, random, scalar_math, tile,  # noqa: F401, E402
               vector)  # (registration side effects)
from . import tile_query  # noqa: F401, E402  (registration side effects)
from . import volume  # noqa: F401, E402  (after geometry: the float-only volume names are declared there)
from . import tile_nd  # noqa: F401, E402  (after tile: its overloads of the same names come second)
from . import struct_ops  # noqa: F401, E402
