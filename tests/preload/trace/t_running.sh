#!/bin/sh
# SPDX-License-Identifier: MIT
# t_running: a trace without an END record is "still running" only while the process that wrote
# it runs. A program under the shim that flushes and then sleeps reads as running (text and
# JSON); after SIGKILL, as killed. A trace whose header names a live pid that started after the
# trace did (a reused pid) reads as killed; one whose later-started process holds the trace open
# (as a fork child's does) reads as running.
# usage: t_running.sh LIBNDMEM T_KILLED NDMEMREPORT PYTHON
set -u
lib=$1 prog=$2 rep=$3 py=$4
tmp=$(mktemp -d) || exit 1
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
pids=""
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
NDMEM_SUMMARY=0 NDMEM_FLUSH_MS=50 NDMEM_OUTPUT="$tmp/t.trace" LD_PRELOAD=$lib "$prog" >"$tmp/out" &
pid=$!
pids=$pid
i=0
until grep -q ready "$tmp/out" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 200 ] || { echo "program never got ready" >&2; exit 1; }
  sleep 0.05
done
sleep 0.3 # several flush intervals

# The summary's exit line(s), flush number and time made fixed.
exit_lines() {
  "$rep" "$1" | sed -n '/^  exit /,/^  trace /p' | sed -e '$d' \
    -e 's/#[0-9]* at [0-9.]* s/#N at T s/' -e "s/pid $pid /pid PID /"
}
running() {
  "$rep" --format json "$1" | sed -n 's/.*"exited_normally": \([a-z]*\), "running": \([a-z]*\)[,}].*/\1 \2/p'
}
exit_lines "$tmp/t.trace" >"$tmp/got"
cat >"$tmp/want" <<'WANT'
  exit        none yet: the process is still running (pid PID on this host);
              leaks cannot be known yet, live figures are at the last flush
              (#N at T s)
WANT
diff -u "$tmp/want" "$tmp/got" || no "running: text"
[ "$(running "$tmp/t.trace")" = "false true" ] || no "running: JSON says '$(running "$tmp/t.trace")'"

# a copy of the trace whose header (pid at offset 16) names another live process
with_pid() {
  cp "$tmp/t.trace" "$2"
  "$py" -c 'import struct, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(16); f.write(struct.pack("<Q", int(sys.argv[2])))' "$2" "$1"
}
sleep 2.5 # later than the trace's start by more than the slack (2 s)
sleep 60 &
late=$!
pids="$pids $late"
with_pid $late "$tmp/reused.trace"
[ "$(running "$tmp/reused.trace")" = "false false" ] || no "a reused pid reads as running"
"$rep" "$tmp/reused.trace" | grep -q '^  exit        NOT normal: ended without an END record: killed' ||
  no "a reused pid: text"
with_pid 0 "$tmp/held.trace"
sleep 60 3<"$tmp/held.trace" &
held=$!
pids="$pids $held"
with_pid $held "$tmp/held.trace"
[ "$(running "$tmp/held.trace")" = "false true" ] || no "a later process holding the trace reads as not running"

kill -9 $pid
wait $pid 2>/dev/null
exit_lines "$tmp/t.trace" >"$tmp/got"
cat >"$tmp/want" <<'WANT'
  exit        NOT normal: ended without an END record: killed
              (SIGKILL, the OOM killer) or crashed;
              leaks cannot be known, live figures are at the last flush
              (#N at T s)
WANT
diff -u "$tmp/want" "$tmp/got" || no "killed: text"
[ "$(running "$tmp/t.trace")" = "false false" ] || no "killed: JSON says '$(running "$tmp/t.trace")'"
exit $fail
