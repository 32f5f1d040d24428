#!/usr/bin/env bash
# Builds the ckt Python wheel (docs/python.md): libckt_fmha.so with Bazel, then the wheel
# around it (python/build_wheel.py, standard library only; offline).
#
#   bash tools/build_wheel.sh                      # CPU emulator build -> dist/ckt-*.whl
#   bash tools/build_wheel.sh --config=nvidia      # GPU build (bazel-bin/lib/fmha/gpu/libckt_fmha.so)
#   bash tools/build_wheel.sh --config=amd --disk_cache=/path   # other arguments go to bazel build
#   pip install --no-index dist/ckt-*.whl
#
# CKT_WHEEL_DIR: where the wheel goes (default dist/). Prints the wheel's path last.
set -euo pipefail
cd "$(dirname "$0")/.."

backend=cpu
for a in "$@"; do
  case "$a" in
    --config=nvidia) backend=nvidia ;;
    --config=amd) backend=amd ;;
    --config=cpu) backend=cpu ;;
  esac
done

if [ "$backend" = cpu ]; then
  target=//lib/fmha:libckt_fmha.so
  lib=lib/fmha/libckt_fmha.so
else
  target=//lib/fmha:fmha_gpu
  lib=lib/fmha/gpu/libckt_fmha.so
fi

bazel build "$@" "$target"
bin="$(bazel info "$@" bazel-bin 2>/dev/null)"
commit="$(git rev-parse --short HEAD 2>/dev/null || true)"
python3 python/build_wheel.py --lib "$bin/$lib" --backend "$backend" --commit "$commit" \
  --out "${CKT_WHEEL_DIR:-dist}"
