#!/bin/sh
# SPDX-License-Identifier: MIT
# t_width: `ndmemreport --help`, `ndmem --help` and the text reports of the stored traces (every
# view: full, --brief, --workspaces, --limits, and every list and frame shown) fit in 80 columns;
# each line over lists itself. A frame line ("      #N  ...") is exempt: frames are never broken,
# and the python trace has one over 80 columns (a Python file deep in site-packages) on purpose.
# The stored traces are ASCII but for one Python name in python.trace, on a short line, so bytes
# are columns. (The lifetime classes of version 5 traces are checked the same way on live runs:
# tests/preload/leaks/t_corpus.py.)
# usage: t_width.sh NDMEMREPORT NDMEM_TOOL TRACE...
set -u
report=$1 tool=$2
shift 2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# check NAME: the lines of $tmp/out wider than 80 columns
check() {
  awk -v name="$1" '
    /^      #[0-9]+ +[^ ]/ { next }
    length($0) > 80 { printf "%s: %d columns: %s\n", name, length($0), $0; bad = 1 }
    END { exit bad }' "$tmp/out" || fail=1
}
"$report" --help >"$tmp/out" || { echo "FAIL: ndmemreport --help: $?"; fail=1; }
check "ndmemreport --help"
"$tool" --help >"$tmp/out" || { echo "FAIL: ndmem --help: $?"; fail=1; }
check "ndmem --help"
for trace in "$@"; do
  for view in "" "--brief" "--workspaces" "--limits" "--workspaces --limits"; do
    # shellcheck disable=SC2086 # $view is zero to two words
    "$report" $view --top 0 --frames 0 "$trace" >"$tmp/out" 2>&1 ||
      { echo "FAIL: ndmemreport $view $trace: $?"; fail=1; }
    check "ndmemreport $view $(basename "$trace")"
  done
done
exit $fail
