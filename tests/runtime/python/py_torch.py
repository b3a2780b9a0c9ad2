# SPDX-License-Identifier: MIT
# py_torch: a PyTorch (CPU) training loop, an nn.Linear MLP trained by SGD, whose forward pass
# (LINE_FORWARD) and backward pass (LINE_BACKWARD) sit on marked lines, for t_py_frames.py (the
# largest sites must name them) and bench/run.py --python. Prints `final loss <value>` on stdout
# and `time <seconds> s` (the loop) on stderr, as examples/train_numpy.py does, then
# `step <ms> ms median` (the median step: the steady state, which one slow step cannot move).
# Exits 77 without torch. usage: python3 py_torch.py [--steps N]
import argparse
import sys
import time

try:
    import torch
except ImportError:
    print("py_torch.py: torch is not importable by %s" % sys.executable, file=sys.stderr)
    sys.exit(77)


def main():
    ap = argparse.ArgumentParser(description="a PyTorch CPU training loop with marked lines")
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(128, 256)
    y = torch.randint(0, 10, (128,))
    steps = []
    t0 = time.perf_counter()
    for step in range(args.steps):
        t = time.perf_counter()
        opt.zero_grad()
        out = model(x)  # LINE_FORWARD
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()  # LINE_BACKWARD
        opt.step()
        steps.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - t0
    print("final loss %.9f" % loss.item())
    print("time %.3f s" % elapsed, file=sys.stderr)
    if steps:
        steps.sort()
        print("step %.4f ms median" % (1000 * steps[len(steps) // 2]), file=sys.stderr)


main()
