# SPDX-License-Identifier: MIT
# py_shapes: pure-Python allocations at known lines in the frame shapes a reader of the
# interpreter's frames must get right, for t_py_frames.py: the bottom of a 500-deep recursion
# (LINE_BOTTOM), a generator resumed by its caller's loop (LINE_GEN, LINE_GEN_CALLER), a coroutine
# resumed by asyncio's loop after an await (LINE_CORO, LINE_CORO_CALLER) and module level
# (LINE_TOP). Standard library only: any CPython 3 runs it. Each site has its own size.
# usage: py_shapes.py [RECURSION_DEPTH]
import asyncio
import sys

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 500  # the recursion's depth


def recurse(n):
    if n == 0:
        return bytearray(90000)  # LINE_BOTTOM
    return recurse(n - 1)  # LINE_RECURSE


class Feeder:
    def batches(self, n):
        for i in range(n):
            yield bytearray(70000 + i)  # LINE_GEN


def consume(feeder, n):
    total = 0
    for b in feeder.batches(n):  # LINE_GEN_CALLER
        total += len(b)
    return total


class Client:
    async def fetch(self, i):
        await asyncio.sleep(0)
        return bytearray(50000 + i)  # LINE_CORO


async def gather_all(n):
    client = Client()
    total = 0
    for i in range(n):
        b = await client.fetch(i)  # LINE_CORO_CALLER
        total += len(b)
    return total


kept = []
for _ in range(3):
    kept.append(recurse(DEPTH))
top = bytearray(100000)  # LINE_TOP
# counts and lengths of what each line allocated (bytearray(n) asks for n + 1 bytes: its NUL)
print("recursion n=%d len=%d" % (len(kept), sum(len(k) for k in kept)))
print("generator n=%d len=%d" % (5, consume(Feeder(), 5)))
print("coroutine n=%d len=%d" % (5, asyncio.run(gather_all(5))))
print("top n=1 len=%d" % len(top))
sys.stdout.flush()
