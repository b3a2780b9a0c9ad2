#!/bin/sh
# SPDX-License-Identifier: MIT
# t_cuda_fork: t_cuda_fork runs under the shim with NDMEM_OUTPUT=.../t.%p.trace; the child's own
# trace has the 2 MiB of device memory it left live at exit (device0, 2097152 bytes, at
# t_cuda_fork.c's LEAK line); the parent's trace has no device leak and never saw those bytes.
# usage: t_cuda_fork.sh LIBNDMEM T_CUDA_FORK NDMEMREPORT SOURCE PYTHON FAKECUDA_DIR
set -u
lib=$1 prog=$2 rep=$3 src=$4 py=$5 fakedir=$6
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
base=$(basename "$src")
leak_line=$(grep -n '// LEAK:child' "$src" | head -1 | cut -d: -f1)

NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/t.%p.trace" LD_LIBRARY_PATH="$fakedir" LD_PRELOAD="$lib" \
  "$prog" shim >"$tmp/out" || { echo "the program failed" >&2; cat "$tmp/out" >&2; exit 1; }
set -- $(cat "$tmp/out")
[ "$1" = parent ] && [ "$3" = child ] || { echo "unexpected output: $*" >&2; exit 1; }
parent=$2 child=$4
for who in parent child; do
  eval pid=\$$who
  if [ ! -s "$tmp/t.$pid.trace" ]; then
    echo "no trace of the $who (pid $pid)" >&2
    ls -l "$tmp" >&2
    exit 1
  fi
  "$rep" --format json "$tmp/t.$pid.trace" >"$tmp/$who.json" ||
    { echo "ndmemreport failed on the $who's trace" >&2; exit 1; }
done

"$py" - "$tmp/child.json" "$tmp/parent.json" "$base" "$leak_line" <<'PY'
import json, os, sys
child, parent = (json.load(open(p)) for p in sys.argv[1:3])
base, line = sys.argv[3], int(sys.argv[4])
errors = []

def device_leaks(doc):
    return [g for g in doc["leaks"]["groups"] if g["kind"].startswith("device")]

def device0(doc):
    k = [k for k in doc["counters"]["kinds"] if k["kind"] == "device0"]
    return k[0] if k else None

got = [(g["bytes"], g["blocks"], [f["line"] for f in g["frames"]
        if f.get("file") and os.path.basename(f["file"]) == base][:1]) for g in device_leaks(child)]
if got != [(2097152, 1, [line])]:
    errors.append("child: want one device0 leak of 2097152 bytes at %s:%d, got %s"
                  % (base, line, got))
d = device0(child)
if not d or d["live_bytes"] != 2097152 or d["allocs"] != 1:
    errors.append("child: device0 counters %s" % d)
if device_leaks(parent):
    errors.append("parent: device leaks %s" % device_leaks(parent))
d = device0(parent)
if not d or d["peak_bytes"] != 1048576 or d["live_bytes"] != 0 or d["allocs"] != 1:
    errors.append("parent: device0 counters should be peak 1048576, live 0, 1 alloc: %s" % d)
for e in errors:
    print("FAIL: " + e, file=sys.stderr)
if not errors:
    print("ok: the child's trace has its 2 MiB at %s:%d, the parent's has none" % (base, line))
sys.exit(1 if errors else 0)
PY
