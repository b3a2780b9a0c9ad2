// SPDX-License-Identifier: MIT
// t_jemalloc: with LD_PRELOAD="libndmem.so libjemalloc.so.2" jemalloc stays the allocator (its
// own statistics see the bytes) while ndmem accounts them at jemalloc's usable sizes. pvalloc,
// which jemalloc lacks, is built from jemalloc's memalign instead of falling through to glibc's
// heap (which jemalloc's free could not take back), and is counted as a fallback.
#include "../shimcheck.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

int main(void) {
  setvbuf(stderr, NULL, _IONBF, 0);
  mallctl_fn mallctl = __extension__(mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
  if (!mallctl) return fprintf(stderr, "jemalloc is not loaded\n"), 1;
  uint64_t *allocated = NULL;
  size_t sz = sizeof allocated;
  CHECK_EQ(mallctl("thread.allocatedp", &allocated, &sz, NULL, 0), 0);

  uint64_t je0 = *allocated;
  ndmem_stats_t s0 = THREAD_SNAP();
  void *p = malloc(100);
  ndmem_stats_t s1 = THREAD_SNAP();
  uint64_t je1 = *allocated;
  CHECK_EQ(je1 - je0, malloc_usable_size(p)); // jemalloc served it (100 -> its 112-byte class)
  CHECK_EQ(D(s1, s0, HEAP, live_bytes), malloc_usable_size(p));
  free(p);

  long page = sysconf(_SC_PAGESIZE);
  ndmem_stats_t s2 = THREAD_SNAP();
  void *pv = pvalloc(100);
  ndmem_stats_t s3 = THREAD_SNAP();
  CHECK(pv != NULL && (uintptr_t)pv % (uintptr_t)page == 0);
  CHECK(malloc_usable_size(pv) >= (size_t)page);
  CHECK_EQ(D(s3, s2, HEAP, live_bytes), malloc_usable_size(pv));
  CHECK_EQ((long long)s3.fallbacks[NDMEM_FB_SYNTHESIZED] - (long long)s2.fallbacks[NDMEM_FB_SYNTHESIZED], 1);
  free(pv); // jemalloc's free: would crash if pv came from glibc's heap

  void *a = NULL;
  CHECK_EQ(posix_memalign(&a, 4096, 10000), 0);
  CHECK_EQ((uintptr_t)a % 4096, 0);
  void *r = reallocarray(NULL, 100, 100); // jemalloc has no reallocarray; ndmem provides it
  CHECK(r != NULL && malloc_usable_size(r) >= 10000);
  ndmem_stats_t s4 = THREAD_SNAP();
  free(a);
  free(r);
  ndmem_stats_t s5 = THREAD_SNAP();
  CHECK_EQ(D(s5, s4, HEAP, frees), 2);
  CHECK_EQ(D(s5, s2, HEAP, live_bytes), 0);
  return CHECK_DONE();
}
