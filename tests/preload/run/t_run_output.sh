#!/bin/sh
# SPDX-License-Identifier: MIT
# t_run_output: `ndmem run` reports only the trace of the run it started. A trace already at the
# --output path is moved to PATH.old first (as perf record does), so the shim can create this
# run's; anything else there is left alone and the run refused with one line and exit status 2,
# the command not run. After the run, a file at the path that is not this run's (written by
# another pid, or no file at all) is said to be so, and no report is printed for it.
# usage: t_run_output.sh NDMEM_TOOL
set -u
tool=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
pid_of() { od -An -t u8 -j 16 -N 8 "$1" | tr -d ' \n'; }
# run OUTPUT PIDFILE [OPTIONS]: runs a shell that writes its pid to PIDFILE; stderr to $tmp/err
run() {
  out=$1 pidfile=$2
  shift 2
  "$tool" run --no-summary --output="$out" "$@" -- sh -c 'echo $$ >"$0"' "$pidfile" 2>"$tmp/err"
}
# the lines of $tmp/err before the report, and the report's process line with the host cut
heads() { sed -n -e '/^== summary/q' -e p "$tmp/err"; sed -n 's/^\(  process     pid [0-9]*\) on .*/\1/p' "$tmp/err"; }

t=$tmp/run.trace
run "$t" "$tmp/pid1" || no "first run: exit status $?"
printf 'ndmem: trace %s\n  process     pid %s\n' "$t" "$(cat "$tmp/pid1")" >"$tmp/want"
heads >"$tmp/got"
diff -u "$tmp/want" "$tmp/got" || no "first run: report"

run "$t" "$tmp/pid2" || no "second run: exit status $?"
printf "ndmem: %s exists (a previous run's trace): moved to %s.old\nndmem: trace %s\n  process     pid %s\n" \
  "$t" "$t" "$t" "$(cat "$tmp/pid2")" >"$tmp/want"
heads >"$tmp/got"
diff -u "$tmp/want" "$tmp/got" || no "second run: the previous trace moved, this run's reported"
[ "$(pid_of "$t.old")" = "$(cat "$tmp/pid1")" ] || no "second run: $t.old is not the first run's"
[ "$(pid_of "$t")" = "$(cat "$tmp/pid2")" ] || no "second run: $t is not the second run's"

# --no-report: the command replaces ndmem (exec); its trace is moved aside all the same
run "$t" "$tmp/pid3" --no-report || no "--no-report: exit status $?"
[ "$(pid_of "$t.old")" = "$(cat "$tmp/pid2")" ] || no "--no-report: $t.old is not the second run's"
[ "$(pid_of "$t")" = "$(cat "$tmp/pid3")" ] || no "--no-report: $t is not this run's"

# not a trace: refused, nothing run, the file untouched
echo "results" >"$tmp/x.trace"
run "$tmp/x.trace" "$tmp/pid4"
rc=$?
[ $rc = 2 ] || no "a file that is not a trace: exit status $rc, want 2"
printf "ndmem: %s exists (a previous run's trace?); remove it or choose another --output\n" \
  "$tmp/x.trace" >"$tmp/want"
diff -u "$tmp/want" "$tmp/err" || no "a file that is not a trace: message"
[ ! -e "$tmp/pid4" ] || no "a file that is not a trace: the command ran"
[ "$(cat "$tmp/x.trace")" = results ] && [ ! -e "$tmp/x.trace.old" ] || no "the file was touched"
# a trace whose .old cannot be replaced (a folder): refused
mkdir "$t.old.d" && mv "$t.old" "$tmp/keep.trace" && mv "$t.old.d" "$t.old"
run "$t" "$tmp/pid5"
[ $? = 2 ] && [ ! -e "$tmp/pid5" ] || no "a folder at PATH.old: not refused"

# the command replaces its trace by another process's: not reported as this run's; the run's
# other trace (cp's: the path was sh's, so cp wrote swap.PID.trace) is
t=$tmp/swap.trace
"$tool" run --no-summary --output="$t" -- sh -c 'echo $$ >"$0"; cp "$1" "$2"' \
  "$tmp/pid6" "$tmp/keep.trace" "$t" 2>"$tmp/err" || no "swap: exit status $?"
grep -qx "ndmem: $t is not a trace written by pid $(cat "$tmp/pid6") (replaced since): not read" \
  "$tmp/err" || { no "a trace of another pid: message"; cat "$tmp/err" >&2; }
grep -q '^  process     pid [0-9]* on .*: /usr/bin/cp$' "$tmp/err" || no "swap: cp's trace not reported"

# no trace written (no such folder): said so, the command's exit status kept
t=$tmp/none/t.trace
"$tool" run --no-summary --output="$t" -- sh -c 'exit 3' 2>"$tmp/err"
rc=$?
[ $rc = 3 ] || no "no trace: exit status $rc, want 3"
grep -qxF "ndmem: no trace of this run: $t was not written" "$tmp/err" &&
  ! grep -q '^== summary' "$tmp/err" || { no "no trace: message"; cat "$tmp/err" >&2; }
exit $fail
