// SPDX-License-Identifier: MIT
// test_counters: per-thread shards sum to exact process totals; cross-shard frees balance;
// publishing gives an exact peak for one shard; exited shards are folded, not lost, and reused
// zeroed; the late (post-teardown) path and fork-child retirement keep totals exact.
#include "../check.h"
#include "account/counters.h"

// Same live state: every counter but the peak (publishing may raise a peak, never a count).
static int same_counts(const ndmem_stats_t *a, const ndmem_stats_t *b) {
  for (int i = 0; i < NDMEM_KIND_COUNT; i++) {
    const ndmem_kind_stats_t *x = &a->kind[i], *y = &b->kind[i];
    if (x->allocs != y->allocs || x->frees != y->frees || x->alloc_bytes != y->alloc_bytes ||
        x->free_bytes != y->free_bytes || x->live_bytes != y->live_bytes)
      return 0;
  }
  return 1;
}

static ndmem_stats_t proc(void) {
  ndmem_stats_t s;
  nd_counters_snapshot_process(&s);
  return s;
}

int main(void) {
  nd_shard_t *a = nd_shard_acquire(101), *b = nd_shard_acquire(102);
  CHECK(a && b && a != b);
  for (int i = 0; i < 100; i++) nd_count_alloc(a, NDMEM_KIND_HEAP, 1000);
  ndmem_stats_t ts;
  nd_counters_snapshot_shard(a, &ts);
  CHECK_EQ(ts.kind[NDMEM_KIND_HEAP].allocs, 100);
  CHECK_EQ(ts.kind[NDMEM_KIND_HEAP].live_bytes, 100000);
  CHECK_EQ(ts.kind[NDMEM_KIND_HEAP].peak_bytes, 100000);
  CHECK_EQ(ts.tid, 101);
  for (int i = 0; i < 100; i++) nd_count_free(b, NDMEM_KIND_HEAP, 1000); // freed elsewhere
  ndmem_stats_t p = proc();
  CHECK_EQ(p.kind[NDMEM_KIND_HEAP].live_bytes, 0);
  CHECK_EQ(p.kind[NDMEM_KIND_HEAP].live_count, 0);
  CHECK_EQ(p.kind[NDMEM_KIND_HEAP].alloc_bytes, 100000);
  CHECK_EQ(p.threads, 2);
  nd_counters_snapshot_shard(b, &ts);
  CHECK_EQ(ts.kind[NDMEM_KIND_HEAP].live_bytes, -100000);

  // A 300 KiB rise crosses the publish threshold: the peak is published exactly.
  nd_count_alloc(a, NDMEM_KIND_MMAP, 100 << 10);
  nd_count_alloc(a, NDMEM_KIND_MMAP, 200 << 10);
  nd_count_free(a, NDMEM_KIND_MMAP, 200 << 10);
  p = proc();
  CHECK_EQ(p.kind[NDMEM_KIND_MMAP].peak_bytes, 300 << 10);
  CHECK_EQ(p.kind[NDMEM_KIND_MMAP].live_bytes, 100 << 10);
  // Below the threshold the peak shows once the shard publishes (as at exit and in ndmem_stats).
  nd_count_alloc(b, NDMEM_KIND_PINNED, 4096);
  nd_count_free(b, NDMEM_KIND_PINNED, 4096);
  nd_shard_publish(b, NDMEM_KIND_PINNED);
  CHECK_EQ(proc().kind[NDMEM_KIND_PINNED].peak_bytes, 4096);

  // device kinds are independent dimensions
  nd_count_adjust(a, NDMEM_KIND_DEVICE0 + 3, 2, 1 << 20, 0, 0);
  p = proc();
  CHECK_EQ(p.kind[NDMEM_KIND_DEVICE0 + 3].live_count, 2);
  CHECK_EQ(p.kind[NDMEM_KIND_DEVICE0 + 3].live_bytes, 1 << 20);
  CHECK_EQ(p.kind[NDMEM_KIND_DEVICE0].live_bytes, 0);

  // thread exit: the shard's counts move into the retired totals; the shard is reused zeroed
  ND_BUMP(a->calls[NDMEM_FN_MALLOC], 100);
  ndmem_stats_t before = proc();
  nd_shard_release(a);
  ndmem_stats_t after = proc();
  // a's unpublished 100000 B rise is published on release: the heap peak now shows it
  CHECK_EQ(after.kind[NDMEM_KIND_HEAP].peak_bytes, 100000);
  CHECK(same_counts(&before, &after));
  CHECK_EQ(after.calls[NDMEM_FN_MALLOC], 100);
  nd_shard_t *c = nd_shard_acquire(103);
  CHECK(c == a);
  nd_counters_snapshot_shard(c, &ts);
  CHECK_EQ(ts.kind[NDMEM_KIND_HEAP].allocs, 0);
  CHECK_EQ(ts.tid, 103);

  // late path: atomic, counted as a fallback
  nd_late_alloc(NDMEM_KIND_HEAP, 64, NDMEM_FN_MALLOC);
  nd_late_free(NDMEM_KIND_HEAP, 64, NDMEM_FN_FREE);
  p = proc();
  CHECK_EQ(p.kind[NDMEM_KIND_HEAP].live_bytes, after.kind[NDMEM_KIND_HEAP].live_bytes);
  CHECK_EQ(p.fallbacks[NDMEM_FB_LATE_THREAD], 2);

  // fork child: only the forking thread's shard stays owned; the others are retired intact
  before = proc();
  nd_counters_atfork_prepare();
  nd_counters_atfork_child(c);
  after = proc();
  CHECK(same_counts(&before, &after));
  CHECK_EQ(after.threads, 1);
  CHECK_EQ(b->state, ND_SHARD_FREE);
  CHECK_EQ(c->state, ND_SHARD_OWNED);
  return CHECK_DONE();
}
