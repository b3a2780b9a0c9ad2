# SPDX-License-Identifier: MIT
# An exec chain of two Python programs in one process: "first" keeps 12 MiB in 3 blocks (the line
# marked FIRST) and execs this script again as "second", which keeps 10 MiB in 2 blocks (SECOND)
# and prints "done".
import os
import sys

if sys.argv[1:] == ["first"]:
    keep = [bytearray(4 << 20) for _ in range(3)]  # FIRST
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), "second"])
keep = [bytearray(5 << 20) for _ in range(2)]  # SECOND
print("done")
