#!/bin/sh
# SPDX-License-Identifier: MIT
# t_ws_outlive: a block that outlives a cycle ndmem detected by itself is ndmem's misprediction,
# counted as "outlived" and never reported as a leaked workspace pointer; one that outlives a
# cycle the program declared (marks) is reported, exactly as before. t_ws_outlive.c runs 60
# iterations of 6 temporaries (all freed in the iteration) and keeps one 1 MiB block every 5th
# iteration; the numbers below are those of that deterministic allocation stream:
#   extra        no marks; the kept block is an extra allocation, which shifts the detected
#                cycles: 14 temporaries are live at a detected boundary (before this test, 14
#                "leaked workspace pointer" lines on stderr and 14 WS_ESCAPE records)
#   extra marks  the extra block is not in the learned cycle, so it is a heap block: no escape
#   keep         no marks; the 1 MiB block is allocated every iteration and kept every 5th: the
#                first kept one is served from the arena and outlives its cycle (later ones come
#                from the heap: its plan position is no longer routed)
#   keep marks   the same under marks: exactly one leaked workspace pointer, born in cycle 5
# Each run's output equals the run with NDMEM_WORKSPACES=0 and the run without the shim. Guard
# mode (NDMEM_WS_GUARD=1): blocks that outlived an automatic cycle stay usable (no fault, no
# diagnostic), while a stale pointer into a dead automatic generation faults and is named.
# usage: t_ws_outlive.sh LIBNDMEM T_WS_OUTLIVE NDMEMREPORT PYTHON
set -u
lib=$1 prog=$2 rep=$3 py=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

# run NAME ENV... -- ARGS...: the program under the shim; trace $tmp/NAME.trace, report
# $tmp/NAME.json, stderr $tmp/NAME.err, stdout $tmp/NAME.out
run() {
  name=$1
  shift
  envs=
  while [ "$1" != -- ]; do envs="$envs $1"; shift; done
  shift
  env NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/$name.trace" LD_PRELOAD="$lib" $envs "$prog" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
}

# want NAME WORKSPACE ESCAPES OUTLIVED RECORDS: the trace's workspace and its leaked workspace
# pointers (ndmemreport's JSON), and as many stderr lines about leaked workspace pointers
want() {
  "$rep" --format json "$tmp/$1.trace" >"$tmp/$1.json" 2>"$tmp/$1.reperr" ||
    { no "$1: ndmemreport failed: $(cat "$tmp/$1.reperr")"; return; }
  got=$("$py" - "$tmp/$1.json" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
ws = [w for w in doc["workspaces"]["list"] if w["name"] == sys.argv[2]]
lw = doc["leaked_workspace_pointers"]
print(len(ws), ws[0]["escapes"] if ws else "-", ws[0].get("outlived", "absent") if ws else "-",
      lw["records"], len(lw["groups"]))
EOF
)
  groups=$(( $5 > 0 ))
  [ "$got" = "1 $3 $4 $5 $groups" ] ||
    no "$1: [$2] (count escapes outlived records groups) = '$got', want '1 $3 $4 $5 $groups'"
  n=$(grep -c 'leaked workspace pointer' "$tmp/$1.err")
  [ "$n" -eq "$5" ] || { no "$1: $n 'leaked workspace pointer' lines on stderr, want $5"; cat "$tmp/$1.err" >&2; }
  ! grep -q 'uses leaked workspace pointer' "$tmp/$1.err" || no "$1: a guard-mode diagnostic"
}

# same NAME ARGS...: its stdout equals the runs without workspaces and without the shim
same() {
  name=$1
  shift
  env NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/off.trace" NDMEM_WORKSPACES=0 LD_PRELOAD="$lib" \
    "$prog" "$@" >"$tmp/off.out" 2>/dev/null || no "$name: run with NDMEM_WORKSPACES=0 failed"
  rm -f "$tmp/off.trace"
  cmp -s "$tmp/$name.out" "$tmp/off.out" ||
    { no "$name: output differs from NDMEM_WORKSPACES=0"; diff "$tmp/off.out" "$tmp/$name.out" >&2; }
  case "$*" in
  *marks) ;; # marks need the shim
  *)
    "$prog" "$@" >"$tmp/plain.out" 2>/dev/null || no "$name: run without the shim failed"
    cmp -s "$tmp/$name.out" "$tmp/plain.out" || no "$name: output differs from the run without the shim"
  esac
  grep -q '^iterations 60, kept 12, checksum [0-9a-f]*, errors 0$' "$tmp/$name.out" ||
    no "$name: output '$(cat "$tmp/$name.out")'"
}

