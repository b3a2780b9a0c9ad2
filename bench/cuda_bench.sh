#!/bin/sh
# SPDX-License-Identifier: MIT
# cuda_bench.sh: what ndmem's CUDA hooks cost, and what device workspaces save. Runs, plain and
# under the shim, alternately: cuda_pairs (ns per cuMemAlloc + cuMemFree pair at 256 B, 64 KiB,
# 4 MiB, 64 MiB, and per cuMemGetInfo), also under device workspaces (NDMEM_DEVICE_WS, sync=free and
# sync=ordered: the pairs come from the arena), churn_libcuda against churn (host malloc churn
# with and without libcuda loaded, no device call), and, where a GPU is present,
# examples/train_cuda plain, under ndmem and under device workspaces. Prints medians and ratios
# against plain. A ratio is never a failure; the exit status is non-zero only when the setup is
# broken (a program missing, the shim not on the path it should be on, results differing).
# usage: bench/cuda_bench.sh [--build DIR] [--reps N] [--quick]
set -eu
build=build reps=5 pairs=2000 getinfo=20000 ops=5000000 steps=200
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift ;;
    --build=*) build=${1#--build=} ;;
    --reps) reps=$2; shift ;;
    --reps=*) reps=${1#--reps=} ;;
    --quick) reps=2 pairs=200 getinfo=2000 ops=500000 steps=40 ;;
    -h|--help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cuda_bench: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
shim=$build/interpose/libndmem.so pairs_prog=$build/bench/cuda_pairs
churn=$build/bench/churn churn_cuda=$build/bench/churn_libcuda train=$build/examples/train_cuda
for f in "$shim" "$pairs_prog" "$churn" "$churn_cuda"; do
  [ -e "$f" ] || { echo "cuda_bench: $f is missing (meson compile -C $build)" >&2; exit 1; }
