// SPDX-License-Identifier: MIT
// t_dlopen: a library loaded after start-up allocates through the hooks like everything else:
// its constructor's block and its own calls are accounted exactly.
#include "../shimcheck.h"

#include <dlfcn.h>
#include <malloc.h>

int main(int argc, char **argv) {
  setvbuf(stderr, NULL, _IONBF, 0);
  if (argc < 2) return fprintf(stderr, "usage: t_dlopen LIBDLO\n"), 2;
  ndmem_stats_t s0 = THREAD_SNAP();
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) return fprintf(stderr, "dlopen: %s\n", dlerror()), 1;
  ndmem_stats_t s1 = THREAD_SNAP();
  size_t *ctor_usable = dlsym(h, "dlo_ctor_usable");
  void *(*dlo_alloc)(size_t) = __extension__(void *(*)(size_t))dlsym(h, "dlo_alloc");
  void (*dlo_free)(void *) = __extension__(void (*)(void *))dlsym(h, "dlo_free");
  void (*release)(void) = __extension__(void (*)(void))dlsym(h, "dlo_release_ctor_block");
  CHECK(ctor_usable && dlo_alloc && dlo_free && release);
  // dlopen itself allocates (link map, scope); the constructor's block is among what it left
  CHECK(D(s1, s0, HEAP, live_bytes) >= (long long)*ctor_usable);

  void *p = dlo_alloc(100000);
  ndmem_stats_t s2 = THREAD_SNAP();
  size_t up = malloc_usable_size(p);
  CHECK_EQ(D(s2, s1, HEAP, live_bytes), up);
  CHECK_EQ(DCALL(s2, s1, NDMEM_FN_CALLOC), 1);
  dlo_free(p);
  release();
  ndmem_stats_t s3 = THREAD_SNAP();
  CHECK_EQ(D(s3, s2, HEAP, live_bytes), -(long long)(up + *ctor_usable));
  CHECK_EQ(D(s3, s2, HEAP, frees), 2);
  dlclose(h);
  return CHECK_DONE();
}
