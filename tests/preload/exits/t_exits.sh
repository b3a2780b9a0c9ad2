#!/bin/sh
# SPDX-License-Identifier: MIT
# t_exits: every end leaves a trace (a crash, abort, _exit, SIGTERM, SIGKILL before the first
# flush, a fork child's _exit), each ending as it would without ndmem (same status, same signal);
# and ndmem stays invisible: dispositions read back as set, no descriptor in the program's range,
# nothing in a child's stderr nor in its working directory, the summary on a fresh line, and
# RANK/host kept out of the trace path's folders.
# usage: t_exits.sh LIBNDMEM T_EXITS NDMEMREPORT SOURCE NDMEM_TOOL
set -u
abs() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
lib=$(abs "$1") prog=$(abs "$2") rep=$(abs "$3") src=$4 tool=$(abs "$5")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }
keep=$(grep -n 'KEEP_LINE' "$src" | tail -n 1 | cut -d: -f1)
child=$(grep -n 'CHILD_LINE' "$src" | tail -n 1 | cut -d: -f1)
base=$(basename "$src")

# run MODE WANT_STATUS: runs the program in $tmp/MODE/, its trace there; sets $pid and $trace
run() {
  mkdir -p "$tmp/$1"
  (cd "$tmp/$1" && NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/$1/t.%p.trace" LD_PRELOAD=$lib "$prog" "$1" \
    >out 2>err)
  st=$?
  [ "$st" -eq "$2" ] || no "$1: exit status $st, want $2 (as without ndmem)"
  pid=$(sed -n 's/^pid //p' "$tmp/$1/out")
  trace="$tmp/$1/t.$pid.trace"
  [ -s "$trace" ] || { no "$1: no trace"; return 1; }
  "$rep" "$trace" >"$tmp/$1/report" 2>&1
  return 0
}
has() { grep -qF -- "$2" "$tmp/$1/report" || { no "$1: report lacks '$2'"; sed -n 1,40p "$tmp/$1/report" >&2; }; }

# A crash, abort() and kill's SIGTERM: the final trace is written, the signal ends the process.
for m in "segv 139 11 SIGSEGV" "abort 134 6 SIGABRT"; do
  set -- $m
  if run "$1" "$2"; then
    has "$1" "ended by signal $3 ($4)"
    has "$1" "live 292.97 KiB (300000 B)"
    has "$1" "$base:$keep)"
    has "$1" "leaks       none reported (the process did not end on its own)"
  fi
done
if run _exit 3; then
  has _exit "_exit(3) in thread $pid"
  # classed by the scan at _exit: the static array holds them
  has _exit "== still reachable: 292.97 KiB (300000 B) in 3 blocks from 1 stack"
  has _exit "$base:$keep)"
fi

# Killed from outside: SIGTERM is caught and re-raised; SIGKILL cannot be, but the trace made at
# start-up is there (before the first flush) and reads as cut short.
for m in "TERM 143 15" "KILL 137 9"; do
  set -- $m
  d="$tmp/kill$1"
  mkdir -p "$d"
  (cd "$d" && exec env NDMEM_SUMMARY=0 NDMEM_OUTPUT="$d/t.%p.trace" LD_PRELOAD="$lib" "$prog" sleep >out 2>err) &
  i=0
  until grep -q pid "$d/out" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 200 ] || break
    sleep 0.02
  done
  pid=$(sed -n 's/^pid //p' "$d/out")
  kill -"$1" "$pid"
  wait $!
  st=$?
  [ "$st" -eq "$2" ] || no "kill -$1: status $st, want $2"
  [ -s "$d/t.$pid.trace" ] || { no "kill -$1: no trace"; continue; }
  "$rep" "$d/t.$pid.trace" >"$d/report" 2>&1
  if [ "$1" = TERM ]; then
    grep -qF "ended by signal 15 (SIGTERM)" "$d/report" && grep -qF "live 292.97 KiB (300000 B)" "$d/report" ||
      { no "kill -TERM: report"; cat "$d/report" >&2; }
  else
    grep -qF "NOT normal" "$d/report" || { no "kill -KILL: report"; cat "$d/report" >&2; }
  fi
done

# A fork child that ends with _exit (as Python's multiprocessing workers do): its own trace.
mkdir -p "$tmp/fork"
(cd "$tmp/fork" && NDMEM_OUTPUT="$tmp/fork/t.%p.trace" LD_PRELOAD=$lib "$prog" forkexit >out 2>err) ||
  no "forkexit failed"
n=$(ls "$tmp/fork"/t.*.trace 2>/dev/null | wc -l)
[ "$n" -eq 2 ] || no "forkexit: $n traces, want 2 (parent and child)"
[ "$(grep -c '^ndmem\[[0-9]*\]: heap:' "$tmp/fork/err")" -eq 1 ] ||
  { no "forkexit: want one summary (the parent's; the child prints none)"; cat "$tmp/fork/err" >&2; }
for t in "$tmp/fork"/t.*.trace; do
  "$rep" "$t" >"$t.report" 2>&1
  if grep -q '_exit(4)' "$t.report"; then
    grep -qF "195.31 KiB (200000 B) in 1 block" "$t.report" && grep -qF "$base:$child)" "$t.report" ||
      { no "forkexit child report"; cat "$t.report" >&2; }
  fi
