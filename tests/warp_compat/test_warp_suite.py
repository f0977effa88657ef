"""Warp's own shipped tests (warp-lang wheel, `warp/tests/`) run against `kernels`, one child process per file.

For each file: every test that real warp-lang passes on its CPU (tests/warp_compat/warp_cpu_baseline.json) passes
here too, unless it is listed with its reason in tests/warp_compat/known_failures/; a listed test that passes
fails this test (take it off the list), so the list and docs/warp_compat.md stay true. The lists may only shrink
(MAX_KNOWN_FAILURES); the goal is at most 10 % of Warp's passes.
"""

import concurrent.futures
import json
import os

import pytest
import yaml

import harness
import kernels as wp

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE_PATH = os.path.join(HERE, "warp_cpu_baseline.json")

pytest.importorskip("warp", reason="warp-lang (a test extra) provides the test files")


def _baseline() -> dict:
    with open(BASELINE_PATH) as f:
        return json.load(f)


def known_failures(rel: str) -> dict:
    """{test id: reason} for a Warp test file (path relative to warp/tests)."""
    path = os.path.join(HERE, "known_failures", rel[:-3].replace("/", "__") + ".yaml")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    for tid, reason in data.items():
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"{path}: {tid}: a known failure needs its reason")
    return data


def warp_passes(rel: str) -> set:
    return {tid for tid, status in _baseline()[rel]["statuses"].items() if status == "pass"}


#: The known failures may only shrink: lower this as tests start passing. The goal (issue 14) is at most 10 % of
#: Warp's passes (83 of 833); see docs/warp_compat.md for where it stands.
MAX_KNOWN_FAILURES = 40


def test_known_failures_only_shrink():
    total = sum(len(warp_passes(rel)) for rel in harness.FILES)
    listed = sum(len(known_failures(rel)) for rel in harness.FILES)
    assert listed <= MAX_KNOWN_FAILURES, (f"{listed} known failures of {total} Warp passes: the list grew past "
                                          f"{MAX_KNOWN_FAILURES}; fix the new failures instead of listing them")


@pytest.fixture(scope="module")
def our_results():
    """Every file's results, the children run side by side (one per core): most of their time is the C++ compiler.
    The children compile into this session's cache (tests/conftest.py), so a run never depends on an earlier one."""
    env = {"KERNELS_CACHE_DIR": wp.config.cache_dir}
    workers = max(1, min(len(harness.FILES), len(os.sched_getaffinity(0))))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = {rel: pool.submit(harness.run_file, "kernels", rel, env=env) for rel in harness.FILES}
        return {rel: f.result() for rel, f in futures.items()}


@pytest.mark.parametrize("rel", harness.FILES)
def test_warp_file(rel, our_results):
    expected = warp_passes(rel)
    known = known_failures(rel)
    stray = sorted(set(known) - expected)
    assert not stray, f"listed as known failures but not passed by Warp either: {stray}"
    result = our_results[rel]
    assert result["import_error"] is None, result["import_error"]
    ours = result["tests"]
    baseline_excluded = {t for t, s in _baseline()[rel]["statuses"].items() if s == "excluded"}
    our_excluded = {t for t, (s, _) in ours.items() if s == "excluded"}
    assert our_excluded == baseline_excluded, "the exclusion rule must pick the same tests in both runs"
    failing = {t: ours.get(t, ["missing", "not run"]) for t in expected if ours.get(t, [""])[0] != "pass"}
    unexpected = {t: v for t, v in failing.items() if t not in known}
    now_passing = sorted(t for t in known if t not in failing)
    report = [f"{t}: {status}: {(msg.strip().splitlines() or [''])[-1][:300]}"
              for t, (status, msg) in sorted(unexpected.items())]
    assert not unexpected, f"{len(unexpected)} tests Warp passes fail here:\n" + "\n".join(report)
    assert not now_passing, f"known failures that now pass (remove them from the list): {now_passing}"
