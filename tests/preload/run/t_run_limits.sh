#!/bin/sh
# SPDX-License-Identifier: MIT
# t_run_limits: `ndmem run` runs a job with the settings it asked for or not at all. A limit the
# shim cannot read (--max-bytes, --max-physical-bytes, --max-device-bytes, or NDMEM_MAX_* set
# before), a value of an enumerated setting that is not one of its words (--on-limit=warning),
# or any other value the shim cannot read stops the run before the command starts: exit status
# 2, one line each, the shim's own naming the value, and the command not run. Good settings
# run the command. (Preloaded without ndmem run, a bad value keeps the rule of every setting:
# one line, its default, the job runs.)
# usage: t_run_limits.sh NDMEM_TOOL
set -u
tool=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

# refused NAME WANT_LINE OPTION...: the run stops with 2 and the command never ran
refused() {
  name=$1 want=$2
  shift 2
  rm -f "$tmp/ran"
  "$tool" run --no-summary --output="$tmp/$name.%p.trace" "$@" -- touch "$tmp/ran" 2>"$tmp/$name.err"
  rc=$?
  [ $rc -eq 2 ] || no "$name: exit status $rc, want 2"
  [ -e "$tmp/ran" ] && no "$name: the command ran"
  printf '%s\n' "$want" | diff -u - "$tmp/$name.err" || no "$name: not the one line '$want'"
  ls "$tmp/$name".*.trace >/dev/null 2>&1 && no "$name: a trace was written"
  [ $fail -eq 0 ] || cat "$tmp/$name.err" >&2
}
refused bytes "ndmem: NDMEM_MAX_BYTES='8gg' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% or off); nothing was run" --max-bytes=8gg
refused physical "ndmem: NDMEM_MAX_PHYSICAL_BYTES='-1' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% or off); nothing was run" --max-physical-bytes=-1
refused device "ndmem: NDMEM_MAX_DEVICE_BYTES_1='banana' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% of the device or off); nothing was run" --set NDMEM_MAX_DEVICE_BYTES_1=banana
NDMEM_MAX_BYTES=1.5x refused env "ndmem: NDMEM_MAX_BYTES='1.5x' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% or off); nothing was run"
refused onlimit "ndmem: NDMEM_ON_LIMIT='warning' is not one of fail/warn/abort; nothing was run" \
  --on-limit=warning
refused mappings "ndmem: NDMEM_MAX_BYTES_MAPPINGS='sometimes' is not one of touched/whole; nothing was run" \
  --max-bytes=1.5g --max-bytes-mappings sometimes
refused summary "ndmem: NDMEM_SUMMARY='5' is not an integer in 0..2; nothing was run" --summary 5
refused unknown "ndmem: NDMEM_TYPO is not a known setting; nothing was run" --set NDMEM_TYPO=1

# good settings, in both forms (--opt=VALUE, --opt VALUE): the command runs, nothing said
rm -f "$tmp/ran"
"$tool" run --no-summary --no-report --output "$tmp/ok.%p.trace" --max-bytes=1.5g --on-limit warn \
  --max-bytes-mappings=whole -- touch "$tmp/ran" 2>"$tmp/ok.err" || no "ok: exit status $?"
[ -e "$tmp/ran" ] || no "ok: the command did not run"
[ -s "$tmp/ok.err" ] && { no "ok: said something"; cat "$tmp/ok.err" >&2; }
ls "$tmp"/ok.*.trace >/dev/null 2>&1 || no "ok: --output PATTERN (a space before it) not taken"
# preloaded alone, a bad value is said and its default used; the job runs
rm -f "$tmp/ran"
NDMEM_ON_LIMIT=warning NDMEM_SUMMARY=0 NDMEM_TRACE=0 LD_PRELOAD="$(dirname "$tool")/../interpose/libndmem.so" \
  touch "$tmp/ran" 2>"$tmp/alone.err" || no "alone: exit status $?"
[ -e "$tmp/ran" ] || no "alone: the command did not run"
grep -qx "ndmem: NDMEM_ON_LIMIT='warning' is not one of fail/warn/abort; using fail" "$tmp/alone.err" ||
  { no "alone: no line for the bad NDMEM_ON_LIMIT"; cat "$tmp/alone.err" >&2; }
exit $fail
