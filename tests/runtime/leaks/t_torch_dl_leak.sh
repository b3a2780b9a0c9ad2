#!/bin/sh
# SPDX-License-Identifier: MIT
# t_torch_dl_leak: `ndmem run --fail-on-leak` on a PyTorch job with 2 DataLoader workers: the job
# without a leak passes (exit 0: the main process's memory is reachable or held since start-up,
# each worker's inherited memory is its parent's, its own reachable); the same job keeping a
# tensor per step fails (exit 1) as growth (the list is freed at interpreter shutdown: released at
# teardown) and its report names the line that keeps it. Merge of the
# healthy job's traces finds no worker leak. Skips (77) without an interpreter that imports torch.
# usage: t_torch_dl_leak.sh NDMEM NDMEMREPORT SCRIPT
set -u
tool=$1 rep=$2 script=$3
py=$(sh "$(dirname "$0")/../find-python.sh" torch) || { echo "skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
fail=0
mkdir "$tmp/ok" "$tmp/keep"
(cd "$tmp/ok" && "$tool" run --no-summary --fail-on-leak -- "$py" "$script") >"$tmp/ok.out" 2>"$tmp/ok.err"
rc=$?
[ $rc = 0 ] || { echo "healthy job: exit $rc, want 0" >&2; cat "$tmp/ok.err" >&2; fail=1; }
n=$(ls "$tmp"/ok/*.trace | wc -l)
[ "$n" -ge 9 ] || { echo "healthy job: $n traces, want the main process's and 8 workers'" >&2; fail=1; }
"$rep" merge --format json "$tmp"/ok/*.trace >"$tmp/merge.json" 2>"$tmp/merge.err" ||
  { echo "merge failed: $(cat "$tmp/merge.err")" >&2; fail=1; }
"$py" - "$tmp/merge.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
bad = [(p["pid"], p["leaks"]) for p in d["processes"] if p["leaks"]]
if bad:
    print("FAIL: merge: processes with leaks: %r" % bad, file=sys.stderr)
    sys.exit(1)
PY
# Flushes every 200 ms: under --exact a flush of this job takes seconds, and with the default
# 1 s the kept site's floor was read in 2 windows only, too few to class it as growth.
(cd "$tmp/keep" && "$tool" run --no-summary --fail-on-leak --flush-ms=200 -- "$py" "$script" keep) \
  >"$tmp/keep.out" 2>"$tmp/keep.err"
rc=$?
[ $rc = 1 ] || { echo "leaking job: exit $rc, want 1" >&2; cat "$tmp/keep.err" >&2; fail=1; }
line=$(grep -n '# KEEP' "$script" | cut -d: -f1)
name=$(basename "$script")
grep -q "^== growing\|^== found growing\|^== released at teardown" "$tmp/keep.err" && grep -q "$name:$line)" "$tmp/keep.err" ||
  { echo "leaking job: the report does not name growth at $name:$line" >&2; cat "$tmp/keep.err" >&2; fail=1; }
cmp -s "$tmp/ok.out" "$tmp/keep.out" 2>/dev/null && { echo "the two jobs printed the same" >&2; fail=1; }
exit $fail
