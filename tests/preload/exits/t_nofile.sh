#!/bin/sh
# SPDX-License-Identifier: MIT
# t_nofile: where the soft RLIMIT_NOFILE equals the hard one (20000 here), the program reads its
# own limits (20000 20000, not lowered for ndmem's descriptors) and a dup2 onto each of the 16
# numbers below the limit, where ndmem keeps its trace, statm, metrics and summary descriptors and
# libunwind's pipe, succeeds; every byte it writes there stays in its own files while ndmem keeps
# writing (trace flushes, metrics files, resident readings), and the trace, the metrics file and
# the summary are whole. timeout(1) ends (its errno EINTR at exit, libunwind without a pipe).
# Between its uses ndmem keeps no descriptor there but the summary's copy of stderr. Skipped (77) where the hard limit cannot be set to 20000.
# usage: t_nofile.sh LIBNDMEM T_NOFILE NDMEMREPORT
set -u
lib=$1 prog=$2 rep=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
sh -c 'ulimit -n 20000' 2>/dev/null || { echo "cannot set RLIMIT_NOFILE to 20000 here"; exit 77; }
mkdir "$tmp/files"
NDMEM_OUTPUT="$tmp/t.%p.trace" NDMEM_METRICS="$tmp/m.%p.prom" NDMEM_FLUSH_MS=20 \
  NDMEM_MAX_PHYSICAL_BYTES=1g NDMEM_LIMIT_POLL_MS=10 LD_PRELOAD="$lib" \
  sh -c 'ulimit -n 20000 && exec "$1" "$2"' sh "$prog" "$tmp/files" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || no "exit status $rc"
printf 'limit 20000 20000\ndup2 16/16\nfiles 16/16 intact\n' | diff -u - "$tmp/out" || no "the program's view"
grep -q '^ndmem\[[0-9]*\]: heap: ' "$tmp/err" || { no "no summary"; cat "$tmp/err" >&2; }
if grep -v '^ndmem\[[0-9]*\]: ' "$tmp/err" | grep -q .; then no "stderr"; cat "$tmp/err" >&2; fi
t=$(ls "$tmp"/t.*.trace 2>/dev/null | head -1)
[ -n "$t" ] && "$rep" "$t" >"$tmp/report" 2>&1 || { no "ndmemreport"; cat "$tmp/report" >&2; }
grep -q '^  trace       complete: ' "$tmp/report" || { no "the trace is not complete"; sed -n 1,12p "$tmp/report" >&2; }
grep -q '^ndmem_info{' "$tmp"/m.*.prom 2>/dev/null || no "no metrics file"

# libunwind validating memory without a pipe of its own (no room above the limit) while the
# program's errno is EINTR: timeout(1) exits after its sigsuspend, and the exit scan's unwind
# spun for ever in libunwind's drain loop. The watchdog (15 s) is not under the shim.
timeout -k 2 15 env NDMEM_OUTPUT="$tmp/to.%p.trace" NDMEM_SUMMARY=0 LD_PRELOAD="$lib" \
  sh -c 'ulimit -n 20000 && exec timeout 20 sleep 0.1' >"$tmp/to.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { no "timeout(1) under the shim: exit status $rc (124 or 137: it hung)"; cat "$tmp/to.out" >&2; }

# The program's dup2 while the shim flushes every 10 ms: a dup2 waited for a flush that waited for
# it (30 s each time). The watchdog (20 s for a 3 s loop) is not under the shim.
timeout -k 2 20 env NDMEM_OUTPUT="$tmp/d.%p.trace" NDMEM_SUMMARY=0 NDMEM_FLUSH_MS=10 NDMEM_TRACK_MIN=0 \
  LD_PRELOAD="$lib" \
  "$prog" dup2 >"$tmp/d.out" 2>"$tmp/d.err"
rc=$?
[ $rc -eq 0 ] && [ "$(cat "$tmp/d.out")" = "dup2s ok" ] ||
  { no "dup2 while flushing: exit status $rc (124 or 137: it hung), stdout '$(cat "$tmp/d.out")'"
    cat "$tmp/d.err" >&2; }

# Between its reads and writes ndmem keeps no descriptor in the program's range (it opens the
# trace and /proc files for each use), but the summary's copy of stderr, in the process that
# prints one: one descriptor, in the top slots, or none without a summary.
listing() { sed 's/^open://; s/ ([0-9]*)$//' | tr ' ' '\n' | grep . | sort; }
sh -c 'ulimit -n 20000 && exec "$1" list' sh "$prog" | listing >"$tmp/plain" # inherited ones
for summary in 1 0; do
  NDMEM_OUTPUT="$tmp/l.%p.trace" NDMEM_SUMMARY=$summary NDMEM_MAX_PHYSICAL_BYTES=1g \
    NDMEM_FLUSH_MS=10000 LD_PRELOAD="$lib" sh -c 'ulimit -n 20000 && exec "$1" list' sh "$prog" \
    2>/dev/null | listing >"$tmp/list" || no "list (summary $summary)"
  extra=$(comm -13 "$tmp/plain" "$tmp/list" | tr '\n' ' ')
  if [ $summary = 1 ]; then
    echo "$extra" | grep -Eqx '199[4-9][0-9] ' || no "summary 1: ndmem's descriptors '$extra'"
  else
    [ -z "$extra" ] || no "summary 0: ndmem's descriptors '$extra'"
  fi
done
exit $fail
