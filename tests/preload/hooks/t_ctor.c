// SPDX-License-Identifier: MIT
// t_ctor: allocations made by a library constructor before main are accounted exactly, and the
// block can be freed from main with the counters returning exactly.
#include "../shimcheck.h"

extern void *ctor_block;
extern size_t ctor_usable;
extern long long ctor_delta;

int main(void) {
  CHECK(ctor_block != NULL);
  CHECK_EQ(ctor_delta, ctor_usable);
  ndmem_stats_t s0 = THREAD_SNAP();
  free(ctor_block);
  ndmem_stats_t s1 = THREAD_SNAP();
  CHECK_EQ(D(s1, s0, HEAP, live_bytes), -(long long)ctor_usable);
  CHECK_EQ(D(s1, s0, HEAP, frees), 1);
  return CHECK_DONE();
}
