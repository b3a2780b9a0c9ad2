// SPDX-License-Identifier: MIT
// A library's own device buffer (a workspace, as cuDNN's or cuBLAS's): asked through the runtime
// stand-in, by code that cannot take a refusal.
#include "fakecuda.h"

int cudart_malloc(nd_cu_deviceptr *p, size_t n);

__attribute__((noinline)) int work_alloc(nd_cu_deviceptr *p, size_t n) {
  int rc = cudart_malloc(p, n);
  __asm__ volatile("" ::: "memory");
  return rc;
}
