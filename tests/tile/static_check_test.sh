#!/usr/bin/env bash
# Misuse caught at compile time: every case of static_check_cases.c must fail
# to compile (as C11 and as C++17) with the message it names; without a case
# the file compiles.
set -u
src=tests/tile/static_check_cases.c
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src" "$tmp/cases.cc"
for lang in c c++; do
  if [ $lang = c ]; then cc="gcc -std=c11"; file=$src; else cc="g++ -std=c++17"; file=$tmp/cases.cc; fi
  if ! out=$($cc -Wall -Wextra -pedantic -Werror -fsyntax-only -I. "$file" 2>&1); then
    echo "FAIL ($lang): the good shapes do not compile"; echo "$out" | head -20; fail=1
  fi
  grep -o 'defined(BAD_[A-Z]*) /\* expect: [^*]*' "$src" | while IFS= read -r line; do
    case_name=$(echo "$line" | sed 's/defined(\(BAD_[A-Z]*\)).*/\1/')
    msg=$(echo "$line" | sed 's/.*expect: //; s/ *$//')
    if out=$($cc -fsyntax-only -I. -D"$case_name" "$file" 2>&1); then
      echo "FAIL ($lang): $case_name compiled"; exit 1
    elif ! echo "$out" | grep -qF "$msg"; then
      echo "FAIL ($lang): $case_name failed without \"$msg\":"; echo "$out" | grep -m3 error; exit 1
    else
      echo "ok ($lang): $case_name: $(echo "$out" | grep -m1 -o 'static assertion failed.*')"
    fi
  done || fail=1
done
exit $fail
