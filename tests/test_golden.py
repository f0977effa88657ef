"""Golden generated source: pins the C++ the compiler emits for a few small kernels, so that a change to the
compiler shows its effect on the output in review.

The kernels live in tests/_golden_kernels.py, the expected sources in tests/golden/<stem>.cpp. After an intended
change to code generation, regenerate the files and review their diff:

    UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py -q

With UPDATE_GOLDEN=1 the comparison tests rewrite the files instead of comparing (and pass).
"""

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import kernels as wp

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
GOLDEN_DIR = os.path.join(TESTS_DIR, "golden")
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

# Imported under one fixed name (never as a package member or __main__): struct names in the generated source
# derive from the defining module's name, and the subprocesses below import it the same way.
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)
golden_kernels = importlib.import_module("_golden_kernels")

STEMS = sorted(golden_kernels.GOLDEN)


def _golden_path(stem: str) -> str:
    return os.path.join(GOLDEN_DIR, f"{stem}.cpp")


def _render_in_subprocess(stems: list, hash_seed: str) -> str:
    code = "import sys, _golden_kernels; _golden_kernels.main(sys.argv[1:])"
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    proc = subprocess.run([sys.executable, "-c", code, *stems], cwd=TESTS_DIR, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("stem", STEMS)
def test_generated_source_matches_golden(stem):
    kernel, dialect = golden_kernels.GOLDEN[stem]
    text = golden_kernels.render(kernel, dialect)
    path = _golden_path(stem)
    if UPDATE:
        os.makedirs(GOLDEN_DIR, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return
    assert os.path.exists(path), f"no golden file {path}; create it with UPDATE_GOLDEN=1"
    with open(path) as f:
        expected = f.read()
    assert text == expected, (f"generated source of '{stem}' differs from {path}; if the change is intended, "
                              f"rerun with UPDATE_GOLDEN=1 and review the diff")


def test_generated_source_is_the_same_in_every_process():
    # Different hash seeds change set and dict-of-object iteration orders; counters change with what ran before.
    # The in-process render comes after other kernels were compiled in this process, the subprocesses' do not.
    first = _render_in_subprocess(STEMS, "1")
    second = _render_in_subprocess(list(reversed(STEMS)), "2")
    here = "".join(f"==== {stem}\n{golden_kernels.render(*golden_kernels.GOLDEN[stem])}" for stem in STEMS)
    assert first == here

    def by_stem(text):
        chunks = text.split("==== ")[1:]
        return {c.split("\n", 1)[0]: c.split("\n", 1)[1] for c in chunks}

    assert by_stem(second) == by_stem(first)


def test_rendering_twice_gives_the_same_text():
    for stem in STEMS:
        kernel, dialect = golden_kernels.GOLDEN[stem]
        assert golden_kernels.render(kernel, dialect) == golden_kernels.render(kernel, dialect)


def _launch_golden_kernels():
    n = 4
    x = wp.array(np.array([1.0, -2.0, 3.0, -4.0], dtype=np.float32), dtype=float)
    y = wp.array(np.ones(n, dtype=np.float32), dtype=float)
    wp.launch(golden_kernels.saxpy, n, inputs=[2.0, x, y], device="cpu")
    np.testing.assert_allclose(y.numpy(), [3.0, -3.0, 7.0, -7.0])

    out = wp.zeros(n, dtype=float, device="cpu")
    wp.launch(golden_kernels.branch_loop, n, inputs=[3, x, out], device="cpu")
    np.testing.assert_allclose(out.numpy(), [3.0, -3.0, 9.0, -3.0])

    wp.launch(golden_kernels.func_call, n, inputs=[x, out], device="cpu")
    np.testing.assert_allclose(out.numpy(), [2.0, 5.0, 10.0, 17.0])

    p = golden_kernels.Affine()
    p.scale = 2.0
    p.offset = 0.5
    wp.launch(golden_kernels.struct_arg, n, inputs=[p, x, out], device="cpu")
    np.testing.assert_allclose(out.numpy(), [2.5, -3.5, 6.5, -7.5])


def test_golden_source_is_what_a_launch_compiles():
    # Ties the renderer call in _golden_kernels.render to the real build: each golden kernel is alone in its
    # module, so the module source built for a CPU launch is exactly the pinned text.
    _launch_golden_kernels()
    for stem in STEMS:
        kernel, dialect = golden_kernels.GOLDEN[stem]
        if dialect == "cpu":
            assert kernel.source_text == golden_kernels.render(kernel, dialect), stem
