#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_svg_valid: ndmemreport --format svg, by each --flame-by, of every trace given: the file parses
# as XML (xml.etree), is one <svg> with no script and no reference outside itself, and its flame
# graph adds up: exactly one root, as wide as the whole measure (data-total, and the full 1180 px
# of the picture's width less its margins); every frame's <rect> as wide as its share of it; a
# child never wider than its parent, the children together no wider either, each inside its
# parent's span and one row below it; every frame has a <title>, and a label only where it fits.
# The default measure (live at the process's peak moment, or at the end where a trace has no
# moment) is memory that existed: the SVG's and the HTML page's default width are at most the sum
# of the kinds' exact peaks (the JSON report's counters), on every trace.
# usage: t_svg_valid.py NDMEMREPORT TRACE...
import subprocess
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
WIDTH, MARGIN, ROW, CHAR = 1200, 10, 18, 7
report, traces = sys.argv[1], sys.argv[2:]
fails, frames_seen = [], 0


def check(name, data):
    global frames_seen
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        return [f"not XML: {e}"]
    errs = []
    if root.tag != NS + "svg":
        errs.append(f"root element {root.tag}")
    for el in root.iter():
        if el.tag in (NS + "script", NS + "foreignObject", NS + "image", NS + "use"):
            errs.append(f"element {el.tag}")
        for k, v in el.attrib.items():
            if k.endswith("href"):
                errs.append(f"reference {k}={v!r}")
    total = int(root.get("data-total", "-1"))
    nodes = {}
    for g in root.iter(NS + "g"):
        if g.get("class") != "fr":
            continue
        rect, title, text = g.find(NS + "rect"), g.find(NS + "title"), g.find(NS + "text")
        if rect is None or title is None or not (title.text or "").strip():
            errs.append(f"frame {g.get('data-i')} without a rect or a title")
            continue
        nodes[int(g.get("data-i"))] = dict(
            p=int(g.get("data-p")), w=int(g.get("data-w")), x=float(rect.get("x")),
            y=int(rect.get("y")), px=float(rect.get("width")), text=text.text if text is not None
            else None, name=title.text.split("\n")[0])
    frames_seen += len(nodes)
    roots = [i for i, n in nodes.items() if n["p"] == -1]
    if len(roots) != 1:
        return errs + [f"{len(roots)} roots"]
    r = nodes[roots[0]]
    if r["w"] != total:
        errs.append(f"root weight {r['w']} != data-total {total}")
    if total and abs(r["px"] - (WIDTH - 2 * MARGIN)) > 0.01:
        errs.append(f"root width {r['px']} px, want {WIDTH - 2 * MARGIN}")
    kids = {}
    for i, n in nodes.items():
        if total and abs(n["px"] - n["w"] / total * (WIDTH - 2 * MARGIN)) > 0.011:
            errs.append(f"frame {i}: {n['px']} px for {n['w']} of {total}")
        if n["text"] is not None:
            fit = int((n["px"] - 6) / CHAR)
            if len(n["text"]) > fit or (len(n["name"]) > fit and not n["text"].endswith("..")):
                errs.append(f"frame {i}: label {n['text']!r} does not fit {n['px']} px")
        if n["p"] == -1:
            continue
        p = nodes.get(n["p"])
        if p is None:
            errs.append(f"frame {i}: parent {n['p']} not in the picture")
            continue
        kids.setdefault(n["p"], []).append(n)
        if n["w"] > p["w"]:
            errs.append(f"frame {i} ({n['w']}) wider than its parent ({p['w']})")
        if n["x"] < p["x"] - 0.02 or n["x"] + n["px"] > p["x"] + p["px"] + 0.02:
            errs.append(f"frame {i} outside its parent's span")
        if n["y"] != p["y"] + ROW:
            errs.append(f"frame {i} not one row below its parent")
    for i, ks in kids.items():
        if sum(k["w"] for k in ks) > nodes[i]["w"]:
            errs.append(f"frame {i}: children {sum(k['w'] for k in ks)} > its {nodes[i]['w']}")
    return errs


import json
import re


def kinds_peak(trace):
    out = subprocess.run([report, "--format", "json", trace], capture_output=True, text=True)
    c = json.loads(out.stdout).get("counters") or {}
    return sum(k["peak_bytes"] for k in c.get("kinds") or [])


for trace in traces:
    bound = kinds_peak(trace)
    svg = subprocess.run([report, "--format", "svg", trace], capture_output=True, text=True).stdout
    html = subprocess.run([report, "--format", "html", trace], capture_output=True,
                          text=True).stdout
    m = re.search(r'data-by="([a-z-]+)" data-total="(\d+)"', svg)
    if not m or m.group(1) != "peak" or int(m.group(2)) > bound:
        fails.append(f"{trace}: the SVG's default {m and m.groups()}, want peak within {bound}")
    # Live at the peak, or live at the end where the trace has no moment (no peak tab then).
    m = re.search(r'id="fm-([a-z-]+)"[^>]*checked', html)
    moment = 'id="fm-peak"' in html
    w = m and re.search(r'data-by="%s" data-total="(\d+)"' % m.group(1), html)
    if "No allocation site" not in html and (not m or m.group(1) != ("peak" if moment else "live")
                                             or not w or int(w.group(1)) > bound):
        fails.append(f"{trace}: the HTML page's default {m and m.group(1)}, "
                     f"{w and w.group(1)}, want peak within {bound}")
    for by in ("peak", "site-peak", "total", "live"):
        out = subprocess.run([report, "--format", "svg", "--flame-by", by, trace],
                             capture_output=True)
        name = f"{trace} --flame-by {by}"
        if out.returncode or out.stderr:
            fails.append(f"{name}: exit {out.returncode}, stderr {out.stderr[:200]!r}")
            continue
        fails += [f"{name}: {e}" for e in check(name, out.stdout)]
for f in fails:
    print("FAIL:", f)
if not fails:
    print(f"ok: {len(traces)} traces x 4 measures, {frames_seen} frames: XML, self-contained, "
          "widths add up")
sys.exit(1 if fails else 0)
