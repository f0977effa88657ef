"""Subprocess target of test_cache.py: build and launch one kernel, print one JSON line saying how it went.

The line holds `cold_builds` (libraries this process compiled; 0 when everything came from the cache), `result`
(the output array) or, when the build failed, `error` and `error_type`. The cache directory is whatever
KERNELS_CACHE_DIR (or --cache-dir) says.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

import kernels as wp


@wp.kernel
def scale_shift(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = 2.0 * x[i] + 1.0


def _wait_for(path: str, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {path}")
        time.sleep(0.005)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache-dir", help="set kernels.config.cache_dir (overrides KERNELS_CACHE_DIR)")
    parser.add_argument("--cxx-flags", default="[]", help="JSON list assigned to kernels.config.cxx_flags")
    parser.add_argument("--ready-file", help="created when imports are done (start barrier)")
    parser.add_argument("--go-file", help="wait for this file before building (start barrier)")
    args = parser.parse_args()
    if args.cache_dir:
        wp.config.cache_dir = args.cache_dir
    wp.config.cxx_flags = tuple(json.loads(args.cxx_flags))
    if args.ready_file:
        open(args.ready_file, "w").close()
    if args.go_file:
        _wait_for(args.go_file)

    x = wp.array(np.arange(8, dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros(8, dtype=float, device="cpu")
    try:
        wp.launch(scale_shift, 8, inputs=[x, out], device="cpu")
    except (wp.NativeCompileError, wp.CompileError) as e:
        print(json.dumps({"error": str(e), "error_type": type(e).__name__}))
        return
    report = {"cold_builds": scale_shift.module.cold_builds, "result": out.numpy().tolist(),
              "cache_dir": wp.config.cache_dir}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
