# SPDX-License-Identifier: MIT
# torch_cuda: the GPU tier's Python workloads, run by t_torch_cuda.py with and without the shim.
#   train  a small PyTorch MLP on CUDA, deterministic: 'step'/'final loss' lines, then one
#          'torchstats {json}' line with torch's memory statistics and, under the shim, ndmem's
#          device 0 counters read in-process (ndmem_device_stats, through ctypes) at quiet points
#   limit  under NDMEM_MAX_DEVICE_BYTES=1G: a 2 GiB torch.empty must raise OutOfMemoryError
#          (exit 0 only then; 3 when it succeeds, as it does on a large GPU without the limit)
#   cupy   cupy's memory pool against ndmem's live bytes, and its OOM under the limit
#   jax    a small computation with XLA's default preallocation (under the limit, by the driver)
#   spill  four 128 MiB tensors and arithmetic on them: run under a 256 MiB device limit with
#          NDMEM_ON_DEVICE_LIMIT=host, what does not fit runs from host memory; prints a checksum
#          that must be the same as without ndmem
# Exit 77 when the framework is not importable or sees no GPU.
import ctypes
import json
import os
import sys

GIB = 1 << 30
MIB = 1 << 20


class DeviceStats(ctypes.Structure):  # ndmem_device_stats_t, include/ndmem.h
    _fields_ = [("size", ctypes.c_uint32), ("device", ctypes.c_int32),
                ("live_bytes", ctypes.c_int64), ("peak_bytes", ctypes.c_int64),
                ("allocs", ctypes.c_uint64), ("frees", ctypes.c_uint64),
                ("limit_bytes", ctypes.c_int64), ("total_bytes", ctypes.c_int64),
                ("breaches", ctypes.c_uint64), ("failed", ctypes.c_uint64),
                ("getinfo_calls", ctypes.c_uint64), ("getinfo_clamped", ctypes.c_uint64)]


def ndmem_device(dev=0):
    """ndmem's device counters from the preloaded shim, or None without it."""
    fn = getattr(ctypes.CDLL(None), "ndmem_device_stats", None)
    if fn is None:
        return None
    s = DeviceStats()
    s.size = ctypes.sizeof(s)
    if fn(ctypes.c_int(dev), ctypes.byref(s)) != 0:
        return None
    return {k: getattr(s, k) for k, _ in DeviceStats._fields_ if k != "size"}


def need(module):
    try:
        return __import__(module)
    except Exception as e:  # ImportError, or a broken install's own error
        print("%s is not importable by %s: %s" % (module, sys.executable, e))
        sys.exit(77)


