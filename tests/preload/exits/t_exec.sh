#!/bin/sh
# SPDX-License-Identifier: MIT
# t_exec: an exec the shim cannot follow is recorded before it is made. `ndmem run -- env -i
# /bin/true` reads as an exec, not a crash, and keeps its status; t_exec.c keeps a 3 MiB block and
# execs a static program (which exits 7), /bin/true with an empty environment (execle), and
# "true" from PATH after clearenv (execlp): each trace holds the block (3145728 B at
# t_exec.c:KEEP_LINE) and says "exec'd PROGRAM (not followed: WHY)" in text and JSON, and the shim
# said so with its summary. A failed exec leaves the process as it was (-1, errno ENOENT, the trace
# going on to a normal exit, one failed exec counted); a followed one (itself, the environment
# kept) keeps each program's trace: the first's moved to NAME.exec1.trace, ending in the exec
# with its block, the new image's at the path with its 2 MiB block and no word of the exec.
# usage: t_exec.sh LIBNDMEM T_EXEC T_EXEC_STATIC|none NDMEMREPORT T_EXEC_C NDMEM_TOOL PYTHON3
set -u
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
lib=$(abs "$1") prog=$(abs "$2") static=$3 rep=$(abs "$4") src=$5 tool=$(abs "$6") py=$7
[ "$static" = none ] || static=$(abs "$static")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
flat() { tr '\n' ' ' <"$1" | tr -s ' '; } # a report's lines as one, its 80-column breaks undone
keep=$(grep -n 'KEEP_LINE' "$src" | tail -n 1 | cut -d: -f1)
after=$(grep -n 'AFTER_LINE' "$src" | tail -n 1 | cut -d: -f1)
true_path=$(readlink -f /bin/true)
# json FILE EXPR: the Python expression on the report's JSON (j) must be true
json() {
  "$py" -c 'import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" ||
    { no "$(basename "$1"): JSON: $2"; "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["process"])' "$1" >&2; }
}

# The command exec'd with a cleared environment: its status, an exec, no crash.
(cd "$tmp" && "$tool" run --output="$tmp/envi.%p.trace" -- env -i /bin/true >"$tmp/envi.out" 2>"$tmp/envi.err")
rc=$?
[ $rc -eq 0 ] || no "ndmem run -- env -i /bin/true: exit status $rc, want 0"
flat "$tmp/envi.err" >"$tmp/envi.flat"
grep -qF "exit exec'd $true_path in thread " "$tmp/envi.flat" &&
  grep -qF "(not followed: its environment does not preload libndmem): the trace ends there" "$tmp/envi.flat" &&
  grep -qF "ndmem[" "$tmp/envi.flat" && grep -qF "]: exec'd $true_path (not followed: its environment does not preload libndmem)" "$tmp/envi.flat" ||
  { no "env -i: the run does not say the exec"; cat "$tmp/envi.err" >&2; }
if grep -qi "killed\|crashed\|NOT normal" "$tmp/envi.err"; then no "env -i: read as a crash"; cat "$tmp/envi.err" >&2; fi

# run MODE WANT_STATUS [ARG]: t_exec under the shim; sets $pid, $trace, and writes the reports
run() {
  mode=$1 want=$2
  shift 2
  (cd "$tmp" && NDMEM_OUTPUT="$tmp/$mode.%p.trace" LD_PRELOAD=$lib "$prog" "$mode" "$@" \
    >"$tmp/$mode.out" 2>"$tmp/$mode.err")
  st=$?
  [ "$st" -eq "$want" ] || { no "$mode: exit status $st, want $want"; cat "$tmp/$mode.err" >&2; }
  pid=$(sed -n 's/^pid //p' "$tmp/$mode.out")
  trace="$tmp/$mode.$pid.trace"
  [ -s "$trace" ] || { no "$mode: no trace"; return 1; }
  "$rep" "$trace" >"$tmp/$mode.txt" 2>&1 || no "$mode: ndmemreport failed"
  "$rep" --format json "$trace" >"$tmp/$mode.json" 2>&1 || no "$mode: ndmemreport --format json failed"
  return 0
}

# exec_not_followed MODE PROGRAM WHY_TEXT WHY_KEY
exec_not_followed() {
  flat "$tmp/$1.txt" >"$tmp/$1.flat"
  grep -qF "exit exec'd $2 in thread $pid (not followed: $3): the trace ends there" "$tmp/$1.flat" ||
    { no "$1: the exit line"; sed -n 1,20p "$tmp/$1.txt" >&2; }
  # the figures up to the exec: the block kept at its line
  grep -qF "peak 3.00 MiB (3145728 B)" "$tmp/$1.flat" && grep -qF "t_exec.c:$keep)" "$tmp/$1.flat" ||
    { no "$1: the kept block (3145728 B at t_exec.c:$keep)"; cat "$tmp/$1.txt" >&2; }
  grep -qF "leaks not judged (the process exec'd another program)" "$tmp/$1.flat" || no "$1: the leaks line"
  json "$tmp/$1.json" "j['process']['exit'] == {'how': 'exec', 'code': None, 'tid': $pid, 'program': '$2', 'followed': False, 'why': '$4', 'status': None, 'after_refusal': None} and j['process']['failed_execs'] == 0"
  grep -qF "]: exec'd $2 (not followed: $3); the figures below are this process's up to it" "$tmp/$1.err" ||
    { no "$1: the shim's line"; cat "$tmp/$1.err" >&2; }
}

if [ "$static" != none ]; then
  run static 7 "$static" && exec_not_followed static "$static" "a statically linked program" static
fi
run cleared 0 && exec_not_followed cleared "$true_path" "its environment does not preload libndmem" no_preload
run lp 0 && exec_not_followed lp "$true_path" "its environment does not preload libndmem" no_preload

# A failed exec: the program sees -1 and ENOENT, and its trace goes on to a normal end.
if run fail 0; then
  grep -qx "execv -1 errno ENOENT" "$tmp/fail.out" || no "fail: $(cat "$tmp/fail.out")"
  flat "$tmp/fail.txt" >"$tmp/fail.flat"
  grep -qF "exit normal (END record)" "$tmp/fail.flat" || { no "fail: the exit line"; cat "$tmp/fail.txt" >&2; }
  json "$tmp/fail.json" "j['process']['exit']['how'] == 'exit' and j['process']['exit']['status'] == 0 and j['process']['failed_execs'] == 1"
  if grep -q "exec" "$tmp/fail.err"; then no "fail: ndmem spoke of the exec"; cat "$tmp/fail.err" >&2; fi
fi

# A followed exec of a program that did work (its 3 MiB block: 1 MiB at least) keeps that
# program's trace, moved to NAME.exec1.trace, which ends in the exec with the block; the new
# image's is at the path, with its 2 MiB block and no word of the exec; the shim says nothing.
if run self 0; then
  grep -qx "after $pid" "$tmp/self.out" || no "self: the new image did not run ($(cat "$tmp/self.out"))"
  flat "$tmp/self.txt" >"$tmp/self.flat"
  grep -qF "exit normal (END record)" "$tmp/self.flat" && grep -qF "t_exec.c:$after" "$tmp/self.flat" ||
    { no "self: the new image's trace"; cat "$tmp/self.txt" >&2; }
  ! grep -q "exec'd\|t_exec.c:$keep" "$tmp/self.flat" "$tmp/self.err" || no "self: the followed exec is named"
  [ "$(ls "$tmp"/self.*.trace | wc -l)" -eq 2 ] || no "self: $(ls "$tmp"/self.*.trace)"
  first="$tmp/self.$pid.exec1.trace"
  "$rep" "$first" 2>&1 | flat /dev/stdin >"$tmp/self1.flat"
  grep -qF "exit exec'd $prog in thread $pid (followed:" "$tmp/self1.flat" &&
    grep -qF "t_exec.c:$keep" "$tmp/self1.flat" ||
    { no "self: the first program's trace ($first)"; "$rep" "$first" >&2; }
fi
exit $fail
