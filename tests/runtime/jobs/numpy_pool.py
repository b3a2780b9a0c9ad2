# SPDX-License-Identifier: MIT
"""numpy matmuls (256 x 256 float64, 512 KiB each) in a 4-thread pool: a correct program.

Every task multiplies two matrices; even tasks hand the product to the main thread (which
hashes it and drops it), odd ones reduce it in the worker. Each worker's allocations repeat, so
ndmem finds cycles on its own; a product handed to the main thread lives on past the cycle the
worker started: ndmem's misprediction, not a leaked workspace pointer. Prints one digest of all
results, which must not depend on ndmem.
usage: numpy_pool.py [TASKS]
"""
import concurrent.futures
import hashlib
import sys

import numpy as np

N = 256
TASKS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
A = np.arange(N * N, dtype=np.float64).reshape(N, N) / (N * N)
B = [np.full((N, N), 1.0 / (k + 1)) + np.eye(N) * k for k in range(8)]


def task(i):
    c = A @ B[i % 8]
    return c if i % 2 == 0 else float(c.sum())


def digest(r):
    return hashlib.sha256(np.asarray(r).tobytes()).hexdigest()


with concurrent.futures.ThreadPoolExecutor(4) as ex:
    out = [digest(r) for r in ex.map(task, range(TASKS))]
print("tasks %d, digest %s" % (TASKS, hashlib.sha256("".join(out).encode()).hexdigest()))
