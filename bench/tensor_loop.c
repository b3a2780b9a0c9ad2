// SPDX-License-Identifier: MIT
// tensor_loop.c: a training-loop-shaped workload for ndmem's workspaces. Every iteration runs the
// same forward/backward schedule over 14 tensor-sized buffers (512 B - 64 MiB): activations are
// allocated in order and freed in reverse, gradients and short-lived temporaries overlap them.
// Allocators return such large blocks to the kernel and fault them in again every iteration;
// --mode ideal allocates each buffer once and reuses it, the lower bound for the same work.
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ndmem.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define PAGE ((size_t)4096)
#define NBUF 14
#define DEFAULT_ITERS 12
#define DEFAULT_WARMUP 5

// The tensors of one iteration: a 5-layer network's activations and their gradients.
static const struct {
  const char *name;
  size_t size;
} bufs[NBUF] = {
    {"x", 4 * MiB},         // 0  input batch
    {"h1", 16 * MiB},       // 1  activations, kept for backward
    {"h2", 64 * MiB},       // 2
    {"h3", 32 * MiB},       // 3
    {"h4", 8 * MiB},        // 4
    {"logits", 2 * MiB},    // 5
    {"stats", 16 * KiB},    // 6  softmax row statistics, freed once the loss is known
    {"loss", 512},          // 7
    {"dlogits", 2 * MiB},   // 8  gradients, each freed once the next one is computed
    {"dh4", 8 * MiB},       // 9
    {"dh3", 32 * MiB},      // 10
    {"dh2", 64 * MiB},      // 11
    {"dW4", 1 * MiB},       // 12 weight-gradient temporary (short-lived)
    {"db3", 64 * KiB},      // 13 bias-gradient temporary (short-lived)
};

// One iteration: 'A' allocates (and writes) a buffer, 'F' reads it back and frees it.
static const struct {
  char op;
  unsigned char buf;
} schedule[] = {
    // forward
    {'A', 0}, {'A', 1}, {'A', 2}, {'A', 3}, {'A', 4}, {'A', 5}, {'A', 6}, {'A', 7}, {'F', 6},
    // backward: each layer's gradient, then the activation it needed is released
    {'A', 8}, {'F', 7}, {'F', 5},
    {'A', 9}, {'F', 8}, {'A', 12}, {'F', 12}, {'F', 4},
    {'A', 10}, {'F', 9}, {'A', 13}, {'F', 13}, {'F', 3},
    {'A', 11}, {'F', 10}, {'F', 2},
    {'F', 11}, {'F', 1}, {'F', 0},
};
#define NSTEP (sizeof schedule / sizeof schedule[0])

static uint64_t mix64(uint64_t x) { // splitmix64 finalizer
  x ^= x >> 30;
  x *= UINT64_C(0xBF58476D1CE4E5B9);
  x ^= x >> 27;
  x *= UINT64_C(0x94D049BB133111EB);
  return x ^ (x >> 31);
}

// The word of page p that is written: a different cache line per page and buffer, inside the
// buffer (sizes are multiples of 512).
static size_t word_offset(size_t size, unsigned b, size_t p) {
  size_t off = p * PAGE + ((p + b) & 63) * 64;
  return off + sizeof(uint64_t) <= size ? off : p * PAGE;
}

// "Computing" a tensor: one 8-byte store into every page, so every page is faulted in (written)
// as a real kernel's output would be. The value depends on (iteration, buffer, page).
static void write_tensor(unsigned char *base, unsigned b, uint64_t iter) {
  size_t size = bufs[b].size, pages = (size + PAGE - 1) / PAGE;
  uint64_t seed = mix64(iter << 8 | b);
  for (size_t p = 0; p < pages; p++)
    *(volatile uint64_t *)(void *)(base + word_offset(size, b, p)) =
        seed ^ (p * UINT64_C(0x9E3779B97F4A7C15));
}

