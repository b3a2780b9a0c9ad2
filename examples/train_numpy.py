#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A small, real training loop: a two-layer MLP trained by minibatch SGD on a synthetic
regression task, with numpy (BLAS matmuls through OpenBLAS on Debian).

Every step allocates and frees the same tensor temporaries (activations, gradients), which is
the allocation pattern ndmem is built for. It prints the loss every --log-every steps and a final
line `final loss <value>` that tests compare bit-for-bit with and without the shim.

    ndmem run -- python3 examples/train_numpy.py --steps 300
"""
import argparse
import contextlib
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "python"))
import ndmem  # noqa: E402  (workspace marks; no-ops without the shim)

try:
    import numpy as np
except ImportError:
    sys.exit("train_numpy.py: numpy is not importable by %s (on Debian: apt-get install "
             "python3-numpy, then run it with /usr/bin/python3)" % sys.executable)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--features", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--marks", action="store_true",
                    help="mark each step as a workspace cycle (ndmem.cycle())")
    ap.add_argument("--ws-stats", action="store_true",
                    help="print this thread's workspace statistics at the end (stderr)")
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    n_samples = args.batch * 16
    true_w = rng.standard_normal((args.features, 1)) / np.sqrt(args.features)
    x_all = rng.standard_normal((n_samples, args.features))
    y_all = np.tanh(x_all @ true_w) + 0.05 * rng.standard_normal((n_samples, 1))

    w1 = rng.standard_normal((args.features, args.hidden)) * np.sqrt(2.0 / args.features)
    b1 = np.zeros(args.hidden)
    w2 = rng.standard_normal((args.hidden, 1)) * np.sqrt(1.0 / args.hidden)
    b2 = np.zeros(1)

    t0 = time.perf_counter()
    loss = float("nan")
    for step in range(1, args.steps + 1):
        with ndmem.cycle() if args.marks else contextlib.nullcontext():
            lo = ((step - 1) * args.batch) % n_samples
            x = x_all[lo:lo + args.batch]
            y = y_all[lo:lo + args.batch]
            # forward
            h_pre = x @ w1 + b1
            h = np.maximum(h_pre, 0.0)
            out = h @ w2 + b2
            diff = out - y
            loss = float(np.mean(diff * diff))
            # backward
            g_out = (2.0 / args.batch) * diff
            g_w2 = h.T @ g_out
            g_b2 = g_out.sum(axis=0)
            g_h = (g_out @ w2.T) * (h_pre > 0)
            g_w1 = x.T @ g_h
            g_b1 = g_h.sum(axis=0)
            # update
            w1 -= args.lr * g_w1
            b1 -= args.lr * g_b1
            w2 -= args.lr * g_w2
            b2 -= args.lr * g_b2
            if step % args.log_every == 0 or step == args.steps:
                print("step %5d  loss %.12f" % (step, loss), flush=True)
    elapsed = time.perf_counter() - t0
    print("final loss %r" % loss)
    print("time %.3f s (%d steps)" % (elapsed, args.steps), file=sys.stderr)
    if args.ws_stats:
        for w in ndmem.stats():
            print("workspace [%s]: %d cycles, %d hits, %d spills, %d escapes, arena %d B "
                  "(plan peak %d B, sum %d B)" % (w["name"], w["cycles"], w["hits"], w["spills"],
                                                  w["escapes"], w["arena_bytes"],
                                                  w["plan_peak_bytes"], w["plan_sum_bytes"]),
                  file=sys.stderr)


if __name__ == "__main__":
    main()
