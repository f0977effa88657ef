#!/usr/bin/env bash
# The GPU check, run on a lent GPU machine (the `device` tool) from the repository root:
#   bash tools/gpu_check.sh            # device-parameterised tests on cuda:0, then the GPU benchmark
# It installs what the machine lacks from wheels carried in .whl/ (usd-core; the machine's image has numpy,
# pyyaml, pytest with xdist and timeout, cuda-bindings, NVRTC and torch), runs every test that takes the
# `device` fixture on cuda:0 only, plus tests/test_cuda.py, with a per-test timeout, then
# `tools/bench.py --device cuda` (--quick unless BENCH=full), and writes logs to $OUT (./gpu_out elsewhere).
# Knobs: TESTS_SECONDS (default 270) and BENCH_SECONDS (default 120) bound the two parts; TESTS="-k expr" or a
# list of test ids narrows the tests (e.g. to rerun failures). Finishes in under 8 minutes.
set -u
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
start=$(date +%s)
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl >"$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
# one compile cache for all test workers: each module is compiled by NVRTC (and g++) once, not once per worker
export KERNELS_CACHE_DIR=/tmp/kernels-cache
export KERNELS_TEST_DEVICES=cuda:0
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
    python3 -c "import sys, numpy, cuda.bindings, torch; print(sys.version.split()[0], 'numpy', numpy.__version__,
'cuda-bindings', cuda.bindings.__version__, 'torch', torch.__version__, 'torch cuda', torch.cuda.is_available())"
    python3 -c "import kernels as wp; d = wp.get_device('cuda:0'); print('kernels sees', wp.get_cuda_device_count(),
'GPU(s):', d.name, 'sm_%d' % d.arch, d.sm_count, 'SMs')"
} 2>&1 | tee "$OUT/machine.txt"

# the tests: every device-parameterised test's cuda:0 case, and the CUDA runtime's own tests
SELECT=${TESTS:-"-k cuda"}
timeout "${TESTS_SECONDS:-270}" python3 -m pytest tests $SELECT -q -n 16 --timeout 120 -p no:cacheprovider \
    --tb=short -rfE --junitxml="$OUT/tests.xml" >"$OUT/tests.log" 2>&1
echo "tests exit code $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/tests.log"
tail -n 60 "$OUT/tests.log"

MODE=--quick
[ "${BENCH:-quick}" = full ] && MODE=
timeout "${BENCH_SECONDS:-120}" python3 tools/bench.py --device cuda $MODE >"$OUT/bench.log" 2>&1
echo "bench exit code $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/bench.log"
cat "$OUT/bench.log"
