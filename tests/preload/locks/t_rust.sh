#!/bin/sh
# SPDX-License-Identifier: MIT
# t_rust.sh NDMEM SRCDIR: a Rust program that spawns threads, under ndmem with every block tracked
# and the leak verdict, where rustc is installed (skip otherwise). Rust's standard library calls
# pthread_getattr_np on each thread as it starts: it hung for ever before ndmem read thread stacks
# at their start. It must end within the watchdog with its own output and no leak found (what
# glibc and Rust's runtime keep is reachable).
set -u
ndmem=$1 src=$2
command -v rustc >/dev/null 2>&1 || { echo "no rustc: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
rustc -O -o "$dir/threads" "$src/threads.rs" || { echo "rustc failed"; exit 1; }
fail=0
for replay in 1 0; do
  NDMEM_REPLAY=$replay timeout -s KILL 60 "$ndmem" run --fail-on-leak \
    --output="$dir/r.%p.trace" -- "$dir/threads" >"$dir/out" 2>"$dir/err"
  rc=$?
  if [ $rc -ne 0 ] || [ "$(cat "$dir/out")" != "total 29999700000" ]; then
    echo "FAIL (replay $replay): status $rc (137: hung), output '$(cat "$dir/out")'"
    tail -8 "$dir/err"; fail=1
  fi
  rm -f "$dir"/r.*.trace
done
[ $fail -eq 0 ] && echo "ok: the threads ended and nothing was lost, replay on and off"
exit $fail
