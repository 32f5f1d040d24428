#!/usr/bin/env bash
# CKT_ZERO_INIT, the zero initializer of every ckt argument struct: the check
# program (the argument, tests/zero_init_check.c) is built with warnings as
# errors and run, as C11 (gcc) and as C++17 (g++). Its nvcc / hipcc
# compilation is //tests:zero_init_gpu.
set -u
src=${1:?usage: zero_init_test.sh zero_init_check.c}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # name, compiler and flags...
  local name=$1; shift
  if ! out=$("$@" -Wall -Wextra -Werror -pedantic -O0 -I. "$src" -o "$tmp/$name" 2>&1); then
    echo "FAIL ($name): does not compile: $*"; echo "$out" | head -20; fail=1; return
  fi
  "$tmp/$name" || { echo "FAIL ($name): a field is not zero"; fail=1; }
}
check c11 gcc -std=c11
check cxx17 g++ -x c++ -std=c++17
exit $fail
