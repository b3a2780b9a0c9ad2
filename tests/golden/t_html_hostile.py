#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_html_hostile: names an attacker chooses reach the HTML page only escaped. gen_trace
# html-hostile puts markup, quotes, '&', ']]>', control bytes, malformed UTF-8 (a lone lead
# byte, a surrogate), a noncharacter and a C1 control into the program's path, a library's path,
# a Python function's name and file, and a workspace's name. The page must be strict
# (t_html_valid.check: UTF-8, no character HTML calls a parse error, well-formed as XML), hold
# '<script' only once (the page's own), and show each name escaped exactly: markup as entities, the bytes HTML cannot carry
# as \xNN, the well-formed 'é' as itself, in the title, the heading, the stacks, the legend of the
# top sites, the Python lines and the workspaces.
# usage: t_html_hostile.py NDMEMREPORT GEN_TRACE TMPDIR
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from t_html_valid import check  # noqa: E402

report, gen, tmp = sys.argv[1:4]
os.makedirs(tmp, exist_ok=True)
trace, page = os.path.join(tmp, "html-hostile.trace"), os.path.join(tmp, "html-hostile.html")
subprocess.run([gen, "html-hostile", trace], check=True)
# gen_trace.c's HOSTILE as the page must show it.
H = ("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;]]&gt;"
     "\\x01\\x1b\\xff\\xc3(\\xed\\xa0\\x80\\xef\\xbf\\xbe\\xc2\\x85\u00e9")
WS = "&lt;script&gt;&quot;&#39;&amp;]]&gt;\\x01\\xff"
fails = []
try:
    with open(page, "wb") as f:
        rc = subprocess.run([report, "--format", "html", trace], stdout=f).returncode
    if rc != 0:
        fails.append(f"ndmemreport exit {rc}")
    errs, _ = check(page)
    fails += [f"invalid page: {e}" for e in errs]
    raw = open(page, "rb").read()
    if raw.lower().count(b"<script") != 1 or b"<script>\n//<![CDATA[" not in raw:
        fails.append("'<script' in the page other than the page's own")
    text = raw.decode("utf-8", errors="replace")
    for where, s in [
            ("title", f"<title>ndmem: /nonexistent/{H}/bin (pid 666)</title>"),
            ("heading", f"<h1>ndmem report: /nonexistent/{H}/bin</h1>"),
            ("a stack's library", f'<li><span class="at">/nonexistent/lib{H}.so+0x100</span></li>'),
            ("a stack's program", f'<li><span class="at">/nonexistent/{H}/bin+0x1000</span></li>'),
            ("a stack's Python frame",
             f'<li><b>{H}</b> <span class="at">/nonexistent/{H}.py:3</span> <i>py</i></li>'),
            # the library's base name: what follows the '/' of '</script>'
            ("the legend's library",
             f"#1 heap, peak 2.00 MiB: {H.split('&lt;/', 1)[1]}.so+0x100</text>"),
            # the program's line first (its file's base name), its function beside it, cut
            ("the legend's Python frame",
             f"#2 heap, peak 1.00 MiB: {H.split('&lt;/', 1)[1]}.py:3 ({H[:40]}"),
            ("the Python lines",
             f'<td><b>{H}</b> <span class="at">/nonexistent/{H}.py:3</span></td>'),
            ("the workspaces", f"<tr><td>{WS}</td><td class=\"n\">666</td>")]:
        if s not in text:
            fails.append(f"{where}: not shown escaped as {s!r}")
finally:
    for p in (trace, page):
        if os.path.exists(p):
            os.unlink(p)
for f in fails:
    print("FAIL:", f)
if not fails:
    print("ok: hostile names escaped in every place, the page strict, no <script but its own")
sys.exit(1 if fails else 0)
