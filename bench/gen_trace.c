// SPDX-License-Identifier: MIT
// gen_trace: writes a large, realistic ndmem trace for the ndmemreport benchmark (run.py
// --report) with the shim's record writer: a module map of ~300 libraries re-written as more
// load, many stacks of depth 20-40, batches of SITE updates skewed toward hot sites with a
// COUNTERS and a FLUSH each, live blocks at exit and END. Deterministic for a seed; it prints
// what it wrote (bytes, records, stacks, sites, site_records, blocks, leak_bytes) for checking.
// usage: gen_trace OUT [--size BYTES] [--stacks N] [--seed N]
#include "trace_write.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NMODS 300
#define EXE_BASE 0x555555554000ull
#define LIB_BASE 0x7f0000000000ull
#define LIB_SPACING 0x4000000ull // 64 MiB between libraries
#define LIB_SIZE 0x1000000ull    // 16 MiB of text each
#define UPDATES_PER_BATCH 16000
#define MAX_BLOCKS_PER_SITE 4

static uint64_t rng;
static uint64_t next(void) { // xorshift64*
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}
static uint64_t below(uint64_t n) { return next() % n; }

typedef struct site {
  nd_rec_site_t rec;
  uint64_t size; // typical request size of this site
} site_t;

static char wbuf[1 << 20];
static nd_tw_t w;
static uint64_t records;

static void rec(uint16_t tag, const void *p, uint32_t n, const void *tail, uint32_t tn) {
  nd_tw_record(&w, tag, p, n, tail, tn);
  records++;
}

static void module_map(int extra) {
  char path[64];
  nd_rec_module_t m = {0, 0, EXE_BASE, EXE_BASE, EXE_BASE + 0x2000000};
  snprintf(path, sizeof path, "/nonexistent/bench/bin/python3");
  m.path_len = (uint32_t)strlen(path);
  rec(ND_REC_MODULE, &m, sizeof m, path, m.path_len);
  for (int i = 0; i < NMODS + extra; i++) {
    uint64_t base = LIB_BASE + (uint64_t)i * LIB_SPACING;
    m = (nd_rec_module_t){(uint32_t)i + 1, 0, base, base, base + LIB_SIZE};
    snprintf(path, sizeof path, "/nonexistent/bench/lib/lib%03d.so", i);
    m.path_len = (uint32_t)strlen(path);
    rec(ND_REC_MODULE, &m, sizeof m, path, m.path_len);
  }
}

