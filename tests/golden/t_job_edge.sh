#!/bin/sh
# SPDX-License-Identifier: MIT
# t_job_edge: the trace header's job fields (version 12), on traces gen_trace writes at test time
# (gen_trace.c, job_trace, has the truth). The single-trace report shows the parent's pid, how the
# process started and its rank, world size and local rank with the variable the rank came from,
# in text and JSON; a rank variable whose value is not a plain non-negative integer shows as
# unknown (its world size kept); a header without a rank says nothing of one; older traces have
# none of these lines or keys. A trace names its descendants' traces beside it. Malformed fields (a rank source or origin out of range, a rank
# below -1, a world size of 0) give exit status 2 and exactly the expected error.
# usage: t_job_edge.sh NDMEMREPORT GEN_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"

# offsets within the 416-byte header: rank at 392, rank_from at 408, origin at 410
bad bad-job-from 408 'header rank source 6 out of range'
bad bad-job-origin 410 'header origin 4 out of range'
bad bad-job-rank 392 'impossible rank -2, world size 3, local rank 1 or local world size 3'
bad bad-job-size 392 'impossible rank 1, world size 0, local rank 1 or local world size 3'

# text: the lines after "process", exactly; then JSON's process object's job members
check() { # MODE LINES JSON
  "$gen" "$1" "$1.trace" || { no "gen_trace $1"; return; }
  "$report" "$1.trace" >out 2>err || no "$1: exit status $?"
  [ ! -s err ] || no "$1: stderr: $(cat err)"
  sed -n '3,/^  started /p' out | sed '$d' >got
  printf '%s' "$2" >want
  diff -u want got || no "$1: the parent and rank lines differ"
  "$report" --format json "$1.trace" >out 2>err || no "$1: JSON exit status $?"
  grep -qF "$3" out || no "$1: JSON lacks: $3"
}
check job-r1 '  parent      pid 100, traced too: this program was exec'"'"'d in its child
  rank        1 of 3 (OMPI_COMM_WORLD_RANK); local rank 1 of 3
' '"process": {"pid": 202, "ppid": 100, "origin": "exec", "rank": 1, "world_size": 3, "local_rank": 1, "local_world_size": 3, "rank_from": "OMPI_COMM_WORLD_RANK", "exe": '
check job-r1w2 '  parent      pid 202, traced too: this process is its fork child (a worker)
  rank        1 of 3 (OMPI_COMM_WORLD_RANK); local rank 1 of 3
' '"process": {"pid": 302, "ppid": 202, "origin": "fork", "rank": 1, ' # its own pid, its parent's
# the launcher: its descendants' traces beside it (rank 1, exec'd by it, and rank 1's worker;
# not the malformed ones above, which the reader refuses)
check job-launcher '  parent      pid 1
  traces      2 more traces, of its descendants, beside this one:
              job-r1.trace: pid 202, /nonexistent/bin/python3.11, exec'"'"'d by 100
              job-r1w2.trace: pid 302, /nonexistent/bin/python3.11,
                fork child of 202
              read them together: ndmemreport merge job-launcher.trace
                job-r1.trace job-r1w2.trace
' '"ppid": 1, "origin": "started", "rank": null, "world_size": null, "local_rank": null, "local_world_size": null, "rank_from": null'
grep -qF '"descendants": [{"trace": "job-r1.trace", "pid": 202, "ppid": 100, "origin": "exec", "exe": "/nonexistent/bin/python3.11"}, {"trace": "job-r1w2.trace", "pid": 302, "ppid": 202, "origin": "fork", "exe": "/nonexistent/bin/python3.11"}]' out ||
  no "job-launcher: JSON's descendants"
check job-bad-value '  parent      pid 1
  rank        unknown: RANK is not a plain non-negative integer; world size 2
' '"rank": null, "world_size": 2, "local_rank": null, "local_world_size": null, "rank_from": "RANK"'

# a version 11 trace: no such line, no such key
"$gen" devices11 old.trace || no "gen_trace devices11"
"$report" old.trace >out 2>&1
! grep -qE '^  (parent|rank) ' out || no "version 11: a parent or rank line"
"$report" --format json old.trace >out 2>&1
! grep -qE '"(ppid|rank_from)"' out || no "version 11: job keys in JSON"

# merge without the workers' parent: rank 1's two fork workers are no ranks of the job, never
# "rank 1" twice; each is said once as a worker of pid 202, whose trace is not given
for m in job-r0 job-r1w1 job-r1w2; do "$gen" $m $m.trace || no "gen_trace $m"; done
"$report" merge job-r0.trace job-r1w1.trace job-r1w2.trace >out 2>err || no "merge: exit status $?"
grep -q 'in more than one trace' out && no "merge without the parent: a rank in more than one trace"
for w in 301 302; do
  [ "$(grep -c "^   pid $w: a fork worker of pid 202, whose trace is not given (not a rank)$" out)" = 1 ] ||
    no "merge without the parent: pid $w not said a worker of pid 202 once"
  grep -qE "^  pid $w +job-r1w" out || no "merge without the parent: pid $w not labelled by its pid"
done
exit $fail
