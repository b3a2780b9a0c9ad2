// SPDX-License-Identifier: MIT
// t_threads: 8 threads allocate blocks and hand them to their neighbour, which frees them.
// Per-thread counters record the flows (own allocations, neighbour's frees) and the process
// totals come out exact: every byte allocated is freed, nothing is lost or double-counted.
#include "../shimcheck.h"

#include <malloc.h>
#include <pthread.h>

#define THREADS 8
#define BLOCKS 20000
#define ROUNDS 3

static void *blocks[THREADS][BLOCKS];
static long long own_bytes[THREADS], freed_bytes[THREADS];
static ndmem_stats_t before[THREADS], after[THREADS];
static pthread_barrier_t barrier;

static void *worker(void *arg) {
  int id = (int)(long)arg, next = (id + 1) % THREADS;
  unsigned x = 2463534242u + (unsigned)id;
  pthread_barrier_wait(&barrier); // all threads up; main takes its snapshot
  pthread_barrier_wait(&barrier);
  before[id] = THREAD_SNAP();
  for (int round = 0; round < ROUNDS; round++) {
    for (int i = 0; i < BLOCKS; i++) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      blocks[id][i] = malloc(1 + x % 3000);
      own_bytes[id] += (long long)malloc_usable_size(blocks[id][i]);
    }
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < BLOCKS; i++) { // free the neighbour's blocks
      freed_bytes[id] += (long long)malloc_usable_size(blocks[next][i]);
      free(blocks[next][i]);
    }
    pthread_barrier_wait(&barrier);
  }
  after[id] = THREAD_SNAP();
  pthread_barrier_wait(&barrier); // main takes its snapshot while all threads are alive
  pthread_barrier_wait(&barrier);
  return NULL;
}

int main(void) {
  setvbuf(stderr, NULL, _IONBF, 0);
  pthread_t t[THREADS];
  pthread_barrier_init(&barrier, NULL, THREADS + 1);
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  pthread_barrier_wait(&barrier);
  ndmem_stats_t p0 = PROC_SNAP();
  pthread_barrier_wait(&barrier);
  for (int r = 0; r < ROUNDS; r++) {
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
  }
  pthread_barrier_wait(&barrier);
  ndmem_stats_t p1 = PROC_SNAP();
  pthread_barrier_wait(&barrier);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);

  long long all = 0, net = 0;
  for (int i = 0; i < THREADS; i++) {
    CHECK_EQ(D(after[i], before[i], HEAP, allocs), ROUNDS * BLOCKS);
    CHECK_EQ(D(after[i], before[i], HEAP, frees), ROUNDS * BLOCKS);
    CHECK_EQ(D(after[i], before[i], HEAP, alloc_bytes), own_bytes[i]);
    CHECK_EQ(D(after[i], before[i], HEAP, free_bytes), freed_bytes[i]);
    CHECK_EQ(D(after[i], before[i], HEAP, live_bytes), own_bytes[i] - freed_bytes[i]);
    CHECK(after[i].tid != after[(i + 1) % THREADS].tid);
    all += own_bytes[i];
    net += own_bytes[i] - freed_bytes[i];
  }
  CHECK_EQ(net, 0);
  CHECK_EQ(D(p1, p0, HEAP, allocs), THREADS * ROUNDS * BLOCKS);
  CHECK_EQ(D(p1, p0, HEAP, frees), THREADS * ROUNDS * BLOCKS);
  CHECK_EQ(D(p1, p0, HEAP, alloc_bytes), all);
  CHECK_EQ(D(p1, p0, HEAP, free_bytes), all);
  CHECK_EQ(D(p1, p0, HEAP, live_bytes), 0);
  CHECK_EQ(DCALL(p1, p0, NDMEM_FN_FREE), THREADS * ROUNDS * BLOCKS);
  CHECK(p1.threads >= THREADS + 1);

  // after the threads exit their shards are folded into the process totals, not lost
  ndmem_stats_t p2 = PROC_SNAP();
  CHECK(D(p2, p1, HEAP, allocs) >= 0);
  CHECK(p2.kind[HEAP].alloc_bytes >= p1.kind[HEAP].alloc_bytes);
  return CHECK_DONE();
}
