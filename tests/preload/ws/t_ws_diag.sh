#!/bin/sh
# SPDX-License-Identifier: MIT
# t_ws_diag: the workspace diagnostics a user sees. An escaped block is reported once, with the
# workspace's name, and the program still succeeds; in guard mode a read through a stale
# workspace pointer faults, ndmem names it (ND4J's "uses leaked workspace pointer from
# workspace [NAME]") and the signal is re-raised, so the process dies of SIGSEGV.
# usage: t_ws_diag.sh LIBNDMEM T_WS
set -u
lib=$1 prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/e.%p.trace" LD_PRELOAD=$lib "$prog" escape 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || { echo "escape run failed ($rc)" >&2; cat "$tmp/err" >&2; fail=1; }
n=$(grep -c '^ndmem: leaked workspace pointer from workspace \[cycle\]: a block of 1048576 B allocated in cycle 6 is still live in cycle 7; ' "$tmp/err")
[ "$n" -eq 1 ] || { echo "want one escape report, got $n" >&2; cat "$tmp/err" >&2; fail=1; }

NDMEM_WS_GUARD=1 NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/g.%p.trace" LD_PRELOAD=$lib "$prog" guard 2>"$tmp/err"
rc=$?
[ $rc -eq 139 ] || { echo "guard run: want death by SIGSEGV (139), got $rc" >&2; cat "$tmp/err" >&2; fail=1; }
grep -q '^ndmem: uses leaked workspace pointer from workspace \[cycle\]: address 0x[0-9a-f]* is in a block of 65536 B (plan entry [0-9]*) allocated in cycle 11; the workspace is now in cycle 12' "$tmp/err" ||
  { echo "guard message missing" >&2; cat "$tmp/err" >&2; fail=1; }
! grep -q 'did not fault' "$tmp/err" || fail=1
exit $fail
