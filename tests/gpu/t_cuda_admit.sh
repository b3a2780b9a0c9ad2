#!/bin/sh
# SPDX-License-Identifier: MIT
# t_cuda_admit: runs t_cuda_admit (the program checks the device's numbers) under the shim with
# NDMEM_MAX_DEVICE_BYTES=4M and NDMEM_LIMIT_SLACK=8m, and checks what the user sees: the device's
# summary line (1 request admitted, from the library's workspace code; 1 refused past the slack),
# one breach line for the caching allocator's refusal, and ndmemreport's text and JSON (the
# admitted request at its line in admit/libcuwork.c, why each refusal could be refused).
# usage: t_cuda_admit.sh LIBNDMEM T_CUDA_ADMIT FAKECUDA_DIR NDMEMREPORT LIBCUWORK_C
set -u
lib=$1 prog=$2 fk=$3 report=$4 src=$5
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
for v in $(env | sed -n 's/^\(NDMEM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
l_work=$(grep -n 'int rc = cudart_malloc(p, n);' "$src" | head -1 | cut -d: -f1)

timeout 120 env NDMEM_MAX_DEVICE_BYTES=4M NDMEM_LIMIT_SLACK=8m NDMEM_OUTPUT="$tmp/admit.%p.trace" \
  LD_PRELOAD="$lib" LD_LIBRARY_PATH="$fk" "$prog" shim >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || { no "exit status $rc"; cat "$tmp/out" "$tmp/err" >&2; }
want='admit: workspace 2 MiB admitted; caching allocator 1 MiB refused; workspace 8 MiB refused; 64 MiB refused'
[ "$(cat "$tmp/out")" = "$want" ] || no "stdout '$(cat "$tmp/out")', want '$want'"
has() { grep -q -- "$1" "$tmp/err" || { no "no stderr line matching: $1"; cat "$tmp/err" >&2; }; }
has "^ndmem: Can't allocate \[DEVICE 0\] memory: 1.00 MiB requested; tracked 5.00 MiB + 1.00 MiB > maxDeviceBytes 4.00 MiB; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 1, next logged: 2)$"
has "^ndmem: Can't allocate \[DEVICE 0\] memory: 8.00 MiB requested; tracked 5.00 MiB + 8.00 MiB > maxDeviceBytes 4.00 MiB + slack 8.00 MiB; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 2, next logged: 4)$"
has "^ndmem\[[0-9]*\]: device 0: peak 5.00 MiB, live 0 B in 0 blocks; 3 allocations; maxDeviceBytes 4.00 MiB, breaches 3, failed 3; admitted 1 request over maxDeviceBytes (2.00 MiB; at most 1.00 MiB past it, slack 8.00 MiB), most from work_alloc+0x[0-9a-f]* (libcuwork.so); 1 refused past the slack$"
t=$(ls "$tmp"/admit.*.trace | head -1)
"$report" --limits "$t" >"$tmp/txt" 2>&1 || { no "ndmemreport failed"; cat "$tmp/txt" >&2; }
flat=$(tr '\n' ' ' <"$tmp/txt" | tr -s ' ')
for want in \
  ' refusable: from a tensor runtime.s allocator ' \
  ' refusable: admitting it would have passed the limit.s slack (NDMEM_LIMIT_SLACK) ' \
  ' maxDeviceBytes (device 0): 1 request, 2.00 MiB (2097152 B); at most 1.00 MiB (1048576 B) past the limit 4.00 MiB (4194304 B); slack 8.00 MiB (8388608 B); 1 refused past the slack ' \
  "#1 device0 1 request, 2.00 MiB (2097152 B); at most 1.00 MiB (1048576 B) past the limit \[stack [0-9]*\] from libcudart_ndmemtest.c:[0-9]* (cudart_malloc) asked by work_alloc (libcuwork.c:$l_work) #0 cudart_malloc"; do
  echo "$flat" | grep -q -- "$want" || { no "the text report lacks: $want"; cat "$tmp/txt" >&2; }
done
"$report" --format=json "$t" >"$tmp/json" 2>&1 || no "ndmemreport --format=json failed"
python3 - "$tmp/json" "$l_work" <<'CHECK' || no "the JSON report"
import json, sys
d = json.load(open(sys.argv[1]))["limits"]
a = d["admitted"]
assert [(x["limit"], x["device"], x["requests"], x["bytes"], x["over_max_bytes"], x["slack_bytes"],
         x["refused_past_slack"]) for x in a] == [("max_device_bytes", 0, 1, 2097152, 1048576,
                                                   8388608, 1)], a
s = a[0]["sites"]
assert [(x["kind"], x["requests"], x["bytes"], x["asking_frame"]["function"],
         x["asking_frame"]["line"]) for x in s] == [("device0", 1, 2097152, "work_alloc",
                                                     int(sys.argv[2]))], s
assert [b["why"] for b in d["breaches"]] == [["runtime"], ["past_slack"]], d["breaches"]
CHECK
exit $fail
