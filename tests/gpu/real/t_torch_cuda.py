#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# t_torch_cuda: PyTorch, CuPy and JAX on CUDA under the shim (workloads: torch_cuda.py).
#   default, expandable, async: a small MLP trained with PyTorch's caching allocator, with
#     PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or with backend:cudaMallocAsync. Losses
#     identical with and without ndmem. Device 0 peak:
#     - default and expandable: exactly torch.cuda.max_memory_reserved() plus what was allocated
#       outside torch's allocator (cuBLAS's own handle memory, if any). That outside share is
#       measured in-process, at two quiet points, as ndmem's live bytes minus
#       torch.cuda.memory_reserved(); it must be the same at both, else the identity would not
#       hold. Reserved bytes are exactly what torch obtained from cudaMalloc (default) or
#       cuMemCreate (expandable segments), which are the calls ndmem counts.
#     - async: ndmem counts the bytes cudaMallocAsync hands out, while torch's "reserved" is what
#       CUDA's pool holds from the device (grown in large chunks, kept after frees), so no
#       equality exists. Checked: known_live <= ndmem peak <= reserved peak + outside, where
#       known_live is what the script holds for certain at one moment (data, parameters,
#       gradients) and outside is the peak bytes of device sites not under libc10_cuda.
#   limit: NDMEM_MAX_DEVICE_BYTES=1G, each of the three allocator settings: a 2 GiB torch.empty
#     raises torch.cuda.OutOfMemoryError under ndmem (and succeeds without it), 256 MiB still
#     fits; the report's device 0 limit is 1 GiB, with failed >= 1 and peak <= 1 GiB.
#   cupy: under the 1 GiB limit, cupy's pool total moves exactly as ndmem's live bytes, and a
#     2 GiB array raises OutOfMemoryError.
#   jax: under the 1 GiB limit with XLA's default preallocation (75 % of what the device reports),
#     JAX still computes, and ndmem's device 0 peak is at most 1 GiB.
#   tensors: ndmem run --torch-tensors's setting (backend:cudaMallocAsync, NDMEM_TORCH_TENSORS=1):
#     losses identical with and without ndmem; the report says the device sites are tensors; the
#     three largest device sites by peak carry a torch_cuda.py line.
#   spill: torch_cuda.py spill (512 MiB of tensors) under NDMEM_MAX_DEVICE_BYTES=256M with
#     NDMEM_ON_DEVICE_LIMIT=host, with the caching allocator and with cudaMallocAsync: it finishes
#     (exit 0), its checksum is the one without ndmem, and the report says how much ran from host
#     memory (at least 256 MiB) and from which sites.
# Exits 77 without a usable GPU, or when no python3 imports the framework (named in the log).
# usage: t_torch_cuda.py MODE LIBNDMEM NDMEMREPORT TORCH_CUDA_PY
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpucheck as g  # noqa: E402

GIB = 1 << 30
CONFS = {"default": None, "expandable": "expandable_segments:True",
         "async": "backend:cudaMallocAsync"}
NEEDS = {"cupy": "cupy", "jax": "jax"}  # every other mode needs torch


def find_python(module):
    cands = [os.environ.get("NDMEM_GPU_PYTHON"), shutil.which("python3"), "/usr/bin/python3",
             sys.executable]
    tried = []
    for py in cands:
        if not py or py in tried or not os.access(py, os.X_OK):
            continue
        tried.append(py)
        r = subprocess.run([py, "-c", "import " + module], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=g.clean_env())
        if r.returncode == 0:
            return py
    g.skip("no Python interpreter imports %s (tried %s; $NDMEM_GPU_PYTHON picks one)"
           % (module, ", ".join(tried) or "none"))


def env_for(conf, **extra):
    env = g.clean_env(**extra)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    return env


def extra_for(conf, **extra):
    if conf:
        extra["PYTORCH_CUDA_ALLOC_CONF"] = conf
    return extra


def skip_if_77(res, what):
    if res.returncode == 77:
        g.skip("%s: %s" % (what, (res.stdout + res.stderr).strip().splitlines()[-1]))


def losses(out):
    return [ln for ln in out.splitlines() if ln.startswith("step ") or ln.startswith("final loss")]


def torchstats(out):
    for ln in out.splitlines():
        if ln.startswith("torchstats "):
            return json.loads(ln[len("torchstats "):])
    print("FAIL: no torchstats line:\n" + out)
    sys.exit(1)


def outside_sites_peak(doc):
    """Peak bytes of device 0 sites whose stack does not pass through torch's allocator."""
    total = 0
    for s in doc["sites"]["by_peak"]:
        if s.get("kind") != "device0":
            continue
        mods = [os.path.basename(fr.get("module") or "") for fr in s.get("frames", [])]
        if not any(m.startswith("libc10_cuda") for m in mods):
            total += s.get("peak_live_bytes", 0)
    return total


