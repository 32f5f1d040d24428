#!/usr/bin/env bash
# The main job: set up (tools/setup.sh), then run the FMHA forward example
# (examples/fmha_fwd) on the GPU if this machine has an NVIDIA GPU and nvcc,
# else on the CPU SIMT emulator, validated against the CPU reference.
# Extra arguments go to the example (CK's tile_example_fmha_fwd options, e.g.
# -b=2 -h=8 -s=1024 -d=128 -mask=t -prec=bf16).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh

example=//examples/fmha_fwd:fmha_fwd
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "ckt: NVIDIA GPU found: building --config=nvidia"
  bazel build --config=nvidia "${example}_gpu"
  if [ $# -eq 0 ]; then set -- -b=2 -h=16 -s=2048 -d=128 -prec=bf16 -mask=b; fi
  exec "bazel-bin/examples/fmha_fwd/fmha_fwd_gpu" "$@"
fi
echo "ckt: no GPU: running on the CPU SIMT emulator (small default shape)"
exec bazel run "$example" -- "$@"
