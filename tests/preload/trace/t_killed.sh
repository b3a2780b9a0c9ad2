#!/bin/sh
# SPDX-License-Identifier: MIT
# t_killed: a traced program is killed with SIGKILL after its trace was flushed; ndmemreport
# reads the cut-off trace, says the process did not exit normally, and reports exactly the bytes
# that were live at the last flush, at their file:line.
# usage: t_killed.sh LIBNDMEM T_KILLED NDMEMREPORT CHECK_REPORT_PY SOURCE PYTHON
set -u
lib=$1 prog=$2 rep=$3 check=$4 src=$5 py=$6
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
NDMEM_SUMMARY=0 NDMEM_FLUSH_MS=50 NDMEM_OUTPUT="$tmp/t.trace" LD_PRELOAD=$lib "$prog" >"$tmp/out" &
pid=$!
i=0
until grep -q ready "$tmp/out" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 200 ] || { echo "program never got ready" >&2; kill -9 $pid; exit 1; }
  sleep 0.05
done
sleep 0.5 # several flush intervals
kill -9 $pid
wait $pid 2>/dev/null
[ -s "$tmp/t.trace" ] || { echo "no trace after SIGKILL" >&2; exit 1; }
"$rep" --format json --top 100 "$tmp/t.trace" >"$tmp/r.json" || { echo "ndmemreport failed on the cut-off trace" >&2; exit 1; }
"$py" "$check" "$tmp/r.json" "$src" killed "$(getconf PAGESIZE)" || exit 1
"$rep" "$tmp/t.trace" | grep -q "NOT normal" || { echo "text report does not say the process was killed" >&2; "$rep" "$tmp/t.trace" | head -8 >&2; exit 1; }
exit 0
