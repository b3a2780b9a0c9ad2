#!/bin/sh
# SPDX-License-Identifier: MIT
# t_torch_workers: PyTorch DataLoader workers (fork children ending with os._exit) each leave a
# trace that says _exit(0), the loss is bit for bit the same, and only the parent prints a
# summary; `ndmemreport merge` of all the traces labels the workers as the main process's.
# Skips (77) without an interpreter that imports torch (Debian: python3-torch).
# usage: t_torch_workers.sh LIBNDMEM SCRIPT NDMEMREPORT
set -u
lib=$1 script=$2 rep=$3
py=$(sh "$(dirname "$0")/find-python.sh" torch) || { echo "skipped" >&2; exit 77; }
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
"$py" - "$tmp/merge.json" "$tmp/merge.txt" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
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
for b in bad:
    print("FAIL: merge:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
exit $fail
