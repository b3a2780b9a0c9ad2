#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_cupti: `ndmem run --cupti` (CUPTI injected beside the hooks): what CUPTI saw must agree with
# what the hooks counted, in the report's devices[0] and its "cupti" object.
#   cuda_static (both runtimes): the program's known truth. CUPTI's allocs/frees/bytes outside
#     pools are the three cudaMalloc blocks, its pool counts the one cudaMallocAsync block, no
#     pinned or managed bytes are live at exit, no record was dropped; and the hooks' allocs and
#     frees are CUPTI's plain plus pool ones.
#   train_cuda: the same sums over a real job: hooks' allocs and frees, and the bytes of every
#     device 0 site (every block tracked), equal CUPTI's plain plus pool totals.
# The "cupti" keys are provisional: a key the report lacks skips that comparison (said in the
# log); no CUPTI view at all, or no `--cupti` in the ndmem tool, exits 77. So does no GPU.
# usage: t_cupti.py NDMEM_TOOL NDMEMREPORT SOURCE CUDA_STATIC... [--train TRAIN_CUDA]
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucheck as g  # noqa: E402

MIB = 1 << 20


class Cmp:
    """Comparisons against a provisional key set: missing keys are skipped and counted."""

    def __init__(self, c):
        self.c, self.made, self.skipped = c, 0, []

    def eq(self, what, cupti, keys, want):
        if any(k not in cupti for k in keys):
            self.skipped.append("%s (no %s)" % (what, "/".join(k for k in keys if k not in cupti)))
            print("skip %s: the report's cupti object has no %s" % (what, "/".join(keys)))
            return
        self.made += 1
        self.c.eq(what, sum(cupti[k] for k in keys), want)


def run_cupti(c, tool, ndmemreport, cmd):
    tmp = c.tmpdir("ndmem-gpu-cupti.")
    env = g.clean_env()
    full = ["sh", tool, "run", "--cupti", "--exact", "--no-report",
            "--output=" + os.path.join(tmp, "ndmem.%p.trace"), "--"] + cmd
    res = g.run(full, env)
    g.must_succeed(res, " ".join(full))
    # the program's own trace: a child it started (none expected) would have its own file
    traces = []
    for t in sorted(glob.glob(os.path.join(tmp, "*.trace"))):
        doc = g.report(ndmemreport, t)
        if os.path.basename(doc["process"]["exe"]) == os.path.basename(cmd[0]):
            traces.append((res, doc))
    if len(traces) != 1:
        print("FAIL: %d traces of %s in %s" % (len(traces), cmd[0], tmp))
        sys.exit(1)
    return traces[0]


def cupti_of(d):
    cu = d.get("cupti")
    if not isinstance(cu, dict):
        g.skip("the report's devices[0] has no \"cupti\" object: the CUPTI hand-over is not in "
               "this build's report (devices[0] keys: %s)" % ", ".join(sorted(d)))
    return cu


def agrees(c, name, cu):
    """ndmemreport's own verdict on CUPTI against the hooks, where the report gives one."""
    if "agrees" in cu:
        c.true("%s: the report says CUPTI agrees with the hooks" % name, cu["agrees"] is True,
               str(cu.get("difference")))


def expectations(stdout):
    exp = {}
    for line in stdout.splitlines():
        if line.startswith("expect "):
            f = g.parse_fields(line[len("expect"):])
            exp[line.split()[1]] = f
    return exp


