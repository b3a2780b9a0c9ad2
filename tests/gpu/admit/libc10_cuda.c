// SPDX-License-Identifier: MIT
// A stand-in for PyTorch's CUDA caching allocator (its file name is libc10_cuda.so, on ndmem's
// built-in list): it asks the runtime stand-in for device memory, as c10's allocator calls
// cudaMalloc.
#include "fakecuda.h"

int cudart_malloc(nd_cu_deviceptr *p, size_t n);

__attribute__((noinline)) int c10_cuda_alloc(nd_cu_deviceptr *p, size_t n) {
  int rc = cudart_malloc(p, n);
  __asm__ volatile("" ::: "memory");
  return rc;
}
