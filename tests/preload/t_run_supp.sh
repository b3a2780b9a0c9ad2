#!/bin/sh
# SPDX-License-Identifier: MIT
# t_run_supp: `ndmem run --suppressions FILE` (repeatable, also =FILE) and
# --no-builtin-suppressions reach ndmemreport, in order, after the run: a copy of the wrapper
# beside a stand-in ndmemreport that writes down its arguments. A file that cannot be read or
# has a bad line stops the run before the command starts (exit 2, one line).
# usage: t_run_supp.sh NDMEM_TOOL LIBNDMEM
set -u
tool=$1 lib=$2
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
exit $fail
