#!/bin/sh
# SPDX-License-Identifier: MIT
# t_summary: the exit summary carries exact numbers, bad NDMEM_* values cost one documented line
# and the program runs on unchanged, the summary survives a program that closes stderr at exit,
# and the `ndmem run` wrapper passes options and exit status through.
# usage: t_summary.sh LIBNDMEM T_SUMMARY_PROG NDMEM_TOOL
set -u
lib=$1 prog=$2 tool=$3
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
page=$(getconf PAGESIZE)
no() { echo "FAIL: $*" >&2; fail=1; }

LD_PRELOAD=$lib "$prog" >"$tmp/out" 2>"$tmp/err" || no "program failed under the shim"
[ "$(cat "$tmp/out")" = "program output" ] || no "stdout changed: $(cat "$tmp/out")"
want="mmap: peak $((8 * page / 1024)).00 KiB ($((8 * page)) B); live at exit $((3 * page / 1024)).00 KiB ($((3 * page)) B) in 1 mappings; 2 allocated, 1 released"
grep -qF "$want" "$tmp/err" || { no "mmap summary line"; echo "want: ...$want" >&2; cat "$tmp/err" >&2; }
grep -q '^ndmem\[[0-9]*\]: calls: .*mmap 2 munmap 1;' "$tmp/err" || no "calls line"
grep -q '^ndmem\[[0-9]*\]: heap: peak ' "$tmp/err" || no "heap line"
grep -q 'fallbacks: none$' "$tmp/err" || no "fallbacks line"

NDMEM_SUMMARY=banana LD_PRELOAD=$lib "$prog" >"$tmp/out" 2>"$tmp/err" || no "bad value stopped the program"
[ "$(head -n 1 "$tmp/err")" = "ndmem: NDMEM_SUMMARY='banana' is not an integer in 0..2; using 1" ] ||
  no "bad-value line: $(head -n 1 "$tmp/err")"
[ "$(cat "$tmp/out")" = "program output" ] || no "stdout changed with a bad value"
grep -qF "$want" "$tmp/err" || no "summary missing after a bad value (default is 1)"

NDMEM_SUMMARY=0 LD_PRELOAD=$lib "$prog" >/dev/null 2>"$tmp/err"
[ ! -s "$tmp/err" ] || no "NDMEM_SUMMARY=0 still printed: $(cat "$tmp/err")"
NDMEM_ENABLED=0 LD_PRELOAD=$lib "$prog" >"$tmp/out" 2>"$tmp/err"
[ ! -s "$tmp/err" ] && [ "$(cat "$tmp/out")" = "program output" ] || no "NDMEM_ENABLED=0"

# gnulib programs close stderr at exit; the summary goes to ndmem's own copy of it
LD_PRELOAD=$lib ls / >/dev/null 2>"$tmp/err"
grep -q '^ndmem\[[0-9]*\]: heap: peak' "$tmp/err" || no "summary lost when the program closes stderr"

"$tool" run --no-summary -- "$prog" >/dev/null 2>"$tmp/err"
! grep -q '^ndmem\[' "$tmp/err" || no "ndmem run --no-summary"
"$tool" run -- "$prog" >/dev/null 2>"$tmp/err"
grep -qF "$want" "$tmp/err" || no "ndmem run summary"
# after the program, ndmem run prints ndmemreport's brief report of its trace
grep -q '^ndmem: trace ' "$tmp/err" && grep -q '^== summary' "$tmp/err" &&
  grep -q 'exit        normal (END record)' "$tmp/err" || { no "ndmem run report"; cat "$tmp/err" >&2; }
"$tool" run --no-report -- "$prog" >/dev/null 2>"$tmp/err"
! grep -q '^== summary' "$tmp/err" || no "ndmem run --no-report still reported"
NDMEM_OUTPUT="$tmp/run.%p.trace" "$tool" run -- sh -c 'exit 5' 2>/dev/null; [ $? -eq 5 ] || no "exit status with a report"
"$tool" run -- sh -c 'exit 3'; [ $? -eq 3 ] || no "exit status not passed through"
"$tool" run 2>"$tmp/err"; [ $? -eq 2 ] && grep -q 'no command given' "$tmp/err" || no "missing command"
"$tool" run --bogus -- true 2>"$tmp/err"; [ $? -eq 2 ] || no "unknown option accepted"
"$tool" --help | grep -q 'ndmem run \[OPTIONS\] -- CMD' || no "--help"
exit $fail
