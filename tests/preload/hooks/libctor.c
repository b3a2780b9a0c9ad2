// SPDX-License-Identifier: MIT
// libctor: a library whose constructor allocates before main (and possibly before the shim's
// own constructor has run). t_ctor links it and checks the block was accounted.
#include "../shimcheck.h"

#include <malloc.h>

void *ctor_block;
size_t ctor_usable;
long long ctor_delta = -1;

__attribute__((constructor)) static void ctor_alloc(void) {
  // The very first thing: an allocation, before anything asks ndmem for its state.
  void *first = malloc(777);
  ndmem_stats_t a = THREAD_SNAP();
  CHECK(a.kind[HEAP].allocs >= 1 && a.calls[NDMEM_FN_MALLOC] >= 1);
  CHECK(a.kind[HEAP].alloc_bytes >= malloc_usable_size(first));
  free(first);
  ndmem_stats_t b0 = THREAD_SNAP();
  ctor_block = malloc(12345);
  ndmem_stats_t b1 = THREAD_SNAP();
  ctor_usable = malloc_usable_size(ctor_block);
  ctor_delta = D(b1, b0, HEAP, live_bytes);
}
