// SPDX-License-Identifier: MIT
// test_blocks: the live-block table returns exactly what was inserted, once; misses are exact;
// it survives growth; and 4 threads inserting and taking their own keys while the others do the
// same (resizes, backward-shift deletions, lock-free probes) lose and invent nothing.
#include "../check.h"
#include "account/sites.h"

#include <pthread.h>

#define THREADS 4
#define KEYS 50000

static int thread_errors[THREADS];

static void *worker(void *arg) {
  int id = (int)(long)arg;
  uintptr_t base = (uintptr_t)(id + 1) << 40;
  for (int round = 0; round < 3; round++) {
    for (uintptr_t i = 0; i < KEYS; i++) {
      nd_block_t b = {base + i * 16, NULL, i, (uint64_t)round, 0};
      nd_blocks_insert(&b);
    }
    for (uintptr_t i = 0; i < KEYS; i++) {
      nd_block_t out;
      uintptr_t k = base + ((i * 7919) % KEYS) * 16; // take in another order
      if (!nd_blocks_take(k, &out) || out.size != (k - base) / 16 || out.mono_ns != (uint64_t)round)
        thread_errors[id]++;
      if (nd_blocks_take(k, &out)) thread_errors[id]++; // gone now
    }
  }
  return NULL;
}

static void count_each(void *ctx, const nd_block_t *b) {
  (void)b;
  (*(int *)ctx)++;
}

int main(void) {
  nd_block_t out;
  CHECK_EQ(nd_blocks_take(0x1000, &out), 0);
  CHECK_EQ(nd_blocks_maybe(0x1000), 0);
  nd_block_t b = {0x1000, NULL, 100, 7, 9};
  nd_blocks_insert(&b);
  CHECK_EQ(nd_blocks_maybe(0x1000), 1);
  CHECK_EQ(nd_blocks_take(0x1010, &out), 0);
  CHECK_EQ(nd_blocks_take(0x1000, &out), 1);
  CHECK(out.addr == 0x1000 && out.size == 100 && out.mono_ns == 7 && out.cycle == 9);
  CHECK_EQ(nd_blocks_take(0x1000, &out), 0);

  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < THREADS; i++) CHECK_EQ(thread_errors[i], 0);
  int n = 0;
  nd_blocks_each(count_each, &n);
  CHECK_EQ(n, 0);
  for (uintptr_t i = 1; i <= 1000; i++) {
    nd_block_t x = {i * 4096, NULL, i, 0, 0};
    nd_blocks_insert(&x);
  }
  nd_blocks_each(count_each, &n);
  CHECK_EQ(n, 1000);
  return CHECK_DONE();
}
