#!/bin/sh
# SPDX-License-Identifier: MIT
# t_suppress_opts: ndmemreport's --suppressions FILE (repeatable, also --suppressions=FILE) and
# --no-builtin-suppressions. Good files are read and their rules take the leaks they match (shown
# per rule, and no longer failing --fail-on-leak); a bad line, a missing file or a missing value
# is refused before the trace is read, with one line naming the file and line, and exit status
# 2; --help lists both.
# usage: t_suppress_opts.sh NDMEMREPORT TRACE
set -u
report=$1 trace=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
printf '# LeakSanitizer style\nleak:^make_buffer$\n\n  leak:libfoo.so  \r\n' >"$tmp/a.supp"
printf 'leak:*train*\n' >"$tmp/b c.supp"
"$report" "$trace" >"$tmp/plain" 2>&1 || no "the plain report: $?"
"$report" --suppressions "$tmp/a.supp" --suppressions="$tmp/b c.supp" --no-builtin-suppressions \
  "$trace" >"$tmp/out" 2>&1 || no "good files: exit status $?"
# What the rules take, by rule (a file's rule is named FILE:LINE), and what is left: the stack
# with no frames (70000 B) only.
has() { grep -qF -- "$1" "$tmp/out" || no "good files: the report lacks '$1'"; }
has "  leaks       live at exit 68.36 KiB (70000 B) in 1 block (1 stack)"
has "              suppressed ~2.02 GiB (~2164733264 B) in ~108 blocks (4 stacks)"
has "b c.supp:1: 2.02 GiB (2164260864 B)" # the long path may wrap what follows
has "a.supp:4: ~461.33 KiB (~472400 B)"
"$report" --fail-on-leak --suppressions "$tmp/a.supp" --suppressions="$tmp/b c.supp" \
  --no-builtin-suppressions "$trace" >/dev/null 2>&1
[ $? = 1 ] || no "--fail-on-leak with the rules: the 70000 B left must still fail"
"$report" --format json --suppressions "$tmp/a.supp" "$trace" >/dev/null 2>&1 || no "JSON: $?"

# bad: exit 2, nothing on stdout, exactly one line on stderr
bad() {
  want=$1
  shift
  "$report" "$@" "$trace" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc = 2 ] || no "$*: exit status $rc, want 2"
  [ ! -s "$tmp/out" ] || no "$*: wrote a report"
  [ "$(cat "$tmp/err")" = "$want" ] || no "$*: stderr '$(cat "$tmp/err")', want '$want'"
}
printf 'leak:ok\n# comment\n\nleak:\n' >"$tmp/empty.supp"
bad "ndmemreport: $tmp/empty.supp:4: expected 'leak:PATTERN'" --suppressions "$tmp/empty.supp"
printf 'leak:ok\nrace:tsan_only\n' >"$tmp/race.supp"
bad "ndmemreport: $tmp/race.supp:2: expected 'leak:PATTERN'" --suppressions "$tmp/a.supp" \
  --suppressions "$tmp/race.supp"
bad "ndmemreport: $tmp/none.supp: No such file or directory" --suppressions "$tmp/none.supp"
"$report" --suppressions 2>"$tmp/err"
[ $? = 2 ] && grep -q '^ndmemreport: --suppressions needs a FILE (usage: ' "$tmp/err" ||
  no "--suppressions without a FILE: $(cat "$tmp/err")"
"$report" --help >"$tmp/out" || no "--help: $?"
grep -q '^  --suppressions FILE  ' "$tmp/out" && grep -q '^  --no-builtin-suppressions  ' "$tmp/out" ||
  no "--help lacks the options"
exit $fail
