#!/bin/sh
# SPDX-License-Identifier: MIT
# t_torch_place: growth at a line of the program that calls a library function (torch_place.py
# keeps what torch.nn.functional.relu returns) is placed at the program's line first, the
# library's frame beside it, in every format: text ("at torch_place.py:L, in relu
# (functional.py:N)" before the entry's stack), JSON (the entry's "place", "program_frame" and
# "library_frame") and HTML (the "What grew" card's row, by how much it grew, "+"). L is the KEEP
# line, N the line of relu's call to torch.relu in the installed torch. Skips (77) without an
# interpreter that imports torch.
# usage: t_torch_place.sh NDMEM NDMEMREPORT SCRIPT
set -u
tool=$1 rep=$2 script=$3
py=$(sh "$(dirname "$0")/../find-python.sh" torch) || { echo "skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
# flushes every 50 ms: windows enough in a run of about 2 s to judge growth
NDMEM_FLUSH_MS=50 "$tool" run --no-summary --output="$tmp/t.trace" -- "$py" "$script" \
  >"$tmp/out" 2>"$tmp/err" || { echo "the job failed" >&2; cat "$tmp/err" >&2; exit 1; }
"$rep" "$tmp/t.trace" >"$tmp/t.txt" && "$rep" --format json "$tmp/t.trace" >"$tmp/t.json" &&
  "$rep" --format html "$tmp/t.trace" >"$tmp/t.html" || { echo "ndmemreport failed" >&2; exit 1; }
"$py" - "$script" "$tmp" <<'PY'
import inspect, json, os, re, sys
import torch.nn.functional as F
script, tmp = sys.argv[1:3]
line = next(i for i, l in enumerate(open(script), 1) if "# KEEP" in l)
src, first = inspect.getsourcelines(F.relu)
relu_line = first + next(i for i, l in enumerate(src) if "torch.relu(input)" in l)
relu_file = os.path.realpath(inspect.getsourcefile(F.relu))
place = "%s:%d, in relu (functional.py:%d)" % (os.path.basename(script), line, relu_line)
bad = []
text = open(os.path.join(tmp, "t.txt")).read()
d = json.load(open(os.path.join(tmp, "t.json")))
html = open(os.path.join(tmp, "t.html")).read()
# JSON: the growth entry of the KEEP line, its place and both frames exact
groups = [g for g in d["leaks"]["groups"] if g["class"] in ("growing", "released_at_teardown")]
want_own = {"python": True, "function": "<module>", "file": os.path.realpath(script), "line": line}
mine = [g for g in groups if g["program_frame"] and
        dict(g["program_frame"], file=os.path.realpath(g["program_frame"]["file"])) == want_own]
if len(mine) != 1:
    bad.append("JSON: %d growth entries at %s:%d, want 1: %r" % (
        len(mine), script, line, [(g["class"], g["place"]) for g in groups]))
else:
    g = mine[0]
    lib = g["library_frame"] or {}
    if g["place"] != place:
        bad.append("JSON: place %r, want %r" % (g["place"], place))
    if (lib.get("python"), lib.get("function"), os.path.realpath(lib.get("file") or ""),
            lib.get("line")) != (True, "relu", relu_file, relu_line):
        bad.append("JSON: library_frame %r, want relu at %s:%d" % (lib, relu_file, relu_line))
    # the growth: 200 tensors of 16384 floats (64 KiB each), all kept but the ones before the
    # steady state; at least half of them seen growing
    if not 100 * 65536 <= g["growth"]["bytes"] <= 200 * 65536:
        bad.append("JSON: growth %d B, want 100 to 200 tensors of 65536 B" % g["growth"]["bytes"])
    grew = g["growth"]["bytes"]
# text: the entry's place line before its stack
if ("\n      at %s\n" % place) not in text:
    bad.append("text: no line 'at %s'" % place)
# HTML: the What grew card names the place, by how much it grew ("+")
card = html[html.find("<h2>What grew</h2>"):]
card = card[:card.find("</section>")]
m = re.search(r'<span class="v">\+<span title="(\d+) B">[^<]*</span></span> '
              r'<span class="tag">[^<]*</span> <span class="nm">([^<]*)</span>', card)
if not m or m.group(2) != place:
    bad.append("HTML: What grew's row %r, want %r" % (m and m.group(2), place))
elif mine and int(m.group(1)) != grew:
    bad.append("HTML: What grew's row +%s B, JSON's growth %d B" % (m.group(1), grew))
for b in bad:
    print("FAIL:", b, file=sys.stderr)
if not bad:
    print("ok: %s in text, JSON and HTML" % place)
sys.exit(1 if bad else 0)
PY
