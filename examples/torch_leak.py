#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A PyTorch (CPU) training loop with a leak, for the README's first task: each step keeps its
hidden activation "for later analysis" in a list, so the job grows by 1 MiB a step until it ends.

    ndmem run -- /usr/bin/python3 examples/torch_leak.py
"""
import sys
import time

try:
    import torch
except ImportError:
    sys.exit("torch_leak.py: torch is not importable by %s (on Debian: apt-get install "
             "python3-torch, then run it with /usr/bin/python3)" % sys.executable)

torch.manual_seed(0)
layer1, layer2 = torch.nn.Linear(256, 1024), torch.nn.Linear(1024, 10)
opt = torch.optim.SGD(list(layer1.parameters()) + list(layer2.parameters()), lr=0.01)
x = torch.randn(256, 256)
y = torch.randint(0, 10, (256,))
seen = []
for step in range(100):
    opt.zero_grad()
    hidden = torch.relu(layer1(x))
    loss = torch.nn.functional.cross_entropy(layer2(hidden), y)
    loss.backward()
    opt.step()
    seen.append(hidden.detach())  # the leak: 1 MiB kept every step
    time.sleep(0.01)
print("final loss %.6f, kept %d activations" % (loss.item(), len(seen)))
