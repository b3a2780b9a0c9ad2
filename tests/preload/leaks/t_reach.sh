#!/bin/sh
# SPDX-License-Identifier: MIT
# t_reach: the reachability scan at exit classes t_reach.c's blocks as memcheck does (the truth
# of each case is in t_reach.c), with every block tracked; ndmemreport --fail-on-leak fails on
# definitely and indirectly lost memory only, --fail-on-reachable on the rest too; a default
# (sampled) trace still proves the lost block it tracked.
# usage: t_reach.sh LIBNDMEM T_REACH NDMEMREPORT PYTHON
set -u
lib=$1 prog=$2 rep=$3 py=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# case, then the classes: name=bytes/blocks, in the JSON's "leaks" totals (suppressions off)
check() {
  c=$1
  shift
  rm -f "$tmp"/t.*
  NDMEM_SUMMARY=0 NDMEM_TRACK_MIN=${TRACK_MIN:-0} NDMEM_OUTPUT="$tmp/t.%p.trace" LD_PRELOAD=$lib \
    "$prog" "$c" || { echo "$c: program failed" >&2; fail=1; return; }
  set -- "$@"
  for t in "$tmp"/t.*.trace; do
    "$rep" --format json --top 0 --no-builtin-suppressions "$t" >"$t.json" 2>"$t.err" ||
      { echo "$c: ndmemreport failed: $(cat "$t.err")" >&2; fail=1; }
  done
  "$py" - "$c" "$tmp" "$@" <<'PY' || fail=1
import glob, json, sys
case, tmp, want = sys.argv[1], sys.argv[2], sys.argv[3:]
got = []
for f in sorted(glob.glob(tmp + "/t.*.trace.json")):
    d = json.load(open(f))
    s = d.get("scan") or {}
    if s.get("status") != "done" or not s.get("complete"):
        print("FAIL: %s: scan %r" % (case, s), file=sys.stderr)
        sys.exit(1)
    cls = {}
    for e in d["leaks"]["groups"]:
        k = cls.setdefault(e["class"], [0, 0])
        k[0] += e["bytes"]
        k[1] += e["blocks"]
    got.append(" ".join("%s=%d/%d" % (k, v[0], v[1]) for k, v in sorted(cls.items())))
want = [" ".join(sorted(w.split(","))) if w else "" for w in want]
if sorted(got) != sorted(want):
    print("FAIL: %s: classes %r, want %r" % (case, got, want), file=sys.stderr)
    sys.exit(1)
PY
}
# A thread's DTV (320 B, glibc's calloc in pthread_create) is reached only through a pointer into
# it, as memcheck also finds it: possibly lost.
check global "still_reachable=1000/1"
check lose "definitely_lost=64/1,indirectly_lost=100/1"
check interior "possibly_lost=300/1"
check cycle "definitely_lost=48/1,indirectly_lost=48/1"
check register "possibly_lost=320/1,still_reachable=4096/1"
check stack "possibly_lost=320/1,still_reachable=8192/1"
check tls "possibly_lost=320/1,still_reachable=2048/1"
check deep "still_reachable=512/1"
check fork "still_reachable=1000/1" "definitely_lost=72/1,inherited_at_fork=1000/1"

# The verdict: lost memory fails (naming the class, the bytes and the line), reachable does not
# unless asked.
verdict() { # case, flags, wanted status
  rm -f "$tmp"/v.*
  NDMEM_SUMMARY=0 NDMEM_TRACK_MIN=0 NDMEM_OUTPUT="$tmp/v.trace" LD_PRELOAD=$lib "$prog" "$1"
  "$rep" $2 "$tmp/v.trace" >"$tmp/v.txt" 2>&1
  rc=$?
  [ "$rc" -eq "$3" ] || { echo "$1: ndmemreport $2 exited $rc, want $3" >&2; fail=1; }
}
verdict global --fail-on-leak 0
verdict global "--fail-on-leak --fail-on-reachable" 1
verdict interior --fail-on-leak 0
verdict interior "--fail-on-leak --fail-on-reachable" 1
verdict lose --fail-on-leak 1
grep -q "^== definitely lost" "$tmp/v.txt" && grep -q "64 B in 1 block" "$tmp/v.txt" &&
  grep -q "t_reach.c:[0-9]*)" "$tmp/v.txt" && grep -q "^== indirectly lost" "$tmp/v.txt" ||
  { echo "lose: the text report does not name both classes with their line:" >&2; cat "$tmp/v.txt" >&2; fail=1; }
line=$(grep -n '// LOST' "$(dirname "$0")/t_reach.c" | cut -d: -f1)
grep -q "t_reach.c:$line)" "$tmp/v.txt" || { echo "lose: no t_reach.c:$line" >&2; fail=1; }

# At the default tracking the 64 B block is sampled at most: a lost block the scan tracked is
# still proven lost. With the sampler off and a 50 B floor, both blocks are tracked exactly while
# the program's other small blocks are not: the allocator's memory is read as roots, and the
# verdict names the lost block.
rm -f "$tmp"/d.*
NDMEM_SUMMARY=0 NDMEM_TRACK_MIN=50 NDMEM_SAMPLE=0 NDMEM_OUTPUT="$tmp/d.trace" LD_PRELOAD=$lib "$prog" lose
"$rep" --format json --no-builtin-suppressions "$tmp/d.trace" >"$tmp/d.json" || fail=1
"$py" - "$tmp/d.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
cls = sorted((e["class"], e["bytes"]) for e in d["leaks"]["groups"])
if ("definitely_lost", 64) not in cls or ("indirectly_lost", 100) not in cls:
    print("FAIL: partial scan: %r %r" % (cls, d["scan"]), file=sys.stderr)
    sys.exit(1)
PY

# NDMEM_LEAK_SCAN=0: no classes, the scan says so.
NDMEM_SUMMARY=0 NDMEM_LEAK_SCAN=0 NDMEM_TRACK_MIN=0 NDMEM_OUTPUT="$tmp/o.trace" LD_PRELOAD=$lib "$prog" lose
"$rep" "$tmp/o.trace" | grep -q "reach       off (NDMEM_LEAK_SCAN=0)" || { echo "scan off not said" >&2; fail=1; }
exit $fail
