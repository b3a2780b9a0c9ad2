// SPDX-License-Identifier: MIT
// blocks.c: the table of live tracked blocks, keyed by address (see sites.h).
//
// Every free must ask "is this block tracked?" before the memory goes back to the allocator
// (after, another thread could be handed the same address and insert it). Most frees are of
// untracked blocks, so the question has to be cheap: the table is striped 256 ways by address
// hash; an empty stripe answers at once, and a non-empty one is probed without its lock under a
// sequence counter (a seqlock: writers make it odd while they change the stripe), so only a hit
// takes the lock. A miss is exact: only the freeing thread can remove its own block, and its
// insertion happened before the free. An old array stays mapped after a resize (a lock-free reader
// may still be looking at one), its pages given back: such a reader reads zeros, finds nothing,
// and its sequence check sends it to the lock. Before, they stayed resident: 29 MB of 58 in an
// import of torch with every block tracked.
#include "account/counters.h"
#include "common/os.h"
#include "account/sites.h"

#include <string.h>

#define STRIPES 256

typedef struct stripe {
  int lock;
  unsigned seq;   // odd while a writer changes the stripe
  size_t n, cap;  // n is read without the lock
  nd_block_t *v;  // open addressing, linear probing, addr 0 = empty
  char pad[24];
} stripe_t;

static stripe_t stripes[STRIPES];
// How many live blocks the byte sampler picked (blocks below NDMEM_TRACK_MIN), by another hash of
// the address into more buckets than stripes: a free of a small block, which only a sampled
// block can be, reads one counter of a small dense table, and with the few sampled blocks a heap
// holds (one per NDMEM_SAMPLE bytes) nearly every such free finds 0 and goes on.
#define SAMPLED_BUCKETS 4096
static uint32_t nsampled[SAMPLED_BUCKETS];
static size_t sampled_of(uintptr_t a) {
  return (size_t)(((a >> 4) * 0xc2b2ae3d27d4eb4full) >> 52) & (SAMPLED_BUCKETS - 1);
}

static size_t stripe_of(uintptr_t a) { return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 56); }
static size_t slot_of(uintptr_t a, size_t cap) {
  return (size_t)(((a >> 4) * 0xff51afd7ed558ccdull) >> 20) & (cap - 1);
}

static void lock(stripe_t *s) {
  nd_spin_lock(&s->lock);
  __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}
static void unlock(stripe_t *s) {
  __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
  nd_spin_unlock(&s->lock);
}

static void put(nd_block_t *v, size_t cap, const nd_block_t *b) {
  size_t j = slot_of(b->addr, cap);
  while (__atomic_load_n(&v[j].addr, __ATOMIC_RELAXED)) j = (j + 1) & (cap - 1);
  nd_block_t copy = *b;
  copy.addr = 0;
  v[j] = copy;
  __atomic_store_n(&v[j].addr, b->addr, __ATOMIC_RELEASE);
}

void nd_blocks_insert(const nd_block_t *b) {
  stripe_t *s = &stripes[stripe_of(b->addr)];
  lock(s);
  if ((s->n + 1) * 4 > s->cap * 3) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    nd_block_t *v = nd_os_map(cap * sizeof *v);
    if (!v) { // out of memory for the table: the block goes untracked
      unlock(s);
      return;
    }
    nd_block_t *old = s->v;
    size_t old_cap = s->cap;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i].addr) put(v, cap, &old[i]);
    // The array before its larger capacity: a reader that loads cap then v (acquire) never pairs
    // a larger capacity with a smaller array.
    __atomic_store_n(&s->v, v, __ATOMIC_RELEASE);
    __atomic_store_n(&s->cap, cap, __ATOMIC_RELEASE);
    if (old) nd_os_release(old, old_cap * sizeof *old);
  }
  put(s->v, s->cap, b);
  __atomic_store_n(&s->n, s->n + 1, __ATOMIC_RELAXED);
  if (b->site && b->site->sampled)
    __atomic_fetch_add(&nsampled[sampled_of(b->addr)], 1, __ATOMIC_RELAXED);
  unlock(s);
}

void nd_blocks_prefetch(uintptr_t addr) {
  stripe_t *s = &stripes[stripe_of(addr)];
  size_t cap = __atomic_load_n(&s->cap, __ATOMIC_ACQUIRE);
  nd_block_t *v = __atomic_load_n(&s->v, __ATOMIC_ACQUIRE);
  // A racing resize leaves v an old array: still mapped (never unmapped), so the hint is harmless.
  if (v && cap) __builtin_prefetch(&v[slot_of(addr, cap)], 1, 3);
}

int nd_blocks_maybe(uintptr_t addr) {
  return __atomic_load_n(&stripes[stripe_of(addr)].n, __ATOMIC_RELAXED) != 0;
}

