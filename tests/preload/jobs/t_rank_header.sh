#!/bin/sh
# SPDX-License-Identifier: MIT
# t_rank_header: a process under the shim records where it stands in its job in its trace's header,
# as ndmemreport's JSON shows it: its pid and parent's pid; how it started (the process the user
# started, exec'd by a traced process, a fork child: its own pid, its parent's as ppid); and its
# rank, world size, local rank and local world size from each launcher's variables (torch, Open
# MPI, MPICH's PMI, PMIx, Slurm), a value that is not a plain non-negative integer read as unknown.
# NDMEM_OUTPUT's %r names the file by the same reading (0 when unknown), and `ndmem run` finds the
# trace it names (its own copy of the reading agrees).
# usage: t_rank_header.sh NDMEM_TOOL LIBNDMEM T_RANK NDMEMREPORT PYTHON
set -u
tool=$1 lib=$2 prog=$3 report=$4 python=$5
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
# every launcher variable the cases set, unset around each run (a CI job may run under one)
vars="RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE
  OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE PMI_RANK PMI_SIZE MPI_LOCALRANKID
  MPI_LOCALNRANKS PMIX_RANK SLURM_PROCID SLURM_NTASKS SLURM_LOCALID"
clean() { for v in $vars; do printf ' -u %s' "$v"; done; }

# json TRACE: the report's process object's job members, one line "pid ppid origin rank world
# local local_world from" (null for unknown)
json() {
  "$report" --format json "$1" >"$tmp/j" 2>"$tmp/jerr" || { no "$1: ndmemreport exit $?"; return; }
  "$python" -c '
import json, sys
p = json.load(open(sys.argv[1]))["process"]
print(" ".join(str(p[k]) if p[k] is not None else "null" for k in
      ("pid", "ppid", "origin", "rank", "world_size", "local_rank", "local_world_size", "rank_from")))
' "$tmp/j"
}

# case N RANK_FILE 'RANK WORLD LOCAL LOCAL_WORLD FROM' VAR=VALUE...: the program under the shim
# with those variables; its trace must be t.RANK_FILE.PID.trace and say so
case_() {
  n=$1 rfile=$2 want=$3
  shift 3
  d=$tmp/c$n
  mkdir "$d"
  # shellcheck disable=SC2046
  env $(clean) "$@" LD_PRELOAD="$lib" NDMEM_SUMMARY=0 NDMEM_OUTPUT="$d/t.%r.%p.trace" \
    "$prog" >"$d/out" 2>"$d/err" || no "case $n: exit status $?"
  [ ! -s "$d/err" ] || no "case $n: stderr: $(cat "$d/err")"
  read -r _ pid _ ppid <"$d/out"
  t=$d/t.$rfile.$pid.trace
  [ -f "$t" ] || { no "case $n: no $t (%r: $(ls "$d"))"; return; }
  got=$(json "$t")
  [ "$got" = "$pid $ppid started $want" ] || no "case $n ($*): got '$got', want '$pid $ppid started $want'"
  # ndmem run: the trace its --output names is found and reported as this run's
  # shellcheck disable=SC2046
  env $(clean) "$@" "$tool" run --no-summary --output="$d/r.%r.trace" -- "$prog" >/dev/null \
    2>"$d/run" || no "case $n: ndmem run: exit status $?"
  grep -qxF "ndmem: trace $d/r.$rfile.trace" "$d/run" || no "case $n: ndmem run: $(head -3 "$d/run")"
}
case_ 1 0 'null null null null null'
case_ 2 3 '3 8 1 2 RANK' RANK=3 WORLD_SIZE=8 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2
case_ 3 1 '1 2 1 2 OMPI_COMM_WORLD_RANK' OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 \
  OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 PMIX_RANK=1
case_ 4 5 '5 6 0 3 PMI_RANK' PMI_RANK=5 PMI_SIZE=6 MPI_LOCALRANKID=0 MPI_LOCALNRANKS=3
case_ 5 4 '4 null null null PMIX_RANK' PMIX_RANK=4 WORLD_SIZE=9
case_ 6 12 '12 16 3 null SLURM_PROCID' SLURM_PROCID=12 SLURM_NTASKS=16 SLURM_LOCALID=3
# torch's RANK before the launcher around it
case_ 7 2 '2 null null null RANK' SLURM_PROCID=7 SLURM_NTASKS=8 RANK=2
# bad values: unknown, named by the variable that held them; an empty one is no variable
case_ 8 0 'null null null null RANK' RANK=abc OMPI_COMM_WORLD_RANK=1
case_ 9 0 'null 2 null null RANK' RANK=-1 WORLD_SIZE=2
case_ 10 0 'null null null null RANK' 'RANK=1 ' WORLD_SIZE=0 LOCAL_RANK=0x1 LOCAL_WORLD_SIZE=2k
case_ 11 7 '7 null null null PMI_RANK' RANK= PMI_RANK=007
case_ 12 0 'null null null null RANK' RANK=2147483648

# A fork child's trace is its own: its pid, its parent's as ppid, origin fork, the rank it
# inherited; the parent's says started. An exec'd child of a traced shell: origin exec, the
# shell's pid as ppid.
d=$tmp/fork
mkdir "$d"
# shellcheck disable=SC2046
env $(clean) RANK=1 WORLD_SIZE=2 LD_PRELOAD="$lib" NDMEM_SUMMARY=0 \
  NDMEM_OUTPUT="$d/t.%r.%p.trace" "$prog" fork >"$d/out" 2>"$d/err" || no "fork: exit status $?"
pid=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$d/out") ppid=$(sed -n 's/.* ppid \([0-9]*\)$/\1/p' "$d/out")
child=$(sed -n 's/^child \([0-9]*\)$/\1/p' "$d/out")
[ -n "$child" ] && [ "$child" != "$pid" ] || no "fork: no child pid ($(cat "$d/out"))"
got=$(json "$d/t.1.$pid.trace")
[ "$got" = "$pid $ppid started 1 2 null null RANK" ] || no "fork: the parent's header: '$got'"
got=$(json "$d/t.1.$child.trace")
[ "$got" = "$child $pid fork 1 2 null null RANK" ] || no "fork: the child's header: '$got'"
"$report" "$d/t.1.$child.trace" >"$d/text" 2>&1
grep -qxF "  parent      pid $pid, traced too: this process is its fork child (a worker)" "$d/text" ||
  no "fork: the child's parent line: $(sed -n 3p "$d/text")"
[ "$(ls "$d" | grep -c '\.trace$')" = 2 ] || no "fork: traces $(ls "$d")"

d=$tmp/exec
mkdir "$d"
# shellcheck disable=SC2046
env $(clean) LD_PRELOAD="$lib" NDMEM_SUMMARY=0 NDMEM_OUTPUT="$d/t.%p.trace" \
  sh -c '"$0"; true' "$prog" >"$d/out" 2>"$d/err" || no "exec: exit status $?"
read -r _ pid _ ppid <"$d/out"
got=$(json "$d/t.$pid.trace")
[ "$got" = "$pid $ppid exec null null null null null" ] || no "exec: the child's header: '$got'"
[ -f "$d/t.$ppid.trace" ] || no "exec: no trace of the shell (pid $ppid)"
exit $fail
