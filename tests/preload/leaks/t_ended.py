# SPDX-License-Identifier: MIT
# t_ended: the exit scan's classes where threads ended before the exit (glibc's stack cache keeps
# their stacks mapped, at its default size) and where mappings were committed inside
# reservations, checked exactly against t_ended.c's truth: each END:<name> line's class, bytes
# and blocks, the scan's count of ended threads and reserved mappings, and no other lost memory.
# Then, where valgrind is installed, memcheck's classes of the same programs' heap blocks (it
# tracks no mappings) for t_ended.c's cases and t_reach.c's: each (case, line, class) with bytes
# and blocks must agree; the glibc thread vectors of ended threads are left out (memcheck runs
# glibc's release of its stack cache at exit, which frees them). Prints how many agree.
# ndmem's class of a run with cycles may be a lifetime (growing, held since start-up): its
# entries' "reach" is the scan's, compared. glibc's stdio buffers are left out too (freed by the
# same release at exit).
# usage: python3 t_ended.py LIBNDMEM NDMEMREPORT T_ENDED T_ENDED_C T_REACH T_REACH_C T_CORPUS
#                           T_CORPUS_C T_LEAKS T_LEAKS_C
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

lib, rep, ended, ended_c, reach, reach_c, corpus, corpus_c, leaks, leaks_c = sys.argv[1:11]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def markers(path):
    return {m.group(1): i for i, line in enumerate(open(path), 1)
            for m in [re.search(r"END:(\w+)", line)] if m}


END = markers(ended_c)
MiB = 1 << 20
# case: ({marker: (class, bytes, blocks)}, ended threads, reserved mappings)
CASES = {
    "stacks": ({"stacks": ("definitely_lost", 8028, 8)}, 8, 0),
    "tls": ({"tls": ("definitely_lost", 1337, 1)}, 1, 0),
    "tsd": ({"tsd": ("definitely_lost", 1500, 1)}, 1, 0),
    "retval": ({"retval": ("definitely_lost", 2000, 20)}, 20, 0),
    "arg": ({"arg": ("definitely_lost", 2000, 20)}, 20, 0),
    "detached": ({"detached": ("definitely_lost", 700, 1)}, 1, 0),
    "reuse": ({"reuse_first": ("definitely_lost", 600, 1), "hold": ("still_reachable", 800, 1)}, 0, 0),
    "live": ({"hold": ("still_reachable", 900, 1)}, 0, 0),
    "starting": ({"starting": ("still_reachable", 11100, 50)}, 0, 0),
    "unjoined": ({"unjoined_local": ("definitely_lost", 444, 1),
                  "unjoined_result": ("still_reachable", 333, 1)}, 1, 0),
    "reserve": ({"commit": ("still_reachable", MiB, 1)}, 0, 1),
    "reserve_lost": ({"commit": ("definitely_lost", MiB, 1)}, 0, 1),
    "fixed_inside": ({"outer": ("still_reachable", 7 * MiB, 2), "inner": ("still_reachable", MiB, 1)}, 0, 3),
    "filemap": ({"filemap": ("still_reachable", 444, 1)}, 0, 0),
}
GLIBC_TLS = ("allocate_dtv", "_dl_allocate_tls")
GLIBC_FREED = GLIBC_TLS + ("_IO_file_doallocate",)  # what glibc's release at exit frees


def glibc_tls(frames):
    return any(f.get("function") in GLIBC_TLS for f in frames)


