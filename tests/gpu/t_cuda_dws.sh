#!/bin/sh
# SPDX-License-Identifier: MIT
# t_cuda_dws: device workspaces against the asynchronous driver double (t_cuda_dws.c has the
# program). Every mode runs without the shim, under the shim without device workspaces, and with
# them (sync=free, the default, and sync=ordered): results exact every time, the arena exactly the
# plan (strict: 2 buffers of 256 KiB live at once, 3 in a step), and the waits each mode needs
# and no others. A broken ndmem that reuses without waiting (the test-only
# NDMEM_TEST_DEVICE_WS_UNFENCED) must corrupt the multi-stream modes: the test can fail. Bad
# settings: one line, the job runs on.
# usage: t_cuda_dws.sh LIBNDMEM PROG FAKECUDA_DIR
set -u
lib=$1 prog=$2 fk=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
for v in $(env | sed -n 's/^\(NDMEM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done

# run NAME WANT_RC MODE [VAR=VALUE...]: the program under the shim with those settings
run() {
  name=$1 want=$2 mode=$3
  shift 3
  timeout 120 env "$@" NDMEM_OUTPUT="$tmp/$name.%p.trace" NDMEM_SUMMARY=0 LD_PRELOAD="$lib" \
    LD_LIBRARY_PATH="$fk" "$prog" "$mode" shim >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  [ "$rc" -eq "$want" ] || { no "$name: exit status $rc, want $want"; cat "$tmp/$name.err" >&2; }
  cat "$tmp/$name.out"
}
# field NAME KEY: the value of KEY= in NAME's line
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$tmp/$1.out"; }
is() { [ "$(field "$1" "$2")" = "$3" ] || no "$1: $2=$(field "$1" "$2"), want $3"; }
same() { [ "$(field "$1" "$2")" = "$(field "$1" "$3")" ] || no "$1: $2=$(field "$1" "$2") but $3=$(field "$1" "$3")"; }
atleast() { [ "$(field "$1" "$2")" -ge "$3" ] 2>/dev/null || no "$1: $2=$(field "$1" "$2"), want at least $3"; }

modes="single blocking nonblocking async async_same fork"
for m in $modes; do
  LD_LIBRARY_PATH="$fk" timeout 120 "$prog" "$m" >"$tmp/plain_$m.out" 2>&1 || no "plain $m: exit status $?"
  is "plain_$m" bad 0
  run "off_$m" 0 "$m"
  is "off_$m" bad 0
  is "off_$m" enabled 0
  is "off_$m" hits 0
done

streams_single=0 streams_blocking=1 streams_nonblocking=2 streams_async=1 streams_async_same=1
streams_fork=0
for sync in free ordered; do
  for m in $modes; do
    n=${sync}_$m
    run "$n" 0 "$m" NDMEM_DEVICE_WS="allocation=strict,sync=$sync"
    is "$n" bad 0
    is "$n" enabled 1
    is "$n" mode 3
    is "$n" sync "$([ $sync = free ] && echo 0 || echo 1)"
    is "$n" streams "$(eval echo \$streams_$m)"
    atleast "$n" served 30
    is "$n" arena 524288
    is "$n" peak 524288
    is "$n" sum 786432
    is "$n" spills 0
    is "$n" fallbacks 0
    is "$n" arena_allocs 1
    case $sync/$m in
      free/single|free/blocking|free/nonblocking|free/fork|ordered/nonblocking)
        # a workspace cuMemFree waits for the device, as the driver's does; nothing else waits
        same "$n" ctx_syncs frees; is "$n" fences 0; is "$n" host_waits 0; is "$n" stream_waits 0 ;;
      ordered/single|ordered/fork|*/async_same)
        # one stream (or one stream's order): reuse in stream order, no driver call at all
        is "$n" ctx_syncs 0; is "$n" fences 0; is "$n" host_waits 0; is "$n" stream_waits 0 ;;
      ordered/blocking)
        # an event on the legacy stream at each free; z's allocation waits for x's
        is "$n" ctx_syncs 0; same "$n" fences frees; atleast "$n" host_waits 1; is "$n" stream_waits 0 ;;
      */async)
        # x freed in order on A, z allocated on B: B waits for A's free on the device
        is "$n" ctx_syncs 0; is "$n" host_waits 0; atleast "$n" fences 1; atleast "$n" stream_waits 30 ;;
    esac
  done
done

# Threads: four at once, each with its own streams, one device workspace for all
for sync in free ordered; do
  run "threads_$sync" 0 threads NDMEM_DEVICE_WS="sync=$sync"
  is "threads_$sync" bad 0
