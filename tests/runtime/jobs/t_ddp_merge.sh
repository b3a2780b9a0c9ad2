#!/bin/sh
# SPDX-License-Identifier: MIT
# t_ddp_merge: a torch.distributed DDP job over gloo, two ranks started as torchrun would start
# them (MASTER_ADDR=127.0.0.1, a free MASTER_PORT, RANK, WORLD_SIZE; Debian's torchrun 1.13 does
# not run on Python 3.11), each under `ndmem run --output=ndmem.%r.trace`; rank 1 keeps a
# 256 KiB tensor per step for 30 steps at a marked line. `ndmemreport merge`, the traces given in
# reverse order, labels rank 0 and rank 1 from the traces (torch's RANK), calls none of the
# lifetime buffers (OpenBLAS's, torch's start-up) leaks, and shows rank 1's leaking Python line
# with its 7.50 MiB exact (check_merge.py). Small blocks are not sampled (NDMEM_SAMPLE=0), so
# that the leaks are exact. Skips (77) without an interpreter that imports torch.distributed
# (Debian: python3-torch).
# usage: t_ddp_merge.sh NDMEM_TOOL NDMEMREPORT SCRIPT CHECK_MERGE PYTHON
set -u
tool=$1 report=$2 script=$3 check=$4 python=$5
py=""
for cand in ${NDMEM_TEST_PYTHON:-} /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
  [ -n "$cand" ] && [ -x "$cand" ] &&
    "$cand" -c 'import torch.distributed as d; assert d.is_available()' >/dev/null 2>&1 && { py=$cand; break; }
done
[ -n "$py" ] || { echo "no Python interpreter imports torch.distributed (Debian: apt-get install python3-torch); skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 GLOO_SOCKET_IFNAME=lo
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NDMEM_SAMPLE=0
unset LOCAL_RANK OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK SLURM_PROCID 2>/dev/null
for r in 0 1; do
  RANK=$r "$tool" run --no-summary --output="$tmp/ndmem.%r.trace" -- "$py" "$script" \
    >"$tmp/out.$r" 2>"$tmp/err.$r" &
done
wait
for r in 0 1; do
  grep -q "^rank $r pid " "$tmp/out.$r" || { no "rank $r did not finish"; cat "$tmp/err.$r" >&2; }
  grep -qxF "ndmem: trace $tmp/ndmem.$r.trace" "$tmp/err.$r" || no "ndmem run of rank $r: no report of its trace"
done
pid0=$(sed -n 's/^rank 0 pid \([0-9]*\) .*/\1/p' "$tmp/out.0")
pid1=$(sed -n 's/^rank 1 pid \([0-9]*\) .* kept 7864320$/\1/p' "$tmp/out.1")
[ -n "$pid0" ] && [ -n "$pid1" ] || no "the ranks' output: $(cat "$tmp/out.0" "$tmp/out.1")"
"$report" merge --top 5 "$tmp/ndmem.1.trace" "$tmp/ndmem.0.trace" >"$tmp/merge.txt" 2>"$tmp/merr" ||
  no "merge: exit status $?: $(cat "$tmp/merr")"
"$report" merge --format json --top 0 "$tmp/ndmem.1.trace" "$tmp/ndmem.0.trace" >"$tmp/merge.json" \
  2>>"$tmp/merr" || no "merge --format json: exit status $?"
"$python" "$check" "$tmp/merge.json" "$tmp/merge.txt" "$script" 7864320 "$pid0" "$pid1" ||
  { no "merge"; cat "$tmp/merge.txt" >&2; }
grep -qxF '   in rank order (each trace'"'"'s rank from its RANK), then by pid' "$tmp/merge.txt" ||
  no "merge: the ranks' source"
[ $fail = 0 ] && sed -n '1,/^== sites/p' "$tmp/merge.txt" # the log shows what merge said
exit $fail
