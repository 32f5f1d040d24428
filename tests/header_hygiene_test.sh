#!/usr/bin/env bash
# Every public header compiles alone: as C11 (gcc -std=c11 -Wall -Wextra
# -pedantic -Werror) and as C++17 (g++ with the same warnings). Headers are
# passed as arguments (Bazel data).
set -u
fail=0
count=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in "$@"; do
  case "$h" in
    *_body.h) continue ;; # body files are included by an instance, after its #defines
    *.h) ;;
    *) continue ;;
  esac
  rel=${h#./}
  printf '#include "%s"\n' "$rel" > "$tmp/one.c"
  cp "$tmp/one.c" "$tmp/one.cc"
  if ! out=$(gcc -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I. "$tmp/one.c" 2>&1); then
    echo "FAIL (C11): $rel"; echo "$out" | head -20; fail=1
  fi
  if ! out=$(g++ -std=c++17 -Wall -Wextra -pedantic -Werror -fsyntax-only -I. "$tmp/one.cc" 2>&1); then
    echo "FAIL (C++17): $rel"; echo "$out" | head -20; fail=1
  fi
  count=$((count + 1))
done
echo "checked $count headers"
[ "$count" -gt 10 ] || { echo "FAIL: expected the ckt headers as arguments"; exit 1; }
exit $fail
