#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_html_thin: the HTML timeline of a trace with more COUNTERS records than it keeps. gen_trace
# html-long writes 10000 flushes 10 ms apart (COUNTERS record k at 10 (k + 1) ms); the reader
# keeps records 0, 4, ..., 9996 and the latest, 9999: 2501 points. Every polyline of both plots
# (the kinds' and the top sites') must have exactly those points, the first and the latest
# record's at their exact coordinates, and the top sites' values must be the truth at each
# point: site 1 (k + 1) * 4 KiB, site 2 (k // 100 + 1) * 64 KiB, which only every 100th flush
# writes (between them it keeps its value). Then the same trace through a pipe: the second read
# is skipped with a note, the timeline still drawn.
# usage: t_html_thin.py NDMEMREPORT GEN_TRACE TMPDIR
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from t_html_valid import check  # noqa: E402

report, gen, tmp = sys.argv[1:4]
os.makedirs(tmp, exist_ok=True)
trace, page = os.path.join(tmp, "html-long.trace"), os.path.join(tmp, "html-long.html")
subprocess.run([gen, "html-long", trace], check=True)
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

    # The plot's frame: x from ML = 84 over PW = 726 px to 120 s (END at 100.01 s, ticks of 20 s);
    # y from MT + PH = 336 up PH = 300 px to 50 MiB (kinds: 47513600 B at the end, ticks of 10
    # MiB) or 40 MiB (sites: 40960000 B, ticks of 10 MiB).
    def x(k):
        return "%.1f" % (84 + 10 * (k + 1) / 1000 / 120 * 726)

    def y(v, mib):
        return "%.1f" % (336 - v / (mib * 1048576) * 300)

    kept = list(range(0, 10000, 4)) + [9999]
    assert len(kept) == 2501
    lines = re.findall(r'<polyline class="series( site)?"[^>]* points="([^"]*)"><title>([^<]*)<',
                       text)
    kinds = [(t, p.split()) for s, p, t in lines if not s]
    sites = [(t, p.split()) for s, p, t in lines if s]
    want([t for t, _ in kinds] == ["heap"], f"kind polylines {[t for t, _ in kinds]}")
    want(len(sites) == 2, f"{len(sites)} site polylines, want 2")
    for title, pts in kinds + sites:
        want(len(pts) == 2501, f"{title}: {len(pts)} points, want 2501 (<= 4096)")
        want([p.split(",")[0] for p in pts] == [x(k) for k in kept],
             f"{title}: x coordinates are not records 0, 4, ..., 9996, 9999")
    heap = dict(kinds).get("heap", [])
    if len(heap) == 2501:
        want(heap[0] == f"{x(0)},{y(4096 + 65536, 50)}", f"heap first point {heap[0]}")
        want(heap[-1] == f"{x(9999)},{y(40960000 + 6553600, 50)}", f"heap latest point {heap[-1]}")
    for n, (title, pts) in enumerate(sites):
        if len(pts) != 2501:
            continue
        truth = [(k + 1) * 4096 if n == 0 else (k // 100 + 1) * 65536 for k in kept]
        got = [p.split(",")[1] for p in pts]
        bad = [i for i in range(2501) if got[i] != y(truth[i], 40)]
        want(not bad, f"site #{n + 1} ({title}): {len(bad)} points off the truth, first at "
             f"record {kept[bad[0]] if bad else 0}")
    want("2501 points of 10000 COUNTERS records (every 4th kept, and the latest)" in text,
         "the timeline's note does not say 2501 points of 10000, every 4th and the latest")
    want("at the 2501 points of the timeline above" in text, "the sites' note does not say 2501")

    # A pipe is read once: the sites over time are skipped, saying why; the rest is drawn.
    with open(trace, "rb") as f:
        data = f.read()
    out = subprocess.run([report, "--format", "html", "/dev/stdin"], input=data,  # a pipe
                         capture_output=True, check=False)
    want(out.returncode == 0 and not out.stderr, f"through a pipe: exit {out.returncode}, "
         f"stderr {out.stderr[:200]!r}")
    piped = out.stdout.decode("utf-8")
    want("The input is not a regular file (a pipe)" in piped, "through a pipe: no note")
    want('aria-label="live bytes of the top sites over time"' not in piped and
         'class="series site"' not in piped, "through a pipe: the top sites drawn")
    want(len(re.findall(r'<polyline class="series" [^>]*points="([^"]*)"', piped)) == 1,
         "through a pipe: no timeline")

    # A named pipe too, which the second read must not open again (it would wait for a writer).
    fifo = os.path.join(tmp, "html-long.fifo")
    os.mkfifo(fifo)
    feeder = subprocess.Popen(["cp", trace, fifo])
    try:
        out = subprocess.run([report, "--format", "html", fifo], capture_output=True,
                             check=False, timeout=60)
        want(out.returncode == 0 and "The input is not a regular file (a pipe)" in
             out.stdout.decode("utf-8"), f"through a named pipe: exit {out.returncode}, no note")
    except subprocess.TimeoutExpired:
        want(False, "through a named pipe: no answer in 60 s (opened again, waiting for a writer)")
    feeder.wait(timeout=60)
finally:
    for p in (trace, page, os.path.join(tmp, "html-long.fifo")):
        if os.path.exists(p):
            os.unlink(p)

for f in fails:
    print("FAIL:", f)
if not fails:
    print("ok: 2501 points per polyline of 10000 records, first and latest exact; sites' values "
          "true at every point; a pipe skips the second read with a note")
sys.exit(1 if fails else 0)
