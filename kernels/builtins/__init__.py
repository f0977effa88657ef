"""The builtin table, declared by group. Importing this package registers every builtin."""

from . import core  # noqa: F401  (registration side effects)
from .registry import BUILTINS, add_builtin, resolve, signatures  # noqa: F401

for _group in ("scalar_math", "vector", "quat", "random"):
    try:
        __import__(f"{__name__}.{_group}")
    except ModuleNotFoundError as e:  # a group not written yet
        if e.name != f"{__name__}.{_group}":
            raise