done
grep -lq '_exit(4)' "$tmp/fork"/*.report || no "forkexit: no trace says _exit(4)"

# Invisible: dispositions, descriptors (with the defaults, and with nothing that needs one)
LD_PRELOAD=$lib NDMEM_OUTPUT="$tmp/v.%p.trace" "$prog" sigview 2>"$tmp/err" || { no "sigview"; cat "$tmp/err" >&2; }
"$prog" sigview || no "sigview fails without ndmem: the test is wrong"
# (where the hard limit leaves no room above the soft one, ndmem's descriptors lie in the top
# slots below it, the limit the program reads its own: those slots are not the program's range)
soft=$(ulimit -Sn) hard=$(ulimit -Hn)
reserve() {
  if [ "$soft" = "$hard" ] && [ "$soft" != unlimited ]; then
    sed 's/ below.*//' | tr ' ' '\n' | awk -v lo=$((soft - 64)) 'NF && $1 < lo' | tr '\n' ' ' | sed 's/ $//'
  else
    sed 's/ below.*//'
  fi
}
plain=$("$prog" fds | reserve)
shim=$(LD_PRELOAD=$lib NDMEM_OUTPUT="$tmp/f.%p.trace" "$prog" fds 2>/dev/null | reserve)
[ "$shim" = "$plain" ] || no "descriptors in the program's range: '$shim' under ndmem, '$plain' without"
shim=$(LD_PRELOAD=$lib NDMEM_TRACE=0 NDMEM_SUMMARY=0 "$prog" fds | reserve)
[ "$shim" = "$plain" ] || no "NDMEM_TRACE=0 NDMEM_SUMMARY=0: descriptors '$shim', without ndmem '$plain'"
# a child under ndmem finds the reserve above its (inherited) limit: nothing in its range either
shim=$(LD_PRELOAD=$lib NDMEM_OUTPUT="$tmp/f.%p.trace" sh -c '"$1" fds' sh "$prog" 2>/dev/null | reserve)
[ "$shim" = "$plain" ] || no "exec'd child: descriptors '$shim', without ndmem '$plain'"

# A child of a traced process: its stderr is its own, its trace goes beside its parent's.
mkdir -p "$tmp/parent" "$tmp/childcwd"
(cd "$tmp/parent" && LD_PRELOAD=$lib "$prog" spawn "$tmp/childcwd" 2>"$tmp/err") || { no "spawn"; cat "$tmp/err" >&2; }
[ -z "$(ls -A "$tmp/childcwd")" ] || no "the child left files in its working directory: $(ls -A "$tmp/childcwd")"
n=$(ls "$tmp/parent"/ndmem.*.trace 2>/dev/null | wc -l)
[ "$n" -eq 2 ] || no "spawn: $n traces beside the parent's, want 2"
# ... also when the parent has moved to another folder since it started (as regrtest does)
mkdir -p "$tmp/parent2" "$tmp/elsewhere"
(cd "$tmp/parent2" && LD_PRELOAD=$lib "$prog" spawn "$tmp/childcwd" "$tmp/elsewhere" 2>"$tmp/err") ||
  { no "spawn after chdir"; cat "$tmp/err" >&2; }
left=$(find "$tmp/childcwd" "$tmp/elsewhere" -mindepth 1)
[ -z "$left" ] || no "files beside neither trace: $left"
n=$(ls "$tmp/parent2"/ndmem.*.trace 2>/dev/null | wc -l)
[ "$n" -eq 2 ] || no "spawn after chdir: $n traces beside the parent's, want 2"
# ... and where no room is left above the soft descriptor limit (the parent then keeps no
# descriptor on its trace between flushes: its child finds it by the mapping that names it)
mkdir -p "$tmp/parent3" "$tmp/elsewhere3"
if sh -c 'ulimit -n 20000' 2>/dev/null; then
  # (no PWD to fall back on: the parent's own folder by then is elsewhere3)
  (cd "$tmp/parent3" && LD_PRELOAD=$lib sh -c 'ulimit -n 20000 && PWD=/nonexistent exec "$@"' sh "$prog" spawn \
    "$tmp/childcwd" "$tmp/elsewhere3" 2>"$tmp/err") || { no "spawn, no room"; cat "$tmp/err" >&2; }
  left=$(find "$tmp/childcwd" "$tmp/elsewhere3" -mindepth 1)
  [ -z "$left" ] || no "no room: files beside neither trace: $left"
  n=$(ls "$tmp/parent3"/ndmem.*.trace 2>/dev/null | wc -l)
  [ "$n" -eq 2 ] || no "spawn, no room: $n traces beside the parent's, want 2"
fi

# The summary of the process the user started begins on a fresh line.
LD_PRELOAD=$lib NDMEM_OUTPUT="$tmp/n.%p.trace" "$prog" noeol 2>"$tmp/noeol"
[ "$(head -n 1 "$tmp/noeol")" = strawberry ] && sed -n 2p "$tmp/noeol" | grep -q '^ndmem\[[0-9]*\]: peak RSS ' ||
  { no "summary not on a fresh line"; cat "$tmp/noeol" >&2; }

# %r is the rank's digits (a value that is not a rank is unknown: 0) and %h one file-name-safe
# component: RANK=../trav stays in the folder
mkdir -p "$tmp/safe"
RANK=../trav NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/safe/%r.trace" LD_PRELOAD=$lib "$prog" fds >/dev/null ||
  no "RANK=../trav run"
[ -s "$tmp/safe/0.trace" ] && [ ! -e "$tmp/trav.trace" ] || no "RANK=../trav: $(ls -A "$tmp" "$tmp/safe")"
rm -f "$tmp/safe"/*
RANK=.. NDMEM_OUTPUT="$tmp/safe/%r" "$tool" run --no-summary -- "$prog" fds 2>"$tmp/err" >/dev/null ||
  no "ndmem run with RANK=.."
[ -s "$tmp/safe/0" ] && grep -qF "ndmem: trace $tmp/safe/0" "$tmp/err" ||
  { no "ndmem run: RANK=.. trace"; ls -A "$tmp/safe" >&2; cat "$tmp/err" >&2; }
exit $fail
