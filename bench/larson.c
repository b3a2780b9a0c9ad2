// SPDX-License-Identifier: MIT
// larson.c: a server-shaped allocator workload. T chains of threads each own an array of K
// blocks of sizes in [min,max]; an op picks a random slot, checks and frees its block and
// allocates a new one there. After an epoch of N ops the thread exits and a new thread takes
// over its array, so blocks are freed by threads other than their allocator and threads come and
// go while the others keep working. A fixed number of ops (not a time) makes the work the same
// under every allocator. --check compares ndmem's counters with the program's calls (stress.h).
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "stress.h"

#define MAX_BLOCK MiB

static struct {
  uint64_t threads, slots, min, max, ops, epochs, seed;
  int check;
} opt = {4, 1000, 8, 1000, 20000, 20, 1, 0};

typedef struct record { // one thread's run: an epoch of a chain, or the fill or the clean-up
  uint64_t chain, epoch;
  uint64_t sum; // checksum of the sizes it asked for (independent of scheduling)
  thread_count_t count;
} record_t;

typedef struct chain {
  void **blocks;  // [slots], handed from each thread to the next
  uint64_t rng;   // the PRNG state, handed over with them
  uint64_t epoch;
  pthread_t tid;
  atomic_int done;
  record_t *rec;  // the running thread's record
} chain_t;

static chain_t *chains;
static sem_t finished; // posted by each thread of a chain as its epoch ends

static void *new_block(record_t *r, size_t size) {
  void *p = malloc(size);
  if (!p) {
    fprintf(stderr, "larson: malloc(%zu) failed\n", size);
    exit(1);
  }
  block_fill(p, size);
  r->count.allocs++;
  r->sum += mix64(size ^ r->chain << 32 ^ r->epoch << 48);
  return p;
}

static void release(record_t *r, void *p, const char *where) {
  size_t bad;
  if (!block_check(p, MAX_BLOCK, &bad)) block_broken("larson", p, bad, where);
  free(p);
  r->count.frees++;
}

static size_t pick_size(uint64_t *s) { return (size_t)(opt.min + rnd(s) % (opt.max - opt.min + 1)); }

static void *epoch_main(void *arg) {
  chain_t *c = arg;
  record_t *r = c->rec;
  if (opt.check) r->count.before = take_snapshot(NDMEM_SCOPE_THREAD);
  for (uint64_t i = 0; i < opt.ops; i++) {
    size_t j = (size_t)(rnd(&c->rng) % opt.slots);
    release(r, c->blocks[j], "before free");
    c->blocks[j] = new_block(r, pick_size(&c->rng));
  }
  if (opt.check) r->count.after = take_snapshot(NDMEM_SCOPE_THREAD);
  atomic_store(&c->done, 1);
  sem_post(&finished);
  return NULL;
}

// Before the chains start: one thread fills every chain's array, so from the first op on every
// free is of a block another thread allocated.
static void *fill_main(void *arg) {
  record_t *r = arg;
  if (opt.check) r->count.before = take_snapshot(NDMEM_SCOPE_THREAD);
  for (uint64_t t = 0; t < opt.threads; t++) {
    uint64_t s = rnd_seed(opt.seed, 0, t);
    for (uint64_t j = 0; j < opt.slots; j++) chains[t].blocks[j] = new_block(r, pick_size(&s));
  }
  if (opt.check) r->count.after = take_snapshot(NDMEM_SCOPE_THREAD);
  return NULL;
}

// After the last epoch: every block is checked and freed but slot 0 of each chain, left live.
static void *cleanup_main(void *arg) {
  record_t *r = arg;
  if (opt.check) r->count.before = take_snapshot(NDMEM_SCOPE_THREAD);
  for (uint64_t t = 0; t < opt.threads; t++) {
    size_t bad;
    if (!block_check(chains[t].blocks[0], MAX_BLOCK, &bad))
      block_broken("larson", chains[t].blocks[0], bad, "left live");
    for (uint64_t j = 1; j < opt.slots; j++) release(r, chains[t].blocks[j], "at the end");
  }
  if (opt.check) r->count.after = take_snapshot(NDMEM_SCOPE_THREAD);
  return NULL;
}

static void usage(FILE *f) {
  fprintf(f, "usage: larson [--threads T] [--slots K] [--min B] [--max B] [--ops N] [--epochs E]\n"
             "              [--seed X] [--check]\n"
             "  --threads T  chains of threads working at once (default 4)\n"
             "  --slots K    blocks each chain owns (default 1000)\n"
             "  --min B, --max B  block sizes, uniform in [B, B'] (default 8 and 1000; 8 <= min\n"
             "               <= max <= 1048576)\n"
             "  --ops N      free+malloc ops per thread before it hands over (default 20000)\n"
             "  --epochs E   threads per chain, one after the other (default 20)\n"
             "  --seed X     PRNG seed (default 1)\n"
             "  --check      under libndmem.so: compare ndmem's heap counters over the workload\n"
             "               with the program's calls; exit 1 on a difference\n"
             "prints one line: ops, elapsed seconds of the epochs, ops per second and a checksum\n"
             "of the requested sizes (the same under every allocator); exit 3 on a corrupted block\n");
}

