#!/bin/sh
# SPDX-License-Identifier: MIT
# t_man: the built manual pages render with man(1) and groff without a warning, have the sections
# a manual page is expected to have, and name every option their program accepts (read from its
# source: tools/ndmem.in's case patterns, report/*.c's option comparisons) and, for ndmem(1),
# every NDMEM_* variable the shim reads (test_config --list). Exit 77 without man or groff.
# usage: t_man.sh NDMEM_1 NDMEMREPORT_1 SOURCE_DIR TEST_CONFIG
set -u
ndmem1=$1 report1=$2 src=$3 test_config=$4
command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1 ||
  { echo "man or groff is not installed (Debian: man-db): not rendered"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=1; }
export LC_ALL=C MANWIDTH=80
for name in ndmem.1 ndmemreport.1; do
  page=$ndmem1
  [ $name = ndmem.1 ] || page=$report1
  groff -ww -z -man "$page" >"$tmp/groff" 2>&1 || no "$name: groff exit status $?"
  [ -s "$tmp/groff" ] && no "$name: groff says: $(cat "$tmp/groff")"
  man --warnings -l "$page" >"$tmp/$name.txt" 2>"$tmp/man.err" || no "$name: man exit status $?"
  [ -s "$tmp/man.err" ] && no "$name: man says: $(cat "$tmp/man.err")"
  for s in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT 'EXIT STATUS' FILES EXAMPLES 'SEE ALSO'; do
    grep -q "^$s\$" "$tmp/$name.txt" || no "$name: no $s section"
  done
done
# what a rendered page names: its options, whole words (--top, not --top-n)
has() { grep -q -e "$2\([^a-z-]\|\$\)" "$tmp/$1.txt"; }
# ndmem.in: the patterns of its option loop's case, as `  --a|--b=*)`
for opt in $(sed -n 's/^ *\(-[-a-z|=*]*\)).*/\1/p' "$src/tools/ndmem.in" | tr '|' '\n' |
    sed -n 's/^\(--[a-z][a-z-]*\).*/\1/p' | sort -u); do
  has ndmem.1 "$opt" || no "ndmem(1) does not name $opt, which ndmem accepts"
done
# report/: IS("--x") and strcmp(a, "--x") in the argument loops
for opt in $(grep -ho '\(IS(\|strcmp(a, \)"--[a-z][a-z-]*"' "$src"/report/ndmemreport.c "$src"/report/cmd/diff.c \
    "$src"/report/cmd/merge.c | sed 's/.*"\(--[a-z-]*\)"/\1/' | sort -u); do
  has ndmemreport.1 "$opt" || no "ndmemreport(1) does not name $opt, which ndmemreport accepts"
done
for v in $("$test_config" --list); do
  has ndmem.1 "$v" || no "ndmem(1) does not name $v"
done
[ $fail = 0 ] && echo "ndmem.1 and ndmemreport.1 render without warnings and name every option"
exit $fail
