# SPDX-License-Identifier: MIT
# np_teardown: a numpy loop that keeps a copy of an activation every step in a Python list
# (a real leak: the list grows for the whole run) and frees it only at interpreter shutdown.
# usage: python3 np_teardown.py STEPS
import sys
import time

import numpy as np

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
rng = np.random.default_rng(1)
w = rng.standard_normal((512, 512))
x = rng.standard_normal((64, 512))
history = []
for i in range(steps):
    h = np.tanh(x @ w)       # temporaries of 256 KiB, freed within the step
    g = (h * h) @ w.T
    x = x - 1e-3 * g
    history.append(h.copy())  # LEAK:history 262144 per step
    time.sleep(0.02)
print("steps", steps, "kept", len(history), "sum %.6f" % float(x.sum()))
