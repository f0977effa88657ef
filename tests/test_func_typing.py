"""`wp.func`'s typing overloads: a static type checker (and typing.get_overloads, which Warp's test_func reads) sees
the two spellings of the decorator, bare and with options, each keeping the decorated function's signature."""

import importlib.util
import json
import subprocess
import sys
import typing

import numpy as np
import pytest

import kernels as wp


def _hints():
    return [typing.get_type_hints(o) for o in typing.get_overloads(wp.func)]


def test_func_has_the_bare_and_the_options_overloads():
    bare, options = _hints()
    assert typing.get_origin(bare["return"]) is typing.get_origin(typing.Callable[..., int])
    params, result = typing.get_args(bare["return"])
    assert isinstance(params, typing.ParamSpec) and isinstance(result, typing.TypeVar)
    assert bare["pyfunc"] == bare["return"]  # the decorated function's own signature comes back
    assert set(options) == {"pyfunc", "name", "module", "inline", "return"}
    (decorated,), returned = typing.get_args(options["return"])
    assert decorated == returned == bare["return"]


@wp.func
def _bare(x: float) -> float:
    return 2.0 * x


@wp.func(inline=True)
def _with_options(x: float) -> float:
    return _bare(x) + 1.0


@wp.kernel
def _use(out: wp.array(dtype=float)):
    out[0] = _with_options(3.0)


def test_the_implementation_behind_the_overloads_still_decorates():
    out = wp.zeros(1, dtype=float)
    wp.launch(_use, dim=1, inputs=[out])
    np.testing.assert_array_equal(out.numpy(), [7.0])


_WARP = """
import json, typing, warp
print(json.dumps([{k: str(v) for k, v in o.__annotations__.items() if k not in ("f", "pyfunc")}
                  for o in typing.get_overloads(warp.func)]))
"""


def test_the_overloads_are_shaped_as_warps():
    if importlib.util.find_spec("warp") is None:
        pytest.skip("warp-lang (the reference, a test extra) is not installed")
    done = subprocess.run([sys.executable, "-c", _WARP], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    warps = json.loads(done.stdout.strip().splitlines()[-1])
    ours = [{k: str(v) for k, v in o.__annotations__.items() if k != "pyfunc"} for o in typing.get_overloads(wp.func)]
    assert len(ours) == len(warps)
    for w, o in zip(warps, ours):
        assert set(w) == set(o)  # the same options, by name
        assert w["return"].replace("_FuncParams", "P").replace("_FuncReturn", "R") \
            == o["return"].replace("_FuncParams", "P").replace("_FuncReturn", "R")
