#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_train_cuda: the CUDA main job (examples/train_cuda.cu) under the shim.
#   compare: for each build (static and shared CUDA runtime), stdout (the losses) is byte for byte
#     the same with and without ndmem; the device 0 sites at the program's DALLOC lines add up to
#     exactly the allocations the program counted itself (calls and bytes); the device 0 peak lies
#     between the program's own peak and that plus every byte allocated elsewhere (cuBLAS); none
#     of the program's blocks is live at exit. The first loss is the numpy reference's.
#   leak: with --leak, one activation per step is never freed: the report has exactly those
#     blocks at the LEAK line, classed growing, and --fail-on-growth fails.
#   dws: device workspaces (NDMEM_DEVICE_WS=on, sync=free; and sync=ordered): the losses are byte
#     for byte those without ndmem, the workspace served the program's per-step buffers (its
#     summary line), and the training loop's seconds beside the plain run's (printed, no bound).
#   sanitizer: compute-sanitizer memcheck (40 steps) and racecheck (3 steps: it takes over 25 s
#     for 40 on an H100, without ndmem too) on train_cuda under device workspaces (sync=ordered):
#     no error (skipped where compute-sanitizer is not found).
# Exits 77 without a usable GPU, without the programs (no nvcc), or without libcublas.
# usage: t_train_cuda.py compare|leak LIBNDMEM NDMEMREPORT SOURCE PROGRAM...
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucheck as g  # noqa: E402

# The loss of step 0 with the default seed and batch (before any update: the forward pass alone),
# computed by a float32 numpy re-implementation of the same data, initial weights and model. A
# GPU's float32 sums differ from numpy's in their last bits only.
REF_STEP0 = 2.62195158
REF_TOL = 1e-3

OWN = re.compile(r"^train_cuda: own device memory: (.*)$", re.M)


def own_counts(stderr):
    m = OWN.search(stderr)
    if not m:
        print("FAIL: the program printed no 'own device memory' line:\n" + stderr)
        sys.exit(1)
    return g.parse_fields("own " + m.group(1))


def device_sites(doc):
    return [s for s in doc["sites"]["by_peak"] if s.get("kind") == "device0"]


def own_site(site, source, dalloc_lines):
    return any(line in dalloc_lines for line in g.source_lines(site, source))


def compare(c, shim, ndmemreport, source, prog):
    name = os.path.basename(prog)
    args = [prog, "--steps", "200"]
    plain = g.run(args, g.clean_env())
    g.must_succeed(plain, name + " without the shim")
    tmp = c.tmpdir("ndmem-gpu-train.")
    # every block tracked exactly (the 4-byte loss buffer too), as `ndmem run --exact`
    res, trace = g.run_shim(args, shim, tmp, NDMEM_TRACK_MIN=0)
    g.must_succeed(res, name + " under the shim")
    print(res.stdout, end="")
    print(res.stderr, end="")
    c.true("%s: stdout identical with and without ndmem" % name, plain.stdout == res.stdout,
           "" if plain.stdout == res.stdout else "\n--- plain\n%s--- ndmem\n%s"
           % (plain.stdout, res.stdout))
    losses = re.findall(r"^step +\d+ +loss (\S+)$", res.stdout, re.M)
    if c.true("%s: printed losses" % name, len(losses) >= 2):
        first, last = float(losses[0]), float(losses[-1])
        c.true("%s: step 0 loss %.8f is the reference %.8f within %g" % (name, first, REF_STEP0,
               REF_TOL), abs(first - REF_STEP0) <= REF_TOL)
        c.true("%s: the loss falls (%.6f -> %.6f)" % (name, first, last), last < first * 0.8)
    c.true("%s: ends with 'final loss'" % name, re.search(r"^final loss \S+\n\Z", res.stdout,
                                                          re.M) is not None)

    own = own_counts(res.stderr)
    doc = g.report(ndmemreport, trace)
    d = g.device(doc, 0)
    dalloc = {n for n, text in enumerate(open(source), 1) if "DALLOC(" in text
              and not text.lstrip().startswith("#define")}
    mine = [s for s in device_sites(doc) if own_site(s, source, dalloc)]
    others = [s for s in device_sites(doc) if not own_site(s, source, dalloc)]
    c.eq("%s: allocations at the program's DALLOC lines" % name,
         sum(s["allocs"] for s in mine), own["allocs"])
    c.eq("%s: bytes allocated at the program's DALLOC lines" % name,
         sum(s["alloc_bytes"] for s in mine), own["alloc_bytes"])
    c.eq("%s: frees of those blocks" % name, sum(s["frees"] for s in mine), own["frees"])
    c.true("%s: no device site is sampled" % name, not any(s.get("sampled") for s in mine))
    elsewhere = sum(s["alloc_bytes"] for s in others)
    print("%s: device 0 peak %d; the program's own peak %d; %d bytes in %d allocations by "
          "%d other sites (cuBLAS)" % (name, d["peak_bytes"], own["peak"], elsewhere,
                                       sum(s["allocs"] for s in others), len(others)))
    c.true("%s: device 0 peak >= the program's own peak" % name, d["peak_bytes"] >= own["peak"],
           "%d < %d" % (d["peak_bytes"], own["peak"]))
    c.true("%s: device 0 peak <= own peak + everything allocated elsewhere" % name,
           d["peak_bytes"] <= own["peak"] + elsewhere,
           "%d > %d + %d" % (d["peak_bytes"], own["peak"], elsewhere))
    c.eq("%s: device 0 allocs = the sites' allocs" % name, d["allocs"],
         sum(s["allocs"] for s in device_sites(doc)))
    live_mine = [grp for grp in doc["leaks"]["groups"]
                 if grp.get("kind") == "device0" and own_site(grp, source, dalloc)]
    c.eq("%s: the program's device blocks live at exit" % name,
         sum(grp["bytes"] for grp in live_mine), 0)


