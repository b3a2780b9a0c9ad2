# SPDX-License-Identifier: MIT
# torch_place: a PyTorch loop that keeps, every step, a tensor that torch.nn.functional.relu made
# (a Python function of torch's, calling torch.relu) at the line marked KEEP: growth whose
# innermost Python frame is the library's relu and whose program line is KEEP's. Prints the loss.
import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
m = torch.nn.Linear(256, 256)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(64, 256)
kept = []
for step in range(200):
    opt.zero_grad()
    loss = m(x).pow(2).mean()
    loss.backward()
    opt.step()
    kept.append(F.relu(torch.randn(16384)))  # KEEP
print("loss %.6f kept %d" % (loss.item(), len(kept)))
