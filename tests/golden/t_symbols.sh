#!/bin/sh
# SPDX-License-Identifier: MIT
# t_symbols: ndmemreport symbolizes real return addresses offline. gen_trace `self` records a
# stack of two of its own frames with its real module map: self_caller, called from self, which
# is always inlined into main. The report must name the functions with the file:line of each
# call, which this script reads from the marker comments in gen_trace.c, and show the inlining.
# --no-symbols must print the frames as path+offset.
# usage: t_symbols.sh NDMEMREPORT GEN_TRACE GEN_TRACE_C
set -u
report=$1 gen=$2 src=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
"$gen" self "$tmp/self.trace" || { echo "FAIL: gen_trace self" >&2; exit 1; }
"$report" "$tmp/self.trace" >"$tmp/out" 2>"$tmp/err" || no "ndmemreport exit $?"
[ ! -s "$tmp/err" ] || no "stderr: $(cat "$tmp/err")"
call=$(grep -n '// SELF_CALL$' "$src" | cut -d: -f1)
main=$(grep -n '// SELF_MAIN$' "$src" | cut -d: -f1)
inl=$(grep -n '// SELF_INLINED$' "$src" | cut -d: -f1)
grep -Eq "^      #0  self_caller \(.*gen_trace\.c:$call\)$" "$tmp/out" ||
  no "frame #0 is not self_caller at gen_trace.c:$call"
grep -A1 -E "^      #1  self \(.*gen_trace\.c:$main\)$" "$tmp/out" |
  grep -Eq "^          inlined into main \(.*gen_trace\.c:$inl\)$" ||
  no "frame #1 is not self at gen_trace.c:$main inlined into main at gen_trace.c:$inl"
"$report" --format json "$tmp/self.trace" >"$tmp/json" || no "json exit $?"
f='[^"]*gen_trace\.c'
grep -q "\"function\": \"self_caller\", \"file\": \"$f\", \"line\": $call, \"inlined_into\": \[\]}" \
  "$tmp/json" || no "JSON frame of self_caller"
main_loc="{\"function\": \"main\", \"file\": \"$f\", \"line\": $inl}"
grep -q "\"function\": \"self\", \"file\": \"$f\", \"line\": $main, \"inlined_into\": \[$main_loc\]}" \
  "$tmp/json" || no "JSON frame of self inlined into main"
"$report" --no-symbols "$tmp/self.trace" >"$tmp/raw" || no "--no-symbols exit $?"
grep -Eq "^      #0  /.*/gen_trace\+0x[0-9a-f]+$" "$tmp/raw" || no "--no-symbols frame #0"
[ $fail = 0 ] || cat "$tmp/out" >&2
exit $fail
