# SPDX-License-Identifier: MIT
# A stand-in for a PyTorch job under `ndmem run --torch-tensors`, on the CUDA driver test double
# (no GPU, no torch): every "tensor" is a stream-ordered allocation made from a Python line, as
# PyTorch's cudaMallocAsync backend makes them. t_torch_tensors.sh checks that ndmem attributes
# the device memory to these lines exactly. Lines marked with a comment are what it looks for.
import ctypes
import os
import sys

cu = ctypes.CDLL("libcuda.so.1")
MiB = 1 << 20


def check(rc, what):
    if rc != 0:
        sys.exit("torch_tensors: %s returned %d" % (what, rc))


check(cu.cuInit(0), "cuInit")
ctx = ctypes.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0), "cuDevicePrimaryCtxRetain")
check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def empty(nbytes):
    p = ctypes.c_ulonglong()
    check(cu.cuMemAllocAsync(ctypes.byref(p), ctypes.c_size_t(nbytes), None), "cuMemAllocAsync")
    return p.value


def free(p):
    check(cu.cuMemFreeAsync(ctypes.c_ulonglong(p), None), "cuMemFreeAsync")


def forward(step):
    activations = empty(8 * MiB)  # TENSOR activations
    logits = empty(2 * MiB)  # TENSOR logits
    free(activations)
    return logits


history = []
for step in range(10):
    logits = forward(step)
    history.append(empty(1 * MiB))  # TENSOR history (kept every step: it grows)
    free(logits)
cache = empty(3 * MiB)  # TENSOR cache (never freed)
cu.cuCtxSynchronize()
print("PYTORCH_CUDA_ALLOC_CONF=%s" % os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""))
