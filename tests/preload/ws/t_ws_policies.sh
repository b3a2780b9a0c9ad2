#!/bin/sh
# SPDX-License-Identifier: MIT
# t_ws_policies: the NDMEM_WS_* policies do what docs/workspaces.md says, on one program (t_ws policy:
# marked cycles, shapes doubling at cycle 20, one unplanned 3 MiB tensor in cycle 30), and the
# results stay right under every one of them (the program checks each tensor's pattern).
# usage: t_ws_policies.sh LIBNDMEM T_WS
set -u
lib=$1 prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
run() { # run NAME [fixed] ENV... : the stats line of t_ws policy under ENV
  name=$1; shift
  shapes=changing
  [ "${1:-}" = fixed ] && { shapes=fixed; shift; }
  env "$@" NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/t.%p.trace" LD_PRELOAD="$lib" "$prog" policy $shapes \
    >"$tmp/$name.out" 2>"$tmp/$name.err" || { echo "$name: program failed" >&2; cat "$tmp/$name.err" >&2; fail=1; }
}
get() { sed -n "s/.*\<$2=\([0-9]*\).*/\1/p" "$tmp/$1.out" | head -n 1; }
want() { # want NAME KEY OP VALUE
  v=$(get "$1" "$2")
  [ -n "$v" ] && [ "$v" "$3" "$4" ] || { echo "$1: $2=$v, want $3 $4" >&2; cat "$tmp/$1.out" >&2; fail=1; }
}

run default
want default errors -eq 0
want default learned -eq 2          # the first cycle, and again after the shapes changed
want default relearns -eq 1
want default unplanned_null -eq 0   # external: the heap serves it
want default spills -ge 1
want default hits -ge $(( (40 - 3) * 12 - 1 ))

run strict NDMEM_WS_ALLOCATION=strict
want strict errors -eq 0
# strict: the arena is the plan rounded to pages; overallocate adds 30 %
s=$(get strict arena); d=$(get default arena)
[ "$d" -ge $((s * 13 / 10 - 4096)) ] && [ "$d" -le $((s * 13 / 10 + 8192)) ] ||
  { echo "overallocate arena $d is not 1.3 x strict $s" >&2; fail=1; }

run fail fixed NDMEM_WS_SPILL=fail # with the shapes fixed, only the unplanned tensor fails
want fail errors -eq 0
want fail unplanned_null -eq 1
want fail unplanned_enomem -eq 1
grep -q "^ndmem: Can't allocate memory: Workspace \[cycle\] is full: 3145728 B requested in cycle 30 " "$tmp/fail.err" ||
  { echo "fail: no 'Workspace is full' line" >&2; cat "$tmp/fail.err" >&2; fail=1; }

run realloc NDMEM_WS_SPILL=reallocate
want realloc errors -eq 0
want realloc unplanned_null -eq 0
want realloc learned -ge 3          # the cycle after the spill is learned again

run maxsize NDMEM_WS_MAX_SIZE=1m NDMEM_WS_ALLOCATION=strict
want maxsize errors -eq 0
want maxsize arena -le 1048576
want maxsize spills -ge 30          # what does not fit in 1 MiB is served by the heap

run overtime NDMEM_WS_LEARNING=over_time NDMEM_WS_CYCLES=4
want overtime errors -eq 0
want overtime learned -eq 8         # 4 cycles, twice
want overtime hits -ge $(( (40 - 9) * 12 - 1 )) # 4 + 4 learned, cycle 20 deviates

run mmapped NDMEM_WS_LOCATION=mmap NDMEM_WS_MMAP_DIR="$tmp"
want mmapped errors -eq 0
want mmapped file_arena -eq 1
want mmapped hits -ge $(( (40 - 3) * 12 - 1 ))
# a folder that cannot hold arena files: said once, and the arenas are anonymous memory (the
# workspaces work on; they once went off without a word)
run mmap_missing NDMEM_WS_LOCATION=mmap NDMEM_WS_MMAP_DIR=/nonexistent/ndmem
want mmap_missing errors -eq 0
want mmap_missing file_arena -eq 0
want mmap_missing hits -ge $(( (40 - 3) * 12 - 1 ))
n=$(grep -c "^ndmem: NDMEM_WS_MMAP_DIR='/nonexistent/ndmem': cannot make an arena file (No such file or directory); arenas use anonymous memory (NDMEM_WS_LOCATION=ram)$" "$tmp/mmap_missing.err")
[ "$n" -eq 1 ] || { echo "mmap_missing: $n fallback lines, want 1" >&2; cat "$tmp/mmap_missing.err" >&2; fail=1; }

# ND4J's unplanned modes: the reference model bump-allocates, ndmem proves each range free
run none fixed NDMEM_WS_LEARNING=none NDMEM_WS_INITIAL_SIZE=16m NDMEM_WS_ALLOCATION=strict
want none errors -eq 0
want none hits -eq $(( 40 * 12 + 1 ))   # every tensor, the unplanned one too, from cycle 1
want none arena -eq 16777216
run nonesmall fixed NDMEM_WS_LEARNING=none NDMEM_WS_INITIAL_SIZE=4m
want nonesmall errors -eq 0
want nonesmall spills -ge 40            # every cycle outgrows 4 MiB: the rest is spilled
run circular NDMEM_WS_RESET=endofbuffer
want circular errors -eq 0
want circular hits -ge 100

run off NDMEM_WORKSPACES=0
want off errors -eq 0
want off hits -eq 0
exit $fail
