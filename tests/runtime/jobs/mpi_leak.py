# SPDX-License-Identifier: MIT
# One rank of an MPI-launched numpy job (t_mpi_merge.sh), with no MPI library: the rank is read
# from the launcher's environment as a job without mpi4py reads it. Every rank runs the same
# matrix loop; rank 1 also keeps a 256 KiB array per step in a list (the line marked LEAK), 20
# steps: 5 MiB (5242880 B) that it never frees, not even at interpreter shutdown (an extra
# reference, as a C extension's leak holds one). Prints "rank R pid P kept BYTES".
import ctypes
import os

import numpy as np

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
w = np.random.default_rng(rank).standard_normal((256, 256))
kept = []


def train_step(step):
    x = np.random.default_rng(step).standard_normal((256, 256))
    y = np.tanh(x @ w)
    if rank == 1:
        kept.append(np.ones(32768))  # LEAK: 256 KiB a step, kept
    return float(y.sum())


loss = sum(train_step(step) for step in range(20))
ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))  # never freed, not even at shutdown
print("rank", rank, "pid", os.getpid(), "kept", sum(a.nbytes for a in kept), flush=True)
