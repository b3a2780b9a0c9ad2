# SPDX-License-Identifier: MIT
# torch_mnist: the shape of pytorch/examples' MNIST script on synthetic data (no download): a small
# CNN, SGD, 30 steps, one thread. Its line BACKWARD (autograd's backward) is the one a report
# must name beside the library line. Prints the loss.
import torch
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(2304, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)

torch.manual_seed(0)
torch.set_num_threads(1)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(64, 1, 28, 28)
target = torch.randint(0, 10, (64,))
for step in range(30):
    opt.zero_grad()
    out = model(data)
    loss = F.nll_loss(out, target)
    loss.backward()  # BACKWARD
    opt.step()
print("loss %.4f" % loss.item())
