# SPDX-License-Identifier: MIT
"""The growth verdict's "unchecked" line a report's JSON implies, for the tests that run verdicts
on real traces (t_corpus.py, t_verdict.py, t_short_growth.py), derived here from the trace's
settings as docs/leaks.md states the rule, not from ndmemreport's code.

Blocks under NDMEM_TRACK_MIN are recorded only when sampled, one per NDMEM_SAMPLE bytes on
average (a Poisson process over their bytes): growth of g bytes a cycle kept in them leaves the m
cycles of a quarter of the run without a recorded block with probability exp(-g m / R). The line
gives the smallest g at which each quarter keeps one in 99 runs of 100, ceil(R ln 400 / m), with
m = cycles // 4; per flush window (windows per quarter not in the JSON: any figure) in a job with
fewer than 8 cycles; at any rate where none is sampled or where too few windows judged a sampled
site's floor and blocks live at exit were judged by their births. No line where every block was
tracked, where growth was judged for no block, or where g is no more than the growth floor
(1 KiB a cycle, or 64 KiB in all)."""
import re

UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
LN400_E9 = 5991464548  # ln 400 = 5.991464547..., its ninth decimal rounded up


def human(v):
    """ndmemreport's bytes in a verdict line: "27.48 KiB (28136 B)", "512 B"."""
    if v < 1024:
        return "%d B" % v
    u, div = 0, 1
    while u < 6 and v // div >= 1024:
        div, u = div * 1024, u + 1
    h = (v * 100 + div // 2) // div
    return "%d.%02d %s (%d B)" % (h // 100, h % 100, UNITS[u], v)


def rate(report):
    """The figure per cycle (cycles enough) for a judged sampled trace, else None."""
    t, j = report["tracking"], report["leaks"]["growth_judged"]
    if not j or j["judged"] != "all" or j["cycles"] < 8 or not t["sample_interval"]:
        return None
    return -(-t["sample_interval"] * LN400_E9 // (10**9 * (j["cycles"] // 4)))


def line(trace, flag, report):
    """A regular expression the growth line must match in full, or None where none is due."""
    t, j = report["tracking"], report["leaks"]["growth_judged"]
    tmin, r = t["track_min"], t["sample_interval"]
    if tmin <= 1 or not j or not report["leaks"]["known"]:
        return None
    if j["judged"] != "all" and not j["by_births"]:  # judged for no block
        return None
    head = re.escape("ndmemreport: %s: %s: unchecked: no growth found, but blocks under %s " %
                     (trace, flag, human(tmin)))
    tail = re.escape("; check it with every block tracked: ndmem run --exact -- CMD "
                     "(NDMEM_TRACK_MIN=0)")
    if not r:
        return head + re.escape("had no record (NDMEM_SAMPLE=0: none is sampled), so growth in "
                                "them could not be seen at any rate") + tail
    sampled = re.escape("are recorded only when sampled (about 1 per %s allocated)" % human(r))
    if j["judged"] != "all":
        w = j["windows"]
        return head + sampled + re.escape(
            " and a sampled site grows only by its floor, which %d flush %s of the steady state "
            "(3 needed) could not judge, so growth in them could not be seen at any rate" %
            (w, "window" if w == 1 else "windows")) + tail + (
            re.escape(" and NDMEM_FLUSH_MS=%d" % j["flush_ms_to_judge"])
            if j["flush_ms_to_judge"] else "")
    g = rate(report)
    if g is None:  # per flush window: its figure needs the windows of each quarter
        return head + sampled + (r", so growth in them under [^;]* per flush( window)?, over the "
                                 r"\d+ (flush windows of this run|flushes since its first "
                                 r"cycle), may have gone unseen") + tail
    n = j["cycles"]
    if g <= min(1024, -(-65536 // n)):
        return None
    return head + sampled + re.escape(
        ", so growth in them under %s per cycle, over the %d cycles of this run, may have gone "
        "unseen" % (human(g), n)) + tail
