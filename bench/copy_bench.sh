#!/usr/bin/env bash
# Bandwidth of the tile layer's copy and transpose (examples/copy) against the
# runtime's device-to-device memcpy, measured in the same process, on a GPU
# machine. Every kernel is validated against the host first.
#
#   bazel build --config=nvidia //examples/copy:copy_gpu      (here)
#   bash bench/copy_bench.sh path/to/copy_gpu [sizes...]      (on the GPU machine)
#
# sizes are MxN (default: 8192x8192 16384x16384 16384x16392, the last with
# ragged tiles at the right edge). GB/s counts bytes read + bytes written;
# "% memcpy" is the kernel's bandwidth over memcpy's for the same bytes.
#
# Measured on an NVIDIA H200 (sm_90a build, CUDA 13 driver), best variant:
#   size          prec  memcpy GB/s  copy          transpose (swizzle_t)
#   8192x8192     fp16     3935      3913 (99%)    3532 (90%)   plain/padded 68%
#   16384x16384   fp16     4168      4193 (101%)   3664 (88%)   plain/padded 67%
#   16384x16392   fp16     4213      4114 (98%)    3592 (85%)
#   16384x16384   fp32     4228      4230 (100%)   3719 (88%)   plain/padded 87%
#   16384x16392   fp32     4225      4178 (99%)    3691 (87%)
set -euo pipefail
bin=${1:-.gpu_bin/copy_gpu}
shift || true
sizes=${*:-8192x8192 16384x16384 16384x16392}
[ -x "$bin" ] || { echo "copy_bench: no executable $bin (build //examples/copy:copy_gpu)" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for prec in fp16 fp32; do
  for size in $sizes; do
    m=${size%x*}; n=${size#*x}
    "$bin" -m="$m" -n="$n" -prec="$prec" -op=all -vecs=0 -layout=all -memcpy=1 -v=1 \
      -warmup=5 -repeat=20 >>"$log" 2>&1 || status=1
    echo "---" >>"$log"
  done
done
grep -E '^device:' "$log" | head -1
grep -E 'differ|FAIL|error' "$log" || true
printf '%-10s %-5s %-13s %-8s %9s %9s\n' op prec size variant GB/s "% memcpy"
awk '
  /^RESULT/ {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    line[++n] = sprintf("%-10s %-5s %-13s %-8s %9.1f", f["op"], f["prec"], f["m"] "x" f["n"], f["variant"], f["gbs"])
    gbs[n] = f["gbs"]
    if (f["op"] == "memcpy") {
      for (i = 1; i <= n; i++) printf "%s %8.1f%%\n", line[i], 100 * gbs[i] / f["gbs"]
      n = 0
    }
  }' "$log"
exit $status
