#!/usr/bin/env bash
# Installs what ckt needs on Debian 12 (as root, or with sudo), only what is
# missing: Bazel 4.2.3 and its offline rule sets, GoogleTest sources, python3-venv
# and python3-numpy (tests/python), and the HIP compiler for the amd configuration.
# nvcc (CUDA 13) is expected at /usr/local/cuda; without it the nvidia configuration
# cannot build.
set -euo pipefail

need=()
command -v bazel >/dev/null 2>&1 || need+=(bazel-bootstrap)
[ -d /usr/share/bazel/platforms ] || need+=(bazel-platforms)
[ -d /usr/share/bazel/rules/java ] || need+=(bazel-rules-java)
[ -f /usr/src/googletest/googletest/src/gtest-all.cc ] || need+=(libgtest-dev)
command -v g++ >/dev/null 2>&1 || need+=(g++)
# the Python package's wheel test (tests/python): a venv with pip, and numpy for its arrays
/usr/bin/python3 -c "import ensurepip" >/dev/null 2>&1 || need+=(python3-venv)
/usr/bin/python3 -c "import numpy" >/dev/null 2>&1 || need+=(python3-numpy)
if [ "${CKT_SKIP_AMD:-0}" != 1 ]; then
  command -v hipcc >/dev/null 2>&1 || need+=(hipcc)
  [ -e /usr/lib/x86_64-linux-gnu/libamdhip64.so ] || need+=(libamdhip64-dev)
  [ -d /usr/lib/x86_64-linux-gnu/amdgcn ] || need+=(rocm-device-libs)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "ckt setup: installing ${need[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
