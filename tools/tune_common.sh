# tools/tune_common.sh — sourced by tools/bwd_tune.sh, tools/fwd_tune.sh and
# tools/appendkv_tune.sh (NAME and DIMS already in $name / $dims; FWD_ONLY=1:
# no backward instances): the architecture, the nvcc flags of a reduced
# libckt_fmha of those head dims, and its object directory.
arch=${ARCH:-sm_90a}; carch=${arch/sm_/compute_}
nvcc=${CKT_NVCC:-/usr/local/cuda/bin/nvcc}
out=.gpu_bin/tune; obj=$out/obj_$name
mkdir -p "$out" "$obj"
files=""; bfiles=""  # the backward's: dims with a lib/fmha/bwd_DIM.c (not decode_*)
for d in ${dims//,/ }; do
  files="$files X($d)"
  [ "${FWD_ONLY:-0}" = 0 ] && [ -f "lib/fmha/bwd_$d.c" ] && bfiles="$bfiles X($d)"
done
flags=(-std=c++17 -O3 -lineinfo -x cu -I. -Xcompiler -fPIC -gencode "arch=$carch,code=$arch"
       "-DCKT__FMHA_FWD_FILES(X)=$files" "-DCKT__FMHA_BWD_FILES(X)=$bfiles")
