#!/bin/sh
# SPDX-License-Identifier: MIT
# t_exact: `ndmem run --exact` (NDMEM_TRACK_MIN=0) tracks every block, however small. The leaks
# at known lines are reported exactly (bytes, blocks, not estimated, at file:line), the freed
# blocks are not, and the trace adds up to the shim's own counters: as many heap blocks in the
# trace's leaks as the counters' live heap blocks, and the sites' allocations and frees equal the
# counters' (every allocation was tracked, every free untracked its block, realloc moved it).
# usage: t_exact.sh LIBNDMEM T_EXACT NDMEMREPORT CHECK_REPORT_PY SOURCE PYTHON NDMEM_TOOL
set -u
lib=$1 prog=$2 rep=$3 check=$4 src=$5 py=$6 tool=$7
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset NDMEM_TRACK_MIN
NDMEM_SUMMARY=0 "$tool" run --exact --lib "$lib" --no-report --output="$tmp/t.trace" -- "$prog" ||
  { echo "program failed" >&2; exit 1; }
"$rep" --format json --top 1000 "$tmp/t.trace" >"$tmp/r.json" || { echo "ndmemreport failed" >&2; exit 1; }
"$py" "$check" "$tmp/r.json" "$src" leaks "$(getconf PAGESIZE)" || exit 1
"$py" - "$tmp/r.json" "$src" <<'PY' || exit 1
import json, os, re, sys
doc = json.load(open(sys.argv[1]))
errors = []
# VIA:name N x SIZE: the one group (among the leaks) whose stack passes through that line
base = os.path.basename(sys.argv[2])
for n, text in enumerate(open(sys.argv[2]), 1):
    m = re.search(r"//\s*VIA:(\S+) (\d+) x (\d+)", text)
    if not m:
        continue
    want = (int(m.group(2)), int(m.group(2)) * int(m.group(3)))
    got = [(g["blocks"], g["bytes"]) for g in doc["leaks"]["groups"]
           if any(fr.get("file") and os.path.basename(fr["file"]) == base and fr["line"] == n
                  for fr in g["frames"])]
    if got != [want]:
        errors.append("%s:%d (%s): want one group %s, got %s" % (base, n, m.group(1), want, got))
if doc["tracking"]["track_min"] != 0:
    errors.append("track_min %r, want 0 (--exact)" % doc["tracking"]["track_min"])
kinds = {k["kind"]: k for k in doc["counters"]["kinds"]}
leaks = doc["leaks"]
if leaks["estimated"] or any(g["estimated"] for g in leaks["groups"]):
    errors.append("estimated leaks in exact mode")
for kind in ("heap", "mmap"):
    blocks = sum(g["blocks"] for g in leaks["groups"] if g["kind"] == kind)
    if blocks != kinds[kind]["live_count"]:
        errors.append("%s: %d blocks in the trace's leaks, %d live in the counters"
                      % (kind, blocks, kinds[kind]["live_count"]))
sites = [s for s in doc["sites"]["by_peak"]]
if len(sites) != doc["sites"]["count"]:
    errors.append("the report listed %d of %d sites" % (len(sites), doc["sites"]["count"]))
if any(s["sampled"] for s in sites):
    errors.append("sampled sites in exact mode")
for kind in ("heap", "mmap"):
    for what in ("allocs", "frees"):
        got = sum(s[what] for s in sites if s["kind"] == kind)
        if got != kinds[kind][what]:
            errors.append("%s %s: %d in the sites, %d in the counters"
                          % (kind, what, got, kinds[kind][what]))
for e in errors:
    print("FAIL: " + e, file=sys.stderr)
if not errors:
    print("ok: heap %d live blocks, %d allocs, %d frees: trace and counters agree"
          % (kinds["heap"]["live_count"], kinds["heap"]["allocs"], kinds["heap"]["frees"]))
sys.exit(1 if errors else 0)
PY
exit 0
