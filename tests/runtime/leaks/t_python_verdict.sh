#!/bin/sh
# SPDX-License-Identifier: MIT
# t_python_verdict: `ndmem run --fail-on-leak` (every block tracked, the reachability scan at
# exit) passes programs without a training loop: python3 -c 'print(1)', 'import numpy' and
# 'import torch' exit 0, their interpreter's lifetime memory still reachable or possibly lost,
# nothing definitely or indirectly lost; and a Python program that loses a C block (strdup through
# ctypes, its result never kept) fails, naming it definitely lost. numpy and torch are skipped
# (each said) without an interpreter that imports them; the test skips (77) without one that
# imports numpy.
# The lost block is small and new: a conservative scan reads every word of the roots as a possible
# pointer, and a non-PIE interpreter's heap lies below 4 GiB, where 4 bytes of text padded with
# zeros reads as an address; a block of 120 KiB drew such a word into its middle (possibly lost,
# as memcheck would say) in 1 run of 20 to 60, one of 4 MiB in 1 of 5 (a stale pointer into its
# mapping's last use), one of 5000 B in none of 300. Smaller ones reuse a chunk that CPython 3.11
# still points into.
# usage: t_python_verdict.sh NDMEM NDMEMREPORT
set -u
tool=$1 rep=$2
here=$(dirname "$0")
py=$(sh "$here/../find-python.sh" numpy) ||
  { echo "skipped: no interpreter imports numpy" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
verdict() { # name, status wanted, python code
  d="$tmp/$1"
  mkdir "$d"
  (cd "$d" && "$tool" run --no-summary --fail-on-leak -- "$py" -c "$3") >"$d/out" 2>"$d/err"
  rc=$?
  [ "$rc" = "$2" ] || { echo "FAIL: $1: exit $rc, want $2" >&2; cat "$d/err" >&2; fail=1; }
  t=$(ls "$d"/*.trace | head -1)
  "$rep" --format json "$t" >"$d/r.json" || { echo "FAIL: $1: no report" >&2; fail=1; }
}
verdict print 0 'print(1)'
verdict numpy 0 'import numpy'
if "$py" -c 'import torch' >/dev/null 2>&1; then
  verdict torch 0 'import torch'
else
  echo "torch: skipped (not importable by $py)" >&2
fi
verdict lost 1 'import ctypes
libc = ctypes.CDLL(None)
libc.strdup.restype = None
libc.strdup(b"x" * 4999)'
"$py" - "$tmp" <<'PY' || fail=1
import json, os, sys
tmp = sys.argv[1]
bad = []
for name in sorted(os.listdir(tmp)):
    d = json.load(open(os.path.join(tmp, name, "r.json")))
    s = d["scan"] or {}
    if s.get("status") != "done" or not s.get("complete"):
        bad.append("%s: scan %r" % (name, s))
    c = {k: v["bytes"] for k, v in d["leaks"]["classes"].items() if v["stacks"]}
    if name == "lost":
        lost = [g for g in d["leaks"]["groups"] if g["class"] == "definitely_lost"]
        if [g["bytes"] for g in lost] != [5000]:
            bad.append("lost: definitely lost %r, want one group of 5000 B" %
                       [(g["bytes"], g["blocks"]) for g in lost])
    elif set(c) - {"still_reachable", "possibly_lost", "suppressed", "held_since_startup"}:
        bad.append("%s: classes %r" % (name, c))
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
exit $fail