// New totals for a site (a few allocations, some frees), written as a SITE record and counted.
static void update(site_t *s, nd_rec_counters_t *c) {
  nd_rec_site_t *x = &s->rec;
  uint64_t a = 1 + below(8), f = below(a + 1);
  x->allocs += a;
  x->alloc_bytes += a * s->size;
  x->frees += f;
  x->free_bytes += f * s->size;
  if (x->alloc_bytes - x->free_bytes > x->peak_live_bytes)
    x->peak_live_bytes = x->alloc_bytes - x->free_bytes;
  if (below(4) == 0) { // sometimes everything the site holds is released (end of an iteration)
    x->free_bytes = x->alloc_bytes;
    x->frees = x->allocs;
  }
  rec(ND_REC_SITE, x, sizeof *x, NULL, 0);
  nd_rec_kind_totals_t *kt = &c->kind[x->kind];
  kt->allocs += a;
  kt->frees += f;
  c->calls[x->kind == 1 ? 12 : 0] += a;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: gen_trace OUT [--size BYTES] [--stacks N] [--seed N]\n");
    return 2;
  }
  uint64_t target = 1ull << 30, seed = 1;
  uint32_t nstacks = 100000;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--size")) target = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--stacks")) nstacks = (uint32_t)strtoul(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "gen_trace: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (nstacks < 1) nstacks = 1;
  rng = seed * 0x9e3779b97f4a7c15ull | 1;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  nd_tw_init(&w, fd, wbuf, sizeof wbuf);
  site_t *sites = calloc(nstacks, sizeof *sites);
  if (!sites) return 1;

  nd_trace_header_t h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, ND_TRACE_MAGIC, sizeof h.magic);
  h.version = ND_TRACE_VERSION;
  h.header_size = sizeof h;
  h.pid = 12345;
  h.start_realtime_ns = 1700000000ull * 1000000000ull;
  h.start_mono_ns = 1000000000ull;
  h.sample_interval = 512 * 1024;
  h.track_min = 64 * 1024;
  h.depth = 40;
  h.page_size = 4096;
  snprintf(h.host, sizeof h.host, "bench-host");
  snprintf(h.exe, sizeof h.exe, "/nonexistent/bench/bin/python3");
  nd_tw_header(&w, &h);

  uint64_t mono = h.start_mono_ns, seq = 0, site_records = 0;
  uint32_t introduced = 0;
  int extra_mods = 0;
  nd_rec_counters_t c;
  memset(&c, 0, sizeof c);
  module_map(0);
  for (uint64_t batch = 0; w.bytes_out + w.len < target; batch++) {
    if (batch && batch % 64 == 0 && extra_mods < 20) module_map(++extra_mods); // a dlopen
    // New call sites appear mostly early in the run, as a training job warms up.
    uint32_t fresh = batch < 100 ? nstacks / 100 + 1 : 0;
    for (uint32_t k = 0; k < fresh && introduced < nstacks; k++) {
      uint32_t id = introduced++;
      uint64_t ips[40];
      uint32_t depth = 20 + (uint32_t)below(21);
      for (uint32_t f = 0; f < depth; f++) {
        uint64_t mod = f + 1 == depth ? 0 : below(NMODS + 1);
        uint64_t base = mod ? LIB_BASE + (mod - 1) * LIB_SPACING : EXE_BASE;
        ips[f] = base + 0x1000 + below(LIB_SIZE - 0x2000);
      }
      nd_rec_stack_t st = {id, depth};
      rec(ND_REC_STACK, &st, sizeof st, ips, depth * 8);
      site_t *s = &sites[id];
      uint64_t r = below(100);
      s->rec.stack_id = id;
      s->rec.kind = r < 90 ? 0 : r < 95 ? 1 : 4;
      s->size = s->rec.kind ? (1ull << 20) << below(6) : 16 + below(1 << (4 + below(14)));
      s->rec.flags = s->rec.kind == 0 && s->size < h.track_min ? ND_SITE_SAMPLED : 0;
      update(s, &c); // a site appears with its first allocations
      site_records++;
    }
    // Totals of hot sites change every batch; the skew (u^3) makes low ids hot.
    for (int k = 0; k < UPDATES_PER_BATCH && introduced; k++) {
      double u = (double)(next() >> 11) / 9007199254740992.0;
      update(&sites[(uint32_t)(u * u * u * introduced)], &c);
      site_records++;
    }
    mono += 1000000000ull;
    c.mono_ns = mono - 1000000;
    c.threads = 8;
    for (int k = 0; k < ND_TRACE_KINDS; k++) {
      c.kind[k].live_count = (int64_t)(c.kind[k].allocs - c.kind[k].frees);
      c.kind[k].live_bytes = c.kind[k].live_count * 4096;
      if (c.kind[k].live_bytes > c.kind[k].peak_bytes)
        c.kind[k].peak_bytes = c.kind[k].live_bytes;
    }
    rec(ND_REC_COUNTERS, &c, sizeof c, NULL, 0);
    nd_rec_flush_t fl = {mono, ++seq, 0, 0};
    rec(ND_REC_FLUSH, &fl, sizeof fl, NULL, 0);
    nd_tw_flush(&w);
  }

  // Normal exit: up to MAX_BLOCKS_PER_SITE blocks per site that still holds memory.
  uint64_t blocks = 0, leak_bytes = 0, addr = 0x600000000000ull;
  for (uint32_t i = 0; i < introduced; i++) {
    const site_t *s = &sites[i];
    uint64_t live = s->rec.allocs - s->rec.frees;
    for (uint64_t k = 0; k < live && k < MAX_BLOCKS_PER_SITE; k++) {
      bool sampled = s->rec.flags & ND_SITE_SAMPLED;
      nd_rec_block_t b = {i, s->rec.kind, sampled ? ND_SITE_SAMPLED : 0, addr += 1 << 20,
                          s->size, sampled ? h.sample_interval : s->size, mono - below(1u << 30), 0};
      rec(ND_REC_BLOCK, &b, sizeof b, NULL, 0);
      blocks++;
      leak_bytes += b.weight;
    }
  }
  nd_rec_end_t e = {mono + 500000000ull, blocks};
  rec(ND_REC_END, &e, sizeof e, NULL, 0);
  nd_tw_flush(&w);
  if (w.error || close(fd)) {
    fprintf(stderr, "gen_trace: %s: write failed\n", argv[1]);
    return 1;
  }
  printf("bytes=%llu records=%llu stacks=%u sites=%u site_records=%llu blocks=%llu "
         "leak_bytes=%llu\n",
         (unsigned long long)w.bytes_out, (unsigned long long)records, introduced, introduced,
         (unsigned long long)site_records, (unsigned long long)blocks,
         (unsigned long long)leak_bytes);
  free(sites);
  return 0;
}
