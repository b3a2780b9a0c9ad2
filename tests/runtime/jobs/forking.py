# SPDX-License-Identifier: MIT
# A Python workload that forks and threads: process pools started by fork, spawn and forkserver,
# a fork Process (ends with os._exit), and a thread pool, all doing numpy work. Prints
# deterministic results.
import concurrent.futures as cf
import multiprocessing as mp

import numpy as np


def work(i):
    a = np.random.default_rng(i).standard_normal((200, 200))
    return float((a @ a.T).trace())


if __name__ == "__main__":
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(2) as pool:
            print(method, repr(sum(pool.map(work, range(6)))))
    # A fork worker that ends as multiprocessing ends them, with os._exit: it leaves a trace.
    p = mp.get_context("fork").Process(target=work, args=(3,))
    p.start()
    p.join()
    print("fork process exit code", p.exitcode)
    with cf.ThreadPoolExecutor(8) as ex:
        print("threads", repr(sum(ex.map(work, range(24)))))
