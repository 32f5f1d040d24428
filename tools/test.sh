#!/usr/bin/env bash
# The test job: set up (tools/setup.sh), then run every test (bazel test //...)
# on the CPU emulator. Extra arguments go to bazel test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel test //... "$@"