// Consuming it: every written word is read back and checked. A mismatch means another buffer
// (live at the same time) shared its memory: the allocator under test is broken.
static uint64_t read_tensor(const unsigned char *base, unsigned b, uint64_t iter,
                            uint64_t *bad) {
  size_t size = bufs[b].size, pages = (size + PAGE - 1) / PAGE;
  uint64_t seed = mix64(iter << 8 | b), sum = 0;
  for (size_t p = 0; p < pages; p++) {
    uint64_t v = *(const volatile uint64_t *)(const void *)(base + word_offset(size, b, p));
    *bad += v != (seed ^ (p * UINT64_C(0x9E3779B97F4A7C15)));
    sum += mix64(v);
  }
  return sum;
}

// The schedule's own peak live bytes and sum of sizes (requested bytes); -1 if it is malformed.
static int schedule_bytes(uint64_t *peak, uint64_t *sum) {
  int state[NBUF] = {0}; // 0 never allocated, 1 live, 2 freed
  uint64_t live = 0;
  *peak = *sum = 0;
  for (size_t i = 0; i < NSTEP; i++) {
    unsigned b = schedule[i].buf;
    if (schedule[i].op == 'A') {
      if (state[b] != 0) return -1;
      state[b] = 1;
      live += bufs[b].size;
      *sum += bufs[b].size;
      if (live > *peak) *peak = live;
    } else {
      if (state[b] != 1) return -1;
      state[b] = 2;
      live -= bufs[b].size;
    }
  }
  for (unsigned b = 0; b < NBUF; b++)
    if (state[b] != 2) return -1;
  return 0;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
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
  fprintf(f,
          "usage: tensor_loop [--iters N] [--warmup K] [--mode alloc|ideal] [--marks]\n"
          "  --iters N    iterations in all (default %d)\n"
          "  --warmup K   first iterations left out of the per-iteration figures (default %d)\n"
          "  --mode M     alloc: malloc/free every buffer every iteration (default);\n"
          "               ideal: each buffer allocated once before the loop and reused\n"
          "  --marks      call ndmem_cycle_begin()/ndmem_cycle_end() around each iteration\n"
          "               (when running under libndmem.so; otherwise nothing to call)\n"
          "prints one line: total seconds, median seconds per steady-state iteration, minor and\n"
          "major page faults per steady-state iteration, peak RSS, the schedule's peak live and\n"
          "summed bytes, a checksum equal in every mode; under ndmem also its workspace stats\n",
          DEFAULT_ITERS, DEFAULT_WARMUP);
}

