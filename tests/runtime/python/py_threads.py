# SPDX-License-Identifier: MIT
# py_threads: a Python thread copying arrays at a known line (LINE_THREAD) while the main thread
# multiplies large matrices (LINE_MATMUL) on OpenBLAS's worker threads (run with
# OPENBLAS_NUM_THREADS=2), for t_py_frames.py: each thread's allocations must carry its own
# Python frames, OpenBLAS's threads none. Prints results that must not change under the shim.
import sys
import threading

import numpy as np

CHUNKS = 50


def worker(out):
    base = np.arange(2048, dtype=np.float64)  # 16 KiB per copy
    for i in range(CHUNKS):
        out.append(base.copy())  # LINE_THREAD
        base[i] += 1.0


def main():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((384, 384))
    y = rng.standard_normal((384, 384))
    chunks = []
    t = threading.Thread(target=worker, args=(chunks,))
    t.start()
    acc = 0.0
    for i in range(20):
        c = x @ y  # LINE_MATMUL
        acc += float(c[i, i])
    t.join()
    print("matmul n=20 bytes=%d sum %r" % (c.nbytes, acc))
    print("chunks n=%d bytes=%d sum %r" % (len(chunks), chunks[0].nbytes,
                                           float(sum(float(ch.sum()) for ch in chunks))))
    sys.stdout.flush()


main()
