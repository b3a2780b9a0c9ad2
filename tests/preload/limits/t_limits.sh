#!/bin/sh
# SPDX-License-Identifier: MIT
# t_limits: runs every mode of t_limits.c with its environment and checks what the user sees:
# the one-line messages, the exit status of NDMEM_ON_LIMIT=abort, and ndmemreport's limits view
# of the traces (the breach, the snapshots and their sites at t_limits.c:LINE).
# Every mode's requests are the program's own, made where a refusal is taken: the program is named
# refusable (NDMEM_LIMIT_REFUSE=%exe), so that each limit meets them as it meets a runtime's
# (t_admit.sh has what is admitted when nothing is named).
# The cgroup mode runs in a real memory cgroup when this machine lets the test make one (cgroup v1
# memory controller, or v2 with memory enabled), else in a simulated one (NDMEM_TEST_CGROUP_DIR).
# usage: t_limits.sh LIBNDMEM T_LIMITS NDMEMREPORT T_LIMITS_C
set -u
lib=$1 prog=$2 report=$3 src=$4
tmp=$(mktemp -d) || exit 1
cg_made=
cleanup() {
  [ -n "$cg_made" ] && rmdir "$cg_made" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
line_of() { grep -n "$1" "$src" | head -1 | cut -d: -f1; }

# run NAME EXPECTED_RC [VAR=VALUE...] -- ARGS...: runs t_limits under the shim
run() {
  name=$1 want=$2
  shift 2
  vars=
  while [ "$1" != "--" ]; do vars="$vars $1"; shift; done
  shift
  env NDMEM_SUMMARY=0 NDMEM_LIMIT_REFUSE=%exe NDMEM_OUTPUT="$tmp/$name.%p.trace" $vars LD_PRELOAD="$lib" "$prog" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "$name: exit $rc, want $want" >&2
    cat "$tmp/$name.out" "$tmp/$name.err" >&2
    fail=1
  fi
  cat "$tmp/$name.out"
}
has() { # has NAME REGEX: stderr of run NAME has a line matching REGEX
  grep -q -- "$2" "$tmp/$1.err" || { echo "$1: no line matching: $2" >&2; cat "$tmp/$1.err" >&2; fail=1; }
}
trace_of() { ls "$tmp/$1".*.trace 2>/dev/null | head -1; }
flat() { tr '\n' ' ' <"$1" | tr -s ' '; } # a report's lines as one, its 80-column breaks undone

# ---- every function, one byte under / at / over maxBytes; fail and warn
run boundary_fail 0 NDMEM_WORKSPACES=0 -- boundary fail
has boundary_fail "^ndmem: Can't allocate \[HOST\] memory: 1000 B requested; tracked [0-9.]* [KMG]*i*B + 1000 B > maxBytes [0-9.]* [KMG]*i*B after relief gave back [^;]*; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 1, next logged: 2)$"
has boundary_fail "^ndmem: Can't allocate \[HOST\] memory: .* (NDMEM_ON_LIMIT=fail; breach 8, next logged: 16)$"
grep -q '^breaches 12 failed 12 reliefs 12$' "$tmp/boundary_fail.out" || { echo "boundary_fail: totals" >&2; fail=1; }
run boundary_warn 0 NDMEM_WORKSPACES=0 NDMEM_ON_LIMIT=warn -- boundary warn
has boundary_warn "^ndmem: Over the limit \[HOST\], allowed: 1000 B requested; .* (NDMEM_ON_LIMIT=warn; breach 1, next logged: 2)$"
grep -q '^breaches 12 failed 0 reliefs 4$' "$tmp/boundary_warn.out" || { echo "boundary_warn: totals" >&2; fail=1; }

# ---- abort: the trace and the summary are written, then SIGABRT
run abort 134 NDMEM_ON_LIMIT=abort NDMEM_SUMMARY=1 -- abort
has abort "^ndmem: Can't allocate \[HOST\] memory: 1.00 MiB requested; .* (NDMEM_ON_LIMIT=abort; breach 1)$"
has abort "^ndmem: stopping the process (NDMEM_ON_LIMIT=abort): the trace and summary are written, then SIGABRT$"
has abort "^ndmem\[[0-9]*\]: limits: maxBytes 4.0[0-9] MiB (peak tracked .*; on limit abort; breaches 1 + 0 physical, 0 failed; snapshots 1$"
grep -q 'not reached' "$tmp/abort.out" && { echo "abort: the program went on" >&2; fail=1; }
t=$(trace_of abort)
"$report" --limits "$t" >"$tmp/abort.report" 2>&1 || { echo "abort: ndmemreport failed" >&2; fail=1; }
grep -q 'aborted' "$tmp/abort.report" || { echo "abort: the report does not say it aborted" >&2; cat "$tmp/abort.report" >&2; fail=1; }
l=$(line_of 'static void \*grow_1m(void) { return malloc')
grep -q "grow_1m (.*t_limits.c:$l)" "$tmp/abort.report" && grep -q "3 blocks" "$tmp/abort.report" || { echo "abort: no site at t_limits.c:$l" >&2; cat "$tmp/abort.report" >&2; fail=1; }

# ---- maxBytes from the environment
run env 0 NDMEM_MAX_BYTES=64m -- env 67108864
has env "^ndmem: Can't allocate \[HOST\] memory: 1.00 MiB requested; tracked 6[0-9].[0-9]* MiB + 1.00 MiB > maxBytes 64.00 MiB after relief gave back [^;]*; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 1, next logged: 2)$"
has env "^ndmem:   top live allocation sites (1 of 1; ndmemreport shows their file:line):$"
has env "^ndmem:   #1 6[0-9].00 MiB in 6[0-9] blocks \[stack [0-9]*\] "
# a bad value: one line, the limit is off, the job runs on
run env_bad 0 NDMEM_MAX_BYTES=64x -- env 0
has env_bad "^ndmem: NDMEM_MAX_BYTES='64x' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% or off); using none (the limit is off)$"
grep -q '^env: 100 blocks' "$tmp/env_bad.out" || { echo "env_bad: the job did not run on unlimited" >&2; fail=1; }

# the summary says the limit was not read, and so does the report; with NDMEM_LIMITS_STRICT=1 the
# program is not started
run env_bad_summary 0 NDMEM_MAX_BYTES=64x NDMEM_SUMMARY=1 -- env 0
has env_bad_summary "^ndmem\[[0-9]*\]: limits: maxBytes none (NDMEM_MAX_BYTES could not be read), maxPhysicalBytes none, "
"$report" --limits "$(trace_of env_bad_summary)" >"$tmp/env_bad.report" 2>&1 || { echo "env_bad: ndmemreport failed" >&2; fail=1; }
flat "$tmp/env_bad.report" | grep -q ' maxBytes none (asked for, but its value could not be read); ' ||
  { echo "env_bad: the report does not say the limit was not read" >&2; cat "$tmp/env_bad.report" >&2; fail=1; }
run env_strict 2 NDMEM_MAX_BYTES=64x NDMEM_LIMITS_STRICT=1 -- env 0
has env_strict "^ndmem: NDMEM_LIMITS_STRICT=1: a job whose limit cannot be read (above) is not started (exit status 2)$"
[ -s "$tmp/env_strict.out" ] && { echo "env_strict: the program ran" >&2; fail=1; }

# a limit above what the machine has is kept as given, and said: 150% of RAM (no cgroup limit)
mkdir "$tmp/nocg" && echo max >"$tmp/nocg/memory.max"
ram=$(($(awk '$1 == "MemTotal:" {print $2}' /proc/meminfo) * 1024))
env NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/above.%p.trace" NDMEM_TEST_CGROUP_DIR="$tmp/nocg" NDMEM_MAX_BYTES=150% \
  LD_PRELOAD="$lib" /bin/true 2>"$tmp/above_ram.err" || { echo "above_ram: /bin/true failed" >&2; fail=1; }
[ "$(wc -l <"$tmp/above_ram.err")" -eq 1 ] || { echo "above_ram: want one line" >&2; cat "$tmp/above_ram.err" >&2; fail=1; }
has above_ram "^ndmem: NDMEM_MAX_BYTES='150%' is [0-9.]* GiB ($((ram / 2 * 3)) B), more than the RAM [0-9.]* GiB ($ram B): it is never reached before memory runs out; kept as given$"

# ---- large mappings count by their touched pages (NDMEM_MAX_BYTES_MAPPINGS=touched), or whole
run touched 0 NDMEM_MAX_BYTES=16m NDMEM_LIMIT_POLL_MS=20 -- touched
has touched "^ndmem: Can't allocate \[HOST\] memory: 8.00 MiB requested; tracked 12.[0-9]* MiB + 8.00 MiB > maxBytes 16.00 MiB after relief gave back [^;]*; "
run touched_whole 0 NDMEM_MAX_BYTES=16m NDMEM_MAX_BYTES_MAPPINGS=whole -- touched whole
has touched_whole "^ndmem: Can't allocate \[HOST\] memory: 64.00 MiB requested; tracked [0-9.]* [KM]*i*B + 64.00 MiB > maxBytes 16.00 MiB after relief gave back [^;]*; "

# ---- a program that retries a refused request for ever is stopped (NDMEM_ON_LIMIT=fail cannot
# end it); one that gives up, asks for less, or waits for memory another thread frees is not
l=$(line_of 'static void \*retry_request(void) { return malloc')
lm=$(line_of 'p = mmap(NULL, 64 << 20, PROT_READ')
for kind in same alternate; do
  run retry_$kind 134 NDMEM_LIMIT_RETRY_MS=300 NDMEM_MAX_BYTES_MAPPINGS=whole NDMEM_SUMMARY=1 -- retry $kind
  has retry_$kind "^ndmem: thread [0-9]* was refused the same requests [0-9]* times in a row over 0.[34][0-9] s (the last: m[a-z]* of 64.00 MiB; maxBytes 16.[0-9]* MiB): the program cannot take the failure NDMEM_ON_LIMIT=fail gives it (NDMEM_LIMIT_RETRY_MS=300)$"
  has retry_$kind "^ndmem:   requested at \[stack [0-9]*\] t_limits+0x"
  has retry_$kind "^ndmem: stopping the process (a retry loop under NDMEM_ON_LIMIT=fail): the trace and summary are written, then SIGABRT$"
  has retry_$kind "^ndmem\[[0-9]*\]: limits: maxBytes 16.[0-9]* MiB "
  t=$(trace_of retry_$kind)
  "$report" --limits --top 1 "$t" >"$tmp/retry_$kind.report" 2>&1 || { echo "retry_$kind: ndmemreport failed" >&2; fail=1; }
  # the last request refused, at its line: the malloc (same), the malloc or the mmap (alternate)
  at='retry_request \([^)]*t_limits.c:'"$l"'\)'
  [ $kind = same ] || at="($at|retrier \\([^)]*t_limits.c:$lm\\))"
  flat "$tmp/retry_$kind.report" | grep -q ' allocations failed; stopped on a retry loop ' &&
    flat "$tmp/retry_$kind.report" | grep -Eq ' -> aborted the process tracked [0-9]+ B before the call; limit 16.00 MiB \(16777216 B\) refusable: from an object NDMEM_LIMIT_REFUSE names; a large request \(NDMEM_LIMIT_LARGE\) the thread was refused the same requests [0-9]+ times in a row over 0.[34][0-9]* s: the program cannot take the failure, so ndmem stopped it \(NDMEM_LIMIT_RETRY_MS\) #0 '"$at" ||
    { echo "retry_$kind: the report does not show the loop at t_limits.c:$l" >&2; cat "$tmp/retry_$kind.report" >&2; fail=1; }
done
run retry_giveup 0 NDMEM_LIMIT_RETRY_MS=300 -- retry giveup
grep -q '^retry giveup: gave up after 12 refusals$' "$tmp/retry_giveup.out" || { echo "retry_giveup: stdout" >&2; fail=1; }
run retry_smaller 0 NDMEM_LIMIT_RETRY_MS=300 -- retry smaller
grep -q '^retry smaller: granted after 49 refusals$' "$tmp/retry_smaller.out" || { echo "retry_smaller: stdout" >&2; fail=1; }
run retry_waits 0 -- retry waits
grep -q '^retry waits: granted after [1-9][0-9]* refusals$' "$tmp/retry_waits.out" || { echo "retry_waits: stdout" >&2; fail=1; }

# ---- physical memory: untouched memory and file pages do not count; the bound is the step
mkdir -p "$tmp/files"
run physical 0 NDMEM_MAX_PHYSICAL_BYTES=96m NDMEM_LIMIT_STEP=16m NDMEM_LIMIT_POLL_MS=0 -- physical "$tmp/files"
has physical "^ndmem: Can't allocate \[HOST\] memory: 4.00 MiB requested; physical [0-9.]* MiB > maxPhysicalBytes 96.00 MiB after relief gave back [^;]*; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 1, next logged: 2)$"

# a test statm file that cannot be read: said, and /proc/self/statm is read instead (the physical
# limit once went off without a word)
run physical_nostatm 0 NDMEM_TEST_STATM=/nonexistent/statm NDMEM_MAX_PHYSICAL_BYTES=96m NDMEM_LIMIT_STEP=16m NDMEM_LIMIT_POLL_MS=0 -- physical "$tmp/files"
has physical_nostatm "^ndmem: cannot read resident memory from '/nonexistent/statm' (No such file or directory); using /proc/self/statm (NDMEM_TEST_STATM)$"
has physical_nostatm "^ndmem: Can't allocate \[HOST\] memory: 4.00 MiB requested; physical [0-9.]* MiB > maxPhysicalBytes 96.00 MiB"

printf '2048 1124 100 10 0 100 0\n' >"$tmp/statm"
run step 0 NDMEM_TEST_STATM="$tmp/statm" NDMEM_MAX_PHYSICAL_BYTES=100m NDMEM_LIMIT_STEP=1m NDMEM_LIMIT_POLL_MS=0 -- step "$tmp/statm"
# a test statm file that cannot be read: said, and /proc/self/statm is read instead (the physical
# limit once went off without a word)
run physical_nostatm 0 NDMEM_TEST_STATM=/nonexistent/statm NDMEM_MAX_PHYSICAL_BYTES=96m NDMEM_LIMIT_STEP=16m NDMEM_LIMIT_POLL_MS=0 -- physical "$tmp/files"
has physical_nostatm "^ndmem: cannot read resident memory from '/nonexistent/statm' (No such file or directory); using /proc/self/statm (NDMEM_TEST_STATM)$"
has physical_nostatm "^ndmem: Can't allocate \[HOST\] memory: 4.00 MiB requested; physical [0-9.]* MiB > maxPhysicalBytes 96.00 MiB"

printf '2048 1124 100 10 0 100 0\n' >"$tmp/statm"
run poll 0 NDMEM_TEST_STATM="$tmp/statm" NDMEM_MAX_PHYSICAL_BYTES=100m NDMEM_WARN_AT=50m NDMEM_LIMIT_STEP=1g NDMEM_LIMIT_POLL_MS=20 -- poll "$tmp/statm"
has poll "^ndmem: anonymous resident memory 60.00 MiB crossed the watermark 50.00 MiB (NDMEM_WARN_AT; tracked [0-9.]* [KMG]*i*B; snapshot 1): live memory by site goes to the trace$"
t=$(trace_of poll)
"$report" --limits "$t" >"$tmp/poll.report" 2>&1 || { echo "poll: ndmemreport failed" >&2; cat "$tmp/poll.report" >&2; fail=1; }
grep -q 'watermark' "$tmp/poll.report" || { echo "poll: no watermark snapshot in the report" >&2; cat "$tmp/poll.report" >&2; fail=1; }

# ---- relief, threads
run relief 0 -- relief
run threads 0 NDMEM_MAX_BYTES=200m -- threads

# ---- the cgroup: '%' and the default watermark
cg_limit=268435456
cg_dir=
if [ -w /sys/fs/cgroup/memory ] && mkdir "/sys/fs/cgroup/memory/ndmem-test-$$" 2>/dev/null; then
  cg_made=/sys/fs/cgroup/memory/ndmem-test-$$
  echo $cg_limit >"$cg_made/memory.limit_in_bytes" && cg_dir=$cg_made
else
  for m in $(awk '$3 == "cgroup2" {print $2}' /proc/mounts); do
    grep -qw memory "$m/cgroup.controllers" 2>/dev/null || continue
    grep -qw memory "$m/cgroup.subtree_control" 2>/dev/null || echo +memory >"$m/cgroup.subtree_control" 2>/dev/null
    if mkdir "$m/ndmem-test-$$" 2>/dev/null; then
      cg_made=$m/ndmem-test-$$
      echo $cg_limit >"$cg_made/memory.max" 2>/dev/null && cg_dir=$cg_made
    fi
    break
  done
fi
if [ -n "$cg_dir" ]; then
  echo "cgroup: a real memory cgroup, $cg_dir"
  env NDMEM_SUMMARY=0 NDMEM_LIMIT_REFUSE=%exe NDMEM_OUTPUT="$tmp/cgroup.%p.trace" NDMEM_MAX_BYTES=150% LD_PRELOAD="$lib" \
    sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" cgroup "$3"' sh "$cg_dir" "$prog" $cg_limit \
    >"$tmp/cgroup.out" 2>"$tmp/cgroup.err"
  rc=$?
  cat "$tmp/cgroup.out"
  [ $rc -eq 0 ] || { echo "cgroup: exit $rc" >&2; cat "$tmp/cgroup.err" >&2; fail=1; }
else
  echo "cgroup: no memory cgroup can be made here; simulated with NDMEM_TEST_CGROUP_DIR"
  mkdir "$tmp/cg"
  echo $cg_limit >"$tmp/cg/memory.max"
  run cgroup 0 NDMEM_TEST_CGROUP_DIR="$tmp/cg" NDMEM_MAX_BYTES=150% -- cgroup $cg_limit
fi
has cgroup "^ndmem: NDMEM_MAX_BYTES='150%' is 384.00 MiB (402653184 B), more than the cgroup memory limit 256.00 MiB (268435456 B): it is never reached before memory runs out; kept as given$"
has cgroup "^ndmem: anonymous resident memory [0-9.]* MiB crossed the watermark 230.40 MiB (NDMEM_WARN_AT; tracked [0-9.]* MiB; snapshot 1): live memory by site goes to the trace$"
t=$(trace_of cgroup)
"$report" --limits "$t" >"$tmp/cgroup.report" 2>&1 || { echo "cgroup: ndmemreport failed" >&2; fail=1; }
l=$(line_of 'unsigned char \*p = malloc(n);')
l2=$(line_of 'static unsigned char \*cgroup_block(void) { return touched')
grep -q "touched (.*t_limits.c:$l)" "$tmp/cgroup.report" && grep -q "cgroup_block (.*t_limits.c:$l2)" "$tmp/cgroup.report" ||
  { echo "cgroup: the snapshot does not show the site at t_limits.c:$l <- :$l2" >&2; cat "$tmp/cgroup.report" >&2; fail=1; }
exit $fail
