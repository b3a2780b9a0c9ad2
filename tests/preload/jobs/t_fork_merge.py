# SPDX-License-Identifier: MIT
# t_fork_merge: a parent and its two fork workers (t_fork_merge.c has the truth), merged.
#   - each byte once: the parent's 2101473-byte block, which both workers inherited (worker 1 holds
#     it at its _exit, worker 2 freed it), counts once, in the parent's column: its site's total
#     is 2101473 in 1 of 3 processes, and the sites add up to that and the workers' own 65536 and
#     40000 bytes; no worker's sites hold it
#   - no worker leaks: worker 1's single report classes the block inherited at fork, merge counts
#     it in no process's leaks; the parent's leak is that block, exactly
#   - names: the block's frame in libnodebug (no debugging information) is
#     "nodebug_alloc (libnodebug.so+0xOFF)" in merge, the function and offset the single report
#     gives it
#   - the heading counts the traces read, and "in K of N processes" counts them too
#   - ndmem run --fail-on-leak: the run whose parent frees its block passes (worker 1's inherited
#     block is no leak of its); the one whose parent keeps it fails on the parent alone
# usage: t_fork_merge.py NDMEM_TOOL LIBNDMEM NDMEMREPORT T_FORK_MERGE
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

tool, lib, rep, prog = (os.path.abspath(a) for a in sys.argv[1:5])
BLOCK, OWN1, OWN2 = 2101473, 65536, 40000
bad = []


def check(ok, what):
    if not ok:
        bad.append(what)
    return ok


