# SPDX-License-Identifier: MIT
# py_lines: numpy allocations at known lines, for t_py_frames.py: a list that keeps one copy per
# iteration (LINE_A), a temporary replaced every iteration (LINE_B) and a table made once when the
# module runs (LINE_C). A and B reach numpy's allocator through the same native path
# (ndarray.copy), so only their Python frames tell them apart. Ends with os._exit so that what it
# keeps is live at exit (interpreter shutdown would free it). usage: python3 py_lines.py [N]
import os
import sys

import numpy as np

n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
a = np.arange(128 * 64, dtype=np.float64).reshape(128, 64)
p = np.arange(96 * 64, dtype=np.float64).reshape(96, 64)
TABLE = np.arange(4999, dtype=np.float64)  # LINE_C
history = []
total = 0.0
for i in range(n):
    history.append(a[:64].copy())  # LINE_A
    g = p.copy()  # LINE_B
    total += float(g[i % 96, 1])
del g
# numpy asks the allocator for exactly nbytes for each data buffer (arrays of 32-48 KiB: above
# ndmem's default exact-tracking size and below its workspace size)
print("sizes n=%d a=%d b=%d c=%d" % (n, history[0].nbytes, p.nbytes, TABLE.nbytes))
print("sum %.1f kept %d" % (total + float(TABLE.sum()), len(history)))
sys.stdout.flush()
os._exit(0)
