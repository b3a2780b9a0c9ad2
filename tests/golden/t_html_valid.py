#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_html_valid: every golden HTML report (ndmemreport --format html) parses with the standard
# library's html.parser into balanced non-void elements, has one inline <svg> with at least one
# <polyline> or <path> carrying points, and references nothing outside itself (no script, link,
# img or external URL): the page must read offline.
# usage: t_html_valid.py FILE.html...
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
# SVG elements written self-closed (<line/>): html.parser reports them as startendtag.


class Check(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors = [], []
        self.svgs = self.plots = 0

    def handle_startendtag(self, tag, attrs):
        self.plot(tag, attrs)

    def handle_starttag(self, tag, attrs):
        self.plot(tag, attrs)
        if tag in ("script", "link", "img", "iframe", "object"):
            self.errors.append(f"external or scripted element <{tag}> at {self.getpos()}")
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                self.errors.append(f"reference {k}={v!r} at {self.getpos()}")
        if tag == "svg":
            self.svgs += 1
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def plot(self, tag, attrs):
        a = dict(attrs)
        if tag == "polyline" and len((a.get("points") or "").split()) >= 1:
            self.plots += 1
        if tag == "path" and (a.get("d") or "").strip():
            self.plots += 1

    def handle_endtag(self, tag):
        if tag in VOID:
            self.errors.append(f"end tag of void element </{tag}> at {self.getpos()}")
            return
        if not self.stack or self.stack[-1][0] != tag:
            want = self.stack[-1] if self.stack else None
            self.errors.append(f"</{tag}> at {self.getpos()} closes {want}")
            return
        self.stack.pop()


fail = 0
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    c = Check()
    c.feed(text)
    c.close()
    errs = c.errors + [f"unclosed <{t}> from {p}" for t, p in c.stack]
    if not text.startswith("<!DOCTYPE html>"):
        errs.append("no <!DOCTYPE html> first")
    if c.svgs != 1:
        errs.append(f"{c.svgs} <svg> elements, want 1")
    if not c.plots:
        errs.append("no <polyline> with points nor <path> in the page")
    for e in errs:
        print(f"FAIL: {path}: {e}")
    fail |= bool(errs)
    if not errs:
        print(f"ok: {path}: balanced, {c.plots} plotted shapes")
sys.exit(fail)
