# SPDX-License-Identifier: MIT
# t_replay.py: Python lines that reach malloc by the same native path at the same stack pointer,
# so that only the thread's Python frames tell their stacks apart (interpose/stacks/replay.c
# checks the frame records it read). t_replay.sh runs it with the replay on and off; the marks
# are the allocations each line must be found making.
N = 300


def a():
    return bytearray(3000)  # PATH:a 150


def b():
    return bytearray(3000)  # PATH:b 150


def c():
    return bytearray(3000)  # callee of two lines


kept = [None] * (2 * N)  # made once: no list grows on the marked lines
for i in range(N):
    kept[i] = (a if i % 2 else b)()
for i in range(N):
    if i % 3:
        kept[N + i] = c()  # PATH:c_from_one 200
    else:
        kept[N + i] = c()  # PATH:c_from_other 100
del kept
print("t_replay.py: done")
