#!/bin/sh
# SPDX-License-Identifier: MIT
# t_python_fork: a Python program that forks (multiprocessing fork/spawn/forkserver) and runs
# 8 threads prints the same results under the shim, and the parent's summary shows its threads.
# (Pool workers are terminated by signal and print no summary; helper processes such as the
# resource tracker may outlive the parent, so their summaries are not waited for.)
# Skips (77) when no interpreter has numpy.
# usage: t_python_fork.sh LIBNDMEM FORKING_PY FIND_PYTHON
set -u
lib=$1 script=$2
py=$("$3") || exit 77
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
"$py" "$script" >"$tmp/plain" 2>&1 || { echo "plain run failed" >&2; cat "$tmp/plain" >&2; exit 1; }
LD_PRELOAD=$lib "$py" "$script" >"$tmp/shim" 2>"$tmp/err" || { echo "run under the shim failed" >&2; cat "$tmp/err" >&2; exit 1; }
fail=0
cmp -s "$tmp/plain" "$tmp/shim" || { echo "results differ under the shim" >&2; diff "$tmp/plain" "$tmp/shim" >&2; fail=1; }
threads=$(sed -n 's/^ndmem\[[0-9]*\]: calls: .*; threads \([0-9]*\);.*/\1/p' "$tmp/err" | sort -n | tail -n 1)
[ -n "$threads" ] && [ "$threads" -ge 9 ] || { echo "parent summary missing or shows < 9 threads" >&2; cat "$tmp/err" >&2; fail=1; }
exit $fail
