#!/bin/sh
# SPDX-License-Identifier: MIT
# t_run_wrappers: no process under ndmem loses its trace, and `ndmem run` knows them all.
#   - behind timeout, /usr/bin/time, sh -c and nice, with a fixed --output and with %p: the
#     program's trace is written (a fixed name taken by the wrapper: NAME.PID.trace beside it);
#     `ndmem run` reports the program, not the wrapper, and names every trace of the run with the
#     merge command; nothing of the program is lost.
#   - preloaded by hand behind timeout with a fixed NDMEM_OUTPUT: the program writes
#     job.PID.trace, and `ndmemreport job.trace` (the wrapper's) names it.
#   - --fail-on-leak judges every process: a fork child that loses 13370 bytes fails the run
#     (exit 1, its line naming it); one that frees them passes, what it inherited not counted.
#   - the command as a shell finds it: not found, 127; not runnable, 126.
# usage: t_run_wrappers.sh NDMEM_TOOL LIBNDMEM NDMEMREPORT T_WRAPPED
set -u
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
tool=$(abs "$1") lib=$(abs "$2") rep=$(abs "$3") prog=$(abs "$4")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
command -v timeout >/dev/null && command -v nice >/dev/null || { echo "no timeout or nice" >&2; exit 77; }
i=0
for wrapper in "timeout 60" "/usr/bin/time -o /dev/null" "sh -c" nice; do
  [ -x "${wrapper%% *}" ] || command -v "${wrapper%% *}" >/dev/null || { echo "no ${wrapper%% *}: case skipped"; continue; }
  for out in job.trace 'job.%p.trace'; do
    i=$((i + 1))
    d=$tmp/w$i
    mkdir "$d"
    case $wrapper in
      "sh -c") set -- sh -c '"$0" "$@"; true' "$prog" ;; # sh waits for it (no exec of the last)
      *) set -- $wrapper "$prog" ;;
    esac
    (cd "$d" && "$tool" run --no-summary --output="$out" -- "$@") >"$d/out" 2>"$d/err"
    rc=$?
    what="$wrapper, --output=$out"
    [ $rc = 0 ] && [ "$(cat "$d/out")" = "ok 0" ] || { no "$what: exit $rc, stdout '$(cat "$d/out")'"; continue; }
    grep -q "^  process     pid [0-9]* on .*: .*/t_wrapped$" "$d/err" ||
      { no "$what: the report is not the program's"; cat "$d/err" >&2; }
    n=$(ls "$d" | grep -c '\.trace$')
    if [ "$wrapper" = nice ]; then # exec'd: one process, one trace
      [ "$n" = 1 ] || no "$what: $n traces, want 1"
      continue
    fi
    [ "$n" = 2 ] || { no "$what: $n traces, want 2"; ls "$d" >&2; }
    grep -q "^ndmem: 2 traces in this run:$" "$d/err" || no "$what: the traces of the run not named"
    for t in "$d"/*.trace; do
      grep -q "^  $(basename "$t") *pid [0-9]*: " "$d/err" || no "$what: $(basename "$t") not listed"
    done
    grep -q "^ndmem: read them together: ndmemreport merge job" "$d/err" || no "$what: no merge command"
    case $out in job.trace)
      ls "$d" | grep -qx 'job\.[0-9]*\.trace' || no "$what: no job.PID.trace beside job.trace" ;;
    esac
  done
done

# preloaded by hand, behind timeout, a fixed name: the wrapper's report names the program's trace
d=$tmp/plain
mkdir "$d"
(cd "$d" && NDMEM_SUMMARY=0 NDMEM_OUTPUT=job.trace LD_PRELOAD=$lib timeout 60 "$prog") >"$d/out" 2>"$d/err" ||
  no "by hand: exit status $?"
t=$(ls "$d" | grep -x 'job\.[0-9]*\.trace')
[ -n "$t" ] || no "by hand: the program's trace was not written beside job.trace"
(cd "$d" && "$rep" --brief job.trace) >"$d/report" 2>&1 || no "by hand: ndmemreport exit status $?"
grep -q "^  traces      1 more trace, of its descendants, beside this one:$" "$d/report" &&
  grep -q "^              $t: pid [0-9]*," "$d/report" &&
  grep -q "^              read them together: ndmemreport merge job.trace $t$" "$d/report" ||
  { no "by hand: job.trace's report does not name $t"; cat "$d/report" >&2; }
(cd "$d" && "$rep" --format json job.trace) | grep -q "\"descendants\": \[{\"trace\": \"$t\", \"pid\": $(echo "$t" | tr -dc 0-9)" ||
  no "by hand: JSON's descendants do not name $t"

# --fail-on-leak judges the fork child too
d=$tmp/fork
mkdir "$d"
(cd "$d" && "$tool" run --no-summary --fail-on-leak -- "$prog" fork-leak) >"$d/out" 2>"$d/err"
rc=$?
[ $rc = 1 ] || { no "fork-leak: exit status $rc, want 1"; cat "$d/err" >&2; }
grep -q "^ndmem: worker 1 (pid [0-9]*, .*/t_wrapped): --fail-on-leak: leaks definitely lost 13.06 KiB (13370 B) in 1 block (1 stack); see ndmemreport ndmem\.[0-9]*\.trace$" "$d/err" ||
  { no "fork-leak: no line naming the child's leak"; cat "$d/err" >&2; }
rm -f "$d"/*.trace
(cd "$d" && "$tool" run --no-summary --fail-on-leak -- "$prog" fork-free) >"$d/out" 2>"$d/err"
rc=$?
[ $rc = 0 ] || { no "fork-free: exit status $rc, want 0 (what the child inherited is its parent's)"; cat "$d/err" >&2; }
child=$(ls "$d"/*.trace | while read -r t; do
  "$rep" "$t" | grep -q "this process is its fork child" && echo "$t"; done)
[ -n "$child" ] && "$rep" "$child" | grep -q "^== inherited at fork: 1.00 MiB (1048576 B) in 1 block from 1 stack$" ||
  no "fork-free: the child's report does not class the 1 MiB as inherited at fork"

# the command as a shell finds it
"$tool" run -- "$tmp/nonexistentcmd" >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc = 127 ] && [ "$(cat "$tmp/e")" = "ndmem: $tmp/nonexistentcmd: command not found" ] ||
  no "not found: exit $rc, '$(cat "$tmp/e")'"
"$tool" run -- nonexistentcmd-ndmem >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc = 127 ] && [ "$(cat "$tmp/e")" = "ndmem: nonexistentcmd-ndmem: command not found" ] ||
  no "not found on PATH: exit $rc, '$(cat "$tmp/e")'"
printf 'x' >"$tmp/notexec"
"$tool" run -- "$tmp/notexec" >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc = 126 ] || no "not executable: exit $rc, '$(cat "$tmp/e")'"
[ "$("$rep" --version)" = "ndmemreport $("$tool" --version | sed 's/^ndmem //')" ] ||
  no "ndmemreport --version: '$("$rep" --version)'"
exit $fail