def train(steps=60):
    # cuBLAS is deterministic only with a fixed workspace configuration, read when its first
    # handle is made (the driver sets it too, for both runs alike)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch = need("torch")
    if not torch.cuda.is_available():
        print("torch sees no CUDA device")
        sys.exit(77)
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    dev = torch.device("cuda", 0)
    gen = torch.Generator().manual_seed(1)
    n, d_in, classes, batch = 8192, 512, 10, 256
    x = torch.rand(n, d_in, generator=gen) * 2 - 1
    teacher = torch.rand(d_in, classes, generator=gen) * 2 - 1
    y = (x @ teacher).argmax(1)
    x, y = x.to(dev), y.to(dev)
    model = torch.nn.Sequential(torch.nn.Linear(d_in, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, classes)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    quiet = []
    known_live = 0
    for step in range(steps):
        off = (step * batch) % n
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x[off:off + batch]), y[off:off + batch])
        loss.backward()
        if step == 0:
            # bytes certainly live together now: data, parameters and their gradients
            known_live = (x.nbytes + y.nbytes
                          + sum(p.nbytes + p.grad.nbytes for p in model.parameters()))
        opt.step()
        if step % 10 == 0 or step == steps - 1:
            print("step %3d loss %.8f" % (step, loss.item()))
        if step == 0 or step == steps - 1:
            # a quiet point: nothing queued, cuBLAS's handle made; what ndmem counts beyond
            # torch's reserved bytes here was allocated outside torch's allocator
            torch.cuda.synchronize()
            quiet.append({"step": step, "reserved": torch.cuda.memory_reserved(dev),
                          "allocated": torch.cuda.memory_allocated(dev),
                          "ndmem": ndmem_device(0)})
    print("final loss %.8f" % loss.item())
    ms = torch.cuda.memory_stats(dev)
    stats = {"max_memory_reserved": torch.cuda.max_memory_reserved(dev),
             "max_memory_allocated": torch.cuda.max_memory_allocated(dev),
             "reserved_peak": ms.get("reserved_bytes.all.peak"),
             "allocated_peak": ms.get("allocated_bytes.all.peak"),
             "known_live": known_live, "quiet": quiet,
             "allocator": torch.cuda.get_allocator_backend(),
             "conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    print("torchstats " + json.dumps(stats, sort_keys=True))


def limit():
    torch = need("torch")
    if not torch.cuda.is_available():
        print("torch sees no CUDA device")
        sys.exit(77)
    dev = torch.device("cuda", 0)
    small = torch.ones(MIB, device=dev)  # initialises the context and the allocator
    free, total = torch.cuda.mem_get_info(dev)
    print("mem_get_info free %d total %d" % (free, total))
    try:
        big = torch.empty(2 * GIB, dtype=torch.uint8, device=dev)
    except torch.cuda.OutOfMemoryError as e:
        print("2 GiB torch.empty: OutOfMemoryError: %s" % str(e).splitlines()[0])
    else:
        print("2 GiB torch.empty succeeded (%d bytes): no limit in force" % big.nbytes)
        sys.exit(3)
    # the limit refuses what exceeds it, not everything: 256 MiB still fits under 1 GiB
    mid = torch.empty(256 * MIB, dtype=torch.uint8, device=dev)
    mid.fill_(1)
    torch.cuda.synchronize()
    print("256 MiB after the refusal: ok; ndmem %s" % json.dumps(ndmem_device(0)))
    del small, mid
    sys.exit(0)


def cupy_check():
    cp = need("cupy")
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        print("cupy sees no CUDA device: %s" % e)
        sys.exit(77)
    if n < 1:
        print("cupy sees no CUDA device")
        sys.exit(77)
    pool = cp.get_default_memory_pool()
    a = cp.ones((1024, 1024), dtype=cp.float32)
    b = a @ a  # makes cuBLAS's handle: whatever it allocates itself is counted from here on
    cp.cuda.Device(0).synchronize()
    base, pool_base = ndmem_device(0), pool.total_bytes()
    if base is None:
        print("ndmem is not loaded: run this under the shim")
        sys.exit(2)
    outside = base["live_bytes"] - pool_base
    print("after warm-up: ndmem live %d, pool total %d, outside the pool %d"
          % (base["live_bytes"], pool.total_bytes(), outside))
    fail = 0
    # cupy's pool hands cudaMalloc its rounded sizes: ndmem must move by exactly the pool's total
    arrays = [cp.zeros(s, dtype=cp.uint8) for s in (3 * MIB + 5, 64 * MIB, 1000)]
    cp.cuda.Device(0).synchronize()
    now = ndmem_device(0)
    grow_nd, grow_pool = now["live_bytes"] - base["live_bytes"], pool.total_bytes() - pool_base
    print("3 arrays: ndmem +%d, pool +%d" % (grow_nd, grow_pool))
    if grow_nd != grow_pool:
        print("FAIL: ndmem's live bytes moved by %d, cupy's pool by %d" % (grow_nd, grow_pool))
        fail = 1
    del arrays, a, b
    pool.free_all_blocks()
    end = ndmem_device(0)
    print("after free_all_blocks: ndmem live %d, pool total %d" % (end["live_bytes"],
                                                                   pool.total_bytes()))
    if end["live_bytes"] - pool.total_bytes() != outside:
        print("FAIL: ndmem live - pool total = %d, was %d"
              % (end["live_bytes"] - pool.total_bytes(), outside))
        fail = 1
    try:
        big = cp.empty(2 * GIB, dtype=cp.uint8)
    except cp.cuda.memory.OutOfMemoryError as e:
        print("2 GiB cupy.empty: OutOfMemoryError: %s" % str(e).splitlines()[0])
    else:
        print("FAIL: 2 GiB cupy.empty succeeded (%d bytes) under the limit" % big.nbytes)
        fail = 1
    sys.exit(fail)


def jax_check():
    jax = need("jax")
    try:
        devs = jax.devices()
    except Exception as e:
        print("jax has no device: %s" % e)
        sys.exit(77)
    if devs[0].platform != "gpu":
        print("jax has no GPU backend (platform %s)" % devs[0].platform)
        sys.exit(77)
    import jax.numpy as jnp
    x = jnp.ones((1024, 1024), dtype=jnp.float32)
    v = float((x @ x).sum().block_until_ready())
    ms = devs[0].memory_stats() or {}
    print("jax sum %.1f; bytes_limit %s; peak_bytes_in_use %s; ndmem %s"
          % (v, ms.get("bytes_limit"), ms.get("peak_bytes_in_use"), json.dumps(ndmem_device(0))))
    if v != 1024.0 ** 3:
        print("FAIL: (ones @ ones).sum() = %r, want %r" % (v, 1024.0 ** 3))
        sys.exit(1)
    sys.exit(0)


def spill():
    torch = need("torch")
    if not torch.cuda.is_available():
        print("torch sees no CUDA device")
        sys.exit(77)
    dev = torch.device("cuda", 0)
    gen = torch.Generator().manual_seed(2)
    parts = [torch.rand(32 * MIB, generator=gen).to(dev) for _ in range(4)]  # SPILL 4 x 128 MiB
    acc = torch.zeros(32 * MIB, device=dev)
    for i, p in enumerate(parts):
        acc += p * (i + 1)
    torch.cuda.synchronize()
    print("spill checksum %.6f" % acc.double().sum().item())
    print("ndmem %s" % json.dumps(ndmem_device(0)))
    sys.exit(0)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "train"
    {"train": train, "limit": limit, "cupy": cupy_check, "jax": jax_check, "spill": spill}[mode]()
