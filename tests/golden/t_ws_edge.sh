#!/bin/sh
# SPDX-License-Identifier: MIT
# t_ws_edge: the workspace records' edge cases, on traces gen_trace writes at test time. Each
# malformed one (a version 1 trace with a version 2 record, a workspace name without its NUL, a
# WORKSPACE record one byte short) must give exit status 2 and exactly the expected error; a
# trace with more escapes than the reader keeps must report the 100000 kept, count the other 3,
# and resolve the stack that is defined after its escapes.
# usage: t_ws_edge.sh NDMEMREPORT GEN_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"

# after the header and a FLUSH, the first bad record is at offset 408
v1='record in a version 1 trace (version 2 introduced it)'
bad bad-v1-workspace 408 "WORKSPACE $v1"
bad bad-v1-escape 408 "WS_ESCAPE $v1"
bad bad-ws-name 408 'WORKSPACE workspace name is not NUL-terminated'
bad bad-escape-name 408 'WS_ESCAPE workspace name is not NUL-terminated'
bad bad-ws-size 408 'WORKSPACE record size 135 impossible (136)'

"$gen" many-escapes many.trace || { no "gen_trace many-escapes"; exit 1; }
"$report" --workspaces --brief many.trace >out 2>err
rc=$?
[ $rc = 0 ] || no "many-escapes: exit status $rc"
[ ! -s err ] || no "many-escapes: stderr: $(cat err)"
cat >want <<'EOF'
== summary
  trace       complete: 8000901 bytes, 100008 records
  workspaces  1 (hits 100004, spills 0, escapes 100003)

== leaked workspace pointers: 100000 blocks, 390.63 MiB (409608192 B),
   from 2 (workspace, stack) pairs; 3 more not kept (over 100000)
#1   [w] on thread 77: 99998 escapes, 390.62 MiB (409591808 B);
      first born in cycle 1, first seen in cycle 2  [stack unknown]
      (frames unknown: the block's allocation was not tracked)
#2   [w] on thread 77: 2 escapes, 16.00 KiB (16384 B);
      first born in cycle 4, first seen in cycle 6  [stack 3]
      #0  /nonexistent/bin/many+0x1800
EOF
diff -u want out || no "many-escapes: output differs"
"$report" --workspaces --brief --format json many.trace >out 2>err
want='"leaked_workspace_pointers": {"records": 100003, "not_kept": 3, "bytes": 409608192, '
grep -qF "$want\"pairs\": 2, \"groups\": [" out || no "many-escapes: JSON counts"
exit $fail
