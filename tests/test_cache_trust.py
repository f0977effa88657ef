"""The compile cache is the user's own (kernels/compiler/cache_trust.py): private folders whatever the umask, a cache
that others can write refused, a library planted by someone else never loaded (not even with a matching manifest, nor
through an index record that points outside the cache), an unwritable cache replaced by a private one, said once.

Each scenario runs in fresh processes, as a user's runs would: one fills the cache, the planter changes it, the
next run must not execute the planted code (its constructor would write a marker file)."""

import glob
import os
import shlex
import stat
import subprocess
import sys
import textwrap

import pytest

from kernels.compiler.cache_integrity import write_manifest
from kernels.compiler.build import find_cxx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RUN = textwrap.dedent('''
    import sys
    import numpy as np
    import kernels as wp

    @wp.kernel
    def add_seven_{tag}(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = x[i] + 7.0

    x = wp.zeros(4, dtype=float)
    wp.launch(add_seven_{tag}, dim=4, inputs=[x])
    assert np.all(x.numpy() == 7.0), x.numpy()
    print("ran", wp.config.cache_dir)
''')


def _run(cache_dir, tmp_path, tag="a", env_extra=None, drop_cache_env=False):
    script = tmp_path / f"run_{tag}.py"
    script.write_text(RUN.format(tag=tag))
    env = dict(os.environ, PYTHONPATH=ROOT)
    if drop_cache_env:
        env.pop("KERNELS_CACHE_DIR", None)
    elif cache_dir is not None:
        env["KERNELS_CACHE_DIR"] = str(cache_dir)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          timeout=600)


def _planted_library(tmp_path, marker) -> str:
    """A shared library whose constructor writes `marker`: the attacker's code."""
    src = tmp_path / "planted.cpp"
    src.write_text('#include <cstdio>\n__attribute__((constructor)) static void planted() {\n'
                   f'    FILE* f = std::fopen("{marker}", "w"); if (f) {{ std::fputs("ran", f); std::fclose(f); }}\n'
                   '}\nextern "C" void anything() {}\n')
    out = tmp_path / "planted.so"
    subprocess.run([*find_cxx(), "-shared", "-fPIC", str(src), "-o", str(out)], check=True)
    return str(out)


def _plant(entry_dir: str, planted: str):
    """Put the planted library in `entry_dir` with a matching manifest, as someone else: owned by another uid
    when this runs as root, else in a folder others may write."""
    target = os.path.join(entry_dir, "module.so")
    with open(planted, "rb") as src, open(target, "wb") as dst:
        dst.write(src.read())
    write_manifest(target)  # the planter can compute size and hash
    if os.getuid() == 0:
        os.chown(target, 12345, 12345)
    else:
        os.chmod(entry_dir, 0o777)


def _entry_of(cache_dir, kernel_name) -> str:
    for cpp in glob.glob(os.path.join(str(cache_dir), "*", "*", "module.cpp")):
        with open(cpp) as f:
            if kernel_name in f.read():
                return os.path.dirname(cpp)
    raise AssertionError(f"no cache entry holds {kernel_name}")


@pytest.fixture
def umask_zero():
    old = os.umask(0)
    yield
    os.umask(old)


def test_cache_folders_are_private_whatever_the_umask(tmp_path, umask_zero):
    cache = tmp_path / "shared" / "cache"
    proc = _run(cache, tmp_path, env_extra={})
    assert proc.returncode == 0, proc.stderr
    for folder, dirs, _ in os.walk(cache):
        for d in [folder] + [os.path.join(folder, d) for d in dirs]:
            assert stat.S_IMODE(os.stat(d).st_mode) & 0o077 == 0, (d, oct(os.stat(d).st_mode))


