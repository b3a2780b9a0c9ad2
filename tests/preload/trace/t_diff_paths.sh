#!/bin/sh
# SPDX-License-Identifier: MIT
# t_diff_paths: `ndmemreport diff` matches the same script's sites whatever path it was started
# by. One script run as `python3 x.py` and, from a subfolder, as `python3 ../x.py` (Python keeps
# `sub/../x.py` in its frames): its two lines' sites (3 MB kept, 5 MB freed) are in both traces,
# never "only in A" and "only in B" (they were, before paths were compared normalised).
# usage: t_diff_paths.sh LIBNDMEM NDMEMREPORT PYTHON
set -u
lib=$1 rep=$2 py=$3
case $rep in /*) ;; *) rep=$PWD/$rep ;; esac
case $lib in /*) ;; *) lib=$PWD/$lib ;; esac
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/sub"
printf 'keep = [bytearray(3000000)]\nx = bytearray(5000000)\ndel x\nprint("ok")\n' >"$tmp/x.py"
run() { # DIR SCRIPT TRACE
  (cd "$1" && PYTHONHASHSEED=0 NDMEM_SUMMARY=0 NDMEM_OUTPUT="$3" LD_PRELOAD=$lib "$py" "$2") >/dev/null
}
run "$tmp" x.py "$tmp/a.trace" && run "$tmp/sub" ../x.py "$tmp/b.trace" || { echo "FAIL: a run failed" >&2; exit 1; }
"$rep" diff --format json --top 0 "$tmp/a.trace" "$tmp/b.trace" >"$tmp/diff.json" || { echo "FAIL: diff exit $?" >&2; exit 1; }
"$py" - "$tmp/diff.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
# The script's own frames (a sampled small block of the standard library's re/_casefix.py, in
# one run and not the other, once matched a looser "x.py:")
frames = lambda s: [f for f in s["frames"] if re.search(r"[/ (]x\.py:\d+\)", f)]
apart = [s for s in d["sites"] if frames(s) and (s["a"] is None or s["b"] is None)]
for s in apart:
    print("FAIL: only in %s: %s" % ("B" if s["a"] is None else "A", frames(s)[0]))
print("%d sites of x.py apart; %d unchanged sites in all" % (len(apart), d["unchanged"]))
sys.exit(1 if apart else 0)
PY