done
shim=$(cd "$(dirname "$shim")" && pwd)/libndmem.so
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Both sides start from the caller's environment less any preload or ndmem setting; the shim's
# side adds only the preload, a trace folder of its own and no summary (default settings).
unset LD_PRELOAD CUDA_INJECTION64_PATH || true
for v in $(env | sed -n 's/^\(NDMEM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
plain() { "$@"; }
under() { LD_PRELOAD=$shim NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/ndmem.%p.trace" "$@"; }
ws_free() { NDMEM_DEVICE_WS=on under "$@"; }
ws_ordered() { NDMEM_DEVICE_WS=sync=ordered under "$@"; }

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p"; } # value of KEY= in a line
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", (b > 0) ? a / b : 0}'; }

# ---- the driver: a GPU's, or the test double's (LD_LIBRARY_PATH)
if ! "$pairs_prog" --probe 2>"$tmp/probe"; then
  cat "$tmp/probe" >&2
  echo "cuda_bench: no usable libcuda.so.1; for the driver test double:" >&2
  echo "  LD_LIBRARY_PATH=$build/tests/gpu/fakecuda bench/cuda_bench.sh --build $build" >&2
  exit 1
fi
gpu=0
if nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
if [ "$gpu" = 1 ]; then
  echo "driver: $(nvidia-smi -L | head -1)"
else
  echo "driver: no GPU (nvidia-smi -L fails): a test double. Its figures are the hooks' own cost"
  echo "        against host memory, not a GPU's allocation cost."
fi

# ---- the hooks are on cuda_pairs' path: ndmem counts every allocation it makes
under "$pairs_prog" --pairs 10 --reps 1 --getinfo 0 >"$tmp/live" 2>&1 || { cat "$tmp/live" >&2; exit 1; }
line=$(grep 'cuda_pairs ndmem allocs_counted' "$tmp/live" || true)
if [ -z "$line" ] || [ "$(echo "$line" | field allocs_counted)" != "$(echo "$line" | field allocs_made)" ]; then
  echo "cuda_bench: under the shim, ndmem did not count cuda_pairs' allocations:" >&2
  cat "$tmp/live" >&2
  exit 1
fi
echo "hooks live: $line"

# ---- cuda_pairs, alternating plain and shim runs; each run prints its own median of 3 rounds
echo
echo "cuMemAlloc + cuMemFree pairs ($pairs per round, median of $reps runs x 3 rounds):"
i=0
while [ $i -lt "$reps" ]; do
  plain "$pairs_prog" --pairs "$pairs" --reps 3 --getinfo "$getinfo" >>"$tmp/pairs.plain"
  under "$pairs_prog" --pairs "$pairs" --reps 3 --getinfo "$getinfo" >>"$tmp/pairs.ndmem"
  ws_free "$pairs_prog" --pairs "$pairs" --reps 3 --getinfo 0 >>"$tmp/pairs.wsfree"
  ws_ordered "$pairs_prog" --pairs "$pairs" --reps 3 --getinfo 0 >>"$tmp/pairs.wsord"
  i=$((i + 1))
done
echo "  (ws: device workspaces serve the pairs from their arena; free: a workspace cuMemFree"
echo "   waits for the device as the driver's does; ordered: reuse in stream order, no wait)"
printf '  %-8s %12s %12s %7s %12s %7s %12s %7s\n' size 'plain ns' 'ndmem ns' ratio 'ws free ns' \
  ratio 'ws ord. ns' ratio
for size in $(grep 'size=' "$tmp/pairs.plain" | field size | sort -nu); do
  p=$(grep " size=$size " "$tmp/pairs.plain" | field ns_per_pair | median)
  n=$(grep " size=$size " "$tmp/pairs.ndmem" | field ns_per_pair | median)
  f=$(grep " size=$size " "$tmp/pairs.wsfree" | field ns_per_pair | median)
  o=$(grep " size=$size " "$tmp/pairs.wsord" | field ns_per_pair | median)
  label=$(awk -v s="$size" 'BEGIN {if (s >= 1048576) printf "%d MiB", s / 1048576; else if (s >= 1024) printf "%d KiB", s / 1024; else printf "%d B", s}')
  printf '  %-8s %12.1f %12.1f %7s %12.1f %7s %12.1f %7s\n' "$label" "$p" "$n" "$(ratio "$n" "$p")" \
    "$f" "$(ratio "$f" "$p")" "$o" "$(ratio "$o" "$p")"
done
p=$(grep 'getinfo' "$tmp/pairs.plain" | field ns_per_call | median)
n=$(grep 'getinfo' "$tmp/pairs.ndmem" | field ns_per_call | median)
printf '  %-8s %12.1f %12.1f %7s   (ns per cuMemGetInfo)\n' getinfo "$p" "$n" "$(ratio "$n" "$p")"

# ---- host churn with libcuda loaded and no device call, against churn without it
echo
echo "host malloc churn, $ops ops, 1 thread (median of $reps):"
i=0
while [ $i -lt "$reps" ]; do
  plain "$churn_cuda" --ops "$ops" >>"$tmp/cc.plain"
  under "$churn_cuda" --ops "$ops" >>"$tmp/cc.ndmem"
  plain "$churn" --ops "$ops" >>"$tmp/c.plain"
  under "$churn" --ops "$ops" >>"$tmp/c.ndmem"
  i=$((i + 1))
done
sums=$(cat "$tmp"/cc.* "$tmp"/c.* | field checksum | sort -u | wc -l)
[ "$sums" = 1 ] || { echo "cuda_bench: churn checksums differ between runs" >&2; exit 1; }
printf '  %-22s %12s %12s %8s\n' process 'plain ns/op' 'ndmem ns/op' ratio
for k in cc c; do
  p=$(field ns_per_op <"$tmp/$k.plain" | median)
  n=$(field ns_per_op <"$tmp/$k.ndmem" | median)
  name='without libcuda'
  [ $k = cc ] && name='libcuda loaded'
  printf '  %-22s %12.2f %12.2f %8s\n' "$name" "$p" "$n" "$(ratio "$n" "$p")"
done

# ---- the CUDA main job, on a GPU only (the test double runs no kernel)
echo
if [ "$gpu" = 0 ]; then
  echo "train_cuda: skipped (no GPU)"
elif [ ! -x "$train" ]; then
  echo "train_cuda: skipped ($train not built: no nvcc when configured)"
elif ldd "$train" 2>/dev/null | grep -q 'not found'; then
  echo "train_cuda: skipped (cannot load: $(ldd "$train" | grep 'not found' | awk '{print $1}' | tr '\n' ' '))"
else
  echo "train_cuda --steps $steps (median of $reps; seconds of its training loop):"
  i=0
  while [ $i -lt "$reps" ]; do
    plain "$train" --steps "$steps" >"$tmp/t.plain.out" 2>>"$tmp/t.plain"
    under "$train" --steps "$steps" >"$tmp/t.ndmem.out" 2>>"$tmp/t.ndmem"
    ws_free "$train" --steps "$steps" >"$tmp/t.wsfree.out" 2>>"$tmp/t.wsfree"
    ws_ordered "$train" --steps "$steps" >"$tmp/t.wsord.out" 2>>"$tmp/t.wsord"
    for k in ndmem wsfree wsord; do
      cmp -s "$tmp/t.plain.out" "$tmp/t.$k.out" || {
        echo "cuda_bench: train_cuda's losses differ under ndmem ($k)" >&2
        diff "$tmp/t.plain.out" "$tmp/t.$k.out" >&2
        exit 1
      }
    done
    i=$((i + 1))
  done
  secs() { sed -n 's/.* batch [0-9]*, \([0-9.]*\) s .*/\1/p' "$tmp/t.$1" | median; }
  p=$(secs plain) n=$(secs ndmem) f=$(secs wsfree) o=$(secs wsord)
  printf '  plain %.3f s, ndmem %.3f s: %s; device workspaces: sync=free %.3f s: %s, ordered %.3f s: %s (losses identical)\n' \
    "$p" "$n" "$(ratio "$n" "$p")" "$f" "$(ratio "$f" "$p")" "$o" "$(ratio "$o" "$p")"
fi