def ndmem(tmp, prog, case):
    """ndmem's groups of the run: [(kind, class, bytes, blocks, [(file, line)], glibc_tls)]."""
    trace = os.path.join(tmp, "%s.%s.trace" % (os.path.basename(prog), case))
    env = dict(os.environ, LD_PRELOAD=lib, NDMEM_OUTPUT=trace, NDMEM_SUMMARY="0",
               NDMEM_TRACK_MIN="0")
    p = subprocess.run([prog] + ([case] if case else []), env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("%s: exit %d: %s" % (case, p.returncode, p.stderr[-300:]))
        return None, None
    r = subprocess.run([rep, "--format", "json", "--top", "0", "--no-builtin-suppressions", trace],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s: ndmemreport: %s" % (case, r.stderr))
        return None, None
    d = json.loads(r.stdout)
    groups = [(g["kind"], g["class"], g["bytes"], g["blocks"],
               [(os.path.basename(f.get("file") or ""), f.get("line")) for f in g["frames"]],
               glibc_tls(g["frames"]), g.get("reach"),
               any(f.get("function") in GLIBC_FREED for f in g["frames"]))
              for g in d["leaks"]["groups"]]
    return d["scan"], groups


def at(groups, src, line):  # the line's blocks (not the thread vectors its pthread_create made)
    return [g for g in groups if (src, line) in g[4] and not g[5]]


tmp = tempfile.mkdtemp()
try:
    src = os.path.basename(ended_c)
    for case, (want, n_ended, n_reserved) in CASES.items():
        scan, groups = ndmem(tmp, ended, case)
        if groups is None:
            continue
        if scan.get("status") != "done" or not scan.get("complete"):
            fail("%s: scan %r" % (case, scan))
        if scan.get("ended_threads") != n_ended or scan.get("reserved_maps") != n_reserved:
            fail("%s: %s ended threads and %s reserved mappings, want %d and %d" %
                 (case, scan.get("ended_threads"), scan.get("reserved_maps"), n_ended, n_reserved))
        lost_want = 0
        for name, (cls, nbytes, blocks) in want.items():
            got = [(g[1], g[2], g[3]) for g in at(groups, src, END[name])]
            if got != [(cls, nbytes, blocks)]:
                fail("%s: END:%s (line %d): %r, want %r" % (case, name, END[name], got, [(cls, nbytes, blocks)]))
            lost_want += nbytes if cls in ("definitely_lost", "indirectly_lost") else 0
        lost = sum(g[2] for g in groups if g[1] in ("definitely_lost", "indirectly_lost"))
        if lost != lost_want:
            fail("%s: %d bytes lost in all, want %d: %r" % (case, lost, lost_want,
                 [g[:4] for g in groups if g[1] in ("definitely_lost", "indirectly_lost")]))
        # Thread vectors are never lost; an ended thread's, once joined or detached, is held by
        # glibc's cache (an unjoined one's descriptor points into it, as a live thread's does).
        for g in groups:
            if g[5] and (g[1] in ("definitely_lost", "indirectly_lost") or
                         (n_ended and case != "unjoined" and g[1] != "still_reachable")):
                fail("%s: a thread vector (%d B) classed %s" % (case, g[2], g[1]))
    print("ndmem: %d cases of t_ended checked" % len(CASES))

    vg = shutil.which("valgrind")
    if not vg:
        print("no valgrind: memcheck's classes not compared")
    else:
        agree = total = 0
        runs = [(ended, ended_c, c) for c, (w, _, _) in CASES.items()
                if any(n not in ("commit", "outer", "inner") for n in w)]
        runs += [(reach, reach_c, c) for c in
                 ("global", "lose", "interior", "cycle", "register", "stack", "tls", "deep")]
        runs += [(corpus, corpus_c, c) for c in
                 ("grow", "table", "thread", "small", "clean", "tiny", "odd", "many", "manygrow")]
        runs += [(leaks, leaks_c, "")]
        for prog, prog_c, case in runs:
            srcname = os.path.basename(prog_c)
            _, groups = ndmem(tmp, prog, case)
            if groups is None:
                continue
            mine = {}
            for kind, cls, nbytes, blocks, frames, tls, reach_cls, freed in groups:
                line = next((l for f, l in frames if f == srcname), None)
                if kind == "heap" and line and not freed:
                    k = mine.setdefault((line, reach_cls or cls), [0, 0])
                    k[0] += nbytes
                    k[1] += blocks
            xml = os.path.join(tmp, "vg.xml")
            subprocess.run([vg, "--leak-check=full", "--show-leak-kinds=all", "--xml=yes",
                            "--xml-file=" + xml, prog] + ([case] if case else []),
                           capture_output=True, timeout=300)
            theirs = {}
            names = {"Leak_DefinitelyLost": "definitely_lost", "Leak_IndirectlyLost": "indirectly_lost",
                     "Leak_PossiblyLost": "possibly_lost", "Leak_StillReachable": "still_reachable"}
            for e in ET.parse(xml).getroot().findall("error"):
                kind = e.findtext("kind")
                if kind not in names:
                    continue
                frames = [(f.findtext("file"), f.findtext("line"), f.findtext("fn"))
                          for f in e.find("stack").findall("frame")]
                if any(fn in GLIBC_FREED for _, _, fn in frames):
                    continue
                line = next((int(l) for f, l, _ in frames if f == srcname), None)
                if line is None:
                    continue
                k = theirs.setdefault((line, names[kind]), [0, 0])
                x = e.find("xwhat")
                # "164 (64 direct, 100 indirect) bytes in 1 blocks are definitely lost": its own
                direct = re.match(r"[\d,]+ \(([\d,]+) direct", x.findtext("text") or "")
                k[0] += int(direct.group(1).replace(",", "")) if direct else int(x.findtext("leakedbytes"))
                k[1] += int(x.findtext("leakedblocks"))
            for key in sorted(set(mine) | set(theirs)):
                total += 1
                if mine.get(key) == theirs.get(key):
                    agree += 1
                else:
                    fail("%s %s: line %d %s: ndmem %r, memcheck %r" %
                         (srcname, case, key[0], key[1], mine.get(key), theirs.get(key)))
        print("memcheck agrees on %d of %d (program, case, line, class) entries, bytes and blocks"
              % (agree, total))
finally:
    shutil.rmtree(tmp)
sys.exit(1 if failures else 0)
