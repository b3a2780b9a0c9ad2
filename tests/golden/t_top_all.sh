#!/bin/sh
# SPDX-License-Identifier: MIT
# t_top_all: `--top 0` lists everything, as `--frames 0` shows every frame: for every stored trace
# and view (text, JSON, --workspaces, --limits), the output with --top 0 is byte for byte the
# output with --top 1000000 (the largest accepted), and it lists more than --top 1 wherever a
# list has more than one entry.
# usage: t_top_all.sh NDMEMREPORT TRACE...
set -u
report=$1
shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
longer=0
for trace in "$@"; do
  for view in "" "--format=json" "--workspaces" "--limits" "--limits --format=json"; do
    # shellcheck disable=SC2086 # $view is one or two words
    "$report" $view --top 0 "$trace" >"$tmp/all" 2>&1 || { echo "FAIL: $trace $view --top 0: $?"; fail=1; }
    # shellcheck disable=SC2086
    "$report" $view --top 1000000 "$trace" >"$tmp/max" 2>&1
    # shellcheck disable=SC2086
    "$report" $view --top 1 "$trace" >"$tmp/one" 2>&1
    if ! cmp -s "$tmp/all" "$tmp/max"; then
      echo "FAIL: $trace $view: --top 0 differs from --top 1000000:"
      diff -u "$tmp/max" "$tmp/all" | head -20
      fail=1
    fi
    [ "$(wc -l <"$tmp/all")" -gt "$(wc -l <"$tmp/one")" ] && longer=$((longer + 1))
  done
done
# basic, killed, ws and limits each have a list of more than one entry in the default view
[ $longer -ge 4 ] || { echo "FAIL: --top 0 listed more than --top 1 in only $longer views"; fail=1; }
exit $fail
