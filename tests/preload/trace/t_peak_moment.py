# SPDX-License-Identifier: MIT
# t_peak_moment: the flame graphs' default width is what was live at the process's peak moment
# (t_peak_moment.c says what that is, exactly): collapsed's default lines, the SVG's and the HTML
# page's default widths and headings; each site's own peak is the other measure, and its sum is
# more than the process held. The widths never pass the sum of the kinds' exact peaks.
# usage: python3 t_peak_moment.py LIBNDMEM T_PEAK_MOMENT NDMEMREPORT
import json
import os
import re
import subprocess
import sys
import tempfile

lib, prog, rep = sys.argv[1:4]
MIB = 1024 * 1024
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def report(trace, *args):
    p = subprocess.run([rep, *args, trace], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("ndmemreport %s exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def by_function(collapsed):
    """Each of the program's functions' weight in collapsed output (its innermost own frame)."""
    out = {}
    for line in collapsed.splitlines():
        stack, _, w = line.rpartition(" ")
        for name in ("keep", "alloc_a", "alloc_b", "alloc_c", "alloc_d"):
            if re.search(r"(^|;)%s( |;|$)" % name, stack):
                out[name] = out.get(name, 0) + int(w)
    return out


with tempfile.TemporaryDirectory() as tmp:
    trace = os.path.join(tmp, "t.trace")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NDMEM_")}
    env.update(LD_PRELOAD=lib, NDMEM_OUTPUT=trace, NDMEM_SUMMARY="0")
    p = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("program exit %d: %s" % (p.returncode, p.stderr))
    at_peak = by_function(report(trace, "--format", "collapsed"))
    want = {"keep": 1 * MIB, "alloc_b": 20 * MIB, "alloc_c": 20 * MIB}
    if at_peak != want:
        fail("collapsed (live at the peak) %r, want %r" % (at_peak, want))
    own = by_function(report(trace, "--format", "collapsed", "--collapsed-by", "site-peak"))
    want_own = {"keep": 1 * MIB, "alloc_a": 32 * MIB, "alloc_b": 20 * MIB, "alloc_c": 20 * MIB,
                "alloc_d": 8 * MIB}
    if own != want_own:
        fail("collapsed --collapsed-by site-peak %r, want %r" % (own, want_own))
    j = json.loads(report(trace, "--format", "json"))
    bound = sum(k["peak_bytes"] for k in j["counters"]["kinds"])
    svg = report(trace, "--format", "svg")
    m = re.search(r'data-by="([a-z-]+)" data-total="(\d+)"', svg)
    if not m or m.group(1) != "peak":
        fail("svg's default measure %r, want peak" % (m and m.group(1)))
    elif not (41 * MIB <= int(m.group(2)) < 42 * MIB) or int(m.group(2)) > bound:
        fail("svg's default width %s, want 41 MiB and the start-up's few bytes, within the "
             "kinds' peaks (%d)" % (m.group(2), bound))
    if "Width: live at the peak" not in svg or "s after the start, when heap and mappings held" not in svg:
        fail("svg's heading does not say which moment: %r" % re.findall(r"Width:[^<]*", svg))
    html = report(trace, "--format", "html")
    m = re.search(r'<input type="radio" name="fm" id="fm-([a-z-]+)"[^>]*checked', html)
    if not m or m.group(1) != "peak":
        fail("the HTML page's default tab %r, want peak" % (m and m.group(1)))
    m = re.search(r'data-by="peak" data-total="(\d+)"', html)
    if not m or not (41 * MIB <= int(m.group(1)) < 42 * MIB):
        fail("the HTML page's peak width %r, want 41 MiB" % (m and m.group(1)))
    if 'id="fmoment">Live at the peak' not in html:
        fail("the HTML page does not say which moment the width is")
    m = re.search(r'data-by="site-peak" data-total="(\d+)"', html)
    if not m or int(m.group(1)) < 81 * MIB:
        fail("the HTML page's own-peaks width %r, want 81 MiB and more" % (m and m.group(1)))
sys.exit(1 if failures else 0)
