#!/bin/sh
# SPDX-License-Identifier: MIT
# t_diff_growth: `ndmemreport diff --fail-on-growth SIZE`. SIZE is written as every size setting
# takes it (nd_parse_size: bytes, k/KB/KiB, m, g, t, binary, case-insensitive, a fraction
# rounded down to a byte): diff-b.trace's site that grew by 4096 B against diff-a.trace's fails
# a limit of 4095 B or 3.999k (4094 B) and passes 4096 B written any way; a value that is no
# size is refused with exit status 2, nothing on stdout and one stderr line naming it. What is
# compared is what each site held at the end of its run, a teardown's frees not counted
# (diff-held-*.trace, gen_trace.c's diff_held_trace): B's site that held 304 MiB before teardown
# (0 live at the end in both runs) fails 303.99m and passes 304m and 0.296875g; with A and B
# swapped only the site held 40 MiB before teardown in (the new) B grew; the stderr line names
# the site that grew most with --frames of its frames.
# usage: t_diff_growth.sh NDMEMREPORT DIFF_A DIFF_B DIFF_HELD_A DIFF_HELD_B
set -u
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
report=$(abs "$1") a=$(abs "$2") b=$(abs "$3") ha=$(abs "$4") hb=$(abs "$5")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

# status WANT SIZE [TRACE_A TRACE_B]: diff's exit status with --fail-on-growth SIZE
status() {
  want=$1 size=$2
  "$report" diff --fail-on-growth "$size" "${3:-$a}" "${4:-$b}" >out 2>err
  rc=$?
  [ $rc = "$want" ] || no "--fail-on-growth '$size': exit status $rc, want $want: $(cat err)"
  [ -s out ] || no "--fail-on-growth '$size': no report"
}
for s in 4095 3.999k 3.999K 0.0039m; do status 1 "$s"; done # 4095, 4094, 4094, 4089 B
for s in 4096 4k 4K 4KB 4kb 4KiB 4kib 0.00390625m 0.00000381469726562500g 1m 1.5g 1t; do
  status 0 "$s"
done
"$report" diff --fail-on-growth=4k "$a" "$b" >/dev/null 2>&1 || no "--fail-on-growth=4k: $?"
status 1 303.99m "$ha" "$hb" # 318756618 B
for s in 304m 304MiB 0.296875g 318767104 1g; do status 0 "$s" "$ha" "$hb"; done
status 1 39.99m "$hb" "$ha" # swapped: only the 40 MiB held before teardown grew
status 0 40m "$hb" "$ha"
"$report" diff --fail-on-growth 1 --frames 1 "$ha" "$hb" >/dev/null 2>err
[ $? = 1 ] || no "--frames 1: exit status $?"
grep -qxF "ndmemreport diff: --fail-on-growth 1 B: heap site 85887d8f2df9b600 held 304.00 MiB (318767104 B) more in B than in A at the end of its run: 0 B in A, 304.00 MiB in B (before teardown): /nonexistent/lib/libfoo.so+0x2000 <- ...; 2 more sites grew by more" err ||
  no "--frames 1: the stderr line: $(cat err)"

# refused: exit 2, nothing on stdout, exactly this line on stderr
for s in 10x 1e3 -1 50% "8 G" 1.5.5 k "" 16E 99999999999999999999; do
  "$report" diff --fail-on-growth "$s" "$a" "$b" >out 2>err
  rc=$?
  [ $rc = 2 ] || no "--fail-on-growth '$s': exit status $rc, want 2"
  [ ! -s out ] || no "--fail-on-growth '$s': wrote a report"
  printf "ndmemreport diff: --fail-on-growth takes a size (bytes, or 512k, 10m, 10MiB, 1.5g: %s\n" \
    "k = 1024), not '$s'" >want
  diff -u want err || no "--fail-on-growth '$s': stderr differs"
done
"$report" diff "$a" "$b" --fail-on-growth >out 2>err
[ $? = 2 ] && grep -qxF "ndmemreport diff: --fail-on-growth takes a size (bytes, or 512k, 10m, 10MiB, 1.5g: k = 1024), not ''" err ||
  no "--fail-on-growth without a value: $(cat err)"
"$report" diff --help >out 2>&1 || no "diff --help: $?"
grep -q -- '--fail-on-growth SIZE' out || no "diff --help does not say --fail-on-growth SIZE"
exit $fail
