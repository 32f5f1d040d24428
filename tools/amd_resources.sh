#!/usr/bin/env bash
# Prints the AMD code-object resources of every kernel in a source file, per
# architecture: VGPRs, AGPRs, SGPRs, scratch (private segment) and LDS (group
# segment) bytes, spills; then each code object's waterfall loops: a buffer
# load or store whose base the compiler could not prove the same in all lanes
# (ckt/arch/memory.h) becomes a loop that reads one lane's base into scalars
# (v_readfirstlane) and runs the access for the lanes that share it, once for
# every distinct base. Exit status 1 if any kernel uses scratch, 3 if a code
# object holds a waterfall loop, 2 if the file does not compile or holds no
# kernel.
#
#   bash tools/amd_resources.sh examples/vector_add/main.c [extra hipcc flags]
#   bash tools/amd_resources.sh bazel-bin/lib/fmha/_fmha_gpu_objs/bwd_d128.c.o
#
# A source file is compiled here (hipcc, gfx90a and gfx940, -O3). An object
# (.o) that `bazel build --config=amd` already compiled is read as it is: its
# .hip_fatbin bundle is split into one code object per architecture (CI reads
# the build's objects, so that no kernel is compiled twice).
set -euo pipefail
src=$1; shift
root=$(cd "$(dirname "$0")/.." && pwd)
llvm=/usr/lib/llvm-15/bin
readelf=$llvm/llvm-readelf
[ -x "$readelf" ] || readelf=llvm-readelf
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
abs=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")
case "$src" in
*.o)
  [ -f "$abs" ] || { echo "amd_resources.sh: no object $src" >&2; exit 2; }
  if ! "$llvm/llvm-objcopy" --dump-section=.hip_fatbin="$tmp/fat.bin" "$abs" "$tmp/host.o" 2>"$tmp/stderr"; then
    cat "$tmp/stderr" >&2; echo "amd_resources.sh: $src holds no HIP code objects (.hip_fatbin)" >&2; exit 2
  fi
  targets=$("$llvm/clang-offload-bundler" --list --type=o --input="$tmp/fat.bin" | grep amdgcn || true)
  [ -n "$targets" ] || { echo "amd_resources.sh: no AMD code object in $src's bundle" >&2; exit 2; }
  for target in $targets; do
    "$llvm/clang-offload-bundler" --type=o --unbundle --targets="$target" --input="$tmp/fat.bin" \
      --output="$tmp/obj-hip-amdgcn-amd-amdhsa-${target##*--}.out"
  done
  ;;
*)
  # a file that does not compile, or holds no kernel, is an error (exit 2), not "no scratch"
  if ! (cd "$tmp" && hipcc -x hip --offload-arch=gfx90a --offload-arch=gfx940 -O3 -std=c++17 \
     -I"$root" "$@" -c "$abs" -o out.o --save-temps 2>"$tmp/stderr"); then
    cat "$tmp/stderr" >&2; echo "amd_resources.sh: $src does not compile for AMD" >&2; exit 2
  fi
  ;;
esac
scratch=0
kernels=0
printf '%-8s %-48s %5s %5s %5s %8s %8s %6s\n' arch kernel vgpr agpr sgpr scratch lds spills
for f in "$tmp"/*-hip-amdgcn-amd-amdhsa-*.out; do
  arch=${f##*-}; arch=${arch%.out}
  "$readelf" --notes "$f" | awk -v arch="$arch" '
    /^  - \.agpr_count:/ { if (name != "") emit(); agpr=$3; next }
    /\.group_segment_fixed_size:/ { lds=$2 }
    /^    \.name:/ { name=$2 }
    /\.private_segment_fixed_size:/ { priv=$2 }
    /\.sgpr_count:/ { sgpr=$2 }
    /\.vgpr_count:/ { vgpr=$2 }
    /\.vgpr_spill_count:/ { vsp=$2 }
    /\.sgpr_spill_count:/ { ssp=$2 }
    function emit() { printf "%-8s %-48s %5s %5s %5s %8s %8s %6s\n", arch, substr(name,1,48), vgpr, agpr, sgpr, priv, lds, vsp+ssp; name="" }
    END { if (name != "") emit() }'
  notes=$("$readelf" --notes "$f")
  kernels=$((kernels + $(grep -c '^    \.name:' <<<"$notes" || true)))
  case "$notes" in *".private_segment_fixed_size: "[1-9]*) scratch=1 ;; esac
done
[ "$kernels" -gt 0 ] || { echo "amd_resources.sh: no kernel in $src" >&2; exit 2; }
# waterfall loops: a backward s_cbranch_execnz over a v_readfirstlane and a buffer op
waterfall=0
for f in "$tmp"/*-hip-amdgcn-amd-amdhsa-*.out; do
  arch=${f##*-}; arch=${arch%.out}
  n=$("$llvm/llvm-objdump" -d "$f" | python3 -c '
import re, sys
ins = []
for line in sys.stdin:
    m = re.match(r"\s+(\S+)\s*(.*?)\s*// ([0-9A-F]+):", line)
    if m:
        ins.append((int(m.group(3), 16), m.group(1), m.group(2)))
n = 0
for pc, op, args in ins:
    if op == "s_cbranch_execnz":
        k = int(args.split()[0])
        k = k - 65536 if k >= 32768 else k
        target = pc + 4 + 4 * k
        body = [o for p, o, _ in ins if target <= p < pc]
        if any(o.startswith("v_readfirstlane") for o in body) and any(o.startswith("buffer_") for o in body):
            n += 1
print(n)')
  echo "$arch waterfall loops: $n"
  [ "$n" = 0 ] || waterfall=1
done
[ "$scratch" = 0 ] || exit 1
[ "$waterfall" = 0 ] || exit 3
exit 0
