// SPDX-License-Identifier: MIT
// track.c: which blocks are tracked, and tracking them into their sites and the live-block table.
// Blocks of at least NDMEM_TRACK_MIN requested bytes are tracked exactly; smaller ones by byte
// sampling (a Poisson process over bytes, as jemalloc and tcmalloc sample), weighted so that the
// estimates of bytes and counts are unbiased. The trace writer (output/trace.c) turns it on and
// is started by the first tracked block.
#include "account/track.h"

#include "account/sites.h"
#include "runtime/module.h"
#include "common/os.h"
#include "runtime/shim.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

size_t nd_track_min = SIZE_MAX;
uint64_t nd_cycle_clock, nd_steady_ns;
static int on;             // the trace is set up: blocks are tracked
static double sample_mean; // NDMEM_SAMPLE: the mean bytes between two samples
static int *writer_started; // the writer's (atomic), and how it is started
static void (*start_writer)(void);

void nd_track_setup(double mean, size_t track_min, int *started, void (*start)(void)) {
  sample_mean = mean;
  nd_track_min = track_min;
  writer_started = started;
  start_writer = start;
  on = 1;
}

static uint64_t next_rand(nd_tls_t *t) {
  uint64_t x = t->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return t->rng = x;
}

// Exponential with mean R: the distance to the next sample of a Poisson process over bytes.
static int64_t next_interval(nd_tls_t *t) {
  if (sample_mean <= 0) return INT64_MAX;
  double u = ((double)(next_rand(t) >> 11) + 0.5) / 9007199254740992.0; // (0,1)
  double v = -log(u) * sample_mean;
  return v > 9e18 ? INT64_MAX : (int64_t)v + 1;
}

static void thread_init(nd_tls_t *t) { // the sampler's state
  t->rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)nd_os_gettid() << 17) ^ nd_os_mono_ns();
  if (!t->rng) t->rng = 1;
  t->sample_left = on ? next_interval(t) : INT64_MAX;
}

// ---------------------------------------------------------------- tracking

// A tracked block's birth time: the kernel's tick-resolution monotonic clock (1-4 ms), a load
// from the vDSO page (~5 ns) where CLOCK_MONOTONIC reads the TSC and scales it (~25 ns, a tenth
// of what tracking a small block costs when every block is tracked). Same time base.
// A fork child's blocks are born after its trace's start (the fork, on the precise clock), which
// the coarse clock may lag by a tick: what was born at or before it is the parent's, inherited
// (ndmemreport classes it so), and a child's own block must never read as such. 0 in a process
// that is no fork child.
static uint64_t fork_ns;
// A fork child's cycles are its own, counted from 0 (a DataLoader worker's loop is not its
// parent's training loop): its flush windows then close at every flush until it closes a cycle of
// its own, as in any job without cycles, and its steady state is the one its own cycles begin.
void nd_track_fork(uint64_t start_ns) {
  fork_ns = start_ns;
  __atomic_store_n(&nd_cycle_clock, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&nd_steady_ns, 0, __ATOMIC_RELAXED);
}
static inline uint64_t birth_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  uint64_t ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  return ND_UNLIKELY(ns <= fork_ns) ? fork_ns + 1 : ns;
}

// A block of size s is sampled with probability 1 - exp(-s/R); weighting it by the inverse makes
// the estimate of bytes unbiased. Counts are estimated the same way. A function of s alone (R is
// fixed at start-up), so the block table does not keep it: the free computes what the
// allocation added.
// Past s/R = 38, 1 - exp(-s/R) is 1.0 in a double: exp is not called there, where it would
// underflow and set errno (a free must leave errno alone).
static void sample_weigh(uint64_t req, uint64_t *count, uint64_t *weight) {
  double s = (double)(req ? req : 1), x = s / sample_mean, pr = x > 38 ? 1.0 : 1.0 - exp(-x);
  double w = s / (pr > 0 ? pr : 1);
  *weight = (uint64_t)(w + 0.5);
  *count = (uint64_t)(w / s + 0.5);
  if (!*count) *count = 1;
}

void nd_track_weigh(const nd_block_t *b, uint64_t *count, uint64_t *weight) {
  if (b->site->sampled) sample_weigh(b->size, count, weight);
  else *count = 1, *weight = b->size;
}

void nd_track_alloc(nd_tls_t *t, void *p, size_t req, int kind) {
  if (!on) return;
  nd_blocks_prefetch((uintptr_t)p);
  int exact = req >= nd_track_min;
  uint64_t weight = req, count = 1;
  if (!exact) {
    t->sample_left = next_interval(t);
    sample_weigh(req, &count, &weight);
  }
  nd_site_t *site = nd_site_here(kind, !exact);
  if (!site) return;
  nd_site_add(site, count, weight);
  nd_block_t b = {(uintptr_t)p, site, req, birth_ns(),
                  __atomic_load_n(&nd_cycle_clock, __ATOMIC_RELAXED)};
  nd_blocks_insert(&b);
  if (!__atomic_load_n(writer_started, __ATOMIC_RELAXED)) start_writer();
}

int nd_track_inherited(uint64_t born_ns) { return fork_ns && born_ns <= fork_ns; }

void nd_track_untrack(const nd_block_t *b) {
  if (ND_UNLIKELY(nd_track_inherited(b->mono_ns))) return; // the parent's (sites.h)
  uint64_t count, weight;
  nd_track_weigh(b, &count, &weight);
  nd_site_sub(b->site, count, weight);
}

void nd_track_free(void *p) {
  nd_block_t b;
  if (nd_blocks_take((uintptr_t)p, &b)) nd_track_untrack(&b);
}

int nd_track_take(void *p, void *out) { return nd_blocks_take((uintptr_t)p, out); }

void nd_track_restore(const void *block) { nd_blocks_insert(block); }

void nd_cycle_closed(uint64_t cycles) {
  uint64_t c = __atomic_load_n(&nd_cycle_clock, __ATOMIC_RELAXED), zero = 0;
  while (cycles > c && !__atomic_compare_exchange_n(&nd_cycle_clock, &c, cycles, 1,
                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  if (!__atomic_load_n(&nd_steady_ns, __ATOMIC_RELAXED))
    __atomic_compare_exchange_n(&nd_steady_ns, &zero, nd_os_mono_ns(), 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
}

struct nd_site *nd_track_site_here(int kind) { return on ? nd_site_here(kind, 0) : NULL; }

ND_MODULE(nd_track_module) = {.name = "track", .order = 2, .thread_init = thread_init};
