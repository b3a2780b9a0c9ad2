#!/bin/sh
# SPDX-License-Identifier: MIT
# t_exit_handler: t_exit_handler.c under the shim, 12 runs of each mode ("mapped" with flushes
# every 10 ms, "early" with the default, "sampled" with every block tracked, so that the signal
# often lands while the thread holds one of ndmem's own locks): every run must end (exit status 0)
# within 10 s and leave a complete trace. Before the final flush stopped asking the allocator and
# looking for Python, and waited without limit for a lock its own thread held, one run in five to
# one in three hung.
# usage: t_exit_handler.sh LIBNDMEM T_EXIT_HANDLER NDMEMREPORT
set -u
lib=$1 prog=$2 rep=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for mode in early mapped sampled; do
  i=0
  while [ $i -lt 12 ]; do
    i=$((i + 1))
    rm -f "$tmp"/t.*.trace
    ms=1000 sample=524288
    [ $mode = mapped ] && ms=10
    [ $mode = sampled ] && sample=1 # every block tracked: the signal lands in ndmem's locks too
    # The time limit from the shell: a preloaded timeout(1) would be traced too.
    NDMEM_SUMMARY=0 NDMEM_FLUSH_MS=$ms NDMEM_SAMPLE=$sample NDMEM_OUTPUT="$tmp/t.%p.trace" LD_PRELOAD=$lib \
      "$prog" $mode &
    pid=$!
    (sleep 10 && kill -9 $pid) 2>/dev/null &
    dog=$!
    wait $pid
    rc=$?
    kill $dog 2>/dev/null
    if [ $rc != 0 ]; then
      echo "FAIL: $mode run $i: exit status $rc (137: hung, killed after 10 s)" >&2
      fail=1
      continue
    fi
    "$rep" --brief "$tmp"/t.*.trace >"$tmp/out" 2>&1 || {
      echo "FAIL: $mode run $i: the trace does not read:" >&2
      cat "$tmp/out" >&2
      fail=1
    }
    grep -q '^  exit        normal (END record)$' "$tmp/out" || {
      echo "FAIL: $mode run $i: no normal end in:" >&2
      cat "$tmp/out" >&2
      fail=1
    }
  done
done
exit $fail
