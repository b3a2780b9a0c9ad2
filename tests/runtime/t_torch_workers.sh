#!/bin/sh
# SPDX-License-Identifier: MIT
# t_torch_workers: PyTorch DataLoader workers (fork children ending with os._exit) each leave a
# trace that says _exit(0), the loss is bit for bit the same, and only the parent prints a
# summary. Skips (77) without an interpreter that imports torch (Debian: python3-torch).
# usage: t_torch_workers.sh LIBNDMEM SCRIPT NDMEMREPORT
set -u
lib=$1 script=$2 rep=$3
py=""
for cand in ${NDMEM_TEST_PYTHON:-} /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
  [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import torch' >/dev/null 2>&1 && { py=$cand; break; }
done
[ -n "$py" ] || { echo "no Python interpreter imports torch (Debian: apt-get install python3-torch); skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
"$py" "$script" >"$tmp/plain" 2>&1 || { echo "plain run failed" >&2; cat "$tmp/plain" >&2; exit 1; }
NDMEM_OUTPUT="$tmp/t.%p.trace" LD_PRELOAD=$lib "$py" "$script" >"$tmp/shim" 2>"$tmp/err" ||
  { echo "run under the shim failed" >&2; cat "$tmp/err" >&2; exit 1; }
fail=0
cmp -s "$tmp/plain" "$tmp/shim" || { echo "the loss differs under the shim" >&2; diff "$tmp/plain" "$tmp/shim" >&2; fail=1; }
n=$(grep -c '^ndmem\[[0-9]*\]: heap:' "$tmp/err")
[ "$n" -eq 1 ] || { echo "$n summaries, want 1 (the parent's)" >&2; cat "$tmp/err" >&2; fail=1; }
workers=0
for t in "$tmp"/t.*.trace; do
  "$rep" --brief "$t" >"$t.txt" 2>&1
  grep -q 'exit        _exit(0)' "$t.txt" && workers=$((workers + 1))
done
[ "$workers" -eq 4 ] || { echo "$workers worker traces say _exit(0), want 4 (2 workers x 2 epochs)" >&2; fail=1; }
exit $fail
