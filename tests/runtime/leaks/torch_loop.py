# SPDX-License-Identifier: MIT
# torch_loop: a healthy PyTorch (CPU) training loop, a small MLP trained by SGD: nothing grows, so
# the corpus (tests/preload/leaks/t_corpus.py) wants --fail-on-leak to pass. Exits 77 without torch.
import sys
import time

try:
    import torch
except ImportError:
    print("torch_loop.py: torch is not importable by %s" % sys.executable, file=sys.stderr)
    sys.exit(77)

torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(128, 256)
y = torch.randint(0, 10, (128,))
for i in range(400):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
    time.sleep(0.002)
print("loss %.6f" % loss.item())