def main():
    args = sys.argv[1:]
    train = None
    if "--train" in args:
        i = args.index("--train")
        train = args[i + 1]
        del args[i:i + 2]
    tool, ndmemreport, source = args[:3]
    progs = args[3:]
    g.require_gpu()
    h = subprocess.run(["sh", tool, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if "--cupti" not in h.stdout:
        g.skip("%s has no --cupti option (tools/ndmem.in does not inject CUPTI yet)" % tool)
    for p in progs:
        g.require_built(p, "cuda_static")
    c = g.Checks()
    cmp = Cmp(c)
    for p in progs:
        name = os.path.basename(p)
        res, doc = run_cupti(c, tool, ndmemreport, [p])
        exp = expectations(res.stdout)
        d = g.device(doc, 0)
        cu = cupti_of(d)
        print("%s: hooks %s" % (name, {k: v for k, v in d.items() if k != "cupti"}))
        print("%s: cupti %s" % (name, cu))
        dev, pool = exp["device0"], exp["pool"]
        plain_allocs, plain_frees = dev["allocs"] - pool["allocs"], dev["frees"] - pool["frees"]
        cmp.eq("%s: CUPTI allocs outside pools" % name, cu, ["allocs"], plain_allocs)
        cmp.eq("%s: CUPTI frees outside pools" % name, cu, ["frees"], plain_frees)
        cmp.eq("%s: CUPTI bytes allocated outside pools" % name, cu, ["alloc_bytes"],
               dev["alloc_bytes"] - pool["alloc_bytes"])
        cmp.eq("%s: CUPTI bytes freed outside pools" % name, cu, ["free_bytes"],
               dev["free_bytes"] - pool["free_bytes"])
        cmp.eq("%s: CUPTI pool allocs" % name, cu, ["pool_allocs"], pool["allocs"])
        cmp.eq("%s: CUPTI pool frees" % name, cu, ["pool_frees"], pool["frees"])
        cmp.eq("%s: CUPTI pool bytes allocated" % name, cu, ["pool_alloc_bytes"],
               pool["alloc_bytes"])
        cmp.eq("%s: CUPTI pool bytes freed" % name, cu, ["pool_free_bytes"], pool["free_bytes"])
        cmp.eq("%s: CUPTI pinned bytes live at exit" % name, cu, ["pinned_bytes"], 0)
        cmp.eq("%s: CUPTI managed bytes live at exit" % name, cu, ["managed_bytes"], 0)
        cmp.eq("%s: CUPTI records dropped" % name, cu, ["dropped"], 0)
        agrees(c, name, cu)
        cmp.eq("%s: hooks' allocs = CUPTI's plain + pool allocs" % name, cu,
               ["allocs", "pool_allocs"], d["allocs"])
        cmp.eq("%s: hooks' frees = CUPTI's plain + pool frees" % name, cu,
               ["frees", "pool_frees"], d["frees"])
    if train and train != "-":
        missing = g.missing_libs(train)
        if missing:
            print("skip train_cuda: it cannot load %s" % ", ".join(missing))
        else:
            res, doc = run_cupti(c, tool, ndmemreport, [train, "--steps", "20"])
            d = g.device(doc, 0)
            cu = cupti_of(d)
            print("train_cuda: hooks %s" % {k: v for k, v in d.items() if k != "cupti"})
            print("train_cuda: cupti %s" % cu)
            sites = [s for s in doc["sites"]["by_peak"] if s.get("kind") == "device0"]
            cmp.eq("train_cuda: hooks' allocs = CUPTI's plain + pool allocs", cu,
                   ["allocs", "pool_allocs"], d["allocs"])
            cmp.eq("train_cuda: hooks' frees = CUPTI's plain + pool frees", cu,
                   ["frees", "pool_frees"], d["frees"])
            cmp.eq("train_cuda: bytes of the device 0 sites = CUPTI's plain + pool bytes", cu,
                   ["alloc_bytes", "pool_alloc_bytes"], sum(s["alloc_bytes"] for s in sites))
            cmp.eq("train_cuda: CUPTI records dropped", cu, ["dropped"], 0)
            agrees(c, "train_cuda", cu)
    if cmp.skipped:
        print("comparisons skipped (keys not in the report): " + "; ".join(cmp.skipped))
    if not cmp.made:
        g.skip("the report's cupti object has none of the keys compared")
    c.done()


if __name__ == "__main__":
    main()
