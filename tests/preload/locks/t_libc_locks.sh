#!/bin/sh
# SPDX-License-Identifier: MIT
# t_libc_locks.sh SHIM PROG LIBDLO [REPEATS]: every scenario of t_libc_locks.c (the libc and
# loader functions that allocate while they hold a lock of their own), under every tracking mode
# (the default; sampled, a small block picked every 4 KiB; every block exact), with the stack
# replay on and off, REPEATS times each (3: 3 x 15 x 3 x 2 = 270 runs), two at a time. Each run
# has a watchdog: a run that has not ended in 30 s is a hang (its threads' stacks are printed
# where gdb is installed), and so is any end but "ok SCENARIO" with status 0.
#
# Found so far (each hung here before it was fixed): pthread_getattr_np (every block: every run),
# a dl_iterate_phdr callback that allocates (1 run in 10 with sampling: libunwind's lock against
# the loader's), fork while other threads allocate (1 in 10: the mapping table's lock against
# libunwind's cache pool), and a constructor's pthread_atfork before any other allocation
# (t_atfork_first, every run).
set -u
shim=$1 prog=$2 libdlo=$3 reps=${4:-3}
scenarios="getattr phdr dlopen backtrace stdio nss locale exitfns tlsdtor tz fork threads c11 syslog exit"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# one SCENARIO MODE REPLAY N: one run, its verdict in $dir/verdict.N
one() {
  case $2 in
  default) mode="" ;;
  sampled) mode="NDMEM_SAMPLE=4096" ;;
  every) mode="NDMEM_TRACK_MIN=0" ;;
  esac
  out=$dir/out.$4
  # The watchdog is not under the shim; the program is.
  env $mode NDMEM_REPLAY=$3 NDMEM_SUMMARY=0 NDMEM_OUTPUT="$dir/trace.$4.%p" LD_PRELOAD="$shim" \
    "$prog" "$1" "$libdlo" 200 >"$out" 2>&1 &
  pid=$!
  waited=0
  while kill -0 $pid 2>/dev/null && [ $waited -lt 300 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 $pid 2>/dev/null; then
    echo "HANG: $1 under $2 tracking, replay $3 (pid $pid, 30 s)" >"$dir/verdict.$4"
    if command -v gdb >/dev/null 2>&1; then
      gdb -p $pid -batch -ex "thread apply all bt 20" 2>/dev/null | grep -E '^(#|Thread)' \
        >>"$dir/verdict.$4"
    fi
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    return
  fi
  wait $pid
  rc=$?
  if [ $rc -ne 0 ] || ! grep -qx "ok $1" "$out"; then
    { echo "FAIL: $1 under $2 tracking, replay $3: status $rc"; tail -5 "$out"; } >"$dir/verdict.$4"
  fi
  rm -f "$dir"/trace.$4.*
}

n=0 runs=0
for s in $scenarios; do
  for mode in default sampled every; do
    for replay in 1 0; do
      r=0
      while [ $r -lt "$reps" ]; do
        n=$((n + 1))
        one "$s" "$mode" "$replay" $n &
        if [ $((n % 2)) -eq 0 ]; then wait; fi
        r=$((r + 1))
      done
    done
  done
done
wait
runs=$n
bad=$(cat "$dir"/verdict.* 2>/dev/null | grep -c '^\(HANG\|FAIL\)')
cat "$dir"/verdict.* 2>/dev/null
echo "$runs runs: $bad hung or failed"
[ "$bad" -eq 0 ] && [ "$runs" -eq $((15 * 3 * 2 * reps)) ]