def train(c, mode, py, shim, ndmemreport, script):
    conf = CONFS[mode]
    cublas = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    plain = g.run([py, script, "train"], env_for(conf, **cublas))
    skip_if_77(plain, "torch")
    g.must_succeed(plain, "torch_cuda.py train without the shim")
    tmp = c.tmpdir("ndmem-gpu-torch.")
    # Default tracking: device blocks are tracked one by one at any NDMEM_TRACK_MIN, so the
    # device sites' bytes are exact. (Every host block as well, NDMEM_TRACK_MIN=0, makes the
    # report asked for below, every site with every frame, gigabytes of JSON for torch.)
    res, trace = g.run_shim([py, script, "train"], shim, tmp, **extra_for(conf, **cublas))
    g.must_succeed(res, "torch_cuda.py train under the shim")
    print("\n".join(losses(res.stdout)))
    lp, ls = losses(plain.stdout), losses(res.stdout)
    c.true("losses printed", len(ls) >= 3)
    c.true("losses identical with and without ndmem", lp == ls,
           "" if lp == ls else "\nplain: %s\nndmem: %s" % (lp, ls))
    st = torchstats(res.stdout)
    print("torch: " + json.dumps(st, sort_keys=True))
    c.eq("torch's allocator backend", st["allocator"],
         "cudaMallocAsync" if mode == "async" else "native")
    doc = g.report(ndmemreport, trace)
    d = g.device(doc, 0)
    quiet = st["quiet"]
    if not c.true("ndmem answered in-process at the quiet points",
                  all(q["ndmem"] is not None for q in quiet)):
        return
    peak = d["peak_bytes"]
    c.eq("report peak = in-process peak at the last quiet point", peak,
         quiet[-1]["ndmem"]["peak_bytes"])
    if mode != "async":
        outside = [q["ndmem"]["live_bytes"] - q["reserved"] for q in quiet]
        print("outside torch's allocator at the quiet points: %s bytes" % outside)
        c.true("the bytes outside torch's allocator are the same at both quiet points",
               outside[0] == outside[-1], str(outside))
        c.true("ndmem's live bytes >= torch's reserved bytes", min(outside) >= 0, str(outside))
        c.eq("device 0 peak = max_memory_reserved %d + outside %d" % (
            st["max_memory_reserved"], outside[-1]), peak, st["max_memory_reserved"] + outside[-1])
    else:
        outside = outside_sites_peak(doc)
        print("async: ndmem peak %d; torch allocated peak %s, reserved peak %s; known live %d; "
              "outside torch's allocator (site peaks) %d"
              % (peak, st["allocated_peak"], st["reserved_peak"], st["known_live"], outside))
        c.true("ndmem peak >= the bytes known live together", peak >= st["known_live"])
        c.true("ndmem peak <= the pool's reserved peak + outside",
               peak <= st["reserved_peak"] + outside,
               "%d > %d + %d" % (peak, st["reserved_peak"], outside))


def limit(c, py, shim, ndmemreport, script):
    for name, conf in CONFS.items():
        plain = g.run([py, script, "limit"], env_for(conf))
        skip_if_77(plain, "torch")
        print(plain.stdout, end="")
        if not c.eq("%s: without ndmem the 2 GiB tensor is allocated (exit 3)" % name,
                    plain.returncode, 3):
            print(plain.stderr)
        tmp = c.tmpdir("ndmem-gpu-limit.")
        res, trace = g.run_shim([py, script, "limit"], shim, tmp,
                                **extra_for(conf, NDMEM_MAX_DEVICE_BYTES="1G"))
        print(res.stdout, end="")
        if not c.eq("%s: under NDMEM_MAX_DEVICE_BYTES=1G OutOfMemoryError, then 256 MiB (exit 0)"
                    % name, res.returncode, 0):
            print(res.stderr)
            continue
        for ln in res.stdout.splitlines():
            if ln.startswith("mem_get_info "):
                f = g.parse_fields(ln)
                c.true("%s: cudaMemGetInfo's free %d <= the limit" % (name, f["free"]),
                       f["free"] <= GIB)
        d = g.device(g.report(ndmemreport, trace), 0)
        c.eq("%s: report device 0 limit_bytes" % name, d.get("limit_bytes"), GIB)
        c.true("%s: report device 0 failed >= 1" % name, d.get("failed", 0) >= 1,
               str(d.get("failed")))
        c.true("%s: report device 0 peak <= 1 GiB" % name, d["peak_bytes"] <= GIB,
               str(d["peak_bytes"]))


