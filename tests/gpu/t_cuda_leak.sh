#!/bin/sh
# SPDX-License-Identifier: MIT
# t_cuda_leak: t_cuda_leak runs under the shim; ndmemreport's text report lists the device leak
# as device0, 3.00 MiB, at t_cuda_leak.c:LINE (and the pinned one as pinned, 1.00 MiB, at its
# line), and its JSON has exactly those leak groups of the program's own lines, with kind
# "device0" and bytes 3145728, kind "pinned" and bytes 1048576; the freed temporary is in none.
# usage: t_cuda_leak.sh LIBNDMEM T_CUDA_LEAK NDMEMREPORT SOURCE PYTHON FAKECUDA_DIR
set -u
lib=$1 prog=$2 rep=$3 src=$4 py=$5 fakedir=$6
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
base=$(basename "$src")
line_of() { grep -n "$1" "$src" | head -1 | cut -d: -f1; }
dev_line=$(line_of '// LEAK:device0')
pin_line=$(line_of '// LEAK:pinned')
tmp_line=$(line_of '// TEMP:device0')

NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/t.%p.trace" LD_LIBRARY_PATH="$fakedir" LD_PRELOAD="$lib" \
  "$prog" shim || { echo "the program failed" >&2; exit 1; }
trace=$(ls "$tmp"/t.*.trace 2>/dev/null | head -1)
[ -n "$trace" ] || { echo "no trace in $tmp" >&2; exit 1; }
"$rep" "$trace" >"$tmp/r.txt" || { echo "ndmemreport failed" >&2; exit 1; }
"$rep" --format json "$trace" >"$tmp/r.json" ||
  { echo "ndmemreport --format json failed" >&2; exit 1; }

# text: the leak sections only (growing, released at teardown, live at exit)
awk '/^== / { on = ($0 ~ /^== (growing|released at teardown|live at exit)/) } on' "$tmp/r.txt" \
  >"$tmp/leaks.txt"
# entry_has KIND SIZE LINE: the leak entry headed "#N KIND SIZE" lists base:LINE among its frames
entry_has() {
  awk -v kind="$1" -v size="$2" -v want="$base:$3)" '
    /^#[0-9]/ { inentry = ($2 == kind && index($0, size) > 0) }
    inentry && index($0, want) > 0 { found = 1 }
    END { exit !found }' "$tmp/leaks.txt"
}
entry_has device0 "3.00 MiB (3145728 B)" "$dev_line" ||
  { echo "text report: no device0 3.00 MiB leak at $base:$dev_line" >&2; fail=1; }
entry_has pinned "1.00 MiB (1048576 B)" "$pin_line" ||
  { echo "text report: no pinned 1.00 MiB leak at $base:$pin_line" >&2; fail=1; }
if grep -q -F "$base:$tmp_line)" "$tmp/leaks.txt"; then
  echo "text report: the freed temporary at $base:$tmp_line is listed as a leak" >&2
  fail=1
fi
[ $fail -eq 0 ] || cat "$tmp/r.txt" >&2

"$py" - "$tmp/r.json" "$base" "$dev_line" "$pin_line" "$tmp_line" <<'PY' || fail=1
import json, os, sys
report, base, dev_line, pin_line, tmp_line = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
doc = json.load(open(report))
want = {dev_line: ("device0", 3145728, 1), pin_line: ("pinned", 1048576, 1)}
got, errors = {}, []
if not doc["leaks"]["known"]:
    errors.append("leaks not known")
for g in doc["leaks"]["groups"]:
    lines = [f["line"] for f in g["frames"]
             if f.get("file") and os.path.basename(f["file"]) == base]
    if not lines:
        continue
    if lines[0] == tmp_line:
        errors.append("the freed temporary at line %d is a leak group" % tmp_line)
    got.setdefault(lines[0], []).append((g["kind"], g["bytes"], g["blocks"]))
for line, w in sorted(want.items()):
    if got.get(line) != [w]:
        errors.append("%s:%d: want one group %s, got %s" % (base, line, w, got.get(line)))
    else:
        print("ok %s:%d %s %d bytes" % (base, line, w[0], w[1]))
dev = [k for k in doc["counters"]["kinds"] if k["kind"] == "device0"]
if len(dev) != 1 or dev[0]["live_bytes"] != 3145728 or dev[0]["peak_bytes"] != 8388608:
    errors.append("counters: device0 should be live 3145728, peak 8388608: %s" % dev)
for e in errors:
    print("FAIL: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
exit $fail
