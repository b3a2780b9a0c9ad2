# SPDX-License-Identifier: MIT
# torch_cnn: a small PyTorch CNN job as people write them: synthetic images from a Dataset that
# caches what it made (per worker), a DataLoader with 2 persistent workers, Adam, a validation
# pass each epoch. It prints the loss per epoch and, at the end or when an allocation is refused
# (a limit: MemoryError or torch's RuntimeError), its own resident peak (ru_maxrss) as
# "peak_rss_kib N". --keep makes it keep each step's loss tensor (a leak that holds the graph's
# outputs), as a metrics list written by mistake does.
# usage: torch_cnn.py [--epochs N] [--keep]
import resource
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

EPOCHS = int(sys.argv[sys.argv.index("--epochs") + 1]) if "--epochs" in sys.argv else 3
KEEP = "--keep" in sys.argv


class Images(Dataset):
    """Deterministic synthetic 3x48x48 images in 10 classes; each worker caches what it made."""

    def __init__(self, n, seed):
        self.n, self.seed, self.cache = n, seed, {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i not in self.cache:
            g = torch.Generator().manual_seed(self.seed * 100003 + i)
            label = i % 10
            x = torch.randn(3, 48, 48, generator=g) * 0.5 + label / 10.0
            self.cache[i] = (x, label)
        return self.cache[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1)
        self.c2 = nn.Conv2d(32, 64, 3, padding=1)
        self.c3 = nn.Conv2d(64, 64, 3, padding=1)
        self.fc = nn.Linear(64 * 6 * 6, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = F.max_pool2d(F.relu(self.c3(x)), 2)
        return self.fc(x.flatten(1))


def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    train = DataLoader(Images(512, 1), batch_size=64, shuffle=False, num_workers=2,
                       persistent_workers=True)
    val = DataLoader(Images(128, 2), batch_size=64, num_workers=0)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    kept = []
    for epoch in range(EPOCHS):
        model.train()
        total = 0.0
        for x, y in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
            if KEEP:
                kept.append(loss)
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val:
                correct += int((model(x).argmax(1) == y).sum())
        print("epoch %d loss %.6f val %d/128" % (epoch, total / len(train), correct), flush=True)


try:
    main()
except (MemoryError, RuntimeError) as e:
    print("refused: %s" % str(e).splitlines()[0][:120], flush=True)
    print("peak_rss_kib %d" % peak_kib(), flush=True)
    sys.exit(3)
print("peak_rss_kib %d" % peak_kib(), flush=True)
