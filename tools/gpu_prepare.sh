#!/usr/bin/env bash
# Prepare, on a machine without a GPU, what tools/gpu_check.sh carries to a lent GPU machine, so that its minutes go
# to running rather than to installing and compiling:
#   bash tools/gpu_prepare.sh [TEST_MODULE ...]
# 1. .whl/: the wheels the GPU machine's image lacks (usd-core, for its Python 3.12);
# 2. .gpucache/: every module of `sim` (and of the named test modules, e.g. test_tiles_linalg; all of them when
#    none is named) compiled to sm_90 cubins by the NVRTC the GPU machine has (13.0: the cache is keyed by the NVRTC
#    version, and a cubin from a newer NVRTC may not load on its driver), with tools/cuda_report.py --precompile.
# Both folders are ignored by git (.git/info/exclude) and travel with `carry: [".whl", ".gpucache"]`.
# NVRTC_VERSION (default 13.0) and JOBS (default: the cores) can be set.
set -eu
cd "$(dirname "$0")/.."
NVRTC_VERSION=${NVRTC_VERSION:-13.0}
for path in /.whl/ /.gpucache/; do
    grep -qxF "$path" .git/info/exclude 2>/dev/null || echo "$path" >>.git/info/exclude
done
if ! compgen -G ".whl/usd_core-*.whl" >/dev/null; then
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        -d .whl usd-core
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 -m pip download -q --no-deps -d "$scratch/dl" "nvidia-cuda-nvrtc==$NVRTC_VERSION.*"
python3 -m pip install -q --no-deps --target "$scratch/nvrtc" "$scratch"/dl/*.whl
lib=$(dirname "$(find "$scratch/nvrtc" -name 'libnvrtc.so.*' | head -n 1)")
# the device's NVRTC in this process (cuda-bindings loads libnvrtc by its soname; the builtins library beside it)
LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_PRELOAD="$lib/libnvrtc.so.13" \
    KERNELS_CACHE_DIR="$PWD/.gpucache" \
    python3 tools/cuda_report.py --tests "$@" --precompile "${JOBS:-$(nproc)}"
echo "prepared: $(du -sh .whl | cut -f1) of wheels, $(find .gpucache -name '*.cubin' | wc -l) cubins" \
     "($(du -sh .gpucache | cut -f1)) for NVRTC $NVRTC_VERSION"
