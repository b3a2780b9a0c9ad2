#!/bin/sh
# SPDX-License-Identifier: MIT
# t_launch_stress: `ndmem run` in front of shells and exec chains, dozens of times, never hangs
# and always reports the program the chain ends in. Two kinds of launch, each in three modes
# (default; --exact, every block tracked; --sample=1k, many sampled blocks), ROUNDS times:
#   chain  a launcher like pyenv's shims: a bash script execs a bash libexec script that runs
#          command substitutions, LC_* assignments (setlocale) and an exec'd helper, then execs
#          t_locale, which sets its locale again and forks children that set theirs while the
#          writer thread runs; one process, three images, one trace: the last image's (the
#          earlier ones' files of the same pid are taken over, never "File exists").
#   shell  bash -c with a loop of command substitutions and LC_ALL assignments, a subshell and
#          a pipe.
# Each launch has 30 s; a launch that needs them is a hang (it took under a second here).
# usage: t_launch_stress.sh NDMEM_TOOL T_LOCALE [ROUNDS]
set -u
tool=$1 prog=$2 rounds=${3:-6}
command -v bash >/dev/null || { echo "bash not found; skipped" >&2; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

# The chain: bin/py3 (the shim) -> libexec/launch exec py3 ARGS -> versions/1.0/bin/py3 (t_locale)
mkdir -p "$tmp/bin" "$tmp/libexec" "$tmp/versions/1.0/bin" "$tmp/out"
cat >"$tmp/bin/py3" <<'EOF'
#!/usr/bin/env bash
set -e
[ -n "${SHIM_DEBUG:-}" ] && set -x
program="${0##*/}"
export SHIM_ROOT="${0%/*}/.."
exec "$SHIM_ROOT/libexec/launch" exec "$program" "$@"
EOF
cat >"$tmp/libexec/launch" <<'EOF'
#!/usr/bin/env bash
set -e
command="$1"
shift
case "$command" in exec) ;; *) echo "launch: unknown command $command" >&2; exit 1 ;; esac
program="$1"
shift
version="$(LC_ALL=C "$SHIM_ROOT/libexec/launch-version")"
for hook in a b c; do
  h="$(printf '%s' "$hook" | LC_ALL=C tr a-c A-C)"
  LC_ALL=C.UTF-8
  LC_ALL=C
done
unset LC_ALL
export PATH="$SHIM_ROOT/versions/$version/bin:$PATH"
exec "$SHIM_ROOT/versions/$version/bin/$program" "$@"
EOF
cat >"$tmp/libexec/launch-version" <<'EOF'
#!/usr/bin/env bash
v="$(cat "$SHIM_ROOT/version" 2>/dev/null || echo 1.0)"
echo "${v%%[[:space:]]*}"
EOF
chmod +x "$tmp/bin/py3" "$tmp/libexec/launch" "$tmp/libexec/launch-version"
ln -s "$(cd "$(dirname "$prog")" && pwd)/$(basename "$prog")" "$tmp/versions/1.0/bin/py3"

# launch NAME MODE -- CMD...: one `ndmem run`, its report included, under a 30 s timeout
launch() {
  name=$1 mode=$2
  shift 3
  set -- $mode --no-summary --output="$tmp/out/$name.%p.trace" -- "$@"
  timeout -k 5 30 "$tool" run "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    no "$name ($mode): hung (killed after 30 s)"
    cat "$tmp/$name.err" >&2
    return 1
  fi
  [ "$rc" -eq 0 ] || { no "$name ($mode): exit status $rc"; cat "$tmp/$name.err" >&2; return 1; }
  if grep -q 'cannot create trace\|no trace of this run' "$tmp/$name.err"; then
    no "$name ($mode): the run's trace was not written"
    cat "$tmp/$name.err" >&2
    return 1
  fi
  return 0
}

n=0
start=$(date +%s)
i=0
while [ "$i" -lt "$rounds" ]; do
  i=$((i + 1))
  for mode in --depth=32 --exact --sample=1k; do
    m=${mode#--}
    m=$(echo "$m" | tr -c 'a-z0-9\n' _)
    n=$((n + 1))
    if launch "chain$i$m" "$mode" -- "$tmp/bin/py3" 3; then
      [ "$(cat "$tmp/chain$i$m.out")" = "ok 3" ] || no "chain$i$m: stdout '$(cat "$tmp/chain$i$m.out")'"
      # the trace reported is the chain's last image's: t_locale's
      grep -q "^  process     pid [0-9]* on .*: .*/t_locale$" "$tmp/chain$i$m.err" ||
        { no "chain$i$m: the report is not t_locale's"; cat "$tmp/chain$i$m.err" >&2; }
    fi
    n=$((n + 1))
    if launch "shell$i$m" "$mode" -- bash -c 'for i in 1 2 3; do v=$(LC_ALL=C printf %s "$i");
        LC_ALL=C.UTF-8; LC_ALL=C; done; unset LC_ALL; (echo sub) | cat >/dev/null; echo "done $v"'; then
      [ "$(cat "$tmp/shell$i$m.out")" = "done 3" ] || no "shell$i$m: stdout '$(cat "$tmp/shell$i$m.out")'"
    fi
    [ "$fail" -eq 0 ] || break 2
  done
done
echo "$n launches in $(($(date +%s) - start)) s, $([ "$fail" -eq 0 ] && echo none || echo some) failed"
exit $fail
