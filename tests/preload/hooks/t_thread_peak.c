// SPDX-License-Identifier: MIT
// t_thread_peak: the process's heap peak is exact when one thread allocates, whichever thread it
// is. A worker allocates and frees a 100 000 B block 100 times while main waits in its join: the
// peak is what main held when it started the worker plus the block (its pending change never
// passed the publishing step, and it ended at 0). Then two workers in turn, each with its own
// block size: the larger one's. A first thread is made and joined before the measures, so the
// workers reuse its cached stack and thread vector (pthread_create then allocates nothing).
#include "../shimcheck.h"

#include <malloc.h>
#include <pthread.h>

static size_t usable[2];

static void *worker(void *arg) {
  size_t size = (size_t)arg;
  for (int i = 0; i < 100; i++) {
    void *p = malloc(size);
    ((volatile char *)p)[0] = 1;
    size_t u = malloc_usable_size(p); // glibc's own or a workspace's: the largest counts
    if (u > usable[size > 100000]) usable[size > 100000] = u;
    free(p);
  }
  return NULL;
}

static void *nothing(void *arg) { return arg; }

static void run(size_t size) {
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, worker, (void *)size), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
}

int main(void) {
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, nothing, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  ndmem_stats_t b0 = PROC_SNAP();
  run(100000);
  ndmem_stats_t b1 = PROC_SNAP();
  long long want = b0.kind[HEAP].live_bytes + (long long)usable[0];
  CHECK_EQ(b1.kind[HEAP].peak_bytes, want > b0.kind[HEAP].peak_bytes ? want : b0.kind[HEAP].peak_bytes);
  CHECK_EQ(b1.kind[HEAP].live_bytes, b0.kind[HEAP].live_bytes);
  run(200000);
  ndmem_stats_t b2 = PROC_SNAP();
  want = b1.kind[HEAP].live_bytes + (long long)usable[1];
  CHECK_EQ(b2.kind[HEAP].peak_bytes, want > b1.kind[HEAP].peak_bytes ? want : b1.kind[HEAP].peak_bytes);
  CHECK(b2.kind[HEAP].peak_bytes > b1.kind[HEAP].peak_bytes);
  printf("heap peak %lld = %lld held + %zu\n", (long long)b2.kind[HEAP].peak_bytes,
         (long long)b1.kind[HEAP].live_bytes, usable[1]);
  return CHECK_DONE();
}
