#!/bin/sh
# SPDX-License-Identifier: MIT
# t_job_view: `ndmem run` answers for the job, not for the process it started.
# - job_cache.py behind `timeout` (a wrapper), with 2 DataLoader workers whose dataset caches grow
#   (6144 samples of 16 KiB each: 100663296 B, job_cache.py:CACHE) while the main process keeps a
#   16 KiB tensor a step (job_cache.py:KEPT): the summary on stderr is the program's (Python's pid,
#   first; none of timeout's lines), the report's job section names each process (main, worker 1,
#   worker 2) with its own line (each worker's cache growing, 96.00 MiB; the main's list, live
#   at its os._exit: growing, or still reachable, the program's own), and
#   --fail-on-growth judges every process of the job but the wrapper: exit 1, a line for each
#   worker naming it and its growth, none for timeout.
# - exec_chain.py, which execs itself: both programs are shown in turn, the first (12 MiB at
#   exec_chain.py:FIRST) as "main before exec" in its own trace (NAME.exec1.trace) before the
#   main program; a shell that only execs the program (`sh -c 'exec ...'`) leaves no trace of
#   its own (the program takes its file over).
# Skips (77) without an interpreter that imports torch (Debian: python3-torch).
# usage: t_job_view.sh NDMEM_TOOL JOB_CACHE_PY EXEC_CHAIN_PY
set -u
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
tool=$(abs "$1") job=$(abs "$2") chain=$(abs "$3")
py=$(sh "$(dirname "$0")/../find-python.sh" torch) || { echo "skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
line_of() { grep -n "# $2\$" "$1" | cut -d: -f1; }
cache=$(line_of "$job" CACHE) kept=$(line_of "$job" KEPT)
first=$(line_of "$chain" FIRST)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

cd "$tmp" || exit 1
rc=0
"$tool" run --fail-on-growth --track-min=8k --flush-ms=100 -- timeout 600 "$py" "$job" \
  >job.out 2>job.err || rc=$?
grep -q '^loss ' job.out || { no "job: no loss printed"; cat job.err >&2; }
[ "$rc" = 1 ] || no "job: exit $rc, want 1 (the workers' caches grow)"
# the traces: the wrapper's, the main program's, the workers'
wrapper=$(sed -n 's/^  ndmem\.\([0-9]*\)\.trace *pid [0-9]*: .*timeout (wrapper: the command)$/\1/p' job.err)
main=$(sed -n 's/^  ndmem\.\([0-9]*\)\.trace *pid [0-9]*: .*python.* (main: exec.d by pid [0-9]*; reported above)$/\1/p' job.err)
[ -n "$wrapper" ] && [ -n "$main" ] || { no "job: the traces list names no wrapper or main"; cat job.err >&2; exit 1; }
# the first screen is the program's
head -1 job.err | grep -q "^ndmem\[$main\]: " && grep -q "^ndmem\[$main\]: peak RSS " job.err ||
  no "job: the first line is not the program's summary: $(head -1 job.err)"
! grep -q "^ndmem\[$wrapper\]:" job.err || no "job: the wrapper's summary was printed"
# the job section: each process with its own line
sed -n '/^== what each process grew and held/,/^ndmem: /p' job.err >job.view
section() { awk -v h="$1" 'index($0, "  " h " (pid ") == 1 { on = 1; print; next } /^  [a-z]/ { on = 0 } on' job.view; }
for w in 1 2; do
  section "worker $w" >w$w.txt
  grep -q "^  worker $w (pid [0-9]*, python" w$w.txt || no "job: worker $w is not in the job section"
  awk -v c="job_cache.py:$cache)" 'prev ~ /96\.00 MiB  growing$/ && index($0, c) { f = 1 } { prev = $0 } END { exit !f }' w$w.txt ||
    { no "job: worker $w's cache (96.00 MiB growing at job_cache.py:$cache) is not named"; cat w$w.txt >&2; }
  # (its cache's dict may grow in sampled small blocks too: "~97.49 MiB ... (2 stacks)")
  grep -q "^ndmem: worker $w (pid [0-9]*, [^)]*python[^)]*): --fail-on-growth: leaks growing ~*9[6-9]\.[0-9]* MiB" job.err ||
    { no "job: no verdict line for worker $w"; grep "^ndmem" job.err >&2; }
done
section main >main.txt
grep -q "job_cache.py:$kept)" main.txt ||
  { no "job: the main process's list (job_cache.py:$kept) is not named"; cat main.txt >&2; }
! grep -q "^ndmem: wrapper" job.err || no "job: the wrapper was judged: $(grep '^ndmem: wrapper' job.err)"

# An exec chain: each program in turn
rc=0
"$tool" run -- "$py" "$chain" first >chain.out 2>chain.err || rc=$?
[ "$rc" = 0 ] && grep -qx done chain.out || { no "chain: exit $rc"; cat chain.err >&2; }
n=$(ls ndmem.*.exec1.trace 2>/dev/null | wc -l)
[ "$n" = 1 ] || no "chain: $n traces of an earlier program, want 1"
sed -n '/^== the job/,/^== what/p' chain.err >chain.table
awk '/^  main before exec / { b = NR } /^  main  / { m = NR } END { exit !(b && m && b < m) }' chain.table ||
  { no "chain: the table does not show the first program, then the main one"; cat chain.table >&2; }
awk -v c="exec_chain.py:$first)" 'prev ~ /12\.00 MiB  at its peak$/ && index($0, c) { f = 1 } { prev = $0 } END { exit !f }' chain.err ||
  { no "chain: the first program's 12.00 MiB at exec_chain.py:$first is not shown"; cat chain.err >&2; }
# a shell that only execs the program: one trace, the program's
rm -f ndmem.*.trace
rc=0
"$tool" run -- sh -c "exec '$py' '$chain' second" >sh.out 2>sh.err || rc=$?
n=$(ls ndmem.*.trace | wc -l)
[ "$rc" = 0 ] && [ "$n" = 1 ] || { no "sh -c exec: exit $rc, $n traces (want 1)"; cat sh.err >&2; }
exit $fail
