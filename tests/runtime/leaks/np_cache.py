# SPDX-License-Identifier: MIT
"""A numpy loop of EPOCHS epochs of ITEMS steps that keeps 256 KiB arrays by MODE:

    cache      a dict keeps one array per item, made in the first epoch and reused after: it
               fills, then holds (a bounded cache)
    lru        the same dict, its entry replaced at every step once full (a bounded cache that
               turns over)
    list       a list keeps a copy at every step (a leak to the end)
    slowleak   a copy kept at every 8th step (a slow leak)
    epochleak  10 copies kept at the start of each epoch (a leak in bursts)

--marks marks every step as a cycle (ndmem.cycle(): the cycle clock is the step count, the
figures exact; without it ndmem finds the cycles itself, a few steps into the run). --exit ends
the program with os._exit, as a DataLoader worker ends, so that what it kept is live at exit.
usage: np_cache.py MODE [--epochs N] [--items N] [--marks] [--exit]
"""
import argparse
import contextlib
import os
import time

import numpy as np

try:
    import ndmem  # tools/python (on PYTHONPATH): no-ops without the shim
except ImportError:
    ndmem = None

ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["cache", "lru", "list", "slowleak", "epochleak"])
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--items", type=int, default=30)
ap.add_argument("--marks", action="store_true")
ap.add_argument("--exit", action="store_true")
args = ap.parse_args()

rng = np.random.default_rng(1)
w = rng.standard_normal((512, 512))
x = rng.standard_normal((64, 512))
cache, kept = {}, []
for step in range(args.epochs * args.items):
    with ndmem.cycle() if args.marks and ndmem else contextlib.nullcontext():
        h = np.tanh(x @ w)  # temporaries of 256 KiB, freed within the step
        g = (h * h) @ w.T
        x = x - 1e-3 * g
        k = step % args.items
        if args.mode == "cache" and k not in cache:
            cache[k] = h.copy()  # CACHE: 262144 per item, the first epoch only
        elif args.mode == "lru":
            cache[k] = h.copy()  # CACHE: the same, replaced once full
        elif (args.mode == "list" or (args.mode == "slowleak" and step % 8 == 0) or
              (args.mode == "epochleak" and k < 10)):
            kept.append(h.copy())  # LEAK: 262144 per step kept
    time.sleep(0.01)
print(args.mode, len(cache), len(kept), flush=True)
if args.exit:
    os._exit(0)
