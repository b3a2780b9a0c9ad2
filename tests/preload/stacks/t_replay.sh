#!/bin/sh
# SPDX-License-Identifier: MIT
# t_replay: with every block tracked, a replayed stack is the stack it stands for. t_replay (C++:
# callers taking turns at one stack pointer, paths differing far up, a frame of variable length
# shifting the slots under the same stack pointer, longjmp, exceptions, signal handlers on the
# thread's stack and an alternate one, threads in rounds, coroutines on stacks of the program's
# own) and t_replay.py (Python lines reaching
# malloc by the same native path) each run with NDMEM_REPLAY=1 and =0: the sites through the
# program's source must be the same, count for count, and match the marked counts
# (check_replay.py); the replay-on run must have replayed stacks, and refused the signal frames'.
# usage: t_replay.sh LIBNDMEM T_REPLAY T_REPLAY_CC NDMEMREPORT CHECK_PY T_REPLAY_PY PYTHON
set -u
lib=$1 prog=$2 src=$3 rep=$4 check=$5 pysrc=$6 py=$7
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

# run NAME REPLAY CMD...: CMD under the shim, every block tracked, its report as NAME.json
run() {
  name=$1 replay=$2
  shift 2
  env NDMEM_TRACK_MIN=0 NDMEM_REPLAY="$replay" NDMEM_SUMMARY=1 NDMEM_WORKSPACES=0 \
    NDMEM_OUTPUT="$tmp/$name.trace" PYTHONHASHSEED=0 LD_PRELOAD="$lib" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err" || { echo "FAIL: $name: exit $?" >&2; cat "$tmp/$name.err" >&2; fail=1; return 1; }
  "$rep" --format json --top 1000000 "$tmp/$name.trace" >"$tmp/$name.json" ||
    { echo "FAIL: $name: ndmemreport failed" >&2; fail=1; return 1; }
}

run c_on 1 "$prog" && run c_off 0 "$prog" &&
  { "$py" "$check" "$tmp/c_on.json" "$tmp/c_off.json" "$src" "$tmp/c_on.err" 1500 refused || fail=1; }

# The Python scenario needs an interpreter whose frames ndmem reads (3.10-3.14, not free-threaded)
pyrun=
for p in /usr/bin/python3 "$py"; do
  if "$p" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 14)))' 2>/dev/null; then
    pyrun=$p
    break
  fi
done
if [ -n "$pyrun" ]; then
  run py_on 1 "$pyrun" "$pysrc" && run py_off 0 "$pyrun" "$pysrc" &&
    { "$py" "$check" "$tmp/py_on.json" "$tmp/py_off.json" "$pysrc" "$tmp/py_on.err" 300 || fail=1; }
else
  echo "note: no CPython 3.10-3.14 found: the Python scenario is skipped" >&2
fi
exit $fail
