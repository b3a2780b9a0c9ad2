#!/bin/sh
# SPDX-License-Identifier: MIT
# t_atfork_first.sh SHIM PROG: the program's first allocation is inside glibc's pthread_atfork
# (a library constructor's, before ndmem's own constructor): ndmem initialises there without
# registering its fork handlers (glibc holds their lock: that waited for ever, every run), and
# registers them from its constructor, so the program's fork still gives the child a trace of
# its own. Each tracking mode, under a watchdog of 30 s.
set -u
shim=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
for mode in "" NDMEM_SAMPLE=4096 NDMEM_TRACK_MIN=0; do
  rm -f "$dir"/*
  timeout -s KILL 30 env $mode NDMEM_SUMMARY=0 NDMEM_OUTPUT="$dir/t.%p.trace" LD_PRELOAD="$shim" \
    "$prog" >"$dir/out" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || [ "$(cat "$dir/out")" != ok ]; then
    echo "FAIL ($mode): status $rc (137: hung)"; cat "$dir/out"; fail=1
    continue
  fi
  traces=$(ls "$dir"/t.*.trace 2>/dev/null | wc -l)
  if [ "$traces" -ne 2 ]; then
    echo "FAIL ($mode): $traces traces, want 2 (the parent's and the fork child's)"; fail=1
  fi
done
[ $fail -eq 0 ] && echo "ok: 3 runs, each with the child's trace"
exit $fail
