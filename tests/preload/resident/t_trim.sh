#!/bin/sh
# SPDX-License-Identifier: MIT
# t_trim: threads that come and go freeing tensor-sized blocks, with no cycle to learn, make
# ndmem ask for a bounded number of malloc_trim calls (it once asked for one per large free: 21x
# slower on mimalloc's test-stress), and a training-loop-shaped program still gets its trims.
# Counted by libtrimcount, a pass-through allocator preloaded after the shim.
# usage: t_trim.sh LIBNDMEM LIBTRIMCOUNT T_TRIM TENSOR_LOOP
set -u
lib=$1 count=$2 prog=$3 loop=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
trims() { sed -n 's/^malloc_trim calls //p' "$1"; }
# 20 rounds x 4 threads x 400 frees of 256 KiB+: 32000 large frees, 8 GiB freed.
LD_PRELOAD="$lib $count" NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/t.%p.trace" "$prog" 20 4 400 \
  >"$tmp/out" 2>"$tmp/err" || { echo "t_trim failed" >&2; cat "$tmp/err" >&2; exit 1; }
n=$(trims "$tmp/err")
echo "threads come and go: $(cat "$tmp/out"); malloc_trim calls $n" >&2
# The bound ws.c keeps for a stream that never repeats: TRIM_BLIND (8) for the whole process.
[ -n "$n" ] && [ "$n" -le 8 ] || { echo "FAIL: $n malloc_trim calls for a program without cycles (at most 8)" >&2; fail=1; }
# A training loop: trims while it learns (its peak RSS stays near its live bytes), then its plan.
LD_PRELOAD="$lib $count" NDMEM_SUMMARY=0 NDMEM_TRACE=0 "$loop" --iters 8 >"$tmp/out" 2>"$tmp/err" ||
  { echo "tensor_loop failed" >&2; cat "$tmp/err" >&2; exit 1; }
n=$(trims "$tmp/err")
echo "tensor_loop: malloc_trim calls $n" >&2
[ -n "$n" ] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || { echo "FAIL: tensor_loop: $n malloc_trim calls (want 1 to 64)" >&2; fail=1; }
exit $fail
