#!/bin/sh
# SPDX-License-Identifier: MIT
# t_footprint: the shim takes nothing the program can see (t_footprint.c prints what it sees):
# under ndmem, in default and in exact mode (every block tracked, so every thread unwinds), the
# program gets every thread-specific-data key (PTHREAD_KEYS_MAX), the same descriptors below 256
# and the same lowest free one, the same signal dispositions and mask, glibc's mmap threshold as
# the program left it, as when the shim only
# forwards (NDMEM_ENABLED=0). The threads' teardown still runs (a TLS destructor, no key): the
# summary has one thread row (main's; the others ended) and the same counts in both modes (the
# peak aside: it depends on how the threads interleave), and a
# fork child whose only thread was not its parent's main one counts no free it did not see
# allocated (glibc's record of the destructor is not the program's).
# usage: t_footprint.sh LIBNDMEM T_FOOTPRINT
set -u
lib=$1 prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
NDMEM_ENABLED=0 LD_PRELOAD=$lib "$prog" >"$tmp/base" || { echo "baseline run failed" >&2; exit 1; }
keys=$(sed -n 's/^keys \([0-9]*\) of \([0-9]*\)$/\1 \2/p' "$tmp/base")
set -- $keys
if [ "$#" != 2 ] || [ "$1" != "$2" ]; then
  echo "baseline: the program does not get every key: $(head -1 "$tmp/base")" >&2
  exit 1
fi
for mode in default exact; do
  min=8192
  [ "$mode" = exact ] && min=0
  NDMEM_TRACK_MIN=$min NDMEM_SUMMARY=2 NDMEM_OUTPUT="$tmp/$mode.%p.trace" LD_PRELOAD=$lib \
    "$prog" >"$tmp/$mode.out" 2>"$tmp/$mode.err" || { echo "$mode: run failed" >&2; cat "$tmp/$mode.err" >&2; fail=1; continue; }
  if ! cmp -s "$tmp/base" "$tmp/$mode.out"; then
    echo "$mode: the program sees the shim:" >&2
    diff "$tmp/base" "$tmp/$mode.out" >&2
    fail=1
  fi
  rows=$(grep -c '^ndmem\[[0-9]*\]:   thread ' "$tmp/$mode.err")
  if [ "$rows" != 1 ]; then
    echo "$mode: $rows thread rows in the summary, want 1 (ended threads' shards released)" >&2
    fail=1
  fi
  # the peak depends on how the threads interleave: the counts and what is live at exit do not
  grep '^ndmem\[[0-9]*\]: \(heap\|calls\)' "$tmp/$mode.err" |
    sed 's/^ndmem\[[0-9]*\]//; s/peak [^;]*; //' >"$tmp/$mode.counts"
done
if [ "$fail" = 0 ] && ! cmp -s "$tmp/default.counts" "$tmp/exact.counts"; then
  echo "the counters differ between default and exact mode:" >&2
  diff "$tmp/default.counts" "$tmp/exact.counts" >&2
  fail=1
fi
if grep -q 'more released' "$tmp/default.err" "$tmp/exact.err"; then
  echo "frees counted of blocks never seen allocated:" >&2
  grep 'more released' "$tmp/default.err" "$tmp/exact.err" >&2
  fail=1
fi
NDMEM_TRACK_MIN=0 NDMEM_SUMMARY=1 NDMEM_SUMMARY_CHILDREN=1 NDMEM_OUTPUT="$tmp/fork.%p.trace" \
  LD_PRELOAD=$lib "$prog" fork 2>"$tmp/fork.err" || { echo "fork: run failed" >&2; fail=1; }
if [ "$(grep -c '^ndmem\[[0-9]*\]: heap' "$tmp/fork.err")" != 2 ] || grep -q 'more released' "$tmp/fork.err"; then
  echo "fork: want two summaries (parent, child) and no free of a block never seen allocated:" >&2
  cat "$tmp/fork.err" >&2
  fail=1
fi
[ "$fail" = 0 ] && echo "t_footprint: $(head -1 "$tmp/base"); nothing of the shim seen, default and exact"
exit "$fail"
