# SPDX-License-Identifier: MIT
# One rank of a torch.distributed job over gloo (t_ddp_merge.sh), started by environment
# variables as torchrun would start it (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE): a small
# DistributedDataParallel model trained for 30 steps, large enough (128x256 activations) that
# ndmem finds the loop's cycles. Rank 1 keeps a 256 KiB tensor per step in a list (the line marked
# LEAK): 7.50 MiB (7864320 B), never freed, not even at interpreter shutdown (an extra reference).
# Prints "rank R pid P loss L kept BYTES".
import ctypes
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                    torch.nn.Linear(256, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    for step in range(30):
        x, y = torch.randn(128, 256), torch.randn(128, 1)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if rank == 1:
            kept.append(torch.ones(65536))  # LEAK: 256 KiB a step, kept
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))  # never freed, not even at shutdown
    dist.barrier()
    dist.destroy_process_group()
    print("rank", rank, "pid", os.getpid(), "loss", float(loss),
          "kept", sum(t.numel() * t.element_size() for t in kept), flush=True)


main()
