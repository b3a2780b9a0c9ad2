#!/bin/sh
# SPDX-License-Identifier: MIT
# t_py_growing: a numpy program whose list of arrays keeps growing is named on stderr while it
# runs, at its Python line: the growth line ends with the line that appends (step, grow_list.py:N,
# after numpy's own np.ones where that is Python), never with a raw frame marker. Skips (77) when
# no interpreter has numpy.
# usage: t_py_growing.sh LIBNDMEM FIND_PYTHON
set -u
lib=$1
py=$("$2") || exit 77
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
fail=0
cat >"$tmp/grow_list.py" <<'PY'
import time
import numpy as np

def step(kept, i):
    t = np.full(2**15, float(i)) * 2.0  # temporaries, freed each step
    kept.append(np.ones(2**17))          # 1 MiB kept each step
    return float(t.sum())

kept = []
for i in range(80):
    step(kept, i)
    time.sleep(0.01)
print("kept", len(kept), "arrays")
PY
NDMEM_SUMMARY=0 NDMEM_FLUSH_MS=20 NDMEM_GROWTH_CYCLES=3 NDMEM_OUTPUT="$tmp/t.%p.trace" \
  LD_PRELOAD=$lib "$py" "$tmp/grow_list.py" >"$tmp/out" 2>"$tmp/err" ||
  { echo "the program failed" >&2; cat "$tmp/err" >&2; exit 1; }
cat "$tmp/out"
grep -qx 'kept 80 arrays' "$tmp/out" || { echo "the program did not run to its end" >&2; fail=1; }
l=$(grep -n 'kept.append(np.ones' "$tmp/grow_list.py" | cut -d: -f1)
grep -Eq "^ndmem: growing: heap site \[stack [0-9]+\] holds [0-9.]+ MiB at its lowest, \+.*: _multiarray_umath[^ ]*\+0x[0-9a-f]+ .*; Python: (ones \(numeric\.py:[0-9]+\) <- )?step \(grow_list\.py:$l\)\$" "$tmp/err" ||
  { echo "no growth line naming grow_list.py:$l" >&2; cat "$tmp/err" >&2; fail=1; }
grep -q '^ndmem: .*0x8000' "$tmp/err" && { echo "a raw frame marker on stderr" >&2; fail=1; }
exit $fail
