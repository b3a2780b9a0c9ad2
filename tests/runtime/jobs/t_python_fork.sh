#!/bin/sh
# SPDX-License-Identifier: MIT
# t_python_fork: a Python program that forks (multiprocessing fork/spawn/forkserver) and runs
# 8 threads prints the same results under the shim; only the parent prints a summary (workers,
# fork or exec'd, are children: their stderr is left alone), and it shows its threads; a fork
# worker that ends with os._exit and pool workers ended by SIGTERM leave readable traces that say
# so. Skips (77) when no interpreter has numpy.
# usage: t_python_fork.sh LIBNDMEM FORKING_PY FIND_PYTHON NDMEMREPORT
set -u
lib=$1 script=$2 rep=$4
py=$("$3") || exit 77
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
"$py" "$script" >"$tmp/plain" 2>&1 || { echo "plain run failed" >&2; cat "$tmp/plain" >&2; exit 1; }
mkdir "$tmp/tr"
NDMEM_OUTPUT="$tmp/tr/ndmem.%p.trace" LD_PRELOAD=$lib "$py" "$script" >"$tmp/shim" 2>"$tmp/err" || { echo "run under the shim failed" >&2; cat "$tmp/err" >&2; exit 1; }
fail=0
cmp -s "$tmp/plain" "$tmp/shim" || { echo "results differ under the shim" >&2; diff "$tmp/plain" "$tmp/shim" >&2; fail=1; }
threads=$(sed -n 's/^ndmem\[[0-9]*\]: calls: .*; threads \([0-9]*\);.*/\1/p' "$tmp/err" | sort -n | tail -n 1)
[ -n "$threads" ] && [ "$threads" -ge 9 ] || { echo "parent summary missing or shows < 9 threads" >&2; cat "$tmp/err" >&2; fail=1; }
n=$(grep -c '^ndmem\[[0-9]*\]: heap:' "$tmp/err")
[ "$n" -eq 1 ] || { echo "$n summaries on stderr, want 1 (the parent's)" >&2; cat "$tmp/err" >&2; fail=1; }
sleep 1 # helpers (resource tracker, forkserver) end after the parent
underscore=0 term=0 traces=0
for t in "$tmp/tr"/*.trace; do
  traces=$((traces + 1))
  "$rep" --brief "$t" >"$t.txt" 2>&1
  [ $? -le 1 ] || { echo "ndmemreport failed on $t" >&2; cat "$t.txt" >&2; fail=1; }
  grep -q 'exit        _exit(0)' "$t.txt" && underscore=$((underscore + 1))
  grep -q 'ended by signal 15 (SIGTERM)' "$t.txt" && term=$((term + 1))
done
[ "$underscore" -ge 1 ] || { echo "no trace of a worker ended by os._exit ($traces traces)" >&2; fail=1; }
echo "$traces traces: $underscore ended by _exit(0), $term by SIGTERM" >&2
exit $fail
