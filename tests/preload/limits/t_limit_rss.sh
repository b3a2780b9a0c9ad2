#!/bin/sh
# SPDX-License-Identifier: MIT
# t_limit_rss: a limit never costs a cyclic job its workspace, nor raises its resident memory
# (t_limit_rss.c: 52 MiB of temporaries a cycle, whose planned arena is 67.60 MiB with ND4J's
# overallocation). Under NDMEM_MAX_BYTES=60m the arena as planned would exceed the limit, but
# the cycle fits: the plan shrinks to 52.00 MiB, every allocation still served from it (said in
# one line), the results the same and the resident peak no higher than without the limit. Under
# 40m even the cycle does not fit: the job is refused an allocation (exit 3), its resident peak
# no higher either. The job's allocations are the program's own, named refusable
# (NDMEM_LIMIT_REFUSE=%exe): they meet the limit as a runtime's would.
# usage: t_limit_rss.sh LIBNDMEM T_LIMIT_RSS NDMEMREPORT
set -u
lib=$1 prog=$2 rep=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
run() { # NAME MAX_BYTES: the run's stdout in $tmp/NAME.out, stderr in .err, its trace NAME.PID
  NDMEM_SUMMARY=0 NDMEM_LIMIT_REFUSE=%exe NDMEM_MAX_BYTES=$2 NDMEM_OUTPUT="$tmp/$1.%p.trace" LD_PRELOAD=$lib "$prog" 40 \
    >"$tmp/$1.out" 2>"$tmp/$1.err"
}
peak() { sed -n 's/^peak_rss_kib //p' "$tmp/$1.out"; }
run none 0 || no "without a limit: exit status $?"
run fit 60m || no "under 60m: exit status $?"
run low 40m
[ $? = 3 ] || no "under 40m: exit status $?, want 3 (refused)"
grep -q '^checksum ' "$tmp/none.out" && [ "$(grep '^checksum' "$tmp/fit.out")" = "$(grep '^checksum' "$tmp/none.out")" ] ||
  no "under 60m: the checksum differs"
want="ndmem: workspace [auto]: an arena of 67.60 MiB would exceed maxBytes (NDMEM_MAX_BYTES); planned in one of 52.00 MiB, 0 of its 4 allocations a cycle from the heap, which ndmem trims at the cycle's frees"
grep -qxF "$want" "$tmp/fit.err" || { no "under 60m: not the line '$want'"; cat "$tmp/fit.err" >&2; }
hits=$("$rep" --format json --workspaces "$tmp"/fit.*.trace | sed -n 's/.*"hits": \([0-9]*\).*/\1/p' | head -1)
[ "${hits:-0}" -ge 100 ] || no "under 60m: the workspace served $hits allocations, want >= 100 (4 a cycle)"
none=$(peak none)
for r in fit low; do
  p=$(peak $r)
  echo "resident peak: without a limit ${none} KiB, $r $p KiB"
  # the same job on a shared machine: 2 % for the noise of page accounting
  [ -n "$p" ] && [ -n "$none" ] && [ "$p" -le $((none + none / 50)) ] ||
    no "$r: resident peak $p KiB above the ${none} KiB without a limit"
done
exit $fail