int main(int argc, char **argv) {
  uint64_t iters = DEFAULT_ITERS, warmup = DEFAULT_WARMUP;
  int ideal = 0, marks = 0, iters_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--marks")) {
      marks = 1;
    } else if (!strcmp(a, "--mode") && i + 1 < argc &&
               (!strcmp(argv[i + 1], "alloc") || !strcmp(argv[i + 1], "ideal"))) {
      ideal = !strcmp(argv[++i], "ideal");
    } else if (!strcmp(a, "--iters") && i + 1 < argc && !parse_u64(argv[i + 1], &iters)) {
      iters_given = 1;
      i++;
    } else if (!strcmp(a, "--warmup") && i + 1 < argc && !parse_u64(argv[i + 1], &warmup)) {
      i++;
    } else {
      fprintf(stderr, "tensor_loop: bad argument near '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (iters <= warmup || iters > (UINT64_C(1) << 32)) {
    fprintf(stderr, "tensor_loop: need warmup < iters <= 2^32\n");
    return 2;
  }
  uint64_t peak, sum;
  if (schedule_bytes(&peak, &sum)) {
    fprintf(stderr, "tensor_loop: internal error: malformed schedule\n");
    return 1;
  }
  int use_marks = marks && ndmem_cycle_begin && ndmem_cycle_end;

  unsigned char *buf[NBUF] = {0};
  double *iter_s = malloc(iters * sizeof *iter_s);
  if (!iter_s) {
    fprintf(stderr, "tensor_loop: out of memory\n");
    return 1;
  }
  double t0 = now_s();
  if (ideal) {
    for (unsigned b = 0; b < NBUF; b++) {
      if (!(buf[b] = malloc(bufs[b].size))) {
        fprintf(stderr, "tensor_loop: malloc(%zu) failed\n", bufs[b].size);
        return 1;
      }
    }
  }

  uint64_t checksum = 0, bad = 0;
  struct rusage ru0, ru1;
  for (uint64_t it = 0; it < iters; it++) {
    if (it == warmup) getrusage(RUSAGE_SELF, &ru0);
    double ts = now_s();
    if (use_marks) ndmem_cycle_begin();
    for (size_t i = 0; i < NSTEP; i++) {
      unsigned b = schedule[i].buf;
      if (schedule[i].op == 'A') {
        if (!ideal && !(buf[b] = malloc(bufs[b].size))) {
          fprintf(stderr, "tensor_loop: malloc(%zu) failed\n", bufs[b].size);
          return 1;
        }
        write_tensor(buf[b], b, it);
      } else {
        checksum += read_tensor(buf[b], b, it, &bad);
        if (!ideal) {
          free(buf[b]);
          buf[b] = NULL;
        }
      }
    }
    if (use_marks) ndmem_cycle_end();
    iter_s[it] = now_s() - ts;
  }
  getrusage(RUSAGE_SELF, &ru1);
  if (ideal)
    for (unsigned b = 0; b < NBUF; b++) free(buf[b]);
  double total = now_s() - t0;

  uint64_t steady = iters - warmup;
  qsort(iter_s + warmup, steady, sizeof *iter_s, cmp_double);
  double med = steady % 2 ? iter_s[warmup + steady / 2]
                          : 0.5 * (iter_s[warmup + steady / 2 - 1] + iter_s[warmup + steady / 2]);
  free(iter_s);
  if (bad) {
    fprintf(stderr, "tensor_loop: %" PRIu64 " tensor words read back wrong: live buffers shared "
                    "memory\n", bad);
    return 3;
  }

  printf("tensor_loop mode=%s iters=%" PRIu64 "%s warmup=%" PRIu64 " marks=%s total_s=%.3f "
         "median_iter_s=%.9f minflt_per_iter=%.1f majflt_per_iter=%.1f peak_rss_kib=%ld "
         "cycle_peak_bytes=%" PRIu64 " cycle_sum_bytes=%" PRIu64 " checksum=%016" PRIx64 "\n",
         ideal ? "ideal" : "alloc", iters, iters_given ? "" : "(default)", warmup,
         !marks ? "off" : use_marks ? "on" : "unresolved", total, med,
         (double)(ru1.ru_minflt - ru0.ru_minflt) / (double)steady,
         (double)(ru1.ru_majflt - ru0.ru_majflt) / (double)steady, ru1.ru_maxrss, peak, sum,
         checksum);

  if (ndmem_ws_stats) {
    ndmem_ws_stats_t ws[8];
    int n = ndmem_ws_stats(ws, 8);
    int shown = n < 8 ? n : 8;
    uint64_t cycles = 0, hits = 0, spills = 0, spill_bytes = 0, arena = 0, escapes = 0;
    uint64_t relearns = 0, deviations = 0, plan_peak = 0;
    for (int i = 0; i < shown; i++) {
      cycles += ws[i].cycles;
      hits += ws[i].hits;
      spills += ws[i].spills;
      spill_bytes += ws[i].spill_bytes;
      arena += ws[i].arena_bytes;
      escapes += ws[i].escapes;
      relearns += ws[i].relearns;
      deviations += ws[i].deviations;
      plan_peak += ws[i].plan_peak_bytes;
    }
    printf("ws workspaces=%d cycles=%" PRIu64 " hits=%" PRIu64 " spills=%" PRIu64
           " spill_bytes=%" PRIu64 " arena_bytes=%" PRIu64 " plan_peak_bytes=%" PRIu64
           " escapes=%" PRIu64 " relearns=%" PRIu64 " deviations=%" PRIu64 "\n",
           n, cycles, hits, spills, spill_bytes, arena, plan_peak, escapes, relearns, deviations);
  }
  return 0;
}
