#!/bin/sh
# SPDX-License-Identifier: MIT
# t_suppress: the built-in suppressions on this machine's real stacks. t_suppress (every block
# tracked) leaves the C and C++ runtimes' lifetime allocations live at exit (and what exit()'s
# handlers allocated), and two leaks of its own; supp_stacks matches each leaked stack against
# the rules: every runtime stack must be matched by its built-in, the two leaks by none. Then a suppressions file takes the two, and a
# bad one is refused with its file and line.
# usage: t_suppress.sh LIBNDMEM T_SUPPRESS LIBDLO SUPP_STACKS SOURCE
set -u
lib=$1 prog=$2 stacks=$4 src=$5
# absolute: the loader records the path as dlopen was given it, and only an absolute one is
# opened to symbolize
dlo=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
TZ=UTC0 NDMEM_SUMMARY=0 NDMEM_TRACK_MIN=0 NDMEM_OUTPUT="$tmp/t.trace" LD_PRELOAD=$lib \
  "$prog" "$dlo" >/dev/null
rc=$?
[ $rc = 77 ] && { echo "no C.UTF-8 locale"; exit 77; }
[ $rc = 0 ] || { echo "t_suppress failed: $rc" >&2; exit 1; }
"$stacks" "$tmp/t.trace" >"$tmp/got" || { no "supp_stacks: $?"; exit 1; }
line=$(grep -n '// LEAK$' "$src" | cut -d: -f1)
printf '%s\n' "- dlo_init (libdlo.c:10)" "- main (t_suppress.cc:$line)" dynamic-loader \
  exit-handlers libc-locale libc-nss libc-stdio-buffers libc-strerror libc-tz \
  libstdc++-eh-pool >"$tmp/want"
diff -u "$tmp/want" "$tmp/got" || no "built-in suppressions on the program's stacks"
printf '# the two leaks\nleak:^dlo_init$\n\nleak:t_suppress.cc\n' >"$tmp/mine.supp"
"$stacks" "$tmp/t.trace" "$tmp/mine.supp" >"$tmp/got" || no "supp_stacks with a file: $?"
grep '^-' "$tmp/got" && no "a suppressions file left a leak"
printf 'leak:dlo_init\nbad line\n' >"$tmp/bad.supp"
"$stacks" "$tmp/t.trace" "$tmp/bad.supp" 2>"$tmp/err" >/dev/null
[ $? = 2 ] && [ "$(cat "$tmp/err")" = "supp_stacks: $tmp/bad.supp:2: expected 'leak:PATTERN'" ] ||
  no "a bad suppressions file: $(cat "$tmp/err")"
exit $fail
