// SPDX-License-Identifier: MIT
// churn.c: small-allocation churn benchmark. Each thread keeps a ring of slots; every op picks a
// slot with xorshift64, frees the block there, mallocs a new one of a random size in [1,4096]
// and writes one byte into it. This is the worst case for an allocator interposer: the hooks run
// on every op and the allocator's own fast path is short. --ideal runs the same loop with no
// malloc/free (the byte goes into a fixed per-slot buffer): the floor the loop itself costs.
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZE 4096u
#define IDEAL_STRIDE 64u // one cache line per slot in --ideal mode

typedef struct {
  uint64_t ops;
  uint64_t seed;
  size_t slots; // power of two
  int ideal;
  pthread_barrier_t *start;
  uint64_t checksum;
  int failed;
} worker_t;

static uint64_t xorshift64(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

// Size in [1, MAX_SIZE] from the high bits, slot from the low bits: one PRNG step per op.
static size_t op_size(uint64_t r) { return (size_t)((r >> 32) & (MAX_SIZE - 1)) + 1; }

static void *worker(void *arg) {
  worker_t *w = arg;
  uint64_t s = w->seed;
  size_t mask = w->slots - 1;
  unsigned char **ring = malloc(w->slots * sizeof *ring);
  unsigned char *fixed = w->ideal ? malloc(w->slots * IDEAL_STRIDE) : NULL;
  if (!ring || (w->ideal && !fixed)) {
    w->failed = 1;
    free(ring);
    pthread_barrier_wait(w->start);
    return NULL;
  }
  // Fill the ring before the clock starts, so the timed loop runs in steady state.
  for (size_t i = 0; i < w->slots; i++) {
    size_t n = op_size(xorshift64(&s));
    ring[i] = w->ideal ? fixed + i * IDEAL_STRIDE : malloc(n);
    if (!ring[i]) {
      w->failed = 1;
      break;
    }
    ring[i][0] = (unsigned char)n;
  }
  pthread_barrier_wait(w->start);

  if (!w->failed && w->ideal) {
    for (uint64_t i = 0; i < w->ops; i++) {
      uint64_t r = xorshift64(&s);
      size_t k = (size_t)r & mask;
      unsigned char *p = fixed + k * IDEAL_STRIDE;
      p[0] = (unsigned char)op_size(r);
      ring[k] = p;
    }
  } else if (!w->failed) {
    for (uint64_t i = 0; i < w->ops; i++) {
      uint64_t r = xorshift64(&s);
      size_t k = (size_t)r & mask;
      size_t n = op_size(r);
      free(ring[k]);
      unsigned char *p = malloc(n);
      if (!p) {
        ring[k] = NULL;
        w->failed = 1;
        break;
      }
      p[0] = (unsigned char)n;
      ring[k] = p;
    }
  }

  // Read every slot back (keeps the writes observable), then release everything.
  uint64_t sum = 0;
  for (size_t i = 0; i < w->slots; i++) {
    if (ring[i]) sum += ring[i][0];
    if (!w->ideal) free(ring[i]);
  }
  w->checksum = sum;
  free(fixed);
  free(ring);
  return NULL;
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') return -1;
  *out = v;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: churn [--threads N] [--ops N] [--slots N] [--seed N] [--ideal]\n"
             "  --threads N  worker threads (default 1)\n"
             "  --ops N      ops per thread (default 10000000)\n"
             "  --slots N    ring slots per thread, a power of two (default 4096)\n"
             "  --seed N     PRNG seed (default 1)\n"
             "  --ideal      same loop without malloc/free (lower bound)\n"
             "prints: elapsed wall seconds and ns per op, where ns_per_op = elapsed / ops per\n"
             "thread (the time one op takes on each thread; it stays flat if threads scale)\n");
}

int main(int argc, char **argv) {
  uint64_t threads = 1, ops = 10000000, slots = 4096, seed = 1;
  int ideal = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    uint64_t *dst = NULL;
    if (!strcmp(a, "--ideal")) {
      ideal = 1;
      continue;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--threads")) {
      dst = &threads;
    } else if (!strcmp(a, "--ops")) {
      dst = &ops;
    } else if (!strcmp(a, "--slots")) {
      dst = &slots;
    } else if (!strcmp(a, "--seed")) {
      dst = &seed;
    }
    if (!dst || i + 1 >= argc || parse_u64(argv[++i], dst)) {
      fprintf(stderr, "churn: bad argument near '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (threads < 1 || threads > 1024 || ops < 1 || slots < 1 || (slots & (slots - 1)) ||
      slots > (UINT64_C(1) << 24)) {
    fprintf(stderr, "churn: need 1 <= threads <= 1024, ops >= 1, slots a power of two <= 2^24\n");
    return 2;
  }

  worker_t *w = calloc(threads, sizeof *w);
  pthread_t *tid = calloc(threads, sizeof *tid);
  pthread_barrier_t start;
  if (!w || !tid || pthread_barrier_init(&start, NULL, (unsigned)threads + 1)) {
    fprintf(stderr, "churn: out of memory\n");
    return 1;
  }
  for (uint64_t t = 0; t < threads; t++) {
    w[t].ops = ops;
    w[t].seed = (seed + t) * UINT64_C(0x9E3779B97F4A7C15) | 1; // nonzero, distinct per thread
    w[t].slots = (size_t)slots;
    w[t].ideal = ideal;
    w[t].start = &start;
    if (pthread_create(&tid[t], NULL, worker, &w[t])) {
      fprintf(stderr, "churn: pthread_create failed\n");
      return 1;
    }
  }

  struct timespec t0, t1;
  pthread_barrier_wait(&start);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (uint64_t t = 0; t < threads; t++) pthread_join(tid[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);

  int failed = 0;
  uint64_t checksum = 0;
  for (uint64_t t = 0; t < threads; t++) {
    failed |= w[t].failed;
    checksum += w[t].checksum;
  }
  pthread_barrier_destroy(&start);
  free(tid);
  free(w);
  if (failed) {
    fprintf(stderr, "churn: allocation failed\n");
    return 1;
  }

  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  printf("churn mode=%s threads=%" PRIu64 " ops_per_thread=%" PRIu64 " elapsed_s=%.6f "
         "ns_per_op=%.3f mops_total=%.2f checksum=%" PRIu64 "\n",
         ideal ? "ideal" : "malloc", threads, ops, secs, secs * 1e9 / (double)ops,
         (double)(threads * ops) / secs / 1e6, checksum);
  return 0;
}
