// SPDX-License-Identifier: MIT
// cuda_static.cu: the GPU tier's allocation program, built twice (-cudart static and -cudart
// shared). Every kind of CUDA memory once, with sizes chosen so that each counter has one right
// value: three cudaMalloc blocks (the device peak is their sum), two freed; a stream-ordered
// block; 1 MiB pinned and 1 MiB managed, freed; then exit with the 3 MiB block still live at the
// line marked LEAK. It prints the totals it expects and, under the shim, what ndmem counted
// in-process; t_cuda_alloc.py checks both and the report against them.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "ndmem.h"

#define MIB (1024 * 1024)

static void check(cudaError_t e, const char *what, int line) {
  if (e == cudaSuccess) return;
  fprintf(stderr, "cuda_static: %s (line %d): %s\n", what, line, cudaGetErrorString(e));
  exit(1);
}
#define CK(x) check((x), #x, __LINE__)

static void print_kind(const char *name, const ndmem_kind_stats_t *k) {
  printf("inprocess %s allocs %llu frees %llu alloc_bytes %llu free_bytes %llu live %lld "
         "peak %lld\n",
         name, (unsigned long long)k->allocs, (unsigned long long)k->frees,
         (unsigned long long)k->alloc_bytes, (unsigned long long)k->free_bytes,
         (long long)k->live_bytes, (long long)k->peak_bytes);
}

int main(void) {
  void *a, *b, *c, *async, *pinned, *managed;
  cudaStream_t s;
  CK(cudaStreamCreate(&s));

  CK(cudaMalloc(&a, 4 * MIB)); // TEMP: freed below
  CK(cudaMalloc(&b, 2 * MIB)); // TEMP: freed below
  CK(cudaMalloc(&c, 3 * MIB)); // LEAK:device0 1 x 3145728
  // live: 9 MiB, the peak
  CK(cudaFree(a));
  CK(cudaFree(b));
  // stream-ordered: handed out from the device's default pool, given back to it
  CK(cudaMallocAsync(&async, 1 * MIB, s)); // TEMP: freed below
  CK(cudaMemsetAsync(async, 0, 1 * MIB, s));
  CK(cudaFreeAsync(async, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMallocHost(&pinned, 1 * MIB)); // TEMP: freed below
  CK(cudaMallocManaged(&managed, 1 * MIB, cudaMemAttachGlobal)); // TEMP: freed below
  ((char *)managed)[0] = 1; // touched on the host: managed memory, not device memory
  CK(cudaFreeHost(pinned));
  CK(cudaFree(managed));
  CK(cudaStreamDestroy(s));

  // What every count must be. device0: the three cudaMalloc blocks and the async one; pool: the
  // async one alone (the report's async class, and CUPTI's pool counts in t_cupti.py).
  printf("expect device0 allocs 4 frees 3 alloc_bytes %d free_bytes %d live %d peak %d\n",
         10 * MIB, 7 * MIB, 3 * MIB, 9 * MIB);
  printf("expect pool allocs 1 frees 1 alloc_bytes %d free_bytes %d\n", MIB, MIB);
  printf("expect pinned allocs 1 frees 1 alloc_bytes %d free_bytes %d live 0 peak %d\n", MIB, MIB,
         MIB);
  printf("expect managed allocs 1 frees 1 alloc_bytes %d free_bytes %d live 0 peak %d\n", MIB, MIB,
         MIB);

  // In-process view, when the shim is loaded (the API is weak: NULL without it).
  if (ndmem_device_stats && ndmem_stats) {
    ndmem_device_stats_t d = {};
    d.size = sizeof d;
    if (ndmem_device_stats(0, &d) == 0)
      printf("inprocess device_stats allocs %llu frees %llu live %lld peak %lld\n",
             (unsigned long long)d.allocs, (unsigned long long)d.frees, (long long)d.live_bytes,
             (long long)d.peak_bytes);
    static ndmem_stats_t st; // large: not on the stack
    st.size = sizeof st;
    if (ndmem_stats(&st, NDMEM_SCOPE_PROCESS) == 0) {
      print_kind("device0", &st.kind[NDMEM_KIND_DEVICE0]);
      print_kind("pinned", &st.kind[NDMEM_KIND_PINNED]);
      print_kind("managed", &st.kind[NDMEM_KIND_MANAGED]);
    }
  } else {
    printf("inprocess none (ndmem not loaded)\n");
  }
  fflush(stdout);
  return 0; // c stays allocated: the leak the report must show at the LEAK line
}
