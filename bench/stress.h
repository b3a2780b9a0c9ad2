// SPDX-License-Identifier: MIT
// stress.h: what stress.c and larson.c share: a per-thread PRNG, the pattern written into every
// block (decoded again before the block is freed, so two live blocks sharing memory or a block
// freed twice is caught), argument parsing, and --check: ndmem's process counters over the
// workload compared with the program's own counts of its malloc and free calls.
#ifndef ND_BENCH_STRESS_H
#define ND_BENCH_STRESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ndmem.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)

static inline uint64_t mix64(uint64_t x) { // splitmix64 finalizer
  x ^= x >> 30;
  x *= UINT64_C(0xBF58476D1CE4E5B9);
  x ^= x >> 27;
  x *= UINT64_C(0x94D049BB133111EB);
  return x ^ (x >> 31);
}

// splitmix64: one PRNG per thread, seeded from (run seed, stream), so a thread's choices depend
// only on the seed, never on how the threads were scheduled.
static inline uint64_t rnd(uint64_t *s) { return mix64(*s += GOLDEN); }
static inline uint64_t rnd_seed(uint64_t seed, uint64_t a, uint64_t b) {
  return mix64(mix64(seed ^ GOLDEN) ^ (a << 32 ^ b));
}

// ---------------------------------------------------------------- the pattern
// Word 0 holds the size, xored with a key derived from the block's address and the run seed;
// word i holds key ^ i * GOLDEN. Blocks up to 1 KiB get every word, larger ones one word per
// 64-byte line (and the last word), so every page of a large block is written and read back.
// Sizes are at least 8 bytes.
static uint64_t pattern_seed;

static inline uint64_t block_key(const void *p) { return mix64((uint64_t)(uintptr_t)p ^ pattern_seed); }

static inline void block_fill(void *p, size_t size) {
  uint64_t *w = p, key = block_key(p);
  size_t n = size / 8, step = size <= KiB ? 1 : 8;
  w[0] = (uint64_t)size ^ key;
  for (size_t i = 1; i < n; i += step) w[i] = key ^ (i * GOLDEN);
  if (n > 1) w[n - 1] = key ^ ((n - 1) * GOLDEN);
}

// The block's size if its pattern is intact, else 0 (and *bad_word says where).
static inline size_t block_check(const void *p, size_t max_size, size_t *bad_word) {
  const uint64_t *w = p;
  uint64_t key = block_key(p), size = w[0] ^ key;
  *bad_word = 0;
  if (size < 8 || size > max_size) return 0;
  size_t n = (size_t)size / 8, step = size <= KiB ? 1 : 8;
  for (size_t i = 1; i < n; i += step)
    if (w[i] != (key ^ (i * GOLDEN))) return *bad_word = i, 0;
  if (n > 1 && w[n - 1] != (key ^ ((n - 1) * GOLDEN))) return *bad_word = n - 1, 0;
  return (size_t)size;
}

// A pattern that does not read back: report and exit 3 (the allocator under test is broken).
static void block_broken(const char *prog, const void *p, size_t bad_word, const char *where) {
  fprintf(stderr, "%s: pattern mismatch in the block at %p (%s): %s%zu\n", prog, p, where,
          bad_word ? "wrong word " : "size word unreadable", bad_word);
  exit(3);
}

// ---------------------------------------------------------------- arguments

static inline int parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') return -1;
  *out = v;
  return 0;
}

// The options both programs take: `--check`, `-h/--help`, and `--NAME VALUE` for each numbered
// option in `names` (NULL-terminated; dsts in the same order). 0 to go on, 1 after --help (exit
// 0), 2 after a bad argument (message and usage printed; exit 2).
static inline int parse_args(int argc, char **argv, const char *prog, const char *const *names,
                             uint64_t *const *dsts, int *check, void (*usage)(FILE *)) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    uint64_t *dst = NULL;
    if (!strcmp(a, "--check")) {
      *check = 1;
      continue;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 1;
    }
    for (int k = 0; names[k] && !dst; k++)
      if (!strcmp(a, names[k])) dst = dsts[k];
    if (!dst || i + 1 >= argc || parse_u64(argv[++i], dst)) {
      fprintf(stderr, "%s: bad argument near '%s'\n", prog, a);
      usage(stderr);
      return 2;
    }
  }
  return 0;
}

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// ---------------------------------------------------------------- --check
// Every malloc and free of the workload runs on worker threads, each of which takes a snapshot
// of its own shard (NDMEM_SCOPE_THREAD) when it starts and before it returns. The main thread
// only creates and joins threads between its two process snapshots; glibc may allocate there
// (pthread_create's TLS vector, a stack leaving the cache at join), on the main thread, and that
// is measured exactly by main's own shard. So, with exact accounting:
//   each worker:   thread delta (allocs, frees) == the calls it made
//   process delta: allocs == workload allocs + main's,  frees == workload frees + main's,
//                  live_count == blocks left live deliberately + main's allocs - main's frees.
// Shards are summed when read (only the peak waits for a publish), and a thread's shard is folded
// into the totals when it exits, before pthread_join returns: the process snapshots are taken
// with no worker alive, so they are exact.

