#!/bin/sh
# SPDX-License-Identifier: MIT
# t_py_unsupported: an interpreter ndmem must not read (t_py_unsupported.c plays 3.15 by
# Py_Version, 3.9 by Py_GetVersion alone, a free-threaded 3.14 and a 3.13 whose own debug offsets
# differ from 3.13's) gets exactly one stderr line saying so and why, the program's stdout and
# status are its own, and the trace says "unsupported", "free-threaded" or "layout-differs" with
# the version and has no Python frame. NDMEM_PYTHON=0 says nothing and records "off".
# usage: t_py_unsupported.sh LIBNDMEM PROG_315 PROG_39 PROG_314T PROG_313_OTHER NDMEMREPORT
set -u
lib=$1 p315=$2 p39=$3 p314t=$4 p313x=$5 report=$6
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

said() { # name line
  [ "$(cat "$tmp/$1.err")" = "$2" ] || no "$1: stderr '$(cat "$tmp/$1.err")', want '$2'"
}
run v315 "$p315"
check v315 3.15.0 unsupported
said v315 "ndmem: Python 3.15.0 is not supported (3.10 to 3.14 are): native frames only"
run v39 "$p39"
check v39 3.9.18 unsupported
said v39 "ndmem: Python 3.9.18 is not supported (3.10 to 3.14 are): native frames only"
run v314t "$p314t"
check v314t 3.14.0 free-threaded
said v314t "ndmem: Python 3.14.0 is a free-threaded build (not read): native frames only"
run v313x "$p313x"
check v313x 3.13.0 layout-differs
said v313x "ndmem: Python 3.13.0 lays out its frames otherwise than its version's (_PyRuntime.debug_offsets): native frames only"
run off "$p315" NDMEM_PYTHON=0
check off - off
[ ! -s "$tmp/off.err" ] || no "NDMEM_PYTHON=0: stderr '$(cat "$tmp/off.err")'"
exit $fail
