#!/bin/sh
# SPDX-License-Identifier: MIT
# run_golden: runs ndmemreport on a stored trace and diffs its output against the stored expected
# output; the exit status must match and stderr must be empty, or, where GOLDEN_STDERR names a
# file, be that file's text (a verdict's line). The trace is passed by its base name from its own
# directory, so the output does not depend on where the tree is.
# NDMEM_GOLDEN_UPDATE=1 rewrites the expected files instead (review the diff before committing).
# usage: run_golden.sh NDMEMREPORT EXPECTED EXIT_STATUS TRACE [ARGS...]
set -u
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
report=$(abs "$1") expected=$(abs "$2") status=$3 trace=$(abs "$4")
errs=${GOLDEN_STDERR:+$(abs "$GOLDEN_STDERR")}
shift 4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$(dirname "$trace")" || exit 1
"$report" "$@" "$(basename "$trace")" >"$tmp/out" 2>"$tmp/err"
rc=$?
fail=0
if [ "$rc" != "$status" ]; then
  echo "FAIL: exit status $rc, want $status" >&2
  fail=1
fi
if [ -n "$errs" ]; then
  if [ "${NDMEM_GOLDEN_UPDATE:-0}" = 1 ]; then
    cp "$tmp/err" "$errs" && echo "updated $errs" >&2
  elif ! diff -u "$errs" "$tmp/err"; then
    echo "FAIL: stderr differs from $errs" >&2
    fail=1
  fi
elif [ -s "$tmp/err" ]; then
  echo "FAIL: stderr not empty:" >&2
  cat "$tmp/err" >&2
  fail=1
fi
if [ "${NDMEM_GOLDEN_UPDATE:-0}" = 1 ]; then
  cp "$tmp/out" "$expected" && echo "updated $expected" >&2
elif ! diff -u "$expected" "$tmp/out"; then
  echo "FAIL: output differs from $expected" >&2
  fail=1
fi
exit $fail