int main(int argc, char **argv) {
  static const char *const names[] = {"--threads", "--slots", "--min", "--max", "--ops", "--epochs", "--seed", NULL};
  uint64_t *const dsts[] = {&opt.threads, &opt.slots, &opt.min, &opt.max, &opt.ops, &opt.epochs, &opt.seed};
  int rc = parse_args(argc, argv, "larson", names, dsts, &opt.check, usage);
  if (rc) return rc == 1 ? 0 : 2;
  if (opt.threads < 1 || opt.threads > 256 || opt.slots < 1 || opt.slots > (1u << 24) ||
      opt.min < 8 || opt.min > opt.max || opt.max > MAX_BLOCK || opt.epochs < 1 ||
      opt.epochs > 100000) {
    fprintf(stderr, "larson: need 1 <= threads <= 256, 1 <= slots <= 2^24, "
                    "8 <= min <= max <= 1048576, 1 <= epochs <= 100000\n");
    return 2;
  }
  pattern_seed = mix64(opt.seed);

  // Everything the run needs is allocated here, before the measured window.
  uint64_t nrec = opt.threads * opt.epochs + 2; // the epochs, the fill, the clean-up
  chains = calloc(opt.threads, sizeof *chains);
  record_t *rec = calloc(nrec, sizeof *rec);
  if (!chains || !rec || sem_init(&finished, 0, 0)) {
    fprintf(stderr, "larson: out of memory\n");
    return 1;
  }
  for (uint64_t t = 0; t < opt.threads; t++) {
    chains[t].blocks = calloc(opt.slots, sizeof *chains[t].blocks);
    if (!chains[t].blocks) {
      fprintf(stderr, "larson: out of memory\n");
      return 1;
    }
    chains[t].rng = rnd_seed(opt.seed, 1, t);
    atomic_init(&chains[t].done, 0);
  }
  record_t *fill = &rec[nrec - 2], *clean = &rec[nrec - 1];
  fill->chain = clean->chain = opt.threads;
  fill->epoch = 0;
  clean->epoch = opt.epochs + 1;
  fflush(stdout);

  // The measured window: the main thread only creates and joins threads.
  snapshot_t m0 = {0}, p0 = {0}, m1 = {0}, p1 = {0};
  if (opt.check) m0 = take_snapshot(NDMEM_SCOPE_THREAD), p0 = take_snapshot(NDMEM_SCOPE_PROCESS);
  int create_failed = 0;
  pthread_t helper;
  if (pthread_create(&helper, NULL, fill_main, fill) == 0)
    pthread_join(helper, NULL);
  else
    create_failed = 1;
  double t0 = now_s();
  uint64_t running = 0;
  for (uint64_t t = 0; t < opt.threads && !create_failed; t++) {
    chains[t].rec = &rec[t];
    rec[t].chain = t;
    rec[t].epoch = 1;
    if (pthread_create(&chains[t].tid, NULL, epoch_main, &chains[t])) create_failed = 1;
    else running++;
  }
  while (running > 0) { // an epoch ended: its thread goes, a new one takes the chain over
    while (sem_wait(&finished) != 0 && errno == EINTR) {
    }
    for (uint64_t t = 0; t < opt.threads; t++) {
      chain_t *c = &chains[t];
      if (!atomic_load(&c->done)) continue;
      atomic_store(&c->done, 0);
      pthread_join(c->tid, NULL);
      running--;
      if (++c->epoch >= opt.epochs || create_failed) continue;
      c->rec = &rec[c->epoch * opt.threads + t];
      c->rec->chain = t;
      c->rec->epoch = c->epoch + 1;
      if (pthread_create(&c->tid, NULL, epoch_main, c)) create_failed = 1;
      else running++;
    }
  }
  double t1 = now_s();
  if (!create_failed && pthread_create(&helper, NULL, cleanup_main, clean) == 0)
    pthread_join(helper, NULL);
  else
    create_failed = 1;
  if (opt.check) p1 = take_snapshot(NDMEM_SCOPE_PROCESS), m1 = take_snapshot(NDMEM_SCOPE_THREAD);
  if (create_failed) {
    fprintf(stderr, "larson: pthread_create failed\n");
    return 1;
  }

  tally_t tot = {0};
  for (uint64_t k = 0; k < nrec; k++) {
    char who[64];
    snprintf(who, sizeof who, "chain %" PRIu64 " epoch %" PRIu64, rec[k].chain, rec[k].epoch);
    tally_add(&tot, "larson", &rec[k].count, rec[k].sum, who, opt.check);
  }
  uint64_t allocs = tot.allocs, frees = tot.frees, sum = tot.sum;
  uint64_t ops = opt.threads * opt.epochs * opt.ops, left_live = opt.threads;
  double secs = t1 - t0;
  printf("larson threads=%" PRIu64 " slots=%" PRIu64 " min=%" PRIu64 " max=%" PRIu64
         " ops=%" PRIu64 " epochs=%" PRIu64 " seed=%" PRIu64 " total_ops=%" PRIu64
         " allocs=%" PRIu64 " frees=%" PRIu64 " left_live=%" PRIu64 " elapsed_s=%.6f"
         " ops_per_s=%.0f checksum=%016" PRIx64 "\n",
         opt.threads, opt.slots, opt.min, opt.max, opt.ops, opt.epochs, opt.seed, ops, allocs,
         frees, left_live, secs, (double)ops / secs, sum);
  int bad = 0;
  if (allocs - frees != left_live) {
    fprintf(stderr, "larson: internal error: %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
            " meant to stay live\n", allocs, frees, left_live);
    bad = 1;
  }
  if (opt.check)
    bad |= process_check("larson", &p0, &p1, &m0, &m1, allocs, frees, left_live, nrec,
                         tot.bad_threads, tot.unread) != 0;
  for (uint64_t t = 0; t < opt.threads; t++) free(chains[t].blocks); // slot 0's block stays live
  free(chains);
  free(rec);
  sem_destroy(&finished);
  return bad;
}
