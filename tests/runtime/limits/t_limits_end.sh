#!/bin/sh
# SPDX-License-Identifier: MIT
# t_limits_end: limits end real jobs the way they promise, within seconds, never hanging.
#  numpy_touched  `ndmem run --max-bytes=100m` on numpy asking for 256 MiB: OpenBLAS's buffer
#                 mappings (reserved, never touched) do not count, numpy's own MemoryError ends
#                 the job with its traceback (exit 1)
#  numpy_whole    the same with mappings counted whole: OpenBLAS's thread retries its refused
#                 buffer for ever while the exiting main thread waits to join it; ndmem stops the
#                 retry loop (exit 134), naming blas_memory_alloc, the trace saying why
#  numpy_gemm     numpy fills memory up to --max-bytes=60m, then multiplies matrices with
#                 OpenBLAS's threads: gemm_driver's job array is admitted over the limit (it
#                 was refused, and OpenBLAS printed "malloc failed in gemm_driver" and called
#                 exit(1): no traceback); the job ends with numpy's MemoryError (exit 1)
#  torch_physical a PyTorch loop with DataLoader workers over maxPhysicalBytes: Python's
#                 traceback (RuntimeError or MemoryError) and exit 1, never SIGABRT (the refused
#                 operator new used to reach abort())
#  torch_import   `import torch` under --max-bytes=200m, well above what it uses: it works;
#                 with mappings counted whole it fails (OpenBLAS reserves more than the limit)
# Each run has 120 s (each takes a few); a run that needs them is a hang. The numpy parts skip
# (said) without numpy, the torch parts without torch; all of them, 77.
# usage: t_limits_end.sh NDMEM_TOOL NDMEMREPORT FIND_PYTHON TORCH_LIMIT_PY GEMM_LIMIT_PY
set -u
tool=$1 report=$2 find_python=$3 torch_py=$4 gemm_py=$5
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0 ran=0
no() { echo "FAIL: $*" >&2; fail=1; }
export OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=1

# job NAME WANT_RC ndmem-options... -- command...: `ndmem run` under a 120 s timeout
job() {
  name=$1 want=$2
  shift 2
  start=$(date +%s)
  timeout -k 5 120 "$tool" run --output="$tmp/$name.%p.trace" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  echo "$name: exit status $rc after $(($(date +%s) - start)) s"
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && { no "$name: hung (killed after 120 s)"; tail -20 "$tmp/$name.err" >&2; return 1; }
  [ $rc -eq "$want" ] || { no "$name: exit status $rc, want $want"; tail -30 "$tmp/$name.err" >&2; return 1; }
  ran=$((ran + 1))
}
has() { grep -q -- "$2" "$tmp/$1.err" || { no "$1: no line matching: $2"; tail -30 "$tmp/$1.err" >&2; }; }
hasnt() { grep -q -- "$2" "$tmp/$1.err" && no "$1: a line matching: $2"; }

