#!/bin/sh
# SPDX-License-Identifier: MIT
# t_run_supp: `ndmem run --suppressions FILE` (repeatable, also =FILE) and
# --no-builtin-suppressions reach ndmemreport, in order, after the run: a copy of the wrapper
# beside a stand-in ndmemreport that writes down its arguments. A file that cannot be read or
# has a bad line stops the run before the command starts (exit 2, one line). The same copy checks
# `ndmem run --cupti`: CUDA_INJECTION64_PATH names the libndmem_cupti.so beside the shim (or in
# the build tree's cupti/), absolute; without one the run stops, saying whether it was built.
# usage: t_run_supp.sh NDMEM_TOOL LIBNDMEM HAVE_CUPTI(0|1)
set -u
tool=$1 lib=$2 have_cupti=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
mkdir "$tmp/tools" "$tmp/report" "$tmp/interpose" "$tmp/w"
cp "$tool" "$tmp/tools/ndmem"
ln -s "$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")" "$tmp/interpose/libndmem.so"
printf '#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a"; done >"%s/args"\n' "$tmp" \
  >"$tmp/report/ndmemreport"
chmod +x "$tmp/report/ndmemreport"
printf 'leak:one\n' >"$tmp/w/a.supp"
printf '# two\nleak:two\n' >"$tmp/w/b c.supp"
cd "$tmp/w" || exit 1
sh ../tools/ndmem run --no-summary --output=run.trace --suppressions a.supp \
  --no-builtin-suppressions --suppressions="b c.supp" -- true || no "exit status $?"
printf '%s\n' --brief --no-builtin-suppressions --suppressions a.supp --suppressions "b c.supp" \
  run.trace >"$tmp/want"
diff -u "$tmp/want" "$tmp/args" || no "ndmemreport's arguments"
rm -f "$tmp/args"
sh ../tools/ndmem run --no-summary --output=run2.trace -- true || no "exit status $?"
printf '%s\n' --brief run2.trace >"$tmp/want"
diff -u "$tmp/want" "$tmp/args" || no "ndmemreport's arguments without suppressions"

# refused before the command runs
printf 'leak:fine\n\n  \t# note\nleak:\t\n' >bad.supp
sh ../tools/ndmem run --suppressions bad.supp -- touch ran 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && [ ! -e ran ] || no "a bad file: exit status $rc, or the command ran"
[ "$(cat "$tmp/err")" = "ndmem: bad.supp:4: expected 'leak:PATTERN'" ] ||
  no "a bad file: $(cat "$tmp/err")"
sh ../tools/ndmem run --suppressions=none.supp -- touch ran 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && [ ! -e ran ] || no "a missing file: exit status $rc, or the command ran"
[ "$(cat "$tmp/err")" = "ndmem: none.supp: cannot read the suppressions file" ] ||
  no "a missing file: $(cat "$tmp/err")"

# --cupti without libndmem_cupti.so beside the shim (this copy has none): refused before the run
sh ../tools/ndmem run --cupti -- touch ran 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && [ ! -e ran ] || no "--cupti without the library: exit status $rc, or the command ran"
if [ "$have_cupti" = 1 ]; then
  want="ndmem: --cupti: libndmem_cupti.so not found (looked beside $tmp/interpose/libndmem.so"
  want="$want and in $tmp/tools/../cupti)"
else
  want="ndmem: --cupti: libndmem_cupti.so was not built (no CUPTI at build time)"
fi
[ "$(cat "$tmp/err")" = "$want" ] || no "--cupti without the library: $(cat "$tmp/err")"
# in the build tree's cupti/ (a stand-in file: only its path is checked), and beside --lib's
# shim, which comes first; without --cupti the variable is left as it was
mkdir "$tmp/cupti" "$tmp/lib"
: >"$tmp/cupti/libndmem_cupti.so"
ln -s "$tmp/interpose/libndmem.so" "$tmp/lib/libndmem.so"
: >"$tmp/lib/libndmem_cupti.so"
printenv_cmd='printf "%s\n" "${CUDA_INJECTION64_PATH-unset}"'
sh ../tools/ndmem run --no-summary --no-trace --cupti -- sh -c "$printenv_cmd" >"$tmp/out" ||
  no "--cupti: exit status $?"
[ "$(cat "$tmp/out")" = "$(cd "$tmp/cupti" && pwd)/libndmem_cupti.so" ] ||
  no "--cupti in the build tree: CUDA_INJECTION64_PATH=$(cat "$tmp/out")"
sh ../tools/ndmem run --no-summary --no-trace --lib ../lib/libndmem.so --cupti -- \
  sh -c "$printenv_cmd" >"$tmp/out" || no "--cupti --lib: exit status $?"
[ "$(cat "$tmp/out")" = "$(cd "$tmp/lib" && pwd)/libndmem_cupti.so" ] ||
  no "--cupti beside --lib's shim: CUDA_INJECTION64_PATH=$(cat "$tmp/out")"
(unset CUDA_INJECTION64_PATH; sh ../tools/ndmem run --no-summary --no-trace -- \
  sh -c "$printenv_cmd") >"$tmp/out" || no "without --cupti: exit status $?"
[ "$(cat "$tmp/out")" = unset ] || no "without --cupti: CUDA_INJECTION64_PATH=$(cat "$tmp/out")"
exit $fail
