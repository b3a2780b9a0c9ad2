// SPDX-License-Identifier: MIT
// mallinfo_cost: what one allocator reading costs ndmem's flush (interpose/runtime/allocstat.c) on a
// fragmented glibc heap: N small blocks allocated, every other one freed (N/2 free chunks that
// cannot merge), across T threads' arenas, then mallinfo2() timed (the minimum and the median of
// R calls). It walks every free chunk under each arena's lock, so its cost grows with them; the
// flush asks it only when the resident - tracked gap moved by 16 MiB and 10 %.
// usage: mallinfo_cost [N (default 2000000)] [T (default 1)] [R (default 21)]
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t per_thread;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// N blocks of 32..272 bytes; the odd ones freed: free chunks in fast, small and unsorted bins
// (the first 7 of a size go to the thread's tcache, which mallinfo2 does not walk).
static void *fragment(void *arg) {
  (void)arg;
  void **p = malloc(per_thread * sizeof *p);
  if (!p) return NULL;
  for (size_t i = 0; i < per_thread; i++) p[i] = malloc(32 + (i % 16) * 16);
  for (size_t i = 1; i < per_thread; i += 2) free(p[i]);
  return p; // the even ones stay: the freed chunks between them cannot merge
}

static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
  int threads = argc > 2 ? atoi(argv[2]) : 1, reps = argc > 3 ? atoi(argv[3]) : 21;
  if (threads < 1 || threads > 64 || reps < 1 || reps > 1000 || n < 2)
    return fprintf(stderr, "usage: mallinfo_cost [N] [THREADS 1-64] [REPS 1-1000]\n"), 2;
  per_thread = n / (size_t)threads;
  pthread_t th[64];
  for (int t = 1; t < threads; t++) pthread_create(&th[t], NULL, fragment, NULL);
  fragment(NULL);
  for (int t = 1; t < threads; t++) pthread_join(th[t], NULL); // their arenas keep the chunks
  uint64_t ns[1000];
  struct mallinfo2 m = {0};
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = now_ns();
    m = mallinfo2();
    ns[r] = now_ns() - t0;
  }
  qsort(ns, (size_t)reps, sizeof *ns, cmp);
  printf("blocks %zu freed %zu threads %d: fordblks %zu B in %zu free chunks (ordblks) + %zu B "
         "fastbins; mallinfo2 min %.3f ms, median %.3f ms (%d calls)\n",
         per_thread * (size_t)threads, per_thread / 2 * (size_t)threads, threads, m.fordblks,
         m.ordblks, m.fsmblks, (double)ns[0] / 1e6, (double)ns[reps / 2] / 1e6, reps);
  return 0;
}
