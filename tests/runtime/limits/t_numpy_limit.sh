#!/bin/sh
# SPDX-License-Identifier: MIT
# t_numpy_limit: limits inside an unmodified numpy/OpenBLAS program. (1) Under NDMEM_MAX_BYTES a
# numpy job that keeps allocating gets NumPy's own MemoryError at the limit (the allocation failed
# with ENOMEM; the interpreter handled it and the job exits normally), with ndmem's one-line
# message and the allocation sites, the top one at the script's line (grow.py:N); the limits set
# from Python (tools/python/ndmem.py) read back.
# (2) With every limit set far above use, the training loop prints the same losses, bit for bit.
# Skips (77) when no interpreter has numpy.
# usage: t_numpy_limit.sh LIBNDMEM TRAIN_PY FIND_PYTHON NDMEM_PY_DIR
set -u
lib=$1 train=$2
py=$("$3") || exit 77
pydir=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=2
fail=0
cat >"$tmp/grow.py" <<'PY'
import numpy as np
import ndmem
kept = []
try:
    for i in range(400):
        kept.append(np.ones(2**20))   # 8 MiB each
except MemoryError as e:
    print("MemoryError after", len(kept), "arrays:", e)
l = ndmem.limits()
print("limits", l["max_bytes"], l["breaches_bytes"], l["failed"], l["on_limit"])
kept = []
print("set", ndmem.set_limit("max_bytes", "off"), ndmem.limits()["max_bytes"])
big = [np.ones(2**20) for _ in range(80)]
print("after lifting the limit", len(big), "arrays")
PY
NDMEM_SUMMARY=0 NDMEM_MAX_BYTES=768m PYTHONPATH=$pydir LD_PRELOAD=$lib "$py" "$tmp/grow.py" >"$tmp/out" 2>"$tmp/err" ||
  { echo "the numpy job did not exit normally" >&2; cat "$tmp/out" "$tmp/err" >&2; fail=1; }
cat "$tmp/out"
grep -q '^MemoryError after [0-9]* arrays: Unable to allocate 8.00 MiB for an array' "$tmp/out" ||
  { echo "no MemoryError from numpy" >&2; fail=1; }
grep -q '^limits 805306368 1 1 fail$' "$tmp/out" || { echo "ndmem.limits() does not read back" >&2; fail=1; }
grep -q '^set True 0$' "$tmp/out" && grep -q '^after lifting the limit 80 arrays$' "$tmp/out" ||
  { echo "ndmem.set_limit did not lift the limit" >&2; fail=1; }
grep -q "^ndmem: Can't allocate \[HOST\] memory: 8.00 MiB requested; tracked [0-9.]* MiB + 8.00 MiB > maxBytes 768.00 MiB after relief gave back [^;]*; thread [0-9]* (NDMEM_ON_LIMIT=fail; breach 1, next logged: 2)$" "$tmp/err" ||
  { echo "no limit message" >&2; cat "$tmp/err" >&2; fail=1; }
grep -q '^ndmem:   #1 [0-9.]* MiB in [0-9]* blocks \[stack [0-9]*\] _multiarray_umath' "$tmp/err" ||
  { echo "the top site is not numpy's array allocation" >&2; cat "$tmp/err" >&2; fail=1; }
# ... at the script's line (np.ones is numpy's Python: its line, then the one that called it)
l=$(grep -n 'kept.append(np.ones' "$tmp/grow.py" | cut -d: -f1)
grep -Eq "^ndmem:   #1 .*; Python: (ones \(numeric\.py:[0-9]+\) <- )?<module> \(grow\.py:$l\)\$" "$tmp/err" ||
  { echo "the top site does not name grow.py:$l" >&2; cat "$tmp/err" >&2; fail=1; }

args="--steps 40 --log-every 10"
"$py" "$train" $args >"$tmp/plain" 2>/dev/null || { echo "plain run failed" >&2; exit 1; }
NDMEM_SUMMARY=0 NDMEM_MAX_BYTES=1t NDMEM_MAX_PHYSICAL_BYTES=1t NDMEM_WARN_AT=512g LD_PRELOAD=$lib \
  "$py" "$train" $args >"$tmp/lim" 2>"$tmp/lerr" || { echo "run with limits failed" >&2; cat "$tmp/lerr" >&2; fail=1; }
cmp -s "$tmp/plain" "$tmp/lim" || { echo "losses differ with limits set" >&2; diff "$tmp/plain" "$tmp/lim" >&2; fail=1; }
echo "$(tail -n 1 "$tmp/lim") with limits set, $py"
exit $fail
