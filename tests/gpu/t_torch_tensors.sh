#!/bin/sh
# SPDX-License-Identifier: MIT
# t_torch_tensors: `ndmem run --torch-tensors`. It sets PYTORCH_CUDA_ALLOC_CONF to
# backend:cudaMallocAsync (added to a setting without a backend; one with its own backend is kept
# and said), and the report attributes every stream-ordered "tensor" of torch_tensors.py (on the
# CUDA driver double, no GPU) to its Python line with exact bytes, says that the job's device
# sites are tensors, and names the tensors live at exit at their lines.
# usage: t_torch_tensors.sh NDMEM_TOOL LIBNDMEM NDMEMREPORT FAKECUDA_DIR SCRIPT PYTHON
set -u
tool=$1 lib=$2 report=$3 fk=$4 script=$5 py=$6
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
for v in $(env | sed -n 's/^\(NDMEM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset PYTORCH_CUDA_ALLOC_CONF || true
"$py" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] <= (3, 12) else 1)' ||
  { echo "$py is not CPython 3.11 or 3.12 (Python frames): skipped"; exit 77; }

run() { # NAME [VAR=VALUE...]
  name=$1
  shift
  timeout 120 env "$@" NDMEM_LIB="$lib" LD_LIBRARY_PATH="$fk" "$tool" run --torch-tensors --no-report \
    --output="$tmp/$name.%p.trace" -- "$py" "$script" >"$tmp/$name.out" 2>"$tmp/$name.err" ||
    { no "$name: exit status $?"; cat "$tmp/$name.err" >&2; }
}
run plain
grep -qx 'PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync' "$tmp/plain.out" || no "plain: $(cat "$tmp/plain.out")"
run expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
grep -qx 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,backend:cudaMallocAsync' "$tmp/expandable.out" ||
  no "expandable: $(cat "$tmp/expandable.out")"
run native PYTORCH_CUDA_ALLOC_CONF=backend:native
grep -qx 'PYTORCH_CUDA_ALLOC_CONF=backend:native' "$tmp/native.out" || no "native: $(cat "$tmp/native.out")"
grep -q "^ndmem: --torch-tensors: PYTORCH_CUDA_ALLOC_CONF='backend:native' names its own backend; kept$" \
  "$tmp/native.err" || no "native: no line saying the setting was kept"

trace=$(ls "$tmp"/plain.*.trace)
"$report" "$trace" >"$tmp/report.txt" || no "ndmemreport: exit status $?"
tr -s ' \n' '  ' <"$tmp/report.txt" | grep -qF "PyTorch: backend:cudaMallocAsync (set by ndmem run --torch-tensors): device sites are its tensors by Python line" ||
  no "the report does not say the device sites are tensors"
"$report" --format json --top 0 "$trace" >"$tmp/report.json" || no "ndmemreport --format json: exit status $?"
"$report" --format json --top 0 "$tmp"/native.*.trace >"$tmp/native.json" || no "native: JSON"
"$py" - "$tmp/report.json" "$tmp/native.json" "$script" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
native = json.load(open(sys.argv[2]))
src = open(sys.argv[3]).read().splitlines()
line = {l.split("# TENSOR ")[1].split()[0]: n + 1 for n, l in enumerate(src) if "# TENSOR " in l}
MiB = 1 << 20
want = {  # peak, total, live: 10 steps
    "activations": (8 * MiB, 80 * MiB, 0),
    "logits": (2 * MiB, 20 * MiB, 0),
    "history": (10 * MiB, 10 * MiB, 10 * MiB),
    "cache": (3 * MiB, 3 * MiB, 3 * MiB),
}
bad = 0
def where(site):  # the first Python frame that is not the allocating helper
    for f in site["frames"]:
        if f.get("python") and f["function"] != "empty":
            return f["line"]
got = {}
for s in j["sites"]["by_peak"]:
    if s["kind"] == "device0":
        got[where(s)] = (s["peak_live_bytes"], s["alloc_bytes"], s["live_bytes"])
for name, w in want.items():
    if got.get(line[name]) != w:
        print("FAIL: %s (line %d): %s, want %s" % (name, line[name], got.get(line[name]), w))
        bad = 1
if len(got) != len(want):
    print("FAIL: device sites at lines %s, want %s" % (sorted(got), sorted(line.values())))
    bad = 1
if j["cuda"]["torch_allocator"] != "async" or not j["cuda"]["torch_tensors_by_ndmem"]:
    print("FAIL: cuda %s" % j["cuda"])
    bad = 1
if native["cuda"]["torch_allocator"] != "native":
    print("FAIL: with backend:native the report says %s" % native["cuda"]["torch_allocator"])
    bad = 1
sys.exit(bad)
PY
# live at exit: the kept history and the cache, at their lines
for name in history cache; do
  n=$(grep -n "# TENSOR $name" "$script" | cut -d: -f1)
  sed -n '/^== live at exit/,/^== /p' "$tmp/report.txt" | grep -q "torch_tensors.py:$n)" ||
    no "live at exit lacks $name (line $n)"
done
exit $fail
