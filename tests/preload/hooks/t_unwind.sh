#!/bin/sh
# SPDX-License-Identifier: MIT
# t_unwind: C++ exceptions under the shim are the program's own (t_unwind.c, libunwtop.cc,
# libunwmid.cc): thrown through another library's frames, a cancelled thread's forced
# unwinding, thrown from a signal handler, nested and rethrown, all from a C++ library that a C
# program loaded RTLD_LOCAL. The lines are the language's answers without ndmem, and the same
# under the shim at default and at every-block tracking (NDMEM_TRACK_MIN=0). Then the loader's
# bindings, with and without the shim: every one the same, the _Unwind_* ones among them
# (bindings.py).
# usage: t_unwind.sh LIBNDMEM T_UNWIND LIBUNWTOP PYTHON BINDINGS_PY
set -u
lib=$1 prog=$2 top=$3 py=$4 bindings=$5
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/want" <<'W'
thrown through another library, caught 200 of 200
cancelled thread, cleanups run 2 of 2
thrown from a signal handler, caught 3 of 3
rethrown and nested, 2 of 2
W
fail=0
run() { # NAME ENV...
  what=$1
  shift
  env "$@" "$prog" "$top" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -ne 0 ] || ! cmp -s "$tmp/want" "$tmp/out"; then
    echo "FAIL $what: exit $rc" >&2
    diff -u "$tmp/want" "$tmp/out" >&2
    cat "$tmp/err" >&2
    fail=1
  else
    echo "ok   $what"
  fi
}
run "without ndmem"
run "under the shim" LD_PRELOAD="$lib" NDMEM_OUTPUT="$tmp/d.%p.trace"
run "under the shim, every block" LD_PRELOAD="$lib" NDMEM_OUTPUT="$tmp/e.%p.trace" NDMEM_TRACK_MIN=0
"$py" "$bindings" "$lib" "$prog" "$top" || fail=1
exit $fail
