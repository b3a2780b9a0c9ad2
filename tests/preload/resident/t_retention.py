#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_retention: ndmemreport names allocator retention only on the allocator's own account.
# t_retention.c grows resident memory by 160 MiB with tracked memory flat in two ways, each
# with a known verdict: glibc keeping freed blocks ("allocator", its free bytes within a known
# bound of what was freed) and raw mmap the hooks never see ("untracked"), and a third run does
# the same work without lasting growth (null).
# The allocator's reading is also in the NDMEM_METRICS file, and --fail-on-leak does not fail on
# retention (0, or 3: what the default tracking's sampling left unchecked).
# After the program's own malloc_trim, glibc's free bytes (pages given back, still counted free)
# are no evidence: growth from raw mmap then is not called the allocator's.
# Chained to jemalloc (when found), the trace names it and carries its own account. No final
# flush asks the allocator (at exit, from a fatal signal or from _exit): only the writer thread.
# usage: t_retention.py LIBNDMEM T_RETENTION NDMEMREPORT [LIBJEMALLOC]
import glob
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

LIB, EXE, REP = (os.path.abspath(a) for a in sys.argv[1:4])
JEMALLOC = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
MIB = 1 << 20
ROUNDS, BLOCK = 8, 20 * MIB  # as in t_retention.c
FREED = RAW = ROUNDS * BLOCK  # what glibc keeps in "allocator" mode; what "untracked" maps
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def run(mode, tmp, preload=LIB, name=None):
    d = os.path.join(tmp, name or mode)
    os.mkdir(d)
    env = dict(os.environ, LD_PRELOAD=preload, NDMEM_OUTPUT=os.path.join(d, "t.%p.trace"),
               NDMEM_FLUSH_MS="20", NDMEM_SUMMARY="0", NDMEM_METRICS=os.path.join(d, "m.prom"),
               # glibc's behaviour alone: while it learns a cycle, the workspace engine trims the
               # heap after large frees (ws.c), which would give the held memory back
               NDMEM_WORKSPACES="0")
    p = subprocess.run([EXE, mode], env=env, cwd=d, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and p.stderr == "", "%s: exit %d, stderr %r" % (mode, p.returncode,
                                                                             p.stderr))
    traces = glob.glob(os.path.join(d, "t.*.trace"))
    check(len(traces) == 1, "%s: %d traces" % (mode, len(traces)))
    out = subprocess.run([REP, "--format", "json", traces[0]], capture_output=True, text=True)
    check(out.returncode == 0, "%s: ndmemreport exit %d: %s" % (mode, out.returncode, out.stderr))
    # The text report, whose exit status says whether --fail-on-leak fails on retention: 0, or 3
    # where it says, in its "unchecked" lines alone, what the default tracking's sampling left
    # unchecked (small blocks live at exit, growth in them).
    leak = subprocess.run([REP, "--fail-on-leak", traces[0]], capture_output=True, text=True)
    check(leak.returncode != 3 or all(": --fail-on-leak: unchecked: " in l
                                      for l in leak.stderr.splitlines()),
          "%s: --fail-on-leak exit 3 with %r" % (mode, leak.stderr))
    txt = leak.stdout
    with open(os.path.join(d, "m.prom")) as f:
        prom = f.read()
    return json.loads(out.stdout), txt, leak.returncode, prom


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # glibc keeps what was freed: named, with its free bytes within a known bound.
        j, txt, leak_rc, prom = run("allocator", tmp)
        r = j["retention"]
        print("allocator:", r)
        check(j["trace"]["version"] == 18, "trace version %s" % j["trace"]["version"])
        check(r["class"] == "allocator", "allocator: class %r" % r["class"])
        check(r["allocator"] == "glibc", "allocator: allocator %r" % r["allocator"])
        # Every freed block is a hole glibc counts free; beyond them only its top chunk and small
        # frees of the start-up (a few pages) may be free.
        free = r["allocator_free_bytes"]
        check(free is not None and FREED <= free <= FREED + 4 * MIB,
              "allocator: free bytes %s outside [%d, %d]" % (free, FREED, FREED + 4 * MIB))
        g = r["resident_growth_bytes"]
        check(FREED - 4 * MIB <= g <= FREED + 8 * MIB,
              "allocator: resident growth %d, the blocks were %d" % (g, FREED))
        check(abs(r["host_change_bytes"]) <= MIB, "allocator: host memory change %d" %
              r["host_change_bytes"])
        check(re.search(r"^  retention +resident grew ", txt, re.M) and
              "(allocator retention/fragmentation, not a leak)" in txt and
              "glibc malloc holds" in txt, "allocator: no retention line in\n" + txt)
        check(leak_rc in (0, 3), "allocator: --fail-on-leak exit %d" % leak_rc)
        # The metrics file has the final flush's reading: the pin went, the hole merged with the
        # top and was trimmed, so glibc holds far less than the blocks by then.
        m = re.search(r'^ndmem_allocator_free_bytes\{pid="\d+",allocator="glibc"\} (\d+)$', prom,
                      re.M)
        check(m is not None and int(m.group(1)) < FREED // 2,
              "allocator: metrics free bytes %s" % (m and m.group(1)))

        # The same growth from memory the hooks never see: not the allocator's.
        j, txt, leak_rc, prom = run("untracked", tmp)
        r = j["retention"]
        print("untracked:", r)
        check(r["class"] == "untracked", "untracked: class %r" % r["class"])
        check(RAW - 4 * MIB <= r["resident_growth_bytes"] <= RAW + 8 * MIB,
              "untracked: resident growth %d, mapped %d" % (r["resident_growth_bytes"], RAW))
        fg = r["allocator_free_growth_bytes"]
        check(fg is not None and fg < 4 * MIB, "untracked: allocator free growth %s" % fg)
        check(re.search(r"^  retention +resident grew ", txt, re.M) and
              "outside the memory ndmem tracks" in txt and "fragmentation" not in txt and
              "leak)" not in txt, "untracked: line in\n" + txt)
        check(leak_rc in (0, 3), "untracked: --fail-on-leak exit %d" % leak_rc)

        # The program trims (the hole's pages go back; glibc still counts them free), then maps
        # raw memory: glibc's free bytes are as high as before the trim, but may not be resident.
        j, txt, leak_rc, prom = run("trimmed", tmp)
        r = j["retention"]
        print("trimmed:", r)
        check(r["class"] == "untracked", "trimmed: class %r" % r["class"])
        tb = r["allocator_trimmed_bytes"]
        check(tb is not None and FREED <= tb <= FREED + 4 * MIB,
              "trimmed: trimmed bytes %s outside [%d, %d]" % (tb, FREED, FREED + 4 * MIB))
        check(r["allocator_free_bytes"] is not None and r["allocator_free_bytes"] < 4 * MIB,
              "trimmed: surely resident free bytes %s" % r["allocator_free_bytes"])
        flat_txt = " ".join(txt.split())  # the text report wraps its lines
        check("malloc_trim may have given back" in flat_txt and "fragmentation" not in txt,
              "trimmed: line in\n" + txt)

        # No growth: nothing named.
        j, txt, leak_rc, prom = run("flat", tmp)
        r = j["retention"]
        print("flat:", r)
        check(r["class"] is None, "flat: class %r" % r["class"])
        check(not re.search(r"^  retention ", txt, re.M), "flat: a retention line in\n" + txt)

        # jemalloc behind ndmem: asked through mallctl (resident - allocated), named in the trace.
        if JEMALLOC:
            j, txt, leak_rc, prom = run("allocator", tmp, LIB + " " + JEMALLOC, "jemalloc")
            r = j["retention"]
            print("jemalloc:", r)
            check(r["allocator"] == "jemalloc", "jemalloc: allocator %r" % r["allocator"])
            check(r["allocator_free_bytes"] is not None, "jemalloc: no reading")
            check('allocator="jemalloc"' in prom, "jemalloc: no metrics series")

        # No final flush asks the allocator (the exiting thread may have been interrupted inside
        # it, holding the arena's lock); with no flush of the writer's before it, none has.
        for mode, rc in (("end-exit", 0), ("end-_exit", 0), ("end-signal", -15)):
            r = last_resident(tmp, mode, rc)
            print(mode, r)
            check(r is not None and r[1] == 1, "%s: RESIDENT %r (want allocator glibc)" % (mode, r))
            check(r is not None and r[0] == 0, "%s: alloc_ns %r, want 0 (not asked)" %
                  (mode, r and r[0]))
    return 1 if failures else 0


