#!/bin/sh
# SPDX-License-Identifier: MIT
# t_demangle: ndmemreport shows C++ frames demangled, in text and JSON: a C++ program (every block
# tracked) leaves blocks allocated in ns::Foo::bar(int), in std::vector's growth and in a static
# function; the frames of its own code in the report's top sites are exactly the expected ones,
# and no frame in them keeps a mangled (_Z...) name. Skipped (77) when ndmemreport was built
# without a demangler (no libstdc++ to link).
# usage: t_demangle.sh LIBNDMEM T_DEMANGLE NDMEMREPORT SOURCE PYTHON HAVE_DEMANGLER
set -u
lib=$1 prog=$2 rep=$3 src=$4 py=$5 have=$6
[ "$have" = 1 ] || { echo "ndmemreport was built without a demangler (libstdc++ not found)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
NDMEM_SUMMARY=0 NDMEM_TRACK_MIN=0 NDMEM_OUTPUT="$tmp/t.trace" LD_PRELOAD=$lib "$prog" ||
  { echo "program failed" >&2; exit 1; }
at() { echo "t_demangle.cc:$(grep -n "// $1\$" "$src" | cut -d: -f1)"; }
# The by-peak list: 100000 B in bar, the vector's buffers (16 + 32 KiB live at once), the vector.
cat >"$tmp/want" <<WANT
ns::Foo::bar(int) ($(at BAR))
main ($(at MAIN_BAR))
std::vector<int, std::allocator<int> >::push_back(int const&)
grow() ($(at GROW))
main ($(at MAIN_GROW))
grow() ($(at NEWVEC))
main ($(at MAIN_GROW))
WANT
"$rep" --top 0 --frames 0 "$tmp/t.trace" >"$tmp/r.txt" || { no "ndmemreport failed"; exit 1; }
# The frames of the program's own code and of push_back, in the by-peak list; the folder of a
# source file and the (library's) line of push_back are left out.
sed -n '/^== top .* by peak/,/^== top .* by total/p' "$tmp/r.txt" |
  sed -n -e 's/^ *#[0-9]* *\(std::vector<int, std::allocator<int> >::push_back(int const&)\) (.*/\1/p' \
    -e 's/^ *#[0-9]* *\(.*\) ([^ ]*\/\(t_demangle\.cc:[0-9]*\))$/\1 (\2)/p' >"$tmp/got"
diff -u "$tmp/want" "$tmp/got" || { no "text frames differ"; cat "$tmp/r.txt" >&2; }
grep -E '^ *#[0-9]+ +_Z' "$tmp/r.txt" && no "a frame kept its mangled name"
"$rep" --format json --top 0 "$tmp/t.trace" >"$tmp/r.json" || no "ndmemreport --format json failed"
"$py" - "$tmp/r.json" <<'PY' || no "JSON frames"
import json, os, sys
doc = json.load(open(sys.argv[1]))
names = [[f["function"] for f in s["frames"]] for s in doc["sites"]["by_peak"]]
mangled = [n for ns in names for n in ns if n and n.startswith("_Z")]
if mangled:
    sys.exit("mangled names in JSON: %s" % mangled)
bar = [ns for ns in names if "ns::Foo::bar(int)" in ns]
grow = [ns for ns in names if "std::vector<int, std::allocator<int> >::push_back(int const&)" in ns]
if len(bar) != 1 or len(grow) != 1 or "grow()" not in grow[0]:
    sys.exit("JSON stacks: %s" % names)
PY
exit $fail
