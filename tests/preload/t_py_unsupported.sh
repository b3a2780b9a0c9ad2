#!/bin/sh
# SPDX-License-Identifier: MIT
# t_py_unsupported: an interpreter of a version ndmem cannot read (t_py_unsupported.c plays 3.13
# by Py_Version, and 3.10 by Py_GetVersion alone) gets exactly one stderr line saying so, the
# program's stdout and status are its own, and the trace says "unsupported" with the version and
# has no Python frame. NDMEM_PYTHON=0 says nothing and records "off".
# usage: t_py_unsupported.sh LIBNDMEM PROG_313 PROG_310 NDMEMREPORT
set -u
lib=$1 p313=$2 p310=$3 report=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

run() { # name prog [VAR=VALUE]: runs prog under the shim into $tmp/name.*
  name=$1 prog=$2
  shift 2
  env "$@" LD_PRELOAD="$lib" NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/$name.%p.trace" "$prog" \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
}

check() { # name version state
  name=$1 version=$2 state=$3
  [ "$(cat "$tmp/$name.rc")" = 0 ] || no "$name: exit status $(cat "$tmp/$name.rc")"
  [ "$(cat "$tmp/$name.out")" = "allocated 1" ] || no "$name: stdout '$(cat "$tmp/$name.out")'"
  trace=$(ls "$tmp/$name".*.trace)
  "$report" --format json "$trace" >"$tmp/$name.json" 2>&1 || no "$name: ndmemreport failed"
  python3 - "$tmp/$name.json" "$version" "$state" <<'PY' || fail=1
import json, sys
doc = json.load(open(sys.argv[1]))
py = doc.get("python") or {}
ok = True
if py.get("state") != sys.argv[3] or (sys.argv[2] != "-" and py.get("version") != sys.argv[2]):
    print("FAIL: python %r, want state %s version %s" % (py, sys.argv[3], sys.argv[2]))
    ok = False
def frames(n):
    if isinstance(n, dict):
        for k, v in n.items():
            if k == "frames" and isinstance(v, list):
                yield from v
            else:
                yield from frames(v)
    elif isinstance(n, list):
        for v in n:
            yield from frames(v)
if any(isinstance(f, dict) and f.get("python") for f in frames(doc)):
    print("FAIL: a Python frame in the report")
    ok = False
sys.exit(0 if ok else 1)
PY
}

run v313 "$p313"
check v313 3.13.0 unsupported
[ "$(cat "$tmp/v313.err")" = "ndmem: Python 3.13.0 is not supported (3.11 and 3.12 are): native frames only" ] ||
  no "3.13: stderr '$(cat "$tmp/v313.err")'"
run v310 "$p310"
check v310 3.10.13 unsupported
[ "$(cat "$tmp/v310.err")" = "ndmem: Python 3.10.13 is not supported (3.11 and 3.12 are): native frames only" ] ||
  no "3.10: stderr '$(cat "$tmp/v310.err")'"
run off "$p313" NDMEM_PYTHON=0
check off - off
[ ! -s "$tmp/off.err" ] || no "NDMEM_PYTHON=0: stderr '$(cat "$tmp/off.err")'"
exit $fail
