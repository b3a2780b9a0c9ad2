#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_html_valid: every golden HTML report (ndmemreport --format html) parses with the standard
# library's html.parser into balanced non-void elements, has the timeline's inline <svg>, the
# three flame graphs' (by peak, total and live) when it has sites, at most one of the top sites
# over time and one stacked chart per kind, no other, with at least one <polyline> or <path>
# carrying points, and references nothing outside itself (no link, img, external URL, nor a
# script but the page's own inline one, last in <body>): the page must read offline. Strictly: it is UTF-8, holds no character HTML calls a parse error in its
# input (controls, noncharacters), and with its doctype dropped and its void elements closed it
# parses as XML (xml.etree): every '<' and '&' from the trace was escaped.
# usage: t_html_valid.py FILE.html... (check() is imported by t_html_thin.py and t_html_hostile.py)
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
# SVG elements written self-closed (<line/>): html.parser reports them as startendtag.


class Check(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors = [], []
        self.svgs, self.plots, self.scripts = [], 0, []

    def handle_startendtag(self, tag, attrs):
        self.plot(tag, attrs)

    def handle_starttag(self, tag, attrs):
        self.plot(tag, attrs)
        if tag in ("link", "img", "iframe", "object", "embed"):
            self.errors.append(f"external element <{tag}> at {self.getpos()}")
        if tag == "script":
            self.scripts.append((self.getpos(), [s for s, _ in self.stack]))
            if attrs:
                self.errors.append(f"<script> with attributes {attrs} at {self.getpos()}")
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                self.errors.append(f"reference {k}={v!r} at {self.getpos()}")
        if tag == "svg":
            self.svgs.append(dict(attrs).get("aria-label"))
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


# Characters HTML's tokenizer reports as parse errors in the input stream (besides NUL).
BAD_CHARS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]")
VOID_TAG = re.compile(r"<(%s)\b([^>]*)>" % "|".join(sorted(VOID)))


def strict_xml(text):
    """The page as XML: the doctype dropped, void elements closed. An error string, or None."""
    body = text.split("\n", 1)[1] if text.startswith("<!DOCTYPE html>") else text
    body = VOID_TAG.sub(lambda m: "<%s%s/>" % (m.group(1), m.group(2).rstrip("/")), body)
    try:
        ET.fromstring(body)
    except ET.ParseError as e:
        return f"not well-formed as XML: {e}"
    return None


def check(path):
    """The page's errors (a list, empty when valid) and its checker (svgs, plots)."""
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        return [f"not UTF-8: {e}"], None
    c = Check()
    c.feed(text)
    c.close()
    errs = c.errors + [f"unclosed <{t}> from {p}" for t, p in c.stack]
    if not text.startswith("<!DOCTYPE html>"):
        errs.append("no <!DOCTYPE html> first")
    if c.svgs.count("live bytes per kind over time") != 1:
        errs.append(f"<svg> elements {c.svgs}: want the timeline's once")
    if c.svgs.count("live bytes of the top sites over time") > 1:
        errs.append(f"<svg> elements {c.svgs}: want the top sites' at most once")
    flames = [s for s in c.svgs if s and s.startswith("flame graph by ")]
    # 4 where the trace has a peak moment (PEAK records, version 15): live at the peak first
    at_peak = flames and flames[0] == "flame graph by live at the peak"
    if flames and len(flames) != (4 if at_peak else 3):
        errs.append(f"flame graphs {flames}: want 3 (peak, total, live), 4 with live at the peak")
    stacks = [s for s in c.svgs if s and s.endswith(" live bytes over time by site")]
    if len(stacks) != len(set(stacks)):
        errs.append(f"stacked charts {stacks}: one per kind")
    other = [s for s in c.svgs if s not in flames + stacks + [
        "live bytes per kind over time", "live bytes of the top sites over time"]]
    if other:
        errs.append(f"<svg> elements {other}: not expected")
    # The page's own script: one, inline, in <body>, its text in a CDATA section.
    if len(c.scripts) > 1 or (c.scripts and c.scripts[0][1] != ["html", "body"]):
        errs.append(f"scripts {c.scripts}: want at most one, inline, directly in <body>")
    if c.scripts and "<script>\n//<![CDATA[\n" not in text:
        errs.append("the script's text is not in a CDATA section")
    if not c.plots:
        errs.append("no <polyline> with points nor <path> in the page")
    m = BAD_CHARS.search(text)
    if m:
        errs.append(f"character U+{ord(m.group()):04X} at offset {m.start()}")
    x = strict_xml(text)
    if x:
        errs.append(x)
    return errs, c


if __name__ == "__main__":
    fail = 0
    for path in sys.argv[1:]:
        errs, c = check(path)
        for e in errs:
            print(f"FAIL: {path}: {e}")
        fail |= bool(errs)
        if not errs:
            print(f"ok: {path}: balanced, strict, {len(c.svgs)} svg, {c.plots} plotted shapes")
    sys.exit(fail)
