// SPDX-License-Identifier: MIT
// A stand-in for the CUDA runtime (its file name matches libcudart*, which ndmem passes through
// to find the code asking): cudart_malloc calls the driver, as cudaMalloc does.
#include "fakecuda.h"

__attribute__((noinline)) int cudart_malloc(nd_cu_deviceptr *p, size_t n) {
  int rc = cuMemAlloc_v2(p, n);
  __asm__ volatile("" ::: "memory"); // not a tail call: this frame stays on the stack
  return rc;
}
