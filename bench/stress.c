// SPDX-License-Identifier: MIT
// stress.c: a multi-threaded allocator stress workload where threads come and go. Every round
// starts T new threads; each makes N allocations of random sizes (mostly 8 B-1 KiB, rarely up to
// 8 MiB), writes a pattern into each, keeps them in its own array, frees replaced and random ones
// after reading the pattern back, and swaps blocks with the other threads through shared slots,
// so many blocks are freed by a thread other than their allocator, often after it has exited.
// Part of every thread's blocks is handed to the next round's thread of the same index; at the
// end everything is freed except 2 blocks per thread, left live on purpose. --check compares
// ndmem's counters with the program's own count of its calls (stress.h).
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <pthread.h>
#include <stdatomic.h>

#include "stress.h"

#define MAX_BLOCK (8 * MiB)
#define LEFT_PER_THREAD 2 // blocks each thread of the last round leaves live on purpose

static struct {
  uint64_t threads, rounds, iters, scale, seed;
  int check;
} opt = {8, 10, 20000, 500, 1, 0};

static void **keep;              // [threads][scale]: thread index i's retained blocks, kept over rounds
static _Atomic(void *) *slots;   // [scale]: the transfer array shared by all threads
static void **left;              // [threads][LEFT_PER_THREAD]: live at exit, on purpose

typedef struct worker {
  uint64_t idx, round; // round == opt.rounds: the final clean-up thread
  uint64_t sum;        // checksum of the sizes it asked for (independent of scheduling)
  thread_count_t count;
} worker_t;

// Mostly small; 1 in 10 is 1-64 KiB, 1 in 100 is 64 KiB-1 MiB, 1 in 10000 is 1-8 MiB.
static size_t pick_size(uint64_t r) {
  uint64_t v = r >> 24;
  if (r % 10000 == 0) return MiB + (size_t)(v % (7 * MiB + 1));
  if (r % 100 == 0) return 64 * KiB + (size_t)(v % (960 * KiB + 1));
  if (r % 10 == 0) return KiB + (size_t)(v % (63 * KiB + 1));
  return 8 + (size_t)(v % 1017);
}

static void *new_block(worker_t *w, size_t size) {
  void *p = malloc(size);
  if (!p) {
    fprintf(stderr, "stress: malloc(%zu) failed\n", size);
    exit(1);
  }
  block_fill(p, size);
  w->count.allocs++;
  w->sum += mix64(size ^ w->idx << 32 ^ w->round << 48);
  return p;
}

static void release(worker_t *w, void *p) {
  size_t bad;
  if (!block_check(p, MAX_BLOCK, &bad)) block_broken("stress", p, bad, "before free");
  free(p);
  w->count.frees++;
}

static void *worker(void *arg) {
  worker_t *w = arg;
  if (opt.check) w->count.before = take_snapshot(NDMEM_SCOPE_THREAD);
  void **mine = keep + w->idx * opt.scale;
  uint64_t s = rnd_seed(opt.seed, w->round + 1, w->idx);
  for (uint64_t i = 0; i < opt.iters; i++) {
    uint64_t r = rnd(&s);
    void *p = new_block(w, pick_size(r));
    size_t j = (size_t)(rnd(&s) % opt.scale);
    if (mine[j]) release(w, mine[j]); // the block it replaces, maybe another thread's
    mine[j] = p;
    uint64_t c = rnd(&s);
    if (c % 4 == 0) { // swap a retained block with a transfer slot (either may be empty)
      size_t k = (size_t)((c >> 8) % opt.scale), j2 = (size_t)((c >> 32) % opt.scale);
      mine[j2] = atomic_exchange(&slots[k], mine[j2]);
    } else if (c % 16 == 1) { // free a random retained block
      size_t j3 = (size_t)((c >> 32) % opt.scale);
      if (mine[j3]) release(w, mine[j3]);
      mine[j3] = NULL;
    }
  }
  // A quarter of the retained blocks is handed over to the next round's thread of this index.
  for (uint64_t j = 0; j < opt.scale; j++)
    if (mine[j] && rnd(&s) % 4 != 0) {
      release(w, mine[j]);
      mine[j] = NULL;
    }
  if (w->round + 1 == opt.rounds) // the last round leaves a small and a large block live
    for (uint64_t k = 0; k < LEFT_PER_THREAD; k++)
      left[w->idx * LEFT_PER_THREAD + k] = new_block(w, k ? 64 * KiB + w->idx * 64 : 24 + w->idx);
  if (opt.check) w->count.after = take_snapshot(NDMEM_SCOPE_THREAD);
  return NULL;
}

// After the last round: every block still held (retained or in a transfer slot) is checked and
// freed; the ones left live on purpose are checked and kept.
static void *cleanup(void *arg) {
  worker_t *w = arg;
  if (opt.check) w->count.before = take_snapshot(NDMEM_SCOPE_THREAD);
  for (uint64_t j = 0; j < opt.threads * opt.scale; j++)
    if (keep[j]) release(w, keep[j]), keep[j] = NULL;
  for (uint64_t k = 0; k < opt.scale; k++) {
    void *p = atomic_exchange(&slots[k], NULL);
    if (p) release(w, p);
  }
  for (uint64_t k = 0; k < opt.threads * LEFT_PER_THREAD; k++) {
    size_t bad;
    if (!block_check(left[k], MAX_BLOCK, &bad)) block_broken("stress", left[k], bad, "left live");
  }
  if (opt.check) w->count.after = take_snapshot(NDMEM_SCOPE_THREAD);
  return NULL;
}

