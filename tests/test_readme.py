"""Every ```python block of README.md runs as written: each alone, as a script in an empty folder, in a process of
its own (kernels need a source file), sharing this session's compile cache. docs/sweeps.md, which the README
links, documents every key of a sweep file and every built-in metric."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import kernels as wp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_blocks(path: str) -> list:
    """(line of the opening fence, code) of each ```python block of the Markdown file at `path`."""
    text = open(path, encoding="utf-8").read()
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```$", text, re.M | re.S):
        blocks.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return blocks


BLOCKS = python_blocks(os.path.join(ROOT, "README.md"))


def test_the_readme_has_python_blocks_to_check():
    assert len(BLOCKS) >= 5, "the extraction found the README's examples"


@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_readme_python_block_runs_as_written(line, code, tmp_path):
    script = tmp_path / f"readme_{line}.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=ROOT, KERNELS_CACHE_DIR=wp.config.cache_dir, KERNELS_COMPILE_NOTICE="0")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=600)
    assert proc.returncode == 0, f"README.md:{line}: the block fails:\n{proc.stderr[-3000:]}"


def test_docs_sweeps_md_describes_every_sweep_key_and_builtin_metric():
    from sim.sweeps.metrics import BUILTIN_METRICS
    from sim.sweeps.spec import KEEP, KEYS
    text = open(os.path.join(ROOT, "docs", "sweeps.md"), encoding="utf-8").read()
    rows = {line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| `")}
    missing = [k for k in list(KEYS) + list(BUILTIN_METRICS) if f"`{k}`" not in rows]
    assert not missing, f"docs/sweeps.md has no table row for {missing}"
    assert all(f"`{k}`" in text for k in KEEP)
    assert "[docs/sweeps.md](docs/sweeps.md)" in open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
