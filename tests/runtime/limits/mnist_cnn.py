# SPDX-License-Identifier: MIT
# mnist_cnn: the shape of pytorch/examples' MNIST script, offline: synthetic 1x28x28 images in 10
# classes from a Dataset, a DataLoader with 2 workers, two conv layers (oneDNN's), dropout, two
# linear layers (OpenBLAS's gemm), Adadelta, a fixed seed and one thread, so that the losses are
# the same in every run. Prints each step's loss exactly ("step N loss 0x..." as float.hex), then
# "done". Nothing catches an error: a refused allocation must end it with the runtime's own
# exception (a traceback, exit status 1).
# usage: mnist_cnn.py [--steps N] [--batch N]
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


STEPS = arg("--steps", 4)
BATCH = arg("--batch", 64)


class Digits(Dataset):
    """Deterministic synthetic digits: noise plus a bright row at the label's height."""

    def __len__(self):
        return STEPS * BATCH

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(1000 + i)
        label = i % 10
        x = torch.rand(1, 28, 28, generator=g) * 0.3
        x[0, 2 + 2 * label, :] += 1.0
        return (x - 0.1307) / 0.3081, label


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        x = self.fc2(self.dropout2(x))
        return F.log_softmax(x, dim=1)


def main():
    torch.manual_seed(1)
    torch.set_num_threads(1)
    # timeout: the thread that feeds the workers their indices (multiprocessing's queue feeder, a
    # Python thread) has its requests admitted within the slack, but one past it is refused: the
    # MemoryError ends that thread alone, and the loader would wait for ever for batches never
    # asked for; the timeout makes that the loader's own RuntimeError, as under a real
    # out-of-memory.
    loader = DataLoader(Digits(), batch_size=BATCH, shuffle=True, num_workers=2, timeout=30,
                        generator=torch.Generator().manual_seed(2))
    model = Net()
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    model.train()
    for step, (x, y) in enumerate(loader):
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
        print("step %d loss %s" % (step, loss.item().hex()), flush=True)
    print("done", flush=True)


main()
