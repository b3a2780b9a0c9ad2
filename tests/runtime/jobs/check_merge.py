# SPDX-License-Identifier: MIT
# check_merge: what `ndmemreport merge` must say of a two-rank job whose rank 1 leaked LEAK bytes
# at the line of SCRIPT marked "# LEAK:" (t_mpi_merge.sh, t_ddp_merge.sh): the processes labelled
# rank 0 and rank 1 from their traces (their pids those the ranks printed), in that order whatever
# the order of the files, then any process without a rank (a launcher) and no worker; rank 1's
# leaks exactly LEAK and rank 0's none, by each trace's own classes; the leaking site at its
# Python line with exactly LEAK bytes peak and leaked in rank 1, nothing in rank 0; OpenBLAS's
# buffers in both ranks, never leaked and never held since start-up (the built-in suppression
# openblas-buffers names them: each rank's suppressed bytes hold them); and the text saying the same.
# usage: check_merge.py MERGE_JSON MERGE_TEXT SCRIPT LEAK PID0 PID1 [LAUNCHER_PID]
import json
import os
import sys

js, txt, script, leak, pid0, pid1 = sys.argv[1:7]
leak, pid0, pid1 = int(leak), int(pid0), int(pid1)
launcher = int(sys.argv[7]) if len(sys.argv) > 7 else None
d = json.load(open(js))
text = open(txt).read()
fails = []


def no(msg):
    fails.append(msg)


line = next(i + 1 for i, l in enumerate(open(script))  # the code line, not a comment naming it
            if "# LEAK:" in l and not l.lstrip().startswith("#"))
where = "%s:%d)" % (os.path.basename(script), line)

want = [("rank 0", 0, pid0), ("rank 1", 1, pid1)] + ([("pid %d" % launcher, None, launcher)]
                                                      if launcher else [])
got = [(p["label"], p["rank"], p["pid"]) for p in d["processes"]]
if got != want:
    no("processes %r, want %r" % (got, want))
if any(p["worker_of"] is not None for p in d["processes"]):
    no("a process labelled a worker: %r" % [p["label"] for p in d["processes"]])
leaks = [p["leaks"] for p in d["processes"][:2]]
if leaks != [0, leak]:
    no("leaks by rank %r, want [0, %d]" % (leaks, leak))

site = [s for s in d["sites"] if s["python"] and where in s["python"]]
if len(site) != 1:
    no("%d sites at %s, want 1" % (len(site), where))
else:
    s = site[0]
    if s["per_rank"][:2] != [0, leak] or s["leaked_per_rank"][:2] != [0, leak]:
        no("the leaking site: peak %r, leaked %r, want [0, %d]" % (s["per_rank"],
                                                                   s["leaked_per_rank"], leak))

blas = [s for s in d["sites"] if any("libopenblas" in f for f in s["frames"])
        and s["kind"] == "mmap" and s["per_rank"][0] >= (1 << 20)]
if not blas:
    no("no OpenBLAS buffer among the sites")
for s in blas:
    if any(s["leaked_per_rank"]) or any(s["startup_per_rank"]) or not all(s["per_rank"][:2]):
        no("OpenBLAS site %s: peak %r, leaked %r, held since start-up %r" % (
            s["stack_key"], s["per_rank"], s["leaked_per_rank"], s["startup_per_rank"]))
for p in d["processes"][:2]:
    supp = p["lifetime"]["suppressed"]["bytes"]
    if blas and supp < sum(s["per_rank"][p["rank"]] for s in blas):
        no("%s: suppressed %d B, less than its OpenBLAS buffers" % (p["label"], supp))

# The text: the ranks' rows in order, and the leaking site with its Python line and bytes.
rows = [l.split()[:2] for l in text.splitlines() if l.startswith("  rank ")]
if rows[:2] != [["rank", "0"], ["rank", "1"]]:
    no("text: the first rows %r" % rows[:2])
mib = "%.2f MiB" % (leak / 1048576)
blocks = text.split("\n#")
hit = [b for b in blocks if "      python  " in b and where in b]
if len(hit) != 1:
    no("text: %d sites with a python line at %s" % (len(hit), where))
elif "total %s in 1 of" % mib not in hit[0] or "leaked %s at the end in 1 of" % mib not in hit[0]:
    no("text: the leaking site lacks 'total %s' or 'leaked %s':\n#%s" % (mib, mib, hit[0]))
for f in fails:
    print("FAIL:", f, file=sys.stderr)
sys.exit(1 if fails else 0)