def report(*args):
    r = subprocess.run([rep, *args], capture_output=True, text=True)
    check(r.returncode == 0 and not r.stderr, "ndmemreport %s: exit status %d, stderr %r"
          % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, LD_PRELOAD=lib, NDMEM_OUTPUT=os.path.join(tmp, "t.%p.trace"),
               NDMEM_SUMMARY="0")
    r = subprocess.run([prog, "keep"], env=env)
    check(r.returncode == 0, "t_fork_merge keep: exit status %d" % r.returncode)
    traces = sorted(glob.glob(os.path.join(tmp, "t.*.trace")))
    single = {t: json.loads(report("--format", "json", "--top", "0", t)) for t in traces}
    parent = [t for t in traces if single[t]["process"]["origin"] == "started"]
    workers = sorted((t for t in traces if single[t]["process"]["origin"] == "fork"),
                     key=lambda t: single[t]["process"]["pid"])  # worker 1 forked first
    if not check(len(traces) == 3 and len(parent) == 1 and len(workers) == 2,
                 "want a parent's trace and 2 fork workers', got %r" % traces):
        for b in bad:
            print("FAIL:", b, file=sys.stderr)
        sys.exit(1)
    parent = parent[0]

    def classes(t):
        return {k: v["bytes"] for k, v in single[t]["leaks"]["classes"].items()}

    def names_nodebug(frames):
        return any(f.get("function") == "nodebug_alloc" for f in frames)

    # the single reports: the block is the parent's leak (kept in main's local, dead once main
    # returns: definitely lost) and worker 1's inheritance
    c = classes(parent)
    check(c["definitely_lost"] == BLOCK and c["inherited_at_fork"] == 0,
          "parent's classes %r: want definitely lost %d" % (c, BLOCK))
    c = classes(workers[0])
    check(c["inherited_at_fork"] == BLOCK and not any(v for k, v in c.items()
                                                       if k != "inherited_at_fork"),
          "worker 1's classes %r: want inherited at fork %d, nothing else" % (c, BLOCK))
    c = classes(workers[1])
    check(not any(c.values()), "worker 2 freed all it held, classes %r" % c)
    text = report("--top", "0", workers[0])
    check(re.search(r"^  leaks       inherited at fork 2\.00 MiB \(2101473 B\) in 1 block "
                    r"\(1 stack\)$", text, re.M),
          "worker 1's summary does not say the block is inherited at fork")
    # a worker's sites are what it did since the fork: its own block, not the parent's
    for t, own in zip(workers, (OWN1, OWN2)):
        sites = single[t]["sites"]["by_peak"] if isinstance(single[t]["sites"], dict) else None
        peaks = sorted(s["peak_live_bytes"] for s in sites) if sites is not None else None
        check(peaks == [own], "%s's sites' peaks %r, want [%d]" % (os.path.basename(t), peaks, own))
    # the name the single report gives the block's innermost frame
    m = re.search(r"^      #0  nodebug_alloc \((/\S*/libnodebug\.so)\+(0x[0-9a-f]+)\)$",
                  report(parent), re.M)
    offset = m.group(2) if check(m, "the parent's report does not name nodebug_alloc") else "?"

    # merge, JSON: each byte once, no worker leak, names
    args = [parent] + workers
    d = json.loads(report("merge", "--format", "json", "--top", "0", *args))
    ps = d["processes"]
    check([p["label"] for p in ps] == ["pid %d" % single[parent]["process"]["pid"],
                                       "pid %d worker 1" % single[parent]["process"]["pid"],
                                       "pid %d worker 2" % single[parent]["process"]["pid"]],
          "labels %r" % [p["label"] for p in ps])
    check([p["leaks"] for p in ps] == [BLOCK, 0, 0], "leaks %r, want [%d, 0, 0]"
          % ([p["leaks"] for p in ps], BLOCK))
    check(ps[1]["lifetime"]["inherited_at_fork"]["bytes"] == BLOCK,
          "worker 1's inherited_at_fork %r" % ps[1]["lifetime"]["inherited_at_fork"])
    got = sorted((s["total"], s.get("processes_with"), s["per_rank"], s["leaked_per_rank"])
                 for s in d["sites"])
    check(got == [(OWN2, 1, [OWN2], [0]), (OWN1, 1, [OWN1], [0]), (BLOCK, 1, [BLOCK], [BLOCK])],
          "sites (total, processes_with, per_rank, leaked_per_rank) %r" % got)
    blk = [s for s in d["sites"] if s["total"] == BLOCK]
    check(blk and blk[0]["frames"][:1] == ["nodebug_alloc (libnodebug.so+%s)" % offset],
          "the block's frames in merge: %r" % (blk[0]["frames"][:2] if blk else None))

    # merge, text: the heading and the counts
    text = report("merge", *args)
    pid = single[parent]["process"]["pid"]
    for want in [r"== processes: 3 traces \(2 workers, 1 without a rank\)",
                 r"  pid %d +\S+ +\S+ +exit 0 +[0-9.]+ s" % pid,
                 r"   worker 1 +\S+ +\S+ +_exit 0 +[0-9.]+ s",
                 r"   worker 2 +\S+ +\S+ +exit 0 +[0-9.]+ s",
                 r"  pid %d +2\.00 MiB +2\.00 MiB +0 B +0 B +0 B" % pid,
                 r"   worker 1 +0 B +0 B +0 B +0 B +0 B",
                 r"   worker 2 +0 B +0 B +0 B +0 B +0 B",
                 r"#1   heap     total 2\.00 MiB in 1 of 3 processes",
                 r"      leaked 2\.00 MiB at the end in 1 of 3 \(lost, growing or live at exit\)",
                 r"      #0  nodebug_alloc \(libnodebug\.so\+%s\)" % offset,
                 r"#2   heap     total 64\.00 KiB in 1 of 3 processes",
                 r"#3   heap     total 39\.06 KiB in 1 of 3 processes"]:
        check(re.search("^" + want + "$", text, re.M), "merge text: no line %r" % want)

# ndmem run --fail-on-leak judges every process: a worker's inherited block fails nothing
for mode, want in (("free", 0), ("keep", 1)):
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([tool, "run", "--no-summary", "--lib", lib, "--fail-on-leak", "--",
                            prog, mode], cwd=tmp, capture_output=True, text=True)
        workers_named = re.findall(r"^ndmem: pid \d+ .*--fail-on-leak", r.stderr, re.M)
        check(r.returncode == want and not workers_named,
              "ndmem run --fail-on-leak -- t_fork_merge %s: exit status %d (want %d), lines %r\n%s"
              % (mode, r.returncode, want, workers_named, r.stderr))

for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
