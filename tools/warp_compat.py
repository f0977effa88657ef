"""Warp's own test suite on `kernels`: run it, record the warp-lang baseline, regenerate the README table and docs.

    python tools/warp_compat.py baseline [FILE ...]   # real warp-lang on its CPU -> tests/warp_compat/warp_cpu_baseline.json
    python tools/warp_compat.py run [FILE ...]        # kernels -> tests/warp_compat/last_run.json, prints a table
    python tools/warp_compat.py report                # README table + docs/warp_compat.md from baseline + last run

FILE is a path relative to warp/tests (default: every file the harness covers). The baseline is run once per
warp-lang version and committed; `run` is what CI's test (tests/warp_compat/test_warp_suite.py) does per file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "warp_compat"))

import harness  # noqa: E402

BASELINE = os.path.join(REPO, "tests", "warp_compat", "warp_cpu_baseline.json")
LAST_RUN = os.path.join(REPO, "tests", "warp_compat", "last_run.json")


def _load(path: str) -> dict:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def _save(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def _statuses(result: dict) -> dict:
    return {tid: status for tid, (status, _) in result["tests"].items()}


def cmd_run(impl: str, files: list, out: str) -> None:
    data = _load(out)
    for rel in files:
        start = time.monotonic()
        result = harness.run_file(impl, rel)
        elapsed = time.monotonic() - start
        data[rel] = {"statuses": _statuses(result), "import_error": result["import_error"],
                     "messages": {tid: msg[-600:] for tid, (status, msg) in result["tests"].items()
                                  if status not in ("pass", "excluded", "skip")},
                     "seconds": round(elapsed, 1)}
        _save(out, data)
        counts = harness.summarize(result)
        print(f"{rel:40s} {elapsed:7.1f}s  {json.dumps(counts)}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("baseline", "run", "report"))
    parser.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
    files = args.files or list(harness.FILES)
    if args.command == "baseline":
        cmd_run("warp", files, BASELINE)
    elif args.command == "run":
        cmd_run("kernels", files, LAST_RUN)
    return 0


if __name__ == "__main__":
    sys.exit(main())
