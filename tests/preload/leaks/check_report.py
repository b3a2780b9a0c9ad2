#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks ndmemreport's JSON against the markers in a test program's source.

    check_report.py REPORT.json SOURCE.c leaks|killed PAGE_SIZE

A line marked `// LEAK:name N x SIZE` (or `LIVE:`; `SIZE pages` in pages) must appear as the
innermost frame, in SOURCE, of exactly one reported group with exactly N blocks and N*SIZE bytes,
kind mmap when the name says so and heap otherwise, not estimated. A line marked `// TEMP:` must
not appear in any group. `leaks` reads the leaks at exit of a process that exited normally;
`killed` reads the live bytes at the last flush of a process that did not.
"""
import json
import os
import re
import sys


def main():
    report, source, mode, page = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(report) as f:
        doc = json.load(f)
    base = os.path.basename(source)
    expect, temps = {}, set()
    with open(source) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"//\s*(?:LEAK|LIVE):(\S+) (\d+) x (\d+)( pages)?", text)
            if m:
                count, size = int(m.group(2)), int(m.group(3)) * (page if m.group(4) else 1)
                expect[n] = (m.group(1), count, count * size)
            if re.search(r"//\s*TEMP:", text):
                temps.add(n)
    errors = []
    if mode == "leaks":
        if not doc["process"]["exited_normally"] or not doc["leaks"]["known"]:
            errors.append("the process should have exited normally with leaks known")
        groups = [(g, g["bytes"], g["blocks"], g["estimated"]) for g in doc["leaks"]["groups"]]
    else:
        if doc["process"]["exited_normally"]:
            errors.append("a killed process must not read as exited normally")
        groups = [(g, g["live_bytes"], g["allocs"] - g["frees"], g["sampled"])
                  for g in doc["live_at_last_flush"]["top"]]
    seen = {}
    for g, nbytes, nblocks, estimated in groups:
        lines = [fr["line"] for fr in g["frames"]
                 if fr.get("file") and os.path.basename(fr["file"]) == base]
        if not lines:
            continue  # not the test program's own allocation (libc start-up, sampled)
        line = lines[0]
        if line in temps:
            errors.append("line %d (a temporary) reported with %d bytes" % (line, nbytes))
        if line in expect:
            if line in seen:
                errors.append("line %d reported twice" % line)
            seen[line] = (g["kind"], nblocks, nbytes, estimated)
    for line, (name, count, nbytes) in sorted(expect.items()):
        kind = "mmap" if "mmap" in name else "heap"
        got = seen.get(line)
        want = (kind, count, nbytes, False)
        if got != want:
            errors.append("%s:%d (%s): want kind/blocks/bytes/estimated %s, got %s"
                          % (base, line, name, want, got))
        else:
            print("ok %s:%d %s: %d blocks, %d bytes" % (base, line, kind, count, nbytes))
    for e in errors:
        print("FAIL: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
