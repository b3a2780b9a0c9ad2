#!/bin/sh
# SPDX-License-Identifier: MIT
# t_jvm.sh NDMEM NDMEMREPORT SRCDIR: a JVM under ndmem with every block tracked (the leak verdict's
# mode), where a JDK is installed (skip otherwise): `java -version`, javac compiling a program,
# and the program (threads, direct buffers). Each JVM thread calls pthread_getattr_np, whose
# realloc the hook tracks: every one of these hung for ever before ndmem read thread stacks at
# their start. Each must end within the watchdog with the JVM's own output, and its trace be
# complete. Hello World's leak verdict passes: nothing lost but the JVM's own (its threads ended
# at shutdown, its heap committed inside its reservation, its class-data archive's pointers: the
# launcher's and HotSpot's one-time state are built-in suppressions).
set -u
ndmem=$1 report=$2 src=$3
command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || { echo "no JDK: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
# run NAME CMD...: under the watchdog, every block tracked; its status in $dir/NAME.rc
run() {
  name=$1; shift
  timeout -s KILL 120 "$ndmem" run --fail-on-leak --output="$dir/$name.%p.trace" -- "$@" \
    >"$dir/$name.out" 2>"$dir/$name.err"
  rc=$?
  echo $rc >"$dir/$name.rc"
  if [ $rc -eq 137 ]; then echo "FAIL: $name hung (120 s)"; fail=1; return 1; fi
  # 0: no leak; 1: the verdict found one (the run ended and was judged). Anything else is not a verdict.
  if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
    echo "FAIL: $name: status $rc"; tail -5 "$dir/$name.err"; fail=1; return 1
  fi
  t=$(ls "$dir/$name".*.trace | head -1)
  if ! "$report" --brief "$t" 2>/dev/null | grep -q 'exit *normal (END record)'; then
    echo "FAIL: $name: its trace is not complete"; "$report" --brief "$t" | head -8; fail=1
  fi
}
run version java -version && grep -q 'version "' "$dir/version.err" ||
  { echo "FAIL: java -version printed no version"; fail=1; }
run javac javac -d "$dir/classes" "$src/Threads.java" && [ -f "$dir/classes/Threads.class" ] ||
  { echo "FAIL: javac made no class"; fail=1; }
run hello_javac javac -d "$dir/classes" "$src/Hello.java" && run hello java -cp "$dir/classes" Hello
if [ "$(cat "$dir/hello.out")" != "Hello" ] || [ "$(cat "$dir/hello.rc")" != 0 ]; then
  echo "FAIL: Hello: printed '$(cat "$dir/hello.out")', verdict $(cat "$dir/hello.rc") (want Hello, 0)"
  sed -n '/^  leaks/,/^  growth/p' "$dir/hello.err"; "$report" --top 3 "$dir"/hello.*.trace | sed -n '/== definitely/,/== possibly/p'
  fail=1
fi
run threads java -cp "$dir/classes" Threads
[ "$(cat "$dir/threads.out")" = "sum -2097152" ] ||
  { echo "FAIL: the program printed '$(cat "$dir/threads.out")', want 'sum -2097152'"; fail=1; }
[ $fail -eq 0 ] && echo "ok: java -version, javac and a threaded program ended under every-block tracking; Hello World's verdict passed"
exit $fail
