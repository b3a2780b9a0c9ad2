#!/bin/sh
# SPDX-License-Identifier: MIT
# t_torch_workers: PyTorch DataLoader workers (fork children ending with os._exit) each leave a
# trace that says _exit(0), the loss is bit for bit the same, and only the parent prints a
# summary; `ndmemreport merge` of all the traces labels the workers as the main process's. The
# frozen layer's 2 MiB of weights (2097152 B, made before the workers fork) are the main
# process's: each worker's report classes them inherited at fork, merge counts them once (their
# site 2097152 B in 1 of 5 processes) and in no worker's leaks, whose leaks are what each made
# itself; their frame in libc10 (no debugging information) reads in merge as in the single
# report, "c10::alloc_cpu(unsigned long) (libc10.so.1.13+0xOFF)".
# Skips (77) without an interpreter that imports torch (Debian: python3-torch).
# usage: t_torch_workers.sh LIBNDMEM SCRIPT NDMEMREPORT
set -u
lib=$1 script=$2 rep=$3
py=$(sh "$(dirname "$0")/../find-python.sh" torch) || { echo "skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
"$py" "$script" >"$tmp/plain" 2>&1 || { echo "plain run failed" >&2; cat "$tmp/plain" >&2; exit 1; }
NDMEM_OUTPUT="$tmp/t.%p.trace" LD_PRELOAD=$lib "$py" "$script" >"$tmp/shim" 2>"$tmp/err" ||
  { echo "run under the shim failed" >&2; cat "$tmp/err" >&2; exit 1; }
fail=0
cmp -s "$tmp/plain" "$tmp/shim" || { echo "the loss differs under the shim" >&2; diff "$tmp/plain" "$tmp/shim" >&2; fail=1; }
n=$(grep -c '^ndmem\[[0-9]*\]: heap:' "$tmp/err")
[ "$n" -eq 1 ] || { echo "$n summaries, want 1 (the parent's)" >&2; cat "$tmp/err" >&2; fail=1; }
workers=0
for t in "$tmp"/t.*.trace; do
  "$rep" --brief "$t" >"$t.txt" 2>&1
  grep -q 'exit        _exit(0)' "$t.txt" && workers=$((workers + 1))
done
[ "$workers" -eq 4 ] || { echo "$workers worker traces say _exit(0), want 4 (2 workers x 2 epochs)" >&2; fail=1; }
# ndmemreport merge of the main process's trace and its workers': one column, the main process's
# (no rank: labelled by its pid), its four workers (fork children: their traces' ppid is its pid)
# labelled as its workers, in the order they started, their sites merged into its column
"$rep" merge --format json "$tmp"/t.*.trace >"$tmp/merge.json" 2>"$tmp/merr" &&
  "$rep" merge "$tmp"/t.*.trace >"$tmp/merge.txt" 2>>"$tmp/merr" ||
  { echo "merge failed: $(cat "$tmp/merr")" >&2; fail=1; }
"$py" - "$tmp/merge.json" "$tmp/merge.txt" "$rep" "$script" "$tmp" <<'PY' || fail=1
import glob, json, os, subprocess, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
rep, script, tmp = sys.argv[3:6]
ps = d["processes"]
main = ps[0]
bad = []
if len(ps) != 5 or len(d["ranks"]) != 1 or d["ranks"][0]["processes"] != [0, 1, 2, 3, 4]:
    bad.append("want 1 column of 5 processes: %r" % d["ranks"])
if main["label"] != "pid %d" % main["pid"] or main["worker_of"] is not None or main["origin"] != "started":
    bad.append("main process: %r" % {k: main[k] for k in ("label", "worker_of", "origin")})
for i, p in enumerate(ps[1:], 1):
    if (p["label"], p["worker_of"], p["ppid"], p["origin"], p["column"]) != (
            "pid %d worker %d" % (main["pid"], i), main["pid"], main["pid"], "fork", 0):
        bad.append("worker %d: %r" % (i, {k: p[k] for k in ("label", "worker_of", "ppid", "origin")}))
rows = [l.split()[:2] for l in text.splitlines()[3:8]]
if rows != [["pid", str(main["pid"])]] + [["worker", str(i)] for i in range(1, 5)]:
    bad.append("text rows %r" % rows)
if "(worker N: a child of the process above it, forked (DataLoader's workers)" not in text:
    bad.append("text: no worker note")
if not text.startswith("== processes: 5 traces (4 workers, 1 without a rank)\n"):
    bad.append("text heading %r" % text.splitlines()[0])

# The frozen layer's weights: made at LINE_FROZEN in the main process, 2097152 B in one block
line = next(i for i, l in enumerate(open(script), 1) if "LINE_FROZEN" in l)
WEIGHTS = 2097152
def made_here(frames):
    return any(f.get("function") == "Linear.__init__" for f in frames) and any(
        f.get("python") and os.path.basename(f.get("file") or "") == os.path.basename(script)
        and f.get("line") == line
        for f in frames)
single = {}
for t in glob.glob(os.path.join(tmp, "t.*.trace")):
    r = subprocess.run([rep, "--format", "json", "--top", "0", t], capture_output=True, text=True)
    single[json.loads(r.stdout)["process"]["pid"]] = json.loads(r.stdout)
made = [x for x in single[main["pid"]]["sites"]["by_peak"] if made_here(x["frames"])]
key = made[0]["stack_key"] if len(made) == 1 else None
if key is None or made[0]["peak_live_bytes"] != WEIGHTS:
    bad.append("main process: sites made at line %d %r, want one of %d B" % (
        line, [x["peak_live_bytes"] for x in made], WEIGHTS))
main_groups = [g for g in single[main["pid"]]["leaks"]["groups"] if g["stack_key"] == key]
for p in ps[1:]:
    s = single[p["pid"]]
    inh = [g for g in s["leaks"]["groups"] if g["stack_key"] == key]
    if [(g["class"], g["bytes"], g["blocks"]) for g in inh] != [("inherited_at_fork", WEIGHTS, 1)]:
        bad.append("%s: the weights' groups %r, want one inherited at fork" % (p["label"], inh))
    if any(x["stack_key"] == key for x in s["sites"]["by_peak"]):
        bad.append("%s: a site of the weights' stack (a worker's sites are its own)" % p["label"])
    c = s["leaks"]["classes"]
    own = c["growing"]["bytes"] + c["released_at_teardown"]["bytes"] + c["live_at_exit"]["bytes"]
    if p["leaks"] != own or p["lifetime"]["inherited_at_fork"] != c["inherited_at_fork"]:
        bad.append("%s: merge's leaks %r, inherited %r; its report's %r, %r" % (
            p["label"], p["leaks"], p["lifetime"]["inherited_at_fork"], own,
            c["inherited_at_fork"]))
# merge: the weights once, the main process's, named as the single report names them
sites = [x for x in d["sites"] if x["stack_key"] == key]
main_leak = sum(g["bytes"] for g in main_groups if g["class"] in
                ("growing", "released_at_teardown", "live_at_exit"))
if [(x["total"], x.get("processes_with"), x["per_rank"], x["leaked_per_rank"]) for x in sites] != [
        (WEIGHTS, 1, [WEIGHTS], [main_leak])]:
    bad.append("merge: the weights' site %r" % [{k: x.get(k) for k in (
        "total", "processes_with", "per_rank", "leaked_per_rank")} for x in sites])
f0 = made[0]["frames"][0] if made else {}
want = "%s (%s+%s)" % (f0.get("function"), os.path.basename(f0.get("module") or "?"),
                       f0.get("offset"))
if not want.startswith("c10::alloc_cpu(") or not sites or sites[0]["frames"][0] != want:
    bad.append("merge: the weights' frame %r, the single report's %r" % (
        sites[0]["frames"][:1] if sites else None, want))
if "#1   heap     total" in text and " of 5 processes\n" not in text:
    bad.append("text: a site not counted in the 5 processes read")
for b in bad:
    print("FAIL: merge:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
exit $fail
