# SPDX-License-Identifier: MIT
# A PyTorch training loop fed by a DataLoader with 2 fork workers (they end with os._exit), 4
# epochs of 16 steps; with "keep", 8 epochs, and a 256 KiB tensor kept every step in a list that
# lives to exit (the line marked KEEP): a leak that is still reachable, found as growth (the
# epochs enough for flush windows to show it rise where an every-block flush takes seconds on a
# loaded machine). Prints the loss.
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

keep = len(sys.argv) > 1 and sys.argv[1] == "keep"
torch.manual_seed(0)
ds = TensorDataset(torch.randn(512, 64), torch.randn(512, 1))
dl = DataLoader(ds, batch_size=32, num_workers=2, shuffle=False)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = []
for epoch in range(8 if keep else 4):
    for x, y in dl:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if keep:
            kept.append(torch.ones(65536))  # KEEP
print("loss %.6f kept %d" % (float(loss), len(kept)))