# stat NAME WORKSPACE FIELD VALUE: the program's own ndmem_ws_stats line
stat() {
  v=$(sed -n "s/^ws $2 .* $3 \([0-9]*\)\( .*\)\{0,1\}$/\1/p" "$tmp/$1.err")
  [ "$v" = "$4" ] || no "$1: ndmem_ws_stats [$2] $3 = '$v', want $4"
}

run extra -- extra
[ $rc -eq 0 ] || no "extra: exit status $rc"
same extra extra
want extra auto 0 14 0
stat extra auto escapes 0
"$rep" --workspaces "$tmp/extra.trace" >"$tmp/extra.txt" 2>&1 || no "extra: text report failed"
grep -q '^  workspaces  1 (hits [0-9]*, spills [0-9]*, escapes 0, outlived 14)$' "$tmp/extra.txt" ||
  no "extra: summary line"
grep -q '^      outlived 14 (kept valid, no longer routed)$' "$tmp/extra.txt" || no "extra: outlived line"
grep -q "^      ndmem's misprediction of the automatic cycle, not the program's error$" "$tmp/extra.txt" ||
  no "extra: outlived explanation"
grep -q '^== leaked workspace pointers: none$' "$tmp/extra.txt" || no "extra: leaked workspace pointers listed"
long=$(grep -n 'outlived\|misprediction' "$tmp/extra.txt" | awk -F: 'length($0) - length($1) - 1 > 80')
[ -z "$long" ] || no "extra: lines over 80 columns: $long"

run extra_marks -- extra marks
[ $rc -eq 0 ] || no "extra marks: exit status $rc"
same extra_marks extra marks
want extra_marks cycle 0 0 0

run keep -- keep
[ $rc -eq 0 ] || no "keep: exit status $rc"
same keep keep
want keep auto 0 1 0
stat keep auto escapes 0
stat keep auto pinned 1048576   # while the block that outlived its cycle is live
stat keep auto pinned_end 0

run keep_marks -- keep marks
[ $rc -eq 0 ] || no "keep marks: exit status $rc"
same keep_marks keep marks
want keep_marks cycle 1 0 1
stat keep_marks cycle escapes 1
stat keep_marks cycle pinned 1048576
n=$(grep -c '^ndmem: leaked workspace pointer from workspace \[cycle\]: a block of 1048576 B allocated in cycle 5 is still live in cycle 6; it stays valid and is no longer routed' "$tmp/keep_marks.err")
[ "$n" -eq 1 ] || no "keep marks: want the one escape report, got $n"
"$rep" --workspaces "$tmp/keep_marks.trace" >"$tmp/keep_marks.txt" 2>&1 || no "keep marks: text report failed"
grep -A1 '^== leaked workspace pointers: 1 block, 1.00 MiB (1048576 B),$' "$tmp/keep_marks.txt" |
  grep -q '^   from 1 (workspace, stack) pair$' || { no "keep marks: leaked workspace pointers section"; cat "$tmp/keep_marks.txt" >&2; }
! grep -q 'outlived' "$tmp/keep_marks.txt" || no "keep marks: outlived blocks under marks"

# guard mode: the blocks that outlived automatic cycles are read after their cycle, no fault
for m in extra keep; do
  run guard_$m NDMEM_WS_GUARD=1 -- $m
  [ $rc -eq 0 ] || { no "guard $m: exit status $rc"; cat "$tmp/guard_$m.err" >&2; }
  cmp -s "$tmp/$m.out" "$tmp/guard_$m.out" || no "guard $m: output differs"
done
want guard_extra auto 0 14 0
want guard_keep auto 0 1 0

# ... and a stale pointer into a dead automatic generation faults and is named
run stale NDMEM_WS_GUARD=1 -- stale
[ $rc -eq 139 ] || { no "stale: want death by SIGSEGV (139), got $rc"; cat "$tmp/stale.err" >&2; }
msg=$(grep '^ndmem: uses leaked workspace pointer from workspace \[auto\]: address 0x[0-9a-f]* is in a block of 65536 B (plan entry 0) allocated in cycle [0-9]*; the workspace is now in cycle [0-9]* (NDMEM_WS_GUARD=1 made that generation inaccessible)$' "$tmp/stale.err")
born=$(echo "$msg" | sed -n 's/.*allocated in cycle \([0-9]*\);.*/\1/p')
now=$(echo "$msg" | sed -n 's/.*is now in cycle \([0-9]*\) .*/\1/p')
[ -n "$born" ] && [ "$now" = "$((born + 1))" ] || { no "stale: guard message"; cat "$tmp/stale.err" >&2; }
! grep -q 'did not fault' "$tmp/stale.err" || no "stale: the read did not fault"
! grep -q '^ndmem: leaked workspace pointer' "$tmp/stale.err" || no "stale: an escape was reported"
exit $fail
