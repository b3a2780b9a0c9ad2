#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_html_bands: the over-time chart's bands are chosen by growth as well as by size, and a stack
# cut at NDMEM_DEPTH names its marker frame. gen_trace html-bands writes a job of 10 flushes
# (100 ms apart): seven temporary sites of 8 MiB + i KiB (i = 0..6) freed within each window, and
# a leak of 256 KiB a window (2.50 MiB at the end, its floor risen 2.25 MiB in 9 windows) whose
# stack is prog+0x2000, the cut marker, train_step (train.py:46), <module> (train.py:60). By peak
# alone the heap's 6 bands were the 6 largest temporaries and the leak was in "other". Asserts:
# the heap chart's bands are exactly the 5 largest temporaries and the leak, #6, named
# train.py:46 (train_step), its legend "#6 peak 2.50 MiB, floor rose 2.25 MiB: ..."; its band
# holds exactly 256 KiB * k at flush k and "other" 0 at every point; the marker frame is named
# "[native frames past NDMEM_DEPTH not recorded]" in the flame graph's frames and in the stack
# lists, never "0x1"; --format collapsed names it the same in the leak's line.
# usage: t_html_bands.py NDMEMREPORT GEN_TRACE TMPDIR
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from t_html_valid import check  # noqa: E402

report, gen, tmp = sys.argv[1:4]
os.makedirs(tmp, exist_ok=True)
trace, page = os.path.join(tmp, "html-bands.trace"), os.path.join(tmp, "html-bands.html")
subprocess.run([gen, "html-bands", trace], check=True)
CUT = "[native frames past NDMEM_DEPTH not recorded]"
LEAK = "train.py:46 (train_step)"  # its place: the program's line first (analyse/place.c)
fails = []


def want(cond, what):
    if not cond:
        fails.append(what)


try:
    with open(page, "wb") as f:
        subprocess.run([report, "--format", "html", trace], stdout=f, check=True)
    errs, _ = check(page)
    want(not errs, f"invalid page: {errs}")
    text = open(page, encoding="utf-8").read()

    figs = re.findall(r'<figure class="stackfig">(.*?)</figure>', text, re.S)
    heap = [f for f in figs if 'data-kind="heap"' in f]
    want(len(heap) == 1, f"{len(heap)} heap charts, want 1")
    fig = heap[0] if heap else ""
    bands = re.findall(r'<polygon class="band" fill="[^"]*" data-v="([^"]*)" points="[^"]*" '
                       r'data-name="([^"]*)"', fig)
    names = [n for _, n in bands]
    temps = ["#%d prog+0x%x" % (b + 1, 0x1160 - 0x10 * b) for b in range(5)]
    want(names == temps + ["#6 " + LEAK, "other"], f"heap bands {names}")
    v = dict((n, d.split()) for d, n in bands)
    mib = 1024 * 1024
    want(v.get("#6 " + LEAK) == [str(k * 256 * 1024) for k in range(1, 11)],
         f"the leak's band {v.get('#6 ' + LEAK)}, want 256 KiB * k at flush k")
    want(v.get("other") == ["0"] * 10, f"other {v.get('other')}, want 0 at every point")
    legend = re.findall(r'<text class="lab" x="\d+" y="\d+">(#\d[^<]*)</text>', fig)
    want("#6 peak 2.50 MiB, floor rose 2.25 MiB: " + LEAK in legend, f"legend {legend}")
    want(not any("floor rose" in t for t in legend[:5]),
         f"a temporary's legend says its floor rose: {legend[:5]}")

    frames = re.findall(r'<g class="fr"[^>]*><title>([^\n]*)\n', text)
    want(CUT in frames, "no flame graph frame named %r (frames: %s)" % (CUT, frames[:12]))
    want("0x1" not in frames, "a flame graph frame named 0x1")
    want("<li><i>%s</i></li>" % CUT in text, "the stack lists do not name the marker")
    want("<li>0x1</li>" not in text, "a stack list holds a frame named 0x1")

    out = subprocess.run([report, "--format", "collapsed", trace], capture_output=True,
                         check=True, text=True)
    want(out.stdout.splitlines()[-1:] == [
        "<module> (/nonexistent/app/train.py:60);train_step (/nonexistent/app/train.py:46);%s;"
        "/nonexistent/bin/prog+0x2000 %d" % (CUT, 10 * 256 * 1024)],
        f"collapsed: the leak's line {out.stdout.splitlines()[-1:]}")
finally:
    for p in (trace, page):
        if os.path.exists(p):
            os.unlink(p)

for f in fails:
    print("FAIL:", f)
if not fails:
    print("ok: the leak has band #6 beside the 5 largest temporaries, exact at every point, "
          "other 0; the cut marker named in frames, stacks and collapsed")
sys.exit(1 if fails else 0)
