#!/bin/sh
# SPDX-License-Identifier: MIT
# t_run_limits: `ndmem run` never runs a job uncapped that asked to be capped. A limit the shim
# cannot read (--max-bytes, --max-physical-bytes, --max-device-bytes, or NDMEM_MAX_* set before)
# stops the run before the command starts: exit status 2, the shim's own line naming the value,
# and the command not run. A good limit runs the command; a setting that is not a limit keeps the
# rule of every other setting (one line, its default, the job runs).
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
  grep -qx -- "$want" "$tmp/$name.err" || no "$name: no line '$want'"
  grep -qx 'ndmem: nothing was run: fix the limit, or set it off' "$tmp/$name.err" || no "$name: no closing line"
  ls "$tmp/$name".*.trace >/dev/null 2>&1 && no "$name: a trace was written"
  [ $fail -eq 0 ] || cat "$tmp/$name.err" >&2
}
refused bytes "ndmem: NDMEM_MAX_BYTES='8gg' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% or off); using none (the limit is off)" --max-bytes=8gg
refused physical "ndmem: NDMEM_MAX_PHYSICAL_BYTES='-1' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% or off); using none (the limit is off)" --max-physical-bytes=-1
refused device "ndmem: NDMEM_MAX_DEVICE_BYTES_1='banana' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% of the device or off); using none (the limit is off)" --set NDMEM_MAX_DEVICE_BYTES_1=banana
NDMEM_MAX_BYTES=1.5x refused env "ndmem: NDMEM_MAX_BYTES='1.5x' is not a limit (e.g. 8G, 512m, 1.5g, 1073741824, 75% or off); using none (the limit is off)"

# a good limit, and a bad value of a setting that is not a limit: the command runs
rm -f "$tmp/ran"
"$tool" run --no-summary --no-report --output="$tmp/ok.%p.trace" --max-bytes=1.5g --max-bytes-mappings=sometimes \
  -- touch "$tmp/ran" 2>"$tmp/ok.err" || no "ok: exit status $?"
[ -e "$tmp/ran" ] || no "ok: the command did not run"
grep -qx "ndmem: NDMEM_MAX_BYTES_MAPPINGS='sometimes' is not one of touched/whole; using touched" "$tmp/ok.err" ||
  { no "ok: no line for the bad NDMEM_MAX_BYTES_MAPPINGS"; cat "$tmp/ok.err" >&2; }
exit $fail
