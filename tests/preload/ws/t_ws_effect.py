#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_ws_effect: when workspaces serve a job, the summary at exit and the report (text and JSON) say
# what that did to resident memory, with the job's own allocator retention as ndmem's learning
# trims measured it, and how to see the job without them; with NDMEM_WORKSPACES=0 nothing of it.
# t_ws_effect.c has the truth: marked, 64 blocks of 4 MiB a cycle, glibc holding all 256 MiB
# freed after the learning cycle until ndmem's one trim gives it back (at most two pages a block
# stay: the chunk headers'), then 5 cycles served; auto, the same found without marks, trimmed
# every 16 MiB of frees while it is learned.
# usage: t_ws_effect.py LIBNDMEM T_WS_EFFECT NDMEMREPORT
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

LIB, EXE, REP = (os.path.abspath(a) for a in sys.argv[1:4])
MIB = 1 << 20
N, BLOCK, CYCLES_MARKED, CYCLES_AUTO = 64, 4 * MIB, 6, 16  # as in t_ws_effect.c
AUTO_SIZES = sum(BLOCK + i * 4096 for i in range(N))  # one automatic cycle's blocks
RETAIN_MIN = 64 * MIB  # ND_RETAIN_MIN_BYTES
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def human(v):
    """A size as the shim and ndmemreport print it (interpose/common/fmt.c)."""
    if v < 1024:
        return "%d B" % v
    units, u, div = ["B", "KiB", "MiB", "GiB", "TiB"], 0, 1
    while u < 4 and v // div >= 1024:
        div *= 1024
        u += 1
    h = (v * 100 + div // 2) // div
    return "%d.%02d %s" % (h // 100, h % 100, units[u])


def run(mode, tmp, name, **env):
    d = os.path.join(tmp, name)
    os.mkdir(d)
    e = dict(os.environ, LD_PRELOAD=LIB, NDMEM_OUTPUT=os.path.join(d, "t.%p.trace"),
             NDMEM_SUMMARY="1")
    e.update(env)
    p = subprocess.run([EXE, mode], env=e, cwd=d, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "%s: exit %d, stderr %r" % (name, p.returncode, p.stderr))
    traces = glob.glob(os.path.join(d, "t.*.trace"))
    if env.get("NDMEM_TRACE") == "0":
        return p.stderr, None, None
    check(len(traces) == 1, "%s: %d traces" % (name, len(traces)))
    js = subprocess.run([REP, "--format", "json", traces[0]], capture_output=True, text=True)
    check(js.returncode == 0, "%s: ndmemreport exit %d: %s" % (name, js.returncode, js.stderr))
    txt = subprocess.run([REP, traces[0]], capture_output=True, text=True).stdout
    return p.stderr, json.loads(js.stdout), " ".join(txt.split())  # the text wraps its lines


def summary_line(stderr):
    lines = [l for l in stderr.splitlines() if re.match(r"ndmem\[\d+\]: workspaces: ", l)]
    return lines[0] if len(lines) == 1 else None


def check_summary(name, line, e):
    """The summary's line states what the report states, in the same numbers."""
    check(line is not None, "%s: no workspaces line in the summary" % name)
    if line is None:
        return
    print(name, "summary:", line)
    want = ("served %d allocations (%s) from arenas of %s, blocks glibc malloc never held: "
            "resident memory is not the job's own" %
            (e["allocations"], human(e["bytes"]), human(e["arena_bytes"])))
    check(want in line, "%s: summary lacks %r" % (name, want))
    held = ("while they learned, resident memory fell by %s across ndmem's malloc_trim: freed "
            "memory glibc malloc held; without workspaces expect allocator retention" %
            human(e["learning_trim_max_bytes"]) if e["learning_trims"] == 1 else
            "while they learned, resident memory fell by up to %s across ndmem's malloc_trim "
            "(%s in %d trims): freed memory glibc malloc held" %
            (human(e["learning_trim_max_bytes"]), human(e["learning_trim_bytes"]),
             e["learning_trims"]))
    check((held in line) == e["held"], "%s: held %s, summary %r" % (name, e["held"], line))
    check(line.endswith("; to measure the job without them: ndmem run --no-workspaces "
                        "(NDMEM_WORKSPACES=0)"), "%s: summary's end %r" % (name, line))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # marked: one trim, at the end of the learning cycle, gives back what glibc held.
        err, j, txt = run("marked", tmp, "marked")
        e, r = j["workspaces_effect"], j["retention"]
        print("marked:", e, r["class"])
        check(j["trace"]["version"] == 18, "trace version %s" % j["trace"]["version"])
        served = (CYCLES_MARKED - 1) * N
        check(e["served"] and e["allocations"] == served and e["bytes"] == served * BLOCK,
              "marked: served %s allocations, %s B; want %d, %d" %
              (e["allocations"], e["bytes"], served, served * BLOCK))
        # the arena: the planned peak (all 64 blocks live at once), with ND4J's default
        # overallocation of 30 %, in whole pages
        check(e["arena_bytes"] == (N * BLOCK * 13 // 10 + 4095) // 4096 * 4096,
              "marked: arenas %d" % e["arena_bytes"])
        gave = e["learning_trim_bytes"]
        check(e["learning_trims"] == 1 and e["learning_trim_max_bytes"] == gave,
              "marked: trims %d, max %d, sum %d" % (e["learning_trims"],
                                                   e["learning_trim_max_bytes"], gave))
        check(N * BLOCK - N * 8192 <= gave <= N * BLOCK + MIB,
              "marked: the trim gave back %d, glibc held %d freed" % (gave, N * BLOCK))
        check(e["held"] and r["class"] == "prevented", "marked: held %s, class %r" %
              (e["held"], r["class"]))
        check(e["without"] == "ndmem run --no-workspaces", "marked: without %r" % e["without"])
        ws = j["workspaces"]["list"]
        check(len(ws) == 1 and ws[0]["name"] == "cycle" and ws[0]["hit_bytes"] == served * BLOCK
              and ws[0]["learning_trim_bytes"] == gave, "marked: workspaces %r" % ws)
        want = ("not the job's own: glibc malloc never held the %d allocations (%s) that "
                "workspaces served from arenas of %s (the job without them: ndmem run "
                "--no-workspaces)" % (served, human(served * BLOCK), human(e["arena_bytes"])))
        check(want in txt, "marked: the report lacks %r:\n%s" % (want, txt))
        want = ("retention prevented by workspaces: while they learned, glibc malloc held %s "
                "freed memory (resident memory fell by that much across ndmem's malloc_trim); "
                "without ndmem expect allocator retention (ndmem run --no-workspaces measures "
                "it)" % human(gave))
        check(want in txt, "marked: the report lacks %r:\n%s" % (want, txt))
        check_summary("marked", summary_line(err), e)

        # Without a trace the summary still says it: the trims' readings are the shim's own.
        err, _, _ = run("marked", tmp, "marked-notrace", NDMEM_TRACE="0")
        line = summary_line(err)
        print("marked, NDMEM_TRACE=0:", line)
        m = line and re.search(r"resident memory fell by (\d+\.\d\d) MiB across ndmem's "
                               r"malloc_trim: freed memory glibc malloc held", line)
        check(m and (N * BLOCK - N * 8192) / MIB - 0.01 <= float(m.group(1)) <= N * BLOCK / MIB + 1,
              "NDMEM_TRACE=0: summary %r" % line)
        check(line and "served %d allocations (%s)" % (served, human(served * BLOCK)) in line,
              "NDMEM_TRACE=0: summary %r" % line)

        # auto: trims every 16 MiB of frees while the cycle is found and learned; then served.
        err, j, txt = run("auto", tmp, "auto")
        e, r = j["workspaces_effect"], j["retention"]
        print("auto:", e, r["class"])
        cycles = e["allocations"] // N
        check(e["served"] and e["allocations"] % N == 0 and 1 <= cycles <= CYCLES_AUTO - 2 and
              e["bytes"] == cycles * AUTO_SIZES, "auto: served %d allocations, %d B" %
              (e["allocations"], e["bytes"]))
        learned = CYCLES_AUTO - cycles  # the cycles that went through the heap
        check(e["learning_trims"] >= 1 and
              0 < e["learning_trim_max_bytes"] <= e["learning_trim_bytes"] <=
              learned * AUTO_SIZES + 8 * MIB,
              "auto: trims %d gave back %d (at most %d at once); %d cycles freed %d" %
              (e["learning_trims"], e["learning_trim_bytes"], e["learning_trim_max_bytes"],
               learned, learned * AUTO_SIZES))
        check(e["held"] == (e["learning_trim_max_bytes"] >= RETAIN_MIN),
              "auto: held %s, at most %d at once" % (e["held"], e["learning_trim_max_bytes"]))
        check(("prevented by workspaces" in txt) == e["held"] and
              r["class"] == ("prevented" if e["held"] else None),
              "auto: held %s, class %r, report:\n%s" % (e["held"], r["class"], txt))
        check("not the job's own: glibc malloc never held the %d allocations (%s)" %
              (e["allocations"], human(e["bytes"])) in txt, "auto: report:\n" + txt)
        check_summary("auto", summary_line(err), e)

        # Without workspaces: nothing served, no trims, nothing said.
        err, j, txt = run("marked", tmp, "off", NDMEM_WORKSPACES="0")
        e = j["workspaces_effect"]
        print("NDMEM_WORKSPACES=0:", e, j["retention"]["class"])
        check(not e["served"] and not e["held"] and e["learning_trims"] == 0 and
              e["without"] is None, "NDMEM_WORKSPACES=0: %r" % e)
        check(summary_line(err) is None and "heap: peak" in err,
              "NDMEM_WORKSPACES=0: summary\n" + err)
        check("not the job's own" not in txt and "prevented by workspaces" not in txt and
              "malloc_trim" not in txt, "NDMEM_WORKSPACES=0: report:\n" + txt)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
