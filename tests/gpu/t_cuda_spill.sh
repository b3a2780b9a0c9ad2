#!/bin/sh
# SPDX-License-Identifier: MIT
# t_cuda_spill: NDMEM_ON_DEVICE_LIMIT=host (t_cuda_spill.c checks the numbers inside the program):
# the breach line says where the memory came from, the summary counts it by reason, and the
# report (text and JSON) names each spilling site at its file:line (the lines marked SPILLED).
# usage: t_cuda_spill.sh LIBNDMEM PROG FAKECUDA_DIR NDMEMREPORT SOURCE PYTHON
set -u
lib=$1 prog=$2 fk=$3 report=$4 src=$5 py=$6
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
for v in $(env | sed -n 's/^\(NDMEM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done

run() { # NAME MODE VAR=VALUE...
  name=$1 mode=$2
  shift 2
  timeout 120 env "$@" NDMEM_OUTPUT="$tmp/$name.%p.trace" LD_PRELOAD="$lib" LD_LIBRARY_PATH="$fk" \
    "$prog" "$mode" shim >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  [ $rc -eq 0 ] || { no "$name: exit status $rc"; cat "$tmp/$name.err" >&2; }
}
has() { grep -q -- "$2" "$tmp/$1.err" || { no "$1: no line matching: $2"; cat "$tmp/$1.err" >&2; }; }

run limit limit NDMEM_MAX_DEVICE_BYTES=4M NDMEM_ON_DEVICE_LIMIT=host
has limit "^ndmem: Over the limit \[DEVICE 0\], served from page-locked host memory: 2.00 MiB requested; tracked 3.00 MiB + 2.00 MiB > maxDeviceBytes 4.00 MiB; thread [0-9]* (NDMEM_ON_DEVICE_LIMIT=host; breach 1, next logged: 2)$"
has limit "^ndmem\[[0-9]*\]: device 0 ran from host memory: 3 allocations (6.00 MiB, peak 6.00 MiB at once, live at exit 0 B) served from page-locked host memory (NDMEM_ON_DEVICE_LIMIT=host): 3 over the device limit, 0 refused by a full device; ndmemreport names their sites$"
run full full FAKECUDA_TOTAL=8M NDMEM_ON_DEVICE_LIMIT=host
has full "^ndmem\[[0-9]*\]: device 0 ran from host memory: 1 allocations (4.00 MiB, peak 4.00 MiB at once, live at exit 0 B) served from page-locked host memory (NDMEM_ON_DEVICE_LIMIT=host): 0 over the device limit, 1 refused by a full device"
# the program's requests named refusable (as PyTorch's caching allocator's are): refused
run control control NDMEM_MAX_DEVICE_BYTES=4M NDMEM_LIMIT_REFUSE=%exe
has control "^ndmem: Can't allocate \[DEVICE 0\] memory: 2.00 MiB requested"
grep -q 'ran from host memory' "$tmp/control.err" && no "control: spilled without NDMEM_ON_DEVICE_LIMIT=host"

# the report: the device's totals and each spilling site at its line, largest first (all 2 MiB:
# then by stack, i.e. in program order)
trace=$(ls "$tmp"/limit.*.trace)
"$report" "$trace" >"$tmp/report.txt" || no "ndmemreport: exit status $?"
lines=$(grep -n 'SPILLED' "$src" | cut -d: -f1 | tr '\n' ' ')
set -- $lines
[ $# -eq 3 ] || no "the source has $# SPILLED lines, want 3"
grep -q "^    from host      3 allocations, 6.00 MiB (6291456 B)$" "$tmp/report.txt" ||
  { no "report: no 'from host' line"; cat "$tmp/report.txt" >&2; }
grep -q "^                   3 over the limit, 0 on a full device (page-locked memory)$" "$tmp/report.txt" ||
  no "report: no reasons line"
got=$(sed -n '/^    from host/,/^  hooks:/p' "$tmp/report.txt" | sed -n 's/^      #0  main (.*t_cuda_spill.c:\([0-9]*\))$/\1/p' | tr '\n' ' ')
[ "$got" = "$lines" ] || no "report: spilled sites at lines '$got', want '$lines'"
"$report" --format json "$trace" >"$tmp/report.json" || no "ndmemreport --format json: exit status $?"
"$py" - "$tmp/report.json" "$lines" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
want = [int(x) for x in sys.argv[2].split()]
d = [x for x in j["devices"] if x["device"] == 0][0]
h = d["from_host"]
ok = (h["allocations"], h["bytes"], h["peak_bytes"], h["live_bytes"], h["over_limit"],
      h["device_full"]) == (3, 6 << 20, 6 << 20, 0, 3, 0)
lines = [s["frames"][0]["line"] for s in h["sites"]]
ok = ok and lines == want and [s["bytes"] for s in h["sites"]] == [2 << 20] * 3
if not ok:
    print("FAIL: JSON from_host %s, lines %s want %s" % (h, lines, want))
sys.exit(0 if ok else 1)
PY
exit $fail
