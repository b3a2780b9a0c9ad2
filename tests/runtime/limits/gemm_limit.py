# SPDX-License-Identifier: MIT
# gemm_limit: numpy fills memory up to a limit (arrays of 4 KiB until its own MemoryError), gives
# 64 KiB back, then multiplies 512x512 matrices into a preallocated array. OpenBLAS's threaded
# gemm_driver mallocs its job array (about 512 KiB) without a way to report a failure: refused,
# OpenBLAS prints "malloc failed in gemm_driver" and calls exit(1). Under ndmem that request is
# admitted over the limit; the job ends when a request of numpy's or CPython's meets the limit
# (MemoryError, a traceback), or completes.
import numpy as np

a = np.ones((512, 512), np.float32) / 512
b = np.empty_like(a)
held = []
try:
    while True:
        held.append(np.ones(1 << 12, np.uint8))
except MemoryError:
    pass
del held[-16:]
for i in range(20):
    np.matmul(a, a, out=b)
print("done", float(b[0, 0]))