static void usage(FILE *f) {
  fprintf(f, "usage: stress [--threads T] [--rounds R] [--iters N] [--scale S] [--seed X] [--check]\n"
             "  --threads T  threads started in every round (default 8)\n"
             "  --rounds R   rounds (default 10)\n"
             "  --iters N    allocations per thread and round (default 20000)\n"
             "  --scale S    blocks each thread retains, and slots of the shared transfer array\n"
             "               (default 500)\n"
             "  --seed X     PRNG seed (default 1)\n"
             "  --check      under libndmem.so: compare ndmem's heap counters over the workload\n"
             "               with the program's calls; exit 1 on a difference\n"
             "prints one line: counts, elapsed seconds, allocations per second and a checksum of\n"
             "the requested sizes (the same under every allocator); exit 3 on a corrupted block\n");
}

int main(int argc, char **argv) {
  static const char *const names[] = {"--threads", "--rounds", "--iters", "--scale", "--seed", NULL};
  uint64_t *const dsts[] = {&opt.threads, &opt.rounds, &opt.iters, &opt.scale, &opt.seed};
  int rc = parse_args(argc, argv, "stress", names, dsts, &opt.check, usage);
  if (rc) return rc == 1 ? 0 : 2;
  if (opt.threads < 1 || opt.threads > 256 || opt.rounds < 1 || opt.rounds > 100000 ||
      opt.scale < 1 || opt.scale > (1u << 20)) {
    fprintf(stderr, "stress: need 1 <= threads <= 256, 1 <= rounds <= 100000, "
                    "1 <= scale <= 2^20\n");
    return 2;
  }
  pattern_seed = mix64(opt.seed);

  // Everything the run needs is allocated here, before the measured window.
  uint64_t nworkers = opt.threads * opt.rounds + 1;
  keep = calloc(opt.threads * opt.scale, sizeof *keep);
  slots = calloc(opt.scale, sizeof *slots);
  left = calloc(opt.threads * LEFT_PER_THREAD, sizeof *left);
  worker_t *w = calloc(nworkers, sizeof *w);
  pthread_t *tid = calloc(opt.threads, sizeof *tid);
  if (!keep || !slots || !left || !w || !tid) {
    fprintf(stderr, "stress: out of memory\n");
    return 1;
  }
  for (uint64_t k = 0; k < opt.scale; k++) atomic_init(&slots[k], NULL);
  fflush(stdout);

  // The measured window: the main thread only creates and joins threads.
  snapshot_t m0 = {0}, p0 = {0}, m1 = {0}, p1 = {0};
  if (opt.check) m0 = take_snapshot(NDMEM_SCOPE_THREAD), p0 = take_snapshot(NDMEM_SCOPE_PROCESS);
  double t0 = now_s();
  int create_failed = 0;
  for (uint64_t r = 0; r < opt.rounds && !create_failed; r++) {
    uint64_t started = 0;
    for (uint64_t t = 0; t < opt.threads; t++, started++) {
      worker_t *x = &w[r * opt.threads + t];
      x->idx = t;
      x->round = r;
      if (pthread_create(&tid[t], NULL, worker, x)) {
        create_failed = 1;
        break;
      }
    }
    for (uint64_t t = 0; t < started; t++) pthread_join(tid[t], NULL);
  }
  worker_t *last = &w[nworkers - 1];
  last->idx = opt.threads;
  last->round = opt.rounds;
  if (!create_failed && pthread_create(&tid[0], NULL, cleanup, last) == 0)
    pthread_join(tid[0], NULL);
  else
    create_failed = 1;
  double t1 = now_s();
  if (opt.check) p1 = take_snapshot(NDMEM_SCOPE_PROCESS), m1 = take_snapshot(NDMEM_SCOPE_THREAD);
  if (create_failed) {
    fprintf(stderr, "stress: pthread_create failed\n");
    return 1;
  }

  tally_t tot = {0};
  for (uint64_t k = 0; k < nworkers; k++) {
    char who[64];
    snprintf(who, sizeof who, "round %" PRIu64 " thread %" PRIu64, w[k].round, w[k].idx);
    tally_add(&tot, "stress", &w[k].count, w[k].sum, who, opt.check);
  }
  uint64_t allocs = tot.allocs, frees = tot.frees, sum = tot.sum;
  uint64_t left_live = opt.threads * LEFT_PER_THREAD;
  double secs = t1 - t0;
  printf("stress threads=%" PRIu64 " rounds=%" PRIu64 " iters=%" PRIu64 " scale=%" PRIu64
         " seed=%" PRIu64 " allocs=%" PRIu64 " frees=%" PRIu64 " left_live=%" PRIu64
         " elapsed_s=%.6f allocs_per_s=%.0f checksum=%016" PRIx64 "\n",
         opt.threads, opt.rounds, opt.iters, opt.scale, opt.seed, allocs, frees, left_live, secs,
         (double)allocs / secs, sum);
  int bad = 0;
  if (allocs - frees != left_live) {
    fprintf(stderr, "stress: internal error: %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
            " meant to stay live\n", allocs, frees, left_live);
    bad = 1;
  }
  if (opt.check)
    bad |= process_check("stress", &p0, &p1, &m0, &m1, allocs, frees, left_live, nworkers,
                         tot.bad_threads, tot.unread) != 0;
  free(tid);
  free(w);
  free(slots);
  free(keep);
  free(left); // the blocks in it stay live: they are what --check expects
  return bad;
}
