#!/bin/sh
# SPDX-License-Identifier: MIT
# t_mpi_merge: an Open MPI job of two numpy ranks (mpirun -np 2, local launch only: no remote
# agent, loopback only), each rank run as a user types it, `mpirun ... ndmem run
# --output=ndmem.%r.trace -- python3 mpi_leak.py`; rank 1 leaks 5 MiB at a marked line.
# `ndmemreport merge` of the two traces, given in reverse order, labels rank 0 and rank 1 from
# the traces, classes OpenBLAS's buffers as held since start-up and not as leaks, and shows
# rank 1's leaking Python line with its bytes exact (check_merge.py). Then the same job with
# ndmem in front of mpirun (`ndmem run -- mpirun ...`, the default ndmem.%p.trace): the ranks
# are exec'd children of the traced launcher, still labelled by rank, the launcher after them
# as a process without a rank, none of them its worker. Small blocks are not sampled
# (NDMEM_SAMPLE=0), so that the leaks are exact. Skips (77) without mpirun (Debian:
# openmpi-bin) or an interpreter with numpy.
# usage: t_mpi_merge.sh NDMEM_TOOL NDMEMREPORT FIND_PYTHON SCRIPT CHECK_MERGE PYTHON
set -u
tool=$1 report=$2 script=$4 check=$5 python=$6
command -v mpirun >/dev/null 2>&1 || { echo "no mpirun (Debian: apt-get install openmpi-bin); skipped" >&2; exit 77; }
py=$("$3") || { echo "no Python interpreter with numpy; skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
# Local launch only (no ssh/rsh agent), its own wire-up over loopback; as root, as CI runs.
export OMPI_MCA_plm_rsh_agent= OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NDMEM_SAMPLE=0
unset RANK WORLD_SIZE LOCAL_RANK PMI_RANK PMIX_RANK SLURM_PROCID 2>/dev/null
mpi="mpirun --allow-run-as-root --oversubscribe -np 2"

mkdir "$tmp/a"
# shellcheck disable=SC2086
$mpi "$tool" run --no-summary --output="$tmp/a/ndmem.%r.trace" -- "$py" "$script" \
  >"$tmp/a/out" 2>"$tmp/a/err" || { no "mpirun ndmem run: exit status $?"; cat "$tmp/a/err" >&2; }
for r in 0 1; do # each rank's ndmem run found its own trace (its %r as the shim's)
  grep -qxF "ndmem: trace $tmp/a/ndmem.$r.trace" "$tmp/a/err" || no "ndmem run of rank $r: no report of its trace"
done
pid0=$(sed -n 's/^rank 0 pid \([0-9]*\) .*/\1/p' "$tmp/a/out")
pid1=$(sed -n 's/^rank 1 pid \([0-9]*\) kept 5242880$/\1/p' "$tmp/a/out")
[ -n "$pid0" ] && [ -n "$pid1" ] || no "the ranks' output: $(cat "$tmp/a/out")"
"$report" merge --top 5 "$tmp/a/ndmem.1.trace" "$tmp/a/ndmem.0.trace" >"$tmp/a/merge.txt" 2>"$tmp/a/merr" ||
  no "merge: exit status $?: $(cat "$tmp/a/merr")"
"$report" merge --format json --top 0 "$tmp/a/ndmem.1.trace" "$tmp/a/ndmem.0.trace" \
  >"$tmp/a/merge.json" 2>>"$tmp/a/merr" || no "merge --format json: exit status $?"
"$python" "$check" "$tmp/a/merge.json" "$tmp/a/merge.txt" "$script" 5242880 "$pid0" "$pid1" ||
  { no "merge of mpirun ndmem run"; cat "$tmp/a/merge.txt" >&2; }
grep -qxF '   in rank order (each trace'"'"'s rank from its OMPI_COMM_WORLD_RANK), then by pid' \
  "$tmp/a/merge.txt" || no "merge: the ranks' source"

# ndmem in front of mpirun: the launcher's trace and its ranks', named by pid
mkdir "$tmp/b"
# shellcheck disable=SC2086
(cd "$tmp/b" && "$tool" run --no-summary --no-report -- $mpi "$py" "$script") >"$tmp/b/out" \
  2>"$tmp/b/err" || { no "ndmem run mpirun: exit status $?"; cat "$tmp/b/err" >&2; }
pid0=$(sed -n 's/^rank 0 pid \([0-9]*\) .*/\1/p' "$tmp/b/out")
pid1=$(sed -n 's/^rank 1 pid \([0-9]*\) kept 5242880$/\1/p' "$tmp/b/out")
launcher=""
for t in "$tmp"/b/ndmem.*.trace; do
  p=${t##*/ndmem.} p=${p%.trace}
  [ "$p" = "$pid0" ] || [ "$p" = "$pid1" ] || launcher="$launcher$p"
done
[ "$(ls "$tmp/b" | grep -c '\.trace$')" = 3 ] || no "ndmem run mpirun: traces $(ls "$tmp/b")"
"$report" merge --top 5 "$tmp"/b/ndmem.*.trace >"$tmp/b/merge.txt" 2>"$tmp/b/merr" || no "merge (b): exit status $?"
"$report" merge --format json --top 0 "$tmp"/b/ndmem.*.trace >"$tmp/b/merge.json" 2>>"$tmp/b/merr" ||
  no "merge (b) --format json: exit status $?"
"$python" "$check" "$tmp/b/merge.json" "$tmp/b/merge.txt" "$script" 5242880 "$pid0" "$pid1" "$launcher" ||
  { no "merge of ndmem run mpirun"; cat "$tmp/b/merge.txt" >&2; }
[ $fail = 0 ] && sed -n '1,/^== sites/p' "$tmp/a/merge.txt" # the log shows what merge said
exit $fail
