# SPDX-License-Identifier: MIT
# edge_common.sh: sourced by the *_edge.sh tests with their arguments NDMEMREPORT GEN_TRACE.
# Sets report and gen (absolute), works in a scratch folder removed at exit, and gives
# no MESSAGE (a failure: fail=1) and bad MODE OFFSET ERROR: the trace gen_trace writes for MODE
# must make ndmemreport exit 2 with nothing on stdout and exactly
# "ndmemreport: MODE.trace: ERROR at offset OFFSET" on stderr.
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
report=$(abs "$1") gen=$(abs "$2")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

bad() {
  "$gen" "$1" "$1.trace" || { no "gen_trace $1"; return; }
  "$report" "$1.trace" >out 2>err
  rc=$?
  [ $rc = 2 ] || no "$1: exit status $rc, want 2"
  [ ! -s out ] || no "$1: output on stdout"
  printf 'ndmemreport: %s.trace: %s at offset %s\n' "$1" "$3" "$2" >want
  diff -u want err || no "$1: stderr differs"
}
