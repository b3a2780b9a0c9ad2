// SPDX-License-Identifier: MIT
// libadmit: a small C library as many are: it mallocs small buffers and maps a scratch area
// without checking what it got (a refused request would crash it, as OpenBLAS's gemm_driver
// buffers and oneDNN's scratch mappings do), and one function that checks (admit_try).
// t_admit.c calls it under limits.
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KEPT 4096
static unsigned char *kept[KEPT];
static int nkept;

// n blocks of `size` bytes, each written at once (unchecked: a NULL faults here).
__attribute__((noinline)) void admit_small(int n, size_t size) {
  for (int i = 0; i < n && nkept < KEPT; i++) {
    unsigned char *p = malloc(size);
    p[0] = p[size - 1] = (unsigned char)i;
    kept[nkept++] = p;
  }
}

// A scratch mapping of `size` bytes, written (unchecked); returned for admit_unmap.
__attribute__((noinline)) void *admit_scratch(size_t size) {
  unsigned char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(p, 1, size);
  return p;
}

void admit_unmap(void *p, size_t size) { munmap(p, size); }

// A mapping of `size` bytes never touched (a reservation, as OpenBLAS's buffers): NULL when
// refused.
__attribute__((noinline)) void *admit_reserve(size_t size) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

// One checked block: NULL when refused.
__attribute__((noinline)) void *admit_try(size_t size) { return malloc(size); }

void admit_free_all(void) {
  while (nkept) free(kept[--nkept]);
}
