# SPDX-License-Identifier: MIT
# torch_raise: PyTorch raising C++ exceptions that CPython sees as Python ones (c10::IndexError,
# c10::Error from a shape check): t_torch_bindings.sh runs it with and without ndmem.
import torch

caught = 0
for i in range(50):
    try:
        torch.zeros(2)[5 + i]
    except IndexError:
        caught += 1
for i in range(50):
    try:
        torch.ones(2, 3 + i) @ torch.ones(4 + i, 5)  # inner sizes differ: a c10::Error
    except RuntimeError:
        caught += 1
print("caught %d of 100" % caught)