def leak(c, shim, ndmemreport, source, prog):
    name = os.path.basename(prog)
    steps = 100
    # 20 ms a step and a flush every 50 ms: the leak grows across ~40 flush windows, and the
    # loop is most of the process's life (a burst at the end of a long start-up is not growth).
    args = [prog, "--steps", str(steps), "--leak", "--pace-ms", "20"]
    tmp = c.tmpdir("ndmem-gpu-leak.")
    res, trace = g.run_shim(args, shim, tmp, NDMEM_TRACK_MIN=0, NDMEM_FLUSH_MS=50)
    g.must_succeed(res, name + " --leak under the shim")
    print(res.stderr, end="")
    own = own_counts(res.stderr)
    c.eq("the program leaked one block per step", own["blocks"], steps)
    leak_lines = g.marked_lines(source, "LEAK")
    if len(leak_lines) != 1:
        print("FAIL: %s must mark exactly one LEAK line, has %d" % (source, len(leak_lines)))
        sys.exit(1)
    (leak_line, _), = leak_lines.items()
    doc = g.report(ndmemreport, trace)
    found = [grp for grp in doc["leaks"]["groups"]
             if grp.get("kind") == "device0" and g.innermost_line(grp, source) == leak_line]
    if c.eq("leak groups at %s:%d" % (os.path.basename(source), leak_line), len(found), 1):
        grp = found[0]
        c.eq("leaked blocks", grp["blocks"], own["blocks"])
        c.eq("leaked bytes", grp["bytes"], own["leaked"])
        c.eq("class", grp.get("class"), "growing")
    r = subprocess.run([ndmemreport, "--fail-on-growth", trace], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    c.eq("ndmemreport --fail-on-growth exit status", r.returncode, 1)
    named = [s for s in doc.get("growth_while_running", {}).get("sites", [])
             if s.get("kind") == "device0" and g.innermost_line(s, source) == leak_line]
    print("named growing while running: %s" % ("yes" if named else "no"))


STEP_SECS = re.compile(r" batch \d+, ([0-9.]+) s ")
DWS_LINE = re.compile(r"^ndmem\[\d+\]: device 0 workspace \((\w[^,)]*), sync=(\w+)\): served (\d+) ", re.M)


def dws(c, shim, ndmemreport, source, prog):
    name = os.path.basename(prog)
    args = [prog, "--steps", "200"]
    plain = g.run(args, g.clean_env())
    g.must_succeed(plain, name + " without the shim")
    secs = {"plain": STEP_SECS.search(plain.stderr)}
    for sync in ("free", "ordered"):
        tmp = c.tmpdir("ndmem-gpu-dws.")
        res, trace = g.run_shim(args, shim, tmp, NDMEM_DEVICE_WS="sync=" + sync, NDMEM_SUMMARY=1)
        g.must_succeed(res, "%s under device workspaces (sync=%s)" % (name, sync))
        c.true("%s sync=%s: stdout identical with and without ndmem" % (name, sync),
               plain.stdout == res.stdout)
        m = DWS_LINE.search(res.stderr)
        print(m.group(0) if m else "(no device workspace line)")
        c.true("%s sync=%s: the workspace planned and served" % (name, sync),
               bool(m) and m.group(1) == "planned" and int(m.group(3)) > 0, res.stderr[-2000:])
        secs[sync] = STEP_SECS.search(res.stderr)
    t = {k: float(v.group(1)) for k, v in secs.items() if v}
    if "plain" in t:
        print("%s: training loop %s" % (name, ", ".join(
            "%s %.3f s (%.2fx)" % (k, v, v / t["plain"]) for k, v in t.items())))


def sanitizer(c, shim, ndmemreport, source, prog):
    cs = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.access(cs, os.X_OK):
        g.skip("compute-sanitizer not found")
    for tool, steps in (("memcheck", "40"), ("racecheck", "3")):
        tmp = c.tmpdir("ndmem-gpu-san.")
        env = g.clean_env(LD_PRELOAD=shim, NDMEM_DEVICE_WS="sync=ordered",
                          NDMEM_OUTPUT=os.path.join(tmp, "ndmem.%p.trace"))
        res = g.run([cs, "--tool", tool, "--error-exitcode", "9", prog, "--steps", steps], env)
        print(res.stdout[-1500:])
        c.eq("%s under device workspaces: %s finds no error" % (os.path.basename(prog), tool),
             res.returncode, 0)


def main():
    mode, shim, ndmemreport, source = sys.argv[1:5]
    progs = sys.argv[5:]
    g.require_gpu()
    for p in progs:
        g.require_built(p, os.path.basename(p) if p != "-" else "train_cuda")
        missing = g.missing_libs(p)
        if missing:
            g.skip("%s cannot load %s (cuBLAS comes with the CUDA toolkit or the nvidia-cublas "
                   "wheel; set LD_LIBRARY_PATH)" % (p, ", ".join(missing)))
    c = g.Checks()
    for p in progs:
        {"compare": compare, "leak": leak, "dws": dws, "sanitizer": sanitizer}[mode](
            c, shim, ndmemreport, source, p)
    c.done()


if __name__ == "__main__":
    main()
