# SPDX-License-Identifier: MIT
# A PyTorch training loop fed by DataLoader worker processes whose resident memory grows by 32 MiB
# each epoch (a tensor kept, written), until a limit refuses an allocation. Nothing catches it:
# the job must end with Python's own traceback (MemoryError or RuntimeError), never SIGABRT.
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
ds = TensorDataset(torch.randn(1024, 64), torch.randn(1024, 1))
# timeout: CPython's requests are refused on a process's main thread only, but the thread of a
# worker's queue that feeds it (multiprocessing's feeder, a Python thread) is refused past the
# slack too (MemoryError, "can't allocate lock"): that ends the thread alone, and the loader would
# wait for ever for a batch never sent (1 run in 3 hung so when every thread was refused); the
# timeout makes that the loader's own RuntimeError, a traceback, as under a real out-of-memory.
dl = DataLoader(ds, batch_size=64, num_workers=2, timeout=20)
model = torch.nn.Linear(64, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = []
for epoch in range(1000):
    for x, y in dl:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    kept.append(torch.ones(8 << 20))
    print("epoch", epoch, flush=True)