int nd_blocks_maybe_sampled(uintptr_t addr) {
  return __atomic_load_n(&nsampled[sampled_of(addr)], __ATOMIC_RELAXED) != 0;
}

// Probe without the lock; returns 1 found (its slot in *slot), 0 not found, -1 the stripe
// changed meanwhile. *seq: the sequence the answer holds for.
static int probe_unlocked(stripe_t *s, uintptr_t addr, unsigned *seq_out, size_t *slot) {
  unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
  *seq_out = seq;
  if (seq & 1) return -1;
  size_t cap = __atomic_load_n(&s->cap, __ATOMIC_ACQUIRE); // before v: see insert
  nd_block_t *v = __atomic_load_n(&s->v, __ATOMIC_ACQUIRE);
  int found = 0;
  if (v && cap) {
    for (size_t j = slot_of(addr, cap), k = 0; k < cap; j = (j + 1) & (cap - 1), k++) {
      uintptr_t a = __atomic_load_n(&v[j].addr, __ATOMIC_RELAXED);
      if (!a) break;
      if (a == addr) {
        found = 1;
        *slot = j;
        break;
      }
    }
  }
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq ? found : -1;
}

int nd_blocks_take(uintptr_t addr, nd_block_t *out) {
  stripe_t *s = &stripes[stripe_of(addr)];
  if (!__atomic_load_n(&s->n, __ATOMIC_RELAXED)) return 0;
  unsigned seq;
  size_t j = 0;
  int found = probe_unlocked(s, addr, &seq, &j);
  if (found == 0) return 0;
  lock(s);
  size_t cap = s->cap;
  // A hit whose stripe no writer touched since (lock made seq odd from exactly that value) is
  // still in slot j: with every block tracked nearly every free hits, and probes only once.
  if (found < 0 || s->seq != seq + 1) {
    found = 0;
    j = slot_of(addr, cap);
    for (size_t k = 0; k < cap && s->v[j].addr; j = (j + 1) & (cap - 1), k++)
      if (s->v[j].addr == addr) {
        found = 1;
        break;
      }
  }
  if (found) {
    *out = s->v[j];
    // Backward-shift deletion keeps every probe chain intact without tombstones.
    size_t hole = j;
    for (size_t i = (j + 1) & (cap - 1); s->v[i].addr; i = (i + 1) & (cap - 1)) {
      size_t home = slot_of(s->v[i].addr, cap);
      if (((i - home) & (cap - 1)) >= ((i - hole) & (cap - 1))) {
        s->v[hole] = s->v[i];
        hole = i;
      }
    }
    __atomic_store_n(&s->v[hole].addr, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->n, s->n - 1, __ATOMIC_RELAXED);
    if (out->site && out->site->sampled)
      __atomic_fetch_sub(&nsampled[sampled_of(addr)], 1, __ATOMIC_RELAXED);
  }
  unlock(s);
  return found;
}

int nd_blocks_find(uintptr_t addr, nd_block_t *out) {
  stripe_t *s = &stripes[stripe_of(addr)];
  if (!__atomic_load_n(&s->n, __ATOMIC_RELAXED)) return 0;
  lock(s);
  int found = 0;
  for (size_t j = slot_of(addr, s->cap), k = 0; k < s->cap && s->v[j].addr; j = (j + 1) & (s->cap - 1), k++)
    if (s->v[j].addr == addr) {
      *out = s->v[j];
      found = 1;
      break;
    }
  unlock(s);
  return found;
}

void nd_blocks_each(nd_blocks_fn fn, void *ctx) {
  for (int i = 0; i < STRIPES; i++) {
    stripe_t *s = &stripes[i];
    lock(s);
    for (size_t j = 0; j < s->cap; j++)
      if (s->v[j].addr) fn(ctx, &s->v[j]);
    unlock(s);
  }
}

int nd_blocks_each_stopped(nd_blocks_fn fn, void *ctx) {
  for (int i = 0; i < STRIPES; i++)
    if ((__atomic_load_n(&stripes[i].seq, __ATOMIC_ACQUIRE) & 1) ||
        __atomic_load_n(&stripes[i].lock, __ATOMIC_ACQUIRE))
      return -1;
  for (int i = 0; i < STRIPES; i++) {
    stripe_t *s = &stripes[i];
    for (size_t j = 0; j < s->cap; j++)
      if (s->v[j].addr) fn(ctx, &s->v[j]);
  }
  return 0;
}

void nd_blocks_atfork_prepare(void) {
  for (int i = 0; i < STRIPES; i++) lock(&stripes[i]);
}
void nd_blocks_atfork_parent(void) {
  for (int i = 0; i < STRIPES; i++) unlock(&stripes[i]);
}
void nd_blocks_atfork_child(void) { nd_blocks_atfork_parent(); }