typedef struct snapshot {
  ndmem_stats_t s;
  int ok;
} snapshot_t;

static inline snapshot_t take_snapshot(int scope) {
  snapshot_t r;
  memset(&r, 0, sizeof r);
  r.s.size = sizeof r.s;
  r.ok = ndmem_stats && ndmem_stats(&r.s, scope) == 0;
  return r;
}

// What one worker thread saw: its own calls and its shard's deltas over them.
typedef struct thread_count {
  uint64_t allocs, frees;
  snapshot_t before, after;
} thread_count_t;

#define HEAPK(snap, f) ((long long)(snap).s.kind[NDMEM_KIND_HEAP].f)

// Per-thread verdict: 0 when the shard's deltas are the calls the thread made (or there is no
// shim to ask), 1 when they differ (one line on stderr for the first few), 2 when the thread could
// not read its shard.
static int thread_check(const char *prog, const thread_count_t *c, const char *who) {
  static int reported;
  if (!ndmem_stats) return 0;
  if (!c->before.ok || !c->after.ok) return 2;
  long long da = HEAPK(c->after, allocs) - HEAPK(c->before, allocs);
  long long df = HEAPK(c->after, frees) - HEAPK(c->before, frees);
  if (da == (long long)c->allocs && df == (long long)c->frees) return 0;
  if (reported++ < 5)
    fprintf(stderr, "%s: check: %s: its shard counted %lld allocs and %lld frees, it made %" PRIu64
            " and %" PRIu64 "\n", prog, who, da, df, c->allocs, c->frees);
  return 1;
}

// The workload's totals over its threads, and their per-thread verdicts (thread_check).
typedef struct tally {
  uint64_t allocs, frees, sum, bad_threads, unread;
} tally_t;

static void tally_add(tally_t *t, const char *prog, const thread_count_t *c, uint64_t sum,
                      const char *who, int check) {
  t->allocs += c->allocs;
  t->frees += c->frees;
  t->sum += sum;
  if (!check) return;
  int v = thread_check(prog, c, who);
  t->bad_threads += v == 1;
  t->unread += v == 2;
}

// The process verdict, printed; returns the number of mismatches (0: all exact).
static int process_check(const char *prog, const snapshot_t *p0, const snapshot_t *p1,
                         const snapshot_t *m0, const snapshot_t *m1, uint64_t allocs,
                         uint64_t frees, uint64_t left_live, uint64_t threads,
                         uint64_t bad_threads, uint64_t unread_threads) {
  if (!ndmem_stats) {
    printf("check: ndmem_stats is not available (libndmem.so is not loaded): counts not checked\n");
    return 0;
  }
  if (!p0->ok || !p1->ok || !m0->ok || !m1->ok) {
    printf("check: ndmem_stats failed (accounting off): counts not checked\n");
    return 1;
  }
  long long ma = HEAPK(*m1, allocs) - HEAPK(*m0, allocs);
  long long mf = HEAPK(*m1, frees) - HEAPK(*m0, frees);
  struct {
    const char *what;
    long long got, program, main_thread;
  } row[3] = {
      {"allocs", HEAPK(*p1, allocs) - HEAPK(*p0, allocs), (long long)allocs, ma},
      {"frees", HEAPK(*p1, frees) - HEAPK(*p0, frees), (long long)frees, mf},
      {"live_count", HEAPK(*p1, live_count) - HEAPK(*p0, live_count), (long long)left_live,
       ma - mf},
  };
  int bad = 0;
  for (int i = 0; i < 3; i++) {
    int ok = row[i].got == row[i].program + row[i].main_thread;
    bad += !ok;
    printf("check: heap %-10s delta %lld = workload %lld + main thread (pthread_create/join) %lld"
           ": %s\n", row[i].what, row[i].got, row[i].program, row[i].main_thread,
           ok ? "exact" : "MISMATCH");
    if (!ok)
      fprintf(stderr, "%s: check: heap %s delta %lld, expected %lld (workload %lld + main thread "
              "%lld)\n", prog, row[i].what, row[i].got, row[i].program + row[i].main_thread,
              row[i].program, row[i].main_thread);
  }
  bad += bad_threads != 0 || unread_threads != 0;
  printf("check: %" PRIu64 " worker threads, each shard's allocs and frees equal to the thread's "
         "calls: %s", threads, bad_threads ? "MISMATCH" : unread_threads ? "UNREAD" : "exact");
  if (bad_threads) printf(" (%" PRIu64 " threads differ)", bad_threads);
  if (unread_threads) printf(" (%" PRIu64 " threads could not read their shard)", unread_threads);
  printf("\n");
  if (bad) fprintf(stderr, "%s: check failed: ndmem's counters differ from the program's calls\n", prog);
  return bad;
}

#endif
