#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks t_replay's two reports: the sites of a run with the replay on and one with it off
(NDMEM_REPLAY=0) are the same, stack for stack, with the same allocations, frees and bytes, for
every stack that passes through SOURCE; a line of SOURCE marked `PATH:name N` is in stacks that
made N allocations in all, in both runs; and the `on` run's summary line says stacks were
replayed, whole or their native frames (at least MIN_REPLAYED), and, with NOT_REPLAYABLE, that some could not be recorded.

    check_replay.py ON.json OFF.json SOURCE ON.stderr MIN_REPLAYED [NOT_REPLAYABLE]
"""
import json
import os
import re
import sys


def sites(path, base):
    """{stack signature: [allocs, frees, alloc_bytes, free_bytes]} over sites through base."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for s in doc["sites"]["by_peak"]:
        if not any(os.path.basename(fr.get("file") or "") == base for fr in s["frames"]):
            continue
        sig = (s["kind"], s["sampled"]) + tuple(
            (fr.get("function"), os.path.basename(fr.get("file") or ""), fr.get("line"),
             fr.get("offset")) for fr in s["frames"])
        t = out.setdefault(sig, [0, 0, 0, 0])
        for i, k in enumerate(("allocs", "frees", "alloc_bytes", "free_bytes")):
            t[i] += s[k]
    return out


def main():
    on_path, off_path, source, stderr, min_replayed = sys.argv[1:6]
    want_refused = len(sys.argv) > 6
    base = os.path.basename(source)
    on, off = sites(on_path, base), sites(off_path, base)
    errors = []
    if not on:
        errors.append("no site passes through %s" % base)
    for sig in sorted(set(on) | set(off), key=repr):
        if on.get(sig) != off.get(sig):
            where = [f for f in sig[2:] if f[1] == base]
            errors.append("stack through %s: replay on %s, off %s" % (where, on.get(sig), off.get(sig)))
    with open(source) as f:
        marks = [(n, m.group(1), int(m.group(2))) for n, text in enumerate(f, 1)
                 for m in [re.search(r"PATH:(\S+) (\d+)", text)] if m]
    for n, name, want in marks:
        for label, got_sites in (("on", on), ("off", off)):
            got = sum(v[0] for sig, v in got_sites.items()
                      if any(fr[1] == base and fr[2] == n for fr in sig[2:]))
            if got != want:
                errors.append("%s:%d (%s), replay %s: %d allocations, want %d"
                              % (base, n, name, label, got, want))
    with open(stderr) as f:
        text = f.read()
    m = re.search(r"stacks: (\d+) replayed, (\d+) with their native frames replayed, (\d+) "
                  r"unwound \((\d+) recorded for replay, (\d+) not replayable\)", text)
    if not m:
        errors.append("no 'stacks:' summary line in the replay-on run's stderr:\n" + text)
    else:
        replayed, refused = int(m.group(1)) + int(m.group(2)), int(m.group(5))
        if replayed < int(min_replayed):
            errors.append("%d stacks replayed, want at least %s" % (replayed, min_replayed))
        if want_refused and refused < 1:
            errors.append("no stack refused: the signal handlers' stacks must not be recorded")
    for e in errors:
        print("FAIL: " + e, file=sys.stderr)
    if errors:
        return 1
    print("ok: %d stacks through %s, the same with the replay on and off; %d marks; %s" % (
        len(on), base, len(marks), m.group(0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
