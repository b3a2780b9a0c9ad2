#!/bin/sh
# SPDX-License-Identifier: MIT
# t_torch_bindings: in a PyTorch process that raises C++ exceptions (torch_raise.py), every
# binding the loader makes is the one it makes without ndmem, the _Unwind_* ones among them
# (bindings.py; ndmem's own aside), and the exceptions arrive as they do without it, at default
# and at every-block tracking. Skips (77) without an interpreter that imports torch.
# usage: t_torch_bindings.sh LIBNDMEM BINDINGS_PY SCRIPT
set -u
lib=$1 bindings=$2 script=$3
py=$(sh "$(dirname "$0")/../find-python.sh" torch) || { echo "skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
fail=0
"$py" "$bindings" "$lib" "$py" "$script" || fail=1
NDMEM_TRACK_MIN=0 NDMEM_OUTPUT="$tmp/e.%p.trace" LD_PRELOAD=$lib "$py" "$script" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$tmp/out")" = "caught 100 of 100" ]; then
  echo "ok   every block tracked: caught 100 of 100"
else
  echo "FAIL every block tracked: exit $rc, $(cat "$tmp/out")" >&2
  cat "$tmp/err" >&2
  fail=1
fi
exit $fail
