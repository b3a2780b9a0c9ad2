#!/bin/sh
# SPDX-License-Identifier: MIT
# t_ws_edge: the workspace records' edge cases, on traces gen_trace writes at test time. Each
# malformed one (a version 1 trace with a version 2 record, a workspace name without its NUL, a
# WORKSPACE record one byte short) must give exit status 2 and exactly the expected error; a
# trace with more escapes than the reader keeps must report the 100000 kept, count the other 3,
# and resolve the stack that is defined after its escapes.
# usage: t_ws_edge.sh NDMEMREPORT GEN_TRACE
set -u
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
report=$(abs "$1") gen=$(abs "$2")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0

bad() { # MODE ERROR: stderr must be "ndmemreport: MODE.trace: ERROR at offset 408"
  "$gen" "$1" "$1.trace" || { echo "FAIL: gen_trace $1" >&2; fail=1; return; }
  "$report" "$1.trace" >out 2>err
  rc=$?
  [ $rc = 2 ] || { echo "FAIL: $1: exit status $rc, want 2" >&2; fail=1; }
  [ ! -s out ] || { echo "FAIL: $1: output on stdout" >&2; fail=1; }
  printf 'ndmemreport: %s.trace: %s at offset 408\n' "$1" "$2" >want # after the header and a FLUSH
  diff -u want err || { echo "FAIL: $1: stderr differs" >&2; fail=1; }
}
v1='record in a version 1 trace (version 2 introduced it)'
bad bad-v1-workspace "WORKSPACE $v1"
bad bad-v1-escape "WS_ESCAPE $v1"
bad bad-ws-name 'WORKSPACE workspace name is not NUL-terminated'
bad bad-escape-name 'WS_ESCAPE workspace name is not NUL-terminated'
bad bad-ws-size 'WORKSPACE record size 135 impossible (136)'

"$gen" many-escapes many.trace || { echo "FAIL: gen_trace many-escapes" >&2; exit 1; }
"$report" --workspaces --brief many.trace >out 2>err
rc=$?
[ $rc = 0 ] || { echo "FAIL: many-escapes: exit status $rc" >&2; fail=1; }
[ ! -s err ] || { echo "FAIL: many-escapes: stderr: $(cat err)" >&2; fail=1; }
cat >want <<'EOF'
== summary
  trace       complete: 8000901 bytes, 100008 records
  workspaces  1 (hits 100004, spills 0, escapes 100003)

== leaked workspace pointers: 100000 blocks, 390.63 MiB (409608192 B), from 2 (workspace, stack) pairs; 3 more not kept (over 100000)
#1   [w] on thread 77: 99998 escapes, 390.62 MiB (409591808 B); first born in cycle 1, first seen in cycle 2  [stack unknown]
      (frames unknown: the block's allocation was not tracked)
#2   [w] on thread 77: 2 escapes, 16.00 KiB (16384 B); first born in cycle 4, first seen in cycle 6  [stack 3]
      #0  /nonexistent/bin/many+0x1800
EOF
diff -u want out || { echo "FAIL: many-escapes: output differs" >&2; fail=1; }
"$report" --workspaces --brief --format json many.trace >out 2>err
want='"leaked_workspace_pointers": {"records": 100003, "not_kept": 3, "bytes": 409608192, '
grep -qF "$want\"pairs\": 2, \"groups\": [" out || { echo "FAIL: many-escapes: JSON counts" >&2; fail=1; }
exit $fail
