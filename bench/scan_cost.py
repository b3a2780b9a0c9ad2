#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The reachability scan's cost per GB of live heap (docs/benchmarks.md).

Runs build/bench/scan_cost (MIB MiB of live 1-16 KiB blocks that point at each other) under
glibc alone, under ndmem with every block tracked and the scan off (NDMEM_LEAK_SCAN=0) and on,
and under ndmem chained to jemalloc with the scan on; prints the medians of the process's wall
time, the time the scan held the threads still (the SCAN record), that time per GiB of live
heap, and its ratio to the ideal: one plain read of the same words, timed by the program itself.

usage: python3 bench/scan_cost.py [--build build] [--mib 256,1024] [--reps 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

JEMALLOC = ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2"]


def run(prog, mib, env_extra, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NDMEM_")}
    env.update(env_extra)
    trace = os.path.join(tmp, "s.trace")
    if os.path.exists(trace):
        os.unlink(trace)
    env.setdefault("NDMEM_OUTPUT", trace)
    t0 = time.monotonic()
    p = subprocess.run([prog, str(mib)], env=env, capture_output=True, text=True, check=True)
    wall = time.monotonic() - t0
    f = p.stdout.split()
    ideal, nbytes = int(f[1]), int(f[3])
    held = None
    if "LD_PRELOAD" in env_extra and os.path.exists(trace):
        j = json.loads(subprocess.run([rep, "--format", "json", "--top", "1", trace],
                                      capture_output=True, text=True, check=True).stdout)
        s = j["scan"]
        if s and s["status"] == "done":
            held = s["held_ns"], s["complete"], s["root_bytes"] + s["block_bytes"]
    return wall, ideal, nbytes, held


def main():
    global rep
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--mib", default="256,1024")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    prog = os.path.join(a.build, "bench", "scan_cost")
    lib = os.path.abspath(os.path.join(a.build, "interpose", "libndmem.so"))
    rep = os.path.join(a.build, "report", "ndmemreport")
    jem = next((j for j in JEMALLOC if os.path.exists(j)), None)
    configs = [("glibc", {}),
               ("ndmem exact, scan off", {"LD_PRELOAD": lib, "NDMEM_TRACK_MIN": "0",
                                          "NDMEM_LEAK_SCAN": "0", "NDMEM_SUMMARY": "0"}),
               ("ndmem exact, scan on", {"LD_PRELOAD": lib, "NDMEM_TRACK_MIN": "0",
                                         "NDMEM_SUMMARY": "0"}),
               ("ndmem default, scan on", {"LD_PRELOAD": lib, "NDMEM_SUMMARY": "0"})]
    if jem:
        configs.append(("ndmem+jemalloc exact, scan on", {"LD_PRELOAD": lib + " " + jem,
                                                          "NDMEM_TRACK_MIN": "0",
                                                          "NDMEM_SUMMARY": "0"}))
    with tempfile.TemporaryDirectory() as tmp:
        for mib in [int(m) for m in a.mib.split(",")]:
            print("== %d MiB of live blocks, median of %d (interleaved)" % (mib, a.reps))
            res = {name: [] for name, _ in configs}
            for r in range(a.reps):
                for name, env in configs:
                    res[name].append(run(prog, mib, env, tmp))
            base = statistics.median(x[0] for x in res["glibc"])
            ideal = statistics.median(x[1] for x in res["glibc"])
            gib = res["glibc"][0][2] / (1 << 30)
            print("  ideal: one read of the %.2f GiB: %.3f s (%.3f s/GiB)" % (gib, ideal / 1e9,
                                                                               ideal / 1e9 / gib))
            print("  %-30s %8s %8s %10s %10s %8s %s" % ("", "wall s", "/glibc", "scan s",
                                                      "scan s/GiB", "/ideal", "read"))
            for name, _ in configs:
                xs = res[name]
                wall = statistics.median(x[0] for x in xs)
                held = [x[3] for x in xs if x[3]]
                if held:
                    h = statistics.median(x[0] for x in held) / 1e9
                    read = statistics.median(x[2] for x in held) / (1 << 30)
                    print("  %-30s %8.3f %7.2fx %10.3f %10.3f %7.2fx %.2f GiB%s" % (
                        name, wall, wall / base, h, h / gib, h / (ideal / 1e9), read,
                        "" if held[0][1] else " (allocator's memory read as roots)"))
                else:
                    print("  %-30s %8.3f %7.2fx" % (name, wall, wall / base))


if __name__ == "__main__":
    main()
