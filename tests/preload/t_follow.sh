#!/bin/sh
# SPDX-License-Identifier: MIT
# t_follow: `ndmemreport --follow` on the trace of a program that runs under the shim meanwhile
# (t_follow.c: its live heap grows by 2 MiB every 0.3 s; flushes every 50 ms). Stdout is not a
# terminal, so each refresh is headed `== refresh N at HH:MM:SS`: at least two refreshes while
# the program runs, live bytes at the last flush growing between them, a final refresh once the
# trace is complete, and exit status 0 soon after the program ended.
# usage: t_follow.sh LIBNDMEM T_FOLLOW NDMEMREPORT
set -u
lib=$1 prog=$2 rep=$3
tmp=$(mktemp -d) || exit 1
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
trap 'kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
NDMEM_SUMMARY=0 NDMEM_FLUSH_MS=50 NDMEM_OUTPUT="$tmp/t.trace" LD_PRELOAD=$lib "$prog" &
pid=$!
timeout 30 "$rep" --follow --follow-interval 100 "$tmp/t.trace" >"$tmp/out" 2>"$tmp/err"
rc=$?
wait $pid || no "the program failed"
[ "$rc" = 0 ] || no "exit status $rc, want 0 (124: still following after 30 s)"
[ -s "$tmp/err" ] && { no "stderr not empty:"; cat "$tmp/err" >&2; }
running=$(grep -c '^== refresh [0-9]* at [0-9][0-9]:[0-9][0-9]:[0-9][0-9]$' "$tmp/out")
[ "$running" -ge 2 ] || no "$running refreshes while the program ran, want 2 or more"
grep -q '^== refresh [0-9]* at .* (final: the trace is complete)$' "$tmp/out" ||
  no "no final refresh"
[ "$(grep -c '^== refresh' "$tmp/out")" = $((running + 1)) ] || no "refreshes after the final one"
# The heap's live bytes at the last flush, one value per refresh that had a flush.
sed -n 's/^ *live at last flush [^(]*(\([0-9]*\) B) in.*/\1/p' "$tmp/out" >"$tmp/live"
first=$(head -n 1 "$tmp/live") last=$(tail -n 1 "$tmp/live")
[ -n "$first" ] && [ "$last" -gt "$first" ] ||
  no "live bytes did not grow between refreshes: $(tr '\n' ' ' <"$tmp/live")"
sort -n -c "$tmp/live" 2>/dev/null || no "live bytes fell while the program only allocated"
[ $fail = 0 ] || { echo "--- output" >&2; cat "$tmp/out" >&2; }
exit $fail
