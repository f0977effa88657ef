#!/usr/bin/env bash
# The GPU check, run on a lent GPU machine (the `device` tool) from the repository root:
#   bash tools/gpu_check.sh
# 1. installs what the machine lacks from wheels carried in .whl/ (usd-core; its image has numpy, pyyaml, pytest
#    with xdist and timeout, cuda-bindings, NVRTC and torch);
# 2. starts compiling every module's CUDA programs into the shared kernel cache in the background
#    (tools/cuda_report.py --precompile), so that tests and benchmarks mostly find them built;
# 3. `tools/bench.py --device cuda` (BENCH=quick for the small sizes), rows printed as they are measured;
# 4. every test that takes the `device` fixture, on cuda:0 only, and tests/test_cuda*.py, 16 workers, a per-test
#    timeout; each test's outcome is appended to tests_report.txt as it ends, so a cut-short run still says
#    what ran.
# 5. tools/gpu_probe_saxpy.py: our saxpy against hand-written CUDA variants and torch (where bandwidth goes).
# Logs go to $OUT (./gpu_out elsewhere). BENCH_SECONDS (default 130) and TESTS_SECONDS (default 180) bound the
# parts; TESTS_K (a pytest -k expression) and TESTS (test files, default: tests) narrow the tests, BENCH_ONLY
# (tools/bench.py --only sections) the benchmark rows; BENCH_SECONDS=0 skips the benchmark. A kernel cache compiled
# ahead on another machine with the device's NVRTC (tools/gpu_prepare.sh) travels as .gpucache/ and is used first.
# The whole script ends within about 6 minutes.
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
# one compile cache for every process: each module is compiled by NVRTC (and g++) once
export KERNELS_CACHE_DIR=/tmp/kernels-cache
if [ -d .gpucache ]; then
    mkdir -p "$KERNELS_CACHE_DIR" && cp -r .gpucache/. "$KERNELS_CACHE_DIR"/ && chmod -R go-w "$KERNELS_CACHE_DIR"
    echo "carried kernel cache: $(find "$KERNELS_CACHE_DIR" -name '*.cubin' | wc -l) cubins"
fi
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
    python3 -c "import sys, numpy, cuda.bindings, torch; from cuda.bindings import nvrtc;
print(sys.version.split()[0], 'numpy', numpy.__version__, 'cuda-bindings', cuda.bindings.__version__,
'nvrtc', nvrtc.nvrtcVersion()[1:], 'torch', torch.__version__, 'torch cuda', torch.cuda.is_available())"
    python3 -c "import kernels as wp; d = wp.get_device('cuda:0'); print('kernels sees', wp.get_cuda_device_count(),
'GPU(s):', d.name, 'sm_%d' % d.arch, d.sm_count, 'SMs')"
} 2>&1 | tee "$OUT/machine.txt"

TEST_MODULES=
for t in ${TESTS:-}; do TEST_MODULES="$TEST_MODULES $(basename "${t%%::*}" .py)"; done
python3 tools/cuda_report.py --tests $TEST_MODULES --precompile 12 >"$OUT/precompile.log" 2>&1 &
precompile=$!

MODE=
[ "${BENCH:-full}" = quick ] && MODE=--quick
ONLY=
[ -n "${BENCH_ONLY:-}" ] && ONLY="--only $BENCH_ONLY"
if [ "${BENCH_SECONDS:-130}" != 0 ]; then
    timeout "${BENCH_SECONDS:-130}" python3 tools/bench.py --device cuda $MODE $ONLY >"$OUT/bench.log" 2>&1
    echo "bench exit code $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/bench.log"
    cat "$OUT/bench.log"
fi
[ "${PROBE:-1}" = 1 ] && timeout 60 python3 tools/gpu_probe_saxpy.py 2>&1 | tee "$OUT/probe.log"

export KERNELS_TEST_DEVICES=cuda:0
export KERNELS_TEST_REPORT="$OUT/tests_report.txt"  # one line per test as it ends (tests/conftest.py)
# the emulated-driver tests are for machines without a GPU (they replace the driver in their process)
timeout "${TESTS_SECONDS:-180}" python3 -m pytest ${TESTS:-tests} -k "${TESTS_K:-cuda and not emulated}" -q -n 16 --timeout 150 -p no:cacheprovider \
    --tb=short -rfE --junitxml="$OUT/tests.xml" >"$OUT/tests.log" 2>&1
echo "tests exit code $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/tests.log"
kill $precompile 2>/dev/null
for outcome in PASSED FAILED SKIPPED XFAIL; do echo "$outcome $(grep -ac "^$outcome " "$OUT/tests_report.txt")"; done
grep -a "^FAILED " "$OUT/tests_report.txt" | head -n 60
tail -n 3 "$OUT/precompile.log"
