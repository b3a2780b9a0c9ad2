#!/bin/sh
# SPDX-License-Identifier: MIT
# t_cuda_limits: runs every mode of t_cuda_limits.c with its environment (the program checks the
# numbers) and checks what the user sees on stderr: one line for a device limit's first breach,
# the warn line, one line for a bad value. With LIBNDMEM '-' the modes run without the shim and
# check the driver test double alone, which must print nothing at all. The program's requests are
# named refusable (NDMEM_LIMIT_REFUSE=%exe), as PyTorch's caching allocator's are: each limit
# meets them at its exact boundary (t_cuda_admit.sh has what is admitted when nothing is named).
# With the shim, the last request the device limit refused is the trace's REFUSAL (the report's
# limits.last_refusal).
# usage: t_cuda_limits.sh LIBNDMEM|- T_CUDA_LIMITS FAKECUDA_DIR [NDMEMREPORT PYTHON3]
set -u
lib=$1 prog=$2 fakedir=$3 rep=${4:-} py=${5:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

# run NAME [VAR=VALUE...]: runs mode NAME of t_cuda_limits
run() {
  name=$1
  shift
  if [ "$lib" = - ]; then
    env LD_LIBRARY_PATH="$fakedir" "$@" "$prog" "$name" >"$tmp/$name.out" 2>"$tmp/$name.err"
  else
    env NDMEM_SUMMARY=0 NDMEM_LIMIT_REFUSE=%exe NDMEM_OUTPUT="$tmp/$name.%p.trace" LD_LIBRARY_PATH="$fakedir" "$@" \
      LD_PRELOAD="$lib" "$prog" "$name" shim >"$tmp/$name.out" 2>"$tmp/$name.err"
  fi
  rc=$?
  cat "$tmp/$name.out"
  if [ $rc -ne 0 ]; then
    echo "$name: exit $rc" >&2
    cat "$tmp/$name.err" >&2
    fail=1
  fi
  if [ "$lib" = - ] && [ -s "$tmp/$name.err" ]; then
    echo "$name: the test double (or the program) wrote to stderr:" >&2
    cat "$tmp/$name.err" >&2
    fail=1
  fi
}
# lines NAME N FIXED-STRING [FIXED-STRING]: stderr of run NAME has exactly N lines holding both
lines() {
  name=$1 want=$2 a=$3 b=${4:-$3}
  got=$(grep -F -- "$a" "$tmp/$name.err" | grep -c -F -- "$b")
  if [ "$got" -ne "$want" ]; then
    echo "$name: $got stderr lines with '$a' and '$b', want $want" >&2
    cat "$tmp/$name.err" >&2
    fail=1
  fi
}
# starts NAME PREFIX FIXED-STRING: every stderr line of run NAME holding the string starts so
starts() {
  name=$1 prefix=$2 s=$3
  grep -F -- "$s" "$tmp/$name.err" | while IFS= read -r l; do
    case "$l" in
    "$prefix"*) ;;
    *) echo "$name: '$l' does not start with '$prefix'" >&2; exit 1 ;;
    esac
  done || fail=1
}

run exact NDMEM_MAX_DEVICE_BYTES=1M FAKECUDA_DEVICES=2 FAKECUDA_TOTAL=1073741824
run apis NDMEM_MAX_DEVICE_BYTES=4M FAKECUDA_DEVICES=1 FAKECUDA_TOTAL=1073741824
run dev1 NDMEM_MAX_DEVICE_BYTES_1=512K FAKECUDA_DEVICES=2 FAKECUDA_TOTAL=1073741824
run percent NDMEM_MAX_DEVICE_BYTES=50% FAKECUDA_DEVICES=1 FAKECUDA_TOTAL=4194304
run warn NDMEM_MAX_DEVICE_BYTES=1M NDMEM_ON_LIMIT=warn FAKECUDA_DEVICES=1 FAKECUDA_TOTAL=1073741824
run getinfo NDMEM_MAX_DEVICE_BYTES=3M FAKECUDA_DEVICES=1 FAKECUDA_TOTAL=4194304
run getinfo_big NDMEM_MAX_DEVICE_BYTES=8M FAKECUDA_DEVICES=1 FAKECUDA_TOTAL=4194304
run bad NDMEM_MAX_DEVICE_BYTES=banana FAKECUDA_DEVICES=1 FAKECUDA_TOTAL=1073741824
[ "$lib" = - ] && exit $fail

# the first breach of each device: exactly one line, naming the device and maxDeviceBytes
lines exact 1 "Can't allocate [DEVICE 0] memory" maxDeviceBytes
lines exact 1 "Can't allocate [DEVICE 1] memory" maxDeviceBytes
starts exact "ndmem: Can't allocate [DEVICE " "Can't allocate [DEVICE"
lines dev1 1 "Can't allocate [DEVICE 1] memory" maxDeviceBytes
lines dev1 0 "[DEVICE 0]"
lines percent 1 "Can't allocate [DEVICE 0] memory" maxDeviceBytes
lines apis 0 "[DEVICE 1]"
grep -q -F "Can't allocate [DEVICE 0] memory" "$tmp/apis.err" ||
  { echo "apis: no breach line" >&2; cat "$tmp/apis.err" >&2; fail=1; }
# warn: allowed, said so
lines warn 1 "ndmem: Over the limit [DEVICE 0]"
starts warn "ndmem: Over the limit [DEVICE 0]" "[DEVICE 0]"
lines warn 0 "Can't allocate"
lines getinfo 0 "[DEVICE"
lines getinfo_big 0 "[DEVICE"
# a bad value: one line naming the variable and the value; no limit
lines bad 1 NDMEM_MAX_DEVICE_BYTES
lines bad 1 NDMEM_MAX_DEVICE_BYTES banana
lines bad 0 "[DEVICE"
# percent: the last refused request, cuMemAlloc of 1 B over the 2 MiB limit of device 0, at the
# program's line (the device limit keeps it as the host limits do)
if [ -n "$rep" ]; then
  t=$(ls "$tmp"/percent.*.trace | head -1)
  "$rep" --format json "$t" >"$tmp/percent.json" || { echo "percent: ndmemreport failed" >&2; fail=1; }
  "$py" -c '
import json, sys
r = json.load(open(sys.argv[1]))["limits"]["last_refusal"] or {}
got = [r.get(k) for k in ("limit", "device", "function", "requested", "limit_bytes", "refusals")]
want = ["max_device_bytes", 0, "cuMemAlloc", 1, 2097152, 1]
if got != want or not (r.get("place") or "").startswith("t_cuda_limits.c:"):
    sys.exit("percent: last_refusal %r %r, want %r at t_cuda_limits.c" % (got, r.get("place"), want))
' "$tmp/percent.json" || fail=1
fi
exit $fail