def tensors(c, py, shim, ndmemreport, script):
    conf = "backend:cudaMallocAsync"
    cublas = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    plain = g.run([py, script, "train"], env_for(conf, **cublas))
    skip_if_77(plain, "torch")
    g.must_succeed(plain, "torch_cuda.py train without the shim")
    tmp = c.tmpdir("ndmem-gpu-tensors.")
    res, trace = g.run_shim([py, script, "train"], shim, tmp,
                            **extra_for(conf, NDMEM_TORCH_TENSORS=1, **cublas))
    g.must_succeed(res, "torch_cuda.py train under the shim")
    lp, ls = losses(plain.stdout), losses(res.stdout)
    c.true("losses identical with and without ndmem", lp == ls and len(ls) >= 3,
           "\nplain: %s\nndmem: %s" % (lp, ls))
    doc = g.report(ndmemreport, trace)
    c.eq("the report's PyTorch allocator", doc["cuda"].get("torch_allocator"), "async")
    c.true("set by ndmem run --torch-tensors", doc["cuda"].get("torch_tensors_by_ndmem") is True)
    sites = [s for s in doc["sites"]["by_peak"] if s.get("kind") == "device0"][:3]
    for s in sites:
        lines = [f["line"] for f in s["frames"] if f.get("python")
                 and os.path.basename(f.get("file") or "") == "torch_cuda.py"]
        print("device site %d: peak %d, torch_cuda.py lines %s"
              % (s["stack_id"], s["peak_live_bytes"], lines))
        c.true("device site %d has a torch_cuda.py line" % s["stack_id"], bool(lines))


def spill(c, py, shim, ndmemreport, script):
    for name, conf in CONFS.items():
        if name == "expandable":
            continue
        plain = g.run([py, script, "spill"], env_for(conf))
        skip_if_77(plain, "torch")
        g.must_succeed(plain, "torch_cuda.py spill without the shim")
        tmp = c.tmpdir("ndmem-gpu-spill.")
        res, trace = g.run_shim([py, script, "spill"], shim, tmp,
                                **extra_for(conf, NDMEM_MAX_DEVICE_BYTES="256M",
                                            NDMEM_ON_DEVICE_LIMIT="host"))
        print(res.stdout, end="")
        if not c.eq("%s: finishes over the limit (exit 0)" % name, res.returncode, 0):
            print(res.stderr)
            continue
        want = [ln for ln in plain.stdout.splitlines() if ln.startswith("spill checksum")]
        got = [ln for ln in res.stdout.splitlines() if ln.startswith("spill checksum")]
        c.true("%s: checksum identical with and without ndmem" % name, want == got and want,
               "%s vs %s" % (want, got))
        d = g.device(g.report(ndmemreport, trace), 0)
        h = d.get("from_host") or {}
        print("%s: from host %s" % (name, json.dumps({k: v for k, v in h.items() if k != "sites"})))
        c.true("%s: at least 256 MiB ran from host memory" % name, h.get("bytes", 0) >= 256 << 20)
        c.true("%s: the spilling sites are named" % name, bool(h.get("sites")))
        c.true("%s: device 0 peak <= 256 MiB" % name, d["peak_bytes"] <= 256 << 20,
               str(d["peak_bytes"]))


def limited(c, mode, py, shim, ndmemreport, script):
    """cupy and jax: one run under the 1 GiB limit; the script checks itself, we check ndmem."""
    tmp = c.tmpdir("ndmem-gpu-%s." % mode)
    res, trace = g.run_shim([py, script, mode], shim, tmp, NDMEM_MAX_DEVICE_BYTES="1G")
    print(res.stdout, end="")
    skip_if_77(res, mode)
    if not c.eq("%s under NDMEM_MAX_DEVICE_BYTES=1G: the script's own checks (exit 0)" % mode,
                res.returncode, 0):
        print(res.stderr)
        return
    d = g.device(g.report(ndmemreport, trace), 0)
    print("device 0: %s" % json.dumps(d, sort_keys=True))
    c.true("device 0 peak <= 1 GiB", d["peak_bytes"] <= GIB, str(d["peak_bytes"]))
    c.true("device 0 peak > 0", d["peak_bytes"] > 0)
    if mode == "cupy":
        c.true("device 0 failed >= 1 (the 2 GiB array)", d.get("failed", 0) >= 1)


def main():
    mode, shim, ndmemreport, script = sys.argv[1:5]
    if mode not in list(CONFS) + ["limit", "cupy", "jax", "tensors", "spill"]:
        print("unknown mode %s" % mode)
        sys.exit(2)
    g.require_gpu()
    py = find_python(NEEDS.get(mode, "torch"))
    print("python: %s" % py)
    c = g.Checks()
    if mode in CONFS:
        train(c, mode, py, shim, ndmemreport, script)
    elif mode == "limit":
        limit(c, py, shim, ndmemreport, script)
    elif mode == "tensors":
        tensors(c, py, shim, ndmemreport, script)
    elif mode == "spill":
        spill(c, py, shim, ndmemreport, script)
    else:
        # XLA's defaults: preallocate XLA_PYTHON_CLIENT_MEM_FRACTION (0.75) of the device
        for k in [k for k in os.environ if k.startswith("XLA_PYTHON_CLIENT_")]:
            del os.environ[k]
        limited(c, mode, py, shim, ndmemreport, script)
    c.done()


if __name__ == "__main__":
    main()
