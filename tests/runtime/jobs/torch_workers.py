# SPDX-License-Identifier: MIT
# A PyTorch training loop fed by a DataLoader with 2 worker processes per epoch (fork workers that
# end with os._exit, as every DataLoader worker does), and a frozen layer whose 2 MiB of weights
# (512 x 1024 floats) the main process makes before the workers fork: every worker inherits them.
# Prints the final loss.
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
ds = TensorDataset(torch.randn(512, 64), torch.randn(512, 1))
dl = DataLoader(ds, batch_size=64, num_workers=2, shuffle=False)
model = torch.nn.Linear(64, 1)
frozen = torch.nn.Linear(1024, 512)  # LINE_FROZEN
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for x, y in dl:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
print("loss", float(loss))
