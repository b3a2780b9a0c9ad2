#!/bin/sh
# SPDX-License-Identifier: MIT
# t_np_cache: a numpy loop (np_cache.py, 3 epochs of 30 steps, each step a marked cycle, ended by
# os._exit as a DataLoader worker ends) whose dict cache fills in the first epoch and then holds
# is a bounded cache, exactly: 30 arrays of 256 KiB reached by cycle 29 of 90 (the last born in
# step 30, when 29 cycles had closed), flat for 61 cycles, by its births; and
# `ndmemreport --fail-on-growth` does not fail it: with every block tracked it passes (0), at the
# default tracking it is unchecked (3, its line: growth in small blocks, sampled, may have gone
# unseen). The same loop keeping a copy every step is growing, 90 arrays, and fails it. With
# every block tracked, no site growing by bytes a cycle (numpy's own small caches, under the
# growth floor) is named on stderr. Skips (77) without numpy.
# usage: t_np_cache.sh LIBNDMEM NDMEMREPORT NP_CACHE_PY FIND_PYTHON TOOLS_PYTHON
set -u
lib=$1 rep=$2 script=$3
py=$("$4") || { echo "skipped: no Python interpreter with numpy" >&2; exit 77; }
export PYTHONPATH=$5
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# run NAME MODE [ENV...]: the loop under the shim, its trace $tmp/NAME.trace
run() {
  name=$1 mode=$2
  shift 2
  env "$@" NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/$name.trace" LD_PRELOAD="$lib" \
    "$py" "$script" "$mode" --epochs 3 --items 30 --marks --exit >"$tmp/$name.out" 2>"$tmp/$name.err" ||
    { echo "$name: the program failed" >&2; cat "$tmp/$name.err" >&2; fail=1; }
}
# verdict NAME WANT: --fail-on-growth's exit status; 3 with its one line on stderr
verdict() {
  "$rep" --fail-on-growth "$tmp/$1.trace" >"$tmp/$1.txt" 2>"$tmp/$1.verdict"
  rc=$?
  [ "$rc" = "$2" ] ||
    { echo "$1: --fail-on-growth exit $rc, want $2" >&2; cat "$tmp/$1.txt" "$tmp/$1.verdict" >&2; fail=1; }
  lines=$(grep -c "^ndmemreport: .*: --fail-on-growth: unchecked: no growth found, but blocks under 8.00 KiB (8192 B) are recorded only when sampled" "$tmp/$1.verdict")
  [ "$lines" = "$([ "$2" = 3 ] && echo 1 || echo 0)" ] && [ "$(wc -l <"$tmp/$1.verdict")" = "$lines" ] ||
    { echo "$1: --fail-on-growth's stderr: $(cat "$tmp/$1.verdict")" >&2; fail=1; }
}
# classes NAME CLASS BLOCKS PLATEAU: the groups of 256 KiB arrays, exactly one of CLASS with
# BLOCKS blocks, and its plateau as JSON (or null)
classes() {
  "$rep" --format json --top 0 "$tmp/$1.trace" >"$tmp/$1.json" || { echo "$1: no JSON" >&2; fail=1; return; }
  "$py" - "$tmp/$1.json" "$1" "$2" "$3" "$4" <<'PY' || fail=1
import json, sys
doc, name, cls, blocks, plateau = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], int(sys.argv[4]), json.loads(sys.argv[5])
big = [g for g in doc["leaks"]["groups"] if g["class"] in ("growing", "released_at_teardown", "live_at_exit", "bounded_cache") and g["bytes"] >= 10 * 262144]
got = [(g["class"], g["blocks"], g["bytes"], g["plateau"]) for g in big]
want = [(cls, blocks, blocks * 262144, plateau)]
if got != want:
    print("%s: groups %r, want %r" % (name, got, want), file=sys.stderr)
    sys.exit(1)
PY
}
run cache cache
verdict cache 3
classes cache bounded_cache 30 '{"bytes": 7864320, "from_cycle": 29, "cycles": 61, "windows": 0, "by": "births"}'
grep -q '^#[0-9]* *heap *7.50 MiB (7864320 B) in 30 blocks' "$tmp/cache.txt" &&
  grep -q 'reached 7.50 MiB (7864320 B) by cycle 29 of 90 (32 %),' "$tmp/cache.txt" ||
  { echo "cache: no bounded cache in the text report" >&2; cat "$tmp/cache.txt" >&2; fail=1; }
run list list
verdict list 1
classes list growing 90 null
run exact cache NDMEM_TRACK_MIN=0
verdict exact 0
if grep -E '^ndmem: growing: .* \+~?[0-9.]+ B per ' "$tmp/exact.err"; then
  echo "exact: a site growing by bytes a cycle was named" >&2
  fail=1
fi
exit $fail
