# SPDX-License-Identifier: MIT
# A training loop fed by a DataLoader with 2 fork workers (one epoch) whose dataset caches every
# sample it makes, 16 KiB each, for the whole run: each worker's cache grows (the line marked
# CACHE); the main process keeps a 16 KiB tensor from every step in a list (KEPT), live at its
# end: the script ends with os._exit, as a job that skips the interpreter's teardown does (else
# the shutdown frees the list, and whether that reads as "released at teardown" depends on the
# flush windows the shutdown falls in). Prints the loss.
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Cached(Dataset):
    def __init__(self, n):
        self.n = n
        self.cache = {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i not in self.cache:
            self.cache[i] = torch.full((64, 64), float(i % 7))  # CACHE
        return self.cache[i], torch.tensor(float(i % 2))


torch.manual_seed(0)
dl = DataLoader(Cached(12288), batch_size=64, num_workers=2)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4096, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-5)
kept = []
for x, y in dl:
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
    loss.backward()
    opt.step()
    kept.append(torch.zeros(4096))  # KEPT
print("loss %.4f" % float(loss))
sys.stdout.flush()
os._exit(0)
