#!/bin/sh
# SPDX-License-Identifier: MIT
# t_unwind_masks: libunwind's signal masking is skipped during ndmem's unwinds only while no
# handler of the program's may unwind with libunwind (interpose/stacks/unwind.c). The summary's
# `libunwind: N signal masks skipped, M made` line counts libunwind's own sigprocmask calls:
# plain: N > 0, M 0; a handler in a library that links libunwind, or a dlsym of its names,
# installed first: N 0, M > 0; the handler installed after some allocations: both.
# usage: t_unwind_masks.sh LIBNDMEM T_UNWIND_MASKS
set -u
lib=$1 prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for mode in plain handler lookup late; do
  NDMEM_TRACK_MIN=0 NDMEM_SUMMARY=1 NDMEM_OUTPUT="$tmp/$mode.trace" LD_PRELOAD="$lib" \
    "$prog" "$mode" >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
    { echo "FAIL: $mode: exit $?" >&2; cat "$tmp/$mode.err" >&2; fail=1; continue; }
  line=$(grep -o 'libunwind: [0-9]* signal masks skipped, [0-9]* made' "$tmp/$mode.err")
  skipped=$(echo "$line" | sed -n 's/libunwind: \([0-9]*\) signal masks skipped, \([0-9]*\) made/\1/p')
  made=$(echo "$line" | sed -n 's/libunwind: \([0-9]*\) signal masks skipped, \([0-9]*\) made/\2/p')
  if [ -z "$skipped" ] || [ -z "$made" ]; then
    echo "FAIL: $mode: no 'libunwind: ...' summary line" >&2
    cat "$tmp/$mode.err" >&2
    fail=1
    continue
  fi
  case $mode in
    plain) ok=$([ "$skipped" -gt 0 ] && [ "$made" -eq 0 ] && echo 1) ;;
    handler | lookup) ok=$([ "$skipped" -eq 0 ] && [ "$made" -gt 0 ] && echo 1) ;;
    late) ok=$([ "$skipped" -gt 0 ] && [ "$made" -gt 0 ] && echo 1) ;;
  esac
  if [ -n "$ok" ]; then
    echo "ok: $mode: $skipped skipped, $made made"
  else
    echo "FAIL: $mode: $skipped skipped, $made made" >&2
    fail=1
  fi
done
exit $fail