done

# The broken ndmem: reuse with no wait at all corrupts every mode with a second stream
for m in single blocking nonblocking async; do
  want=3
  [ $m = single ] && want=0 # one stream: its order alone keeps reuse safe
  run "unfenced_$m" $want "$m" NDMEM_DEVICE_WS="allocation=strict,sync=ordered" NDMEM_TEST_DEVICE_WS_UNFENCED=1
  [ $want = 3 ] && { [ "$(field "unfenced_$m" bad)" -gt 0 ] || no "unfenced_$m: no corruption"; }
done

# Default policies: overallocate 0.3 (ND4J's arena rule over the planned 512 KiB)
run defaults 0 blocking NDMEM_DEVICE_WS=on
is defaults bad 0
is defaults arena 681984
is defaults peak 524288

# The metrics file (written at exit): the workspace's hits, arena and waits
run metrics 0 blocking NDMEM_DEVICE_WS=allocation=strict,sync=ordered NDMEM_METRICS="$tmp/m.%p.prom"
prom=$(ls "$tmp"/m.*.prom 2>/dev/null | head -1)
metric() { sed -n "s/^$1{pid=\"[0-9]*\",device=\"0\"} \([0-9]*\)$/\1/p" "$prom"; }
[ "$(metric ndmem_device_workspace_hits_total)" = "$(field metrics hits)" ] ||
  no "metrics: hits $(metric ndmem_device_workspace_hits_total), want $(field metrics hits)"
[ "$(metric ndmem_device_workspace_arena_bytes)" = 524288 ] || no "metrics: arena bytes"
[ "$(metric ndmem_device_workspace_waits_total)" = "$(field metrics host_waits)" ] ||
  no "metrics: waits $(metric ndmem_device_workspace_waits_total), want $(field metrics host_waits)"

# ND4J's unplanned arenas (bump allocation, circular by laps): reset=endofbuffer after learning,
# learning=none with a fixed arena from the start; every step served once it is
for spec in reset=endofbuffer,sync=ordered learning=none,initial_size=2m,sync=ordered \
    reset=endofbuffer; do
  for m in blocking async; do
    n=nd4j_$(echo "$spec" | tr -c 'a-z0-9\n' _)_$m
    run "$n" 0 "$m" NDMEM_DEVICE_WS="$spec"
    is "$n" bad 0
    is "$n" mode 4
    atleast "$n" served 30
  done
done

# Per device: NDMEM_DEVICE_WS_0 wins over NDMEM_DEVICE_WS
run dev0_off 0 single NDMEM_DEVICE_WS=on NDMEM_DEVICE_WS_0=off
is dev0_off enabled 0
run dev0_on 0 single NDMEM_DEVICE_WS_0=sync=ordered,allocation=strict
is dev0_on enabled 1
is dev0_on sync 1
is dev0_on arena 524288

# Bad settings: one line naming what was wrong, the job runs on
run bad_word 0 single NDMEM_DEVICE_WS=banana
is bad_word enabled 0
grep -q "^ndmem: NDMEM_DEVICE_WS: 'banana' is not a known policy with a valid value" "$tmp/bad_word.err" ||
  { no "bad_word: no line for 'banana'"; cat "$tmp/bad_word.err" >&2; }
grep -q "^ndmem: NDMEM_DEVICE_WS: nothing usable in it; device workspaces stay off" "$tmp/bad_word.err" ||
  no "bad_word: no line saying the workspaces stay off"
run bad_item 0 blocking NDMEM_DEVICE_WS=learning=bogus,sync=ordered,allocation=strict
is bad_item enabled 1
is bad_item sync 1
is bad_item arena 524288
grep -q "^ndmem: NDMEM_DEVICE_WS: 'learning=bogus' is not a known policy" "$tmp/bad_item.err" ||
  no "bad_item: no line for learning=bogus"
[ "$(grep -c '^ndmem:' "$tmp/bad_item.err")" -eq 1 ] || no "bad_item: more than one line"
run bad_values 0 single NDMEM_DEVICE_WS=sync=sometimes,location=mmap
is bad_values enabled 0
is bad_values bad 0
[ "$(grep -c "is not a known policy" "$tmp/bad_values.err")" -eq 2 ] || no "bad_values: want two lines"
long=$(printf 'x%.0s' $(seq 1 300))
run bad_long 0 single NDMEM_DEVICE_WS="$long"
is bad_long enabled 0
grep -q "^ndmem: NDMEM_DEVICE_WS='...' is longer than 255 bytes; using off" "$tmp/bad_long.err" ||
  no "bad_long: no line for the long value"
exit $fail