def last_resident(tmp, mode, want_rc):
    """The final RESIDENT record's (alloc_ns, allocator), read from the trace itself."""
    d = os.path.join(tmp, mode)
    os.mkdir(d)
    env = dict(os.environ, LD_PRELOAD=LIB, NDMEM_OUTPUT=os.path.join(d, "t.%p.trace"),
               NDMEM_FLUSH_MS="60000", NDMEM_SUMMARY="0",
               NDMEM_COMPRESS="0")  # the records are read below as written
    p = subprocess.run([EXE, mode], env=env, cwd=d, capture_output=True, timeout=60)
    check(p.returncode == want_rc, "%s: exit %d, want %d" % (mode, p.returncode, want_rc))
    traces = glob.glob(os.path.join(d, "t.*.trace"))
    if len(traces) != 1:
        return None
    with open(traces[0], "rb") as f:
        data = f.read()
    off, last = struct.unpack_from("<I", data, 12)[0], None  # header_size after magic, version
    while off + 8 <= len(data):
        tag, _, size = struct.unpack_from("<HHI", data, off)
        if tag == 20 and size == 64:  # ND_REC_RESIDENT, version 9
            last = struct.unpack_from("<QI", data, off + 8 + 48)
        off += 8 + size
    return last


sys.exit(main())
