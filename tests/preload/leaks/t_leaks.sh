#!/bin/sh
# SPDX-License-Identifier: MIT
# t_leaks: a program with leaks at known lines runs under the shim; ndmemreport gives the exact
# leaked bytes and counts at the exact file:line, lists none for the freed temporaries. Its heap
# blocks are kept in a static array to exit: still reachable; the mapping is kept only in main's
# local, dead once main returns: definitely lost, so --fail-on-leak fails (1) naming only it.
# usage: t_leaks.sh LIBNDMEM T_LEAKS NDMEMREPORT CHECK_REPORT_PY SOURCE PYTHON
set -u
lib=$1 prog=$2 rep=$3 check=$4 src=$5 py=$6
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/t.trace" LD_PRELOAD=$lib "$prog" || { echo "program failed" >&2; exit 1; }
"$rep" --format json --top 100 "$tmp/t.trace" >"$tmp/r.json" || { echo "ndmemreport failed" >&2; exit 1; }
"$py" "$check" "$tmp/r.json" "$src" leaks "$(getconf PAGESIZE)" || exit 1
"$rep" "$tmp/t.trace" >"$tmp/r.txt" || exit 1
grep -q "t_leaks.c:19)" "$tmp/r.txt" || { echo "text report lacks t_leaks.c:19" >&2; exit 1; }
"$rep" --fail-on-leak "$tmp/t.trace" >"$tmp/v.txt"; rc=$?
[ $rc -eq 1 ] || { echo "--fail-on-leak exited $rc, want 1" >&2; exit 1; }
grep -q "^  leaks       definitely lost 12.00 KiB (12288 B) in 1 block (1 stack)$" "$tmp/v.txt" &&
  grep -q "^              still reachable 221.55 KiB (226864 B) in 10 blocks (4 stacks)$" "$tmp/v.txt" ||
  { echo "want the mapping definitely lost and the heap blocks still reachable:" >&2; cat "$tmp/v.txt" >&2; exit 1; }
exit 0
