#!/bin/sh
# SPDX-License-Identifier: MIT
# t_live_lines: ndmem's live stderr lines name C++ functions demangled, by the program's own C++
# runtime, and only where it has one. A C++ program over NDMEM_MAX_BYTES: its top live sites are
# demo::Pool::grab(unsigned long) and a class template's method elided to its head and tail; a
# C++ site found growing: demo::Cache::keep(unsigned long). A C program whose functions carry C++
# linkage names: without a runtime they stay as the loader has them (and no runtime was mapped
# into it); with libstdc++ dlopen'ed, at start or only after a first line found none (the loader's
# map changed), they read demangled. The programs' own requests are named refusable
# (NDMEM_LIMIT_REFUSE=%exe): each is refused where it crosses the limit, as before admissions.
# usage: t_live_lines.sh LIBNDMEM T_LIVE_C T_LIVE_CXX (T_LIVE_CXX '-': no C++ compiler)
set -u
lib=$1 cprog=$2 cxxprog=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

# run NAME PROG [VAR=VALUE...] -- ARGS...: PROG under the shim, its stdout and stderr kept
run() {
  name=$1 prog=$2
  shift 2
  vars=
  while [ "$1" != "--" ]; do vars="$vars $1"; shift; done
  shift
  env NDMEM_SUMMARY=0 NDMEM_WORKSPACES=0 NDMEM_LIMIT_REFUSE=%exe NDMEM_OUTPUT="$tmp/$name.%p.trace" $vars \
    LD_PRELOAD="$lib" "$prog" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" ||
    no "$name: exit $?: $(cat "$tmp/$name.err")"
}
# has NAME REGEX: a line of NAME's stderr matches REGEX (grep -E)
has() {
  grep -Eq -- "$2" "$tmp/$1.err" || { no "$1: no line matching: $2"; cat "$tmp/$1.err" >&2; }
}
says() { # says NAME LINE: NAME's stdout has LINE
  grep -qxF -- "$2" "$tmp/$1.out" || { no "$1: stdout has no line '$2'"; cat "$tmp/$1.out" >&2; }
}
hex='0x[0-9a-f]+'

# ---- a C program: no C++ runtime, none loaded; the raw names, then demangled once one is there
run plain "$cprog" NDMEM_MAX_BYTES=32m -- plain
says plain "NULL after 31 blocks"
says plain "C++ runtime: none"
has plain "^ndmem:   top live allocation sites \(1 of [0-9]+; ndmemreport shows their file:line\):$"
has plain "^ndmem:   #1 31\.00 MiB in 31 blocks \[stack [0-9]+\] _ZN4demo4grabEm\+$hex \(t_live_c\) <- t_live_c\+$hex$"

run dlopen "$cprog" NDMEM_MAX_BYTES=32m -- dlopen
says dlopen "C++ runtime: libstdc++"
has dlopen "^ndmem:   #1 [0-9.]+ MiB in [0-9]+ blocks \[stack [0-9]+\] demo::grab\(unsigned long\)\+$hex \(t_live_c\) <- t_live_c\+$hex$"

run late "$cprog" NDMEM_MAX_BYTES=32m NDMEM_FLUSH_MS=20 NDMEM_GROWTH_CYCLES=3 -- late
says late "C++ runtime: libstdc++"
has late "^ndmem:   #1 31\.00 MiB in 31 blocks \[stack [0-9]+\] _ZN4demo4grabEm\+$hex \(t_live_c\) <- t_live_c\+$hex$"
has late "^ndmem: growing: heap site \[stack [0-9]+\] holds .*: demo::keep\(unsigned long\)\+$hex \(t_live_c\) <- main\+$hex \(t_live_c\)( <- |$)"

# ---- a C++ program
if [ "$cxxprog" != - ]; then
  run limit "$cxxprog" NDMEM_MAX_BYTES=32m -- limit
  says limit "bad_alloc after 31 blocks"
  has limit "^ndmem: Can't allocate \[HOST\] memory: 1\.00 MiB requested; "
  has limit "^ndmem:   #1 27\.00 MiB in 27 blocks \[stack [0-9]+\] demo::Pool::grab\(unsigned long\)\+$hex \(t_live_cxx\) <- main\+$hex \(t_live_cxx\)$"
  # 120 bytes of a 798-byte name (c++filt): its first 58 and last 59 around "..."
  wide='demo::Wide<std::map<std::__cxx11::basic_string<char, std::...r<long, std::allocator<long> > > > > >::make(unsigned long)'
  grep -F -- "] $wide+0x" "$tmp/limit.err" | grep -Eq "^ndmem:   #2 4\.00 MiB in 4 blocks \[stack [0-9]+\] .*\+$hex \(t_live_cxx\) <- main\+$hex \(t_live_cxx\)$" ||
    { no "limit: the template's site is not #2 as '$wide'"; cat "$tmp/limit.err" >&2; }
  grep -E '^ndmem: .*_Z' "$tmp/limit.err" && no "limit: a mangled name on stderr"

  run grow "$cxxprog" NDMEM_FLUSH_MS=20 NDMEM_GROWTH_CYCLES=3 -- grow
  says grow "kept 20 blocks"
  has grow "^ndmem: growing: heap site \[stack [0-9]+\] holds [0-9.]+ MiB at its lowest, \+[0-9.]+ [KM]iB per .*: demo::Cache::keep\(unsigned long\)\+$hex \(t_live_cxx\) <- main\+$hex \(t_live_cxx\)( <- |$)"
  grep -E '^ndmem: .*_Z' "$tmp/grow.err" && no "grow: a mangled name on stderr"
fi
exit $fail