def test_a_cache_others_can_write_is_refused_naming_it(tmp_path):
    cache = tmp_path / "open"
    cache.mkdir()
    os.chmod(cache, 0o777)
    proc = _run(cache, tmp_path)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("kernels.compiler.cache_trust.CacheTrustError: refusing the compile cache"), \
        proc.stderr[-2000:]
    assert str(cache) in last and "KERNELS_CACHE_DIR" in last
    # the command line says it in one line, runs nothing and exits 2
    env = dict(os.environ, PYTHONPATH=ROOT, KERNELS_CACHE_DIR=str(cache))
    cli = subprocess.run([sys.executable, "-m", "sim", "run", os.path.join(ROOT, "scenes", "particles.yaml"),
                          "--frames", "1", "--quiet", "--out", str(tmp_path / "p.usd")], capture_output=True,
                         text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert cli.returncode == 2 and not (tmp_path / "p.usd").exists()
    assert cli.stderr.strip().count("\n") == 0 and "refusing the compile cache" in cli.stderr, cli.stderr


def test_a_planted_library_never_runs(tmp_path):
    cache = tmp_path / "cache"
    assert _run(cache, tmp_path).returncode == 0
    marker = tmp_path / "planted-ran"
    entry = _entry_of(cache, "add_seven_a")
    _plant(entry, _planted_library(tmp_path, marker))
    proc = _run(cache, tmp_path)
    assert not marker.exists(), "the planted library was loaded"
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "is not used" in proc.stderr


def test_an_index_record_pointing_outside_the_cache_is_not_followed(tmp_path):
    cache = tmp_path / "cache"
    assert _run(cache, tmp_path).returncode == 0
    marker = tmp_path / "planted-ran"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    planted = _planted_library(tmp_path, marker)
    os.replace(planted, outside / "module.so")
    write_manifest(str(outside / "module.so"))
    records = glob.glob(os.path.join(str(cache), "*", "index", "*.py"))
    assert records
    for path in records:
        with open(path) as f:
            text = f.read()
        import ast
        record = ast.literal_eval(text)
        record["library"] = str(outside)  # absolute: os.path.join(root, it) is `outside`
        with open(path, "w") as f:
            f.write(repr(record))
    proc = _run(cache, tmp_path)
    assert not marker.exists(), "a library outside the cache was loaded"
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_cache_that_cannot_be_created_falls_back_to_a_private_one_said_once(tmp_path):
    script = tmp_path / "two.py"
    script.write_text(RUN.format(tag="b") + RUN.format(tag="c").replace("import kernels as wp", ""))
    env = dict(os.environ, PYTHONPATH=ROOT, KERNELS_CACHE_DIR="/proc/kernels-cache")  # not even root can mkdir
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [ln for ln in proc.stderr.splitlines() if "private temporary cache" in ln]
    assert len(said) == 1 and "/proc/kernels-cache" in said[0] and "KERNELS_CACHE_DIR" in said[0], proc.stderr


def test_an_unsafe_default_cache_is_replaced_by_a_private_one(tmp_path):
    home = tmp_path / "home"
    (home / ".cache" / "kernels").mkdir(parents=True)
    os.chmod(home / ".cache" / "kernels", 0o777)
    proc = _run(None, tmp_path, env_extra={"HOME": str(home)}, drop_cache_env=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [ln for ln in proc.stderr.splitlines() if "is not safe" in ln]
    assert len(said) == 1 and str(home / ".cache" / "kernels") in said[0]


def test_a_full_cache_moves_the_build_to_a_private_cache_once_and_keeps_nothing_in_failed(tmp_path):
    full = tmp_path / "full"
    compiler = tmp_path / "cxx"
    # a compiler whose writes into the configured cache fail as on a full disk; elsewhere it is the real one
    compiler.write_text(f'#!/bin/sh\nfor a in "$@"; do case "$a" in {full}/*) '
                        f'echo "fatal error: cannot write output: No space left on device" >&2; exit 1;; esac; done\n'
                        f'exec {shlex.join(find_cxx())} "$@"\n')
    os.chmod(compiler, 0o755)
    script = tmp_path / "two.py"
    script.write_text(RUN.format(tag="d") + RUN.format(tag="e").replace("import kernels as wp", ""))
    env = dict(os.environ, PYTHONPATH=ROOT, KERNELS_CACHE_DIR=str(full), CXX=str(compiler))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [ln for ln in proc.stderr.splitlines() if "private temporary cache" in ln]
    assert len(said) == 1 and "No space left on device" in said[0] and str(full) in said[0], proc.stderr
    assert not glob.glob(os.path.join(str(full), "*", "failed")), "no truncated sources kept"