if py=$("$find_python" 2>/dev/null); then
  code='import numpy as np; np.ones(2**25)'
  if job numpy_touched 1 --max-bytes=100m -- "$py" -c "$code"; then
    has numpy_touched "^ndmem: Can't allocate \[HOST\] memory: 256.00 MiB requested; tracked [0-9.]* [KM]*i*B + 256.00 MiB > maxBytes 100.00 MiB after relief gave back [^;]*; "
    has numpy_touched "Unable to allocate 256. MiB for an array with shape (33554432,)"
    has numpy_touched "^ndmem\[[0-9]*\]: limits: maxBytes 100.00 MiB (peak tracked [0-9.]* [KM]*i*B; untouched mappings not counted [0-9.]* MiB), "
  fi
  if job numpy_gemm 1 --no-report --max-bytes=60m -- "$py" "$gemm_py"; then
    has numpy_gemm '^Traceback (most recent call last):$'
    grep -v '^ndmem\|^$' "$tmp/numpy_gemm.err" | tail -1 | grep -q 'MemoryError' ||
      no "numpy_gemm: the last line is not numpy's MemoryError: $(tail -1 "$tmp/numpy_gemm.err")"
    hasnt numpy_gemm 'malloc failed'
    has numpy_gemm '^ndmem\[[0-9]*\]: limits: maxBytes 60.00 MiB .*; admitted [0-9]* requests\? over maxBytes ([0-9.]* [KM]iB; at most [0-9.]* [KM]iB past it, slack 64.00 MiB), most from [^ ]*libopenblas.so.0'
  fi
  if job numpy_whole 134 --max-bytes=100m --max-bytes-mappings=whole -- "$py" -c "$code"; then
    has numpy_whole "^ndmem: thread [0-9]* was refused the same requests [0-9]* times in a row over 2.[0-9]* s (the last: m[a-z]* of 128.00 MiB; maxBytes 100.00 MiB): the program cannot take the failure NDMEM_ON_LIMIT=fail gives it (NDMEM_LIMIT_RETRY_MS=2000)$"
    # the site, or (seen twice in runs of the suite two at a time, not alone: no site could be
    # had for the request then) the calling frame in OpenBLAS
    has numpy_whole "^ndmem:   requested at \(\[stack [0-9]*\] .*blas_memory_alloc\|libopenblas\.so\.0+0x\)"
    has numpy_whole "^ndmem: stopping the process (a retry loop under NDMEM_ON_LIMIT=fail): the trace and summary are written, then SIGABRT$"
    has numpy_whole "^  exit        stopped on a retry loop under NDMEM_ON_LIMIT=fail"
  fi
else
  echo "numpy parts skipped: $("$find_python" 2>&1)"
fi

tpy=""
for cand in ${NDMEM_TEST_PYTHON:-} /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
  [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import torch' >/dev/null 2>&1 && { tpy=$cand; break; }
done
if [ -n "$tpy" ]; then
  if job torch_physical 1 --no-report --max-physical-bytes=600m -- "$tpy" "$torch_py"; then
    has torch_physical "^ndmem: Can't allocate \[HOST\] memory: [0-9.]* [KM]*i*B requested; physical [0-9.]* MiB > maxPhysicalBytes 600.00 MiB after relief gave back [^;]*; "
    has torch_physical '^Traceback (most recent call last):$'
    grep -v '^ndmem\|^$' "$tmp/torch_physical.err" | tail -1 | grep -Eq '^(RuntimeError|MemoryError|[A-Za-z.]*Error)' ||
      no "torch_physical: the last line is not Python's exception: $(tail -1 "$tmp/torch_physical.err")"
    grep -q '^epoch 0$' "$tmp/torch_physical.out" || no "torch_physical: no epoch ran"
    hasnt torch_physical 'Aborted'
  fi
  code='import torch; print("ok", torch.ones(3).sum().item())'
  if job torch_import 0 --no-report --max-bytes=200m -- "$tpy" -c "$code"; then
    grep -qx 'ok 3.0' "$tmp/torch_import.out" || no "torch_import: stdout '$(cat "$tmp/torch_import.out")'"
    # the limit is well above what the import used (97 MiB here; up to 135 MiB when a workspace
    # arena was mapped meanwhile): its peak is at most three quarters of it
    peak=$(sed -n 's/^ndmem\[[0-9]*\]: limits: maxBytes 200.00 MiB (peak tracked \([0-9.]*\) MiB.*/\1/p' "$tmp/torch_import.err")
    echo "torch_import: peak tracked ${peak:-?} MiB under maxBytes 200 MiB"
    awk -v p="${peak:-999}" 'BEGIN { exit !(p <= 150) }' ||
      no "torch_import: peak tracked ${peak:-?} MiB is not well under the limit"
  fi
  job torch_import_whole 1 --no-report --max-bytes=200m --max-bytes-mappings=whole -- "$tpy" -c "$code" &&
    has torch_import_whole 'MemoryError'
else
  echo "torch parts skipped: no Python interpreter imports torch (Debian: apt-get install python3-torch)"
fi
[ $ran -gt 0 ] || exit 77
exit $fail
