#!/usr/bin/env bash
# The main job: set up (tools/setup.sh), then run the ckt example on the GPU if
# this machine has an NVIDIA GPU and nvcc, else on the CPU SIMT emulator, and
# validate it against the CPU reference. Extra arguments go to the example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh

example=//examples/vector_add:vector_add
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "ckt: NVIDIA GPU found: building --config=nvidia"
  bazel build --config=nvidia "${example}_gpu"
  exec "bazel-bin/examples/vector_add/vector_add_gpu" "$@"
fi
echo "ckt: no GPU: running on the CPU SIMT emulator"
exec bazel run "$example" -- "$@"
