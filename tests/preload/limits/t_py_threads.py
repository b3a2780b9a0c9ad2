#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_py_threads: CPython's allocations over a limit are refused on the process's main thread (its
# MemoryError is the program's to take there) and admitted within the slack on a helper thread,
# where a MemoryError would end that thread alone. Under maxBytes 80 MiB the main thread holds
# 60 MiB; a helper thread asks for 16 MiB more (past the limit, within the slack: admitted, its
# site the helper's line), then the main thread asks for the same (refused: MemoryError, the
# breach's why "runtime", its thread the main one).
# usage: t_py_threads.py LIBNDMEM NDMEMREPORT
import glob
import json
import os
import subprocess
import sys
import tempfile

LIB, REP = (os.path.abspath(a) for a in sys.argv[1:3])
MIB = 1 << 20
CHILD = """import threading
MIB = 1 << 20
hold = bytearray(60 * MIB)
ok = []
def helper():
    b = bytearray(16 * MIB)  # the helper's request
    ok.append(len(b))
t = threading.Thread(target=helper)
t.start()
t.join()
try:
    c = bytearray(16 * MIB)  # the main thread's request
    print("main: not refused")
except MemoryError:
    print("main: MemoryError")
print("helper:", ok)
"""
HELPER_LINE = CHILD.splitlines().index("    b = bytearray(16 * MIB)  # the helper's request") + 1
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)


with tempfile.TemporaryDirectory() as tmp:
    script = os.path.join(tmp, "child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    env = dict(os.environ, LD_PRELOAD=LIB, NDMEM_OUTPUT=os.path.join(tmp, "t.%p.trace"),
               NDMEM_MAX_BYTES="80m", NDMEM_SUMMARY="0", NDMEM_WORKSPACES="0")
    env.pop("NDMEM_LIMIT_REFUSE", None)
    p = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                       timeout=120)
    print(p.stdout, end="")
    check(p.returncode == 0, "child exit %d: %s" % (p.returncode, p.stderr))
    check(p.stdout == "main: MemoryError\nhelper: [%d]\n" % (16 * MIB),
          "child's output %r" % p.stdout)
    traces = glob.glob(os.path.join(tmp, "t.*.trace"))
    check(len(traces) == 1, "%d traces" % len(traces))
    out = subprocess.run([REP, "--format", "json", traces[0]], capture_output=True, text=True)
    check(out.returncode == 0, "ndmemreport exit %d: %s" % (out.returncode, out.stderr))
    j = json.loads(out.stdout)
    lim = j["limits"]
    pid = j["process"]["pid"]
    br = lim["breaches"]
    check(len(br) == 1, "%d breaches, want 1" % len(br))
    if br:
        b = br[0]
        print("breach:", b["function"], b["requested"], b["why"], b["tid"], b["place"])
        check(b["why"] == ["runtime"], "breach why %r" % b["why"])
        check(b["tid"] == pid, "breach on thread %d, the main thread is %d" % (b["tid"], pid))
        check(b["requested"] >= 16 * MIB and b["requested"] < 16 * MIB + 4096,
              "breach of %d bytes" % b["requested"])
        check(b["place"] == "child.py:12", "breach at %r" % b["place"])
    adm = lim["admitted"]
    check(len(adm) == 1 and adm[0]["limit"] == "max_bytes" and adm[0]["requests"] == 1,
          "admitted %r" % [(a["limit"], a["requests"]) for a in adm])
    if adm and adm[0]["sites"]:
        s = adm[0]["sites"][0]
        print("admitted:", s["requests"], s["bytes"], s["place"])
        check(s["place"] == "child.py:%d (helper)" % HELPER_LINE, "admitted at %r" % s["place"])
        check(16 * MIB <= s["bytes"] < 16 * MIB + 8192, "admitted %d bytes" % s["bytes"])
    check(lim["totals"]["failed"] == 1, "failed %d" % lim["totals"]["failed"])
sys.exit(1 if failures else 0)
