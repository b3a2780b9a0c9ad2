#!/bin/sh
# SPDX-License-Identifier: MIT
# t_numpy_loss: an unmodified numpy/OpenBLAS training loop prints the same losses, bit for bit,
# with and without the shim (also with ndmem chained in front of jemalloc), and the shim really
# was loaded (its summary shows the heap the loop used); with the steps marked as workspace cycles
# the losses are the same and the steps are served from the workspace. Skips (77) when no
# interpreter has numpy.
# usage: t_numpy_loss.sh LIBNDMEM TRAIN_PY FIND_PYTHON [JEMALLOC]
set -u
lib=$1 train=$2
py=$("$3") || exit 77
je=${4:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
args="--steps 60 --log-every 10"
export OPENBLAS_NUM_THREADS=2
"$py" "$train" $args >"$tmp/plain" 2>/dev/null || { echo "plain run failed" >&2; exit 1; }
LD_PRELOAD=$lib "$py" "$train" $args >"$tmp/shim" 2>"$tmp/err" || { echo "run under the shim failed" >&2; cat "$tmp/err" >&2; exit 1; }
fail=0
if ! cmp -s "$tmp/plain" "$tmp/shim"; then
  echo "losses differ under the shim:" >&2; diff "$tmp/plain" "$tmp/shim" >&2; fail=1
fi
grep -q '^final loss ' "$tmp/shim" || { echo "no final loss line" >&2; fail=1; }
# the loop's tensors (batch 256 x hidden 1024 doubles = 2 MiB each) must show in the heap peak
peak=$(sed -n 's/^ndmem\[[0-9]*\]: heap: peak .* (\([0-9]*\) B); live.*/\1/p' "$tmp/err")
[ -n "$peak" ] && [ "$peak" -gt $((8 * 1024 * 1024)) ] || { echo "heap peak '$peak' too small: shim not accounting?" >&2; cat "$tmp/err" >&2; fail=1; }
# workspaces: the same loop with each step marked as a cycle (and, above, found automatically)
LD_PRELOAD=$lib "$py" "$train" $args --marks --ws-stats >"$tmp/marks" 2>"$tmp/merr" || { echo "marked run failed" >&2; cat "$tmp/merr" >&2; fail=1; }
cmp -s "$tmp/plain" "$tmp/marks" || { echo "losses differ with workspace marks" >&2; diff "$tmp/plain" "$tmp/marks" >&2; fail=1; }
hits=$(sed -n 's/^workspace \[cycle\]: [0-9]* cycles, \([0-9]*\) hits.*/\1/p' "$tmp/merr")
[ -n "$hits" ] && [ "$hits" -gt 0 ] || { echo "the marked loop was not served from a workspace" >&2; cat "$tmp/merr" >&2; fail=1; }
if [ -n "$je" ] && [ -f "$je" ]; then
  LD_PRELOAD="$lib $je" "$py" "$train" $args >"$tmp/je" 2>/dev/null || { echo "ndmem+jemalloc run failed" >&2; fail=1; }
  cmp -s "$tmp/plain" "$tmp/je" || { echo "losses differ with ndmem+jemalloc" >&2; fail=1; }
fi
echo "$(tail -n 1 "$tmp/shim") with $py"
exit $fail
