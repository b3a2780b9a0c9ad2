// SPDX-License-Identifier: MIT
// gen_trace: writes the traces of the golden tests with the shim's own record writer. `basic`
// and `killed` are deterministic (fixed pid and times, module paths that do not exist so frames
// print as path+offset anywhere); the stored .trace files are their output. `self` records real
// return addresses of this program and its module map, to check symbolization against this file.
// usage: gen_trace basic|killed|self OUT
#include "trace_write.h"

#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char wbuf[1 << 16];
static nd_tw_t w;

#define MS 1000000ull
#define T0 1000000000ull // start, CLOCK_MONOTONIC ns

static void header(const char *exe, uint64_t pid) {
  nd_trace_header_t h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, ND_TRACE_MAGIC, sizeof h.magic);
  h.version = ND_TRACE_VERSION;
  h.header_size = sizeof h;
  h.pid = pid;
  h.start_realtime_ns = 1700000000ull * 1000000000ull; // 2023-11-14 22:13:20 UTC
  h.start_mono_ns = T0;
  h.sample_interval = 512 * 1024;
  h.track_min = 64 * 1024;
  h.depth = 32;
  h.page_size = 4096;
  snprintf(h.host, sizeof h.host, "golden-host");
  snprintf(h.exe, sizeof h.exe, "%s", exe);
  nd_tw_header(&w, &h);
}

static void module(uint32_t id, const char *path, uint64_t base, uint64_t lo, uint64_t hi) {
  nd_rec_module_t m = {.id = id, .path_len = (uint32_t)strlen(path), .base = base, .lo = lo,
                       .hi = hi};
  nd_tw_record(&w, ND_REC_MODULE, &m, sizeof m, path, m.path_len);
}

static void stack(uint32_t id, uint32_t depth, const uint64_t *ips) {
  nd_rec_stack_t s = {.id = id, .depth = depth};
  nd_tw_record(&w, ND_REC_STACK, &s, sizeof s, ips, depth * 8);
}

static void site(uint32_t stack_id, uint16_t kind, uint16_t flags, uint64_t allocs,
                 uint64_t frees, uint64_t alloc_bytes, uint64_t free_bytes, uint64_t peak) {
  nd_rec_site_t s = {stack_id, kind, flags, allocs, frees, alloc_bytes, free_bytes, peak};
  nd_tw_record(&w, ND_REC_SITE, &s, sizeof s, NULL, 0);
}

static void block(uint32_t stack_id, uint16_t kind, uint16_t flags, uint64_t addr,
                  uint64_t size, uint64_t weight, uint64_t ns) {
  nd_rec_block_t b = {stack_id, kind, flags, addr, size, weight, ns};
  nd_tw_record(&w, ND_REC_BLOCK, &b, sizeof b, NULL, 0);
}

static void flush(uint64_t seq, uint64_t ns) {
  nd_rec_flush_t f = {ns, seq};
  nd_tw_record(&w, ND_REC_FLUSH, &f, sizeof f, NULL, 0);
  nd_tw_flush(&w);
}

static void end(uint64_t ns, uint64_t blocks) {
  nd_rec_end_t e = {ns, blocks};
  nd_tw_record(&w, ND_REC_END, &e, sizeof e, NULL, 0);
  nd_tw_flush(&w);
}

typedef struct kt {
  int64_t live, peak, count;
  uint64_t allocs, frees;
} kt_t;

static void counters(uint64_t ns, uint32_t threads, kt_t heap, kt_t mmap, kt_t dev0,
                     const uint64_t calls[ND_TRACE_FNS], uint64_t bootstrap) {
  nd_rec_counters_t c;
  memset(&c, 0, sizeof c);
  c.mono_ns = ns;
  c.threads = threads;
  kt_t k[5] = {heap, mmap, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, dev0};
  for (int i = 0; i < 5; i++)
    c.kind[i] = (nd_rec_kind_totals_t){k[i].live, k[i].peak, k[i].count, k[i].allocs,
                                       k[i].frees};
  memcpy(c.calls, calls, sizeof c.calls);
  c.fallbacks[0] = bootstrap;
  nd_tw_record(&w, ND_REC_COUNTERS, &c, sizeof c, NULL, 0);
}

// ---------------------------------------------------------------- basic / killed

#define EXE 0x555555554000ull
#define FOO 0x7f0000000000ull
#define LIBC 0x7f1000000000ull
#define OLD 0x7f2000000000ull // libold.so, replaced by libnew.so at the same address
#define PLUG 0x7f3000000000ull
#define VDSO 0x7ffff7fc1000ull

enum { MALLOC = 0, CALLOC = 1, REALLOC = 2, FREE = 9, MMAP = 12, MUNMAP = 13 };

static void synthetic(int killed) {
  header("/nonexistent/bin/train", 4242);

  // Batch 1: the start-up module map, stacks, first site totals.
  module(0, "/nonexistent/bin/train", EXE, EXE, EXE + 0x6000);
  module(1, "/nonexistent/lib/libfoo.so", FOO, FOO, FOO + 0x200000);
  module(2, "/nonexistent/lib/libc.so.6", LIBC, LIBC, LIBC + 0x200000);
  module(3, "/nonexistent/lib/libold.so", OLD, OLD, OLD + 0x100000);
  module(4, "linux-vdso.so.1", VDSO, VDSO, VDSO + 0x2000);
  const uint64_t s1[] = {FOO + 0x1234, FOO + 0x2000, EXE + 0x1100, LIBC + 0x29d90, EXE + 0x1050};
  const uint64_t s2[] = {OLD + 0x450, EXE + 0x1200, LIBC + 0x29d90};
  const uint64_t s9[] = {0xdeadbeef0ull, EXE + 0x1500};
  const uint64_t s11[] = {VDSO + 0xa00, EXE + 0x1600};
  stack(1, 5, s1);
  stack(2, 3, s2);
  stack(9, 2, s9);
  stack(10, 0, NULL);
  stack(11, 2, s11);
  site(1, 0, 0, 5, 2, 500000, 200000, 300000);
  site(2, 1, 0, 1, 0, 8388608, 0, 8388608);
  site(9, 0, 0, 10, 10, 655360, 655360, 131072);
  counters(T0 + 900 * MS, 1, (kt_t){1000000, 2000000, 100, 1000, 900},
           (kt_t){8388608, 8388608, 1, 1, 0}, (kt_t){0, 0, 0, 0, 0},
           (const uint64_t[ND_TRACE_FNS]){[MALLOC] = 990, [CALLOC] = 10, [FREE] = 900,
                                          [MMAP] = 1},
           3);
  flush(1, T0 + 1000 * MS);

  // Batch 2: the map re-written after a dlopen/dlclose (libold.so gone, libnew.so at its
  // address, libplugin.so added), new stacks, more sites.
  module(0, "/nonexistent/bin/train", EXE, EXE, EXE + 0x6000);
  module(1, "/nonexistent/lib/libfoo.so", FOO, FOO, FOO + 0x200000);
  module(2, "/nonexistent/lib/libc.so.6", LIBC, LIBC, LIBC + 0x200000);
  module(5, "/nonexistent/lib/libnew.so", OLD, OLD, OLD + 0x80000);
  module(6, "/nonexistent/lib/libplugin.so", PLUG, PLUG, PLUG + 0x10000);
  module(4, "linux-vdso.so.1", VDSO, VDSO, VDSO + 0x2000);
  const uint64_t s3[] = {PLUG + 0x800, FOO + 0x3000, EXE + 0x1300};
  uint64_t s7[12];
  for (int i = 0; i < 12; i++) s7[i] = EXE + 0x1400 + 0x10 * (uint64_t)i;
  stack(3, 3, s3);
  stack(7, 12, s7);
  site(1, 0, 0, 20, 18, 2000000, 1800000, 600000);
  site(3, 0, ND_SITE_SAMPLED, 600, 500, 614400, 512000, 204800);
  site(7, 4, 0, 2, 0, 2147483648ull, 0, 2147483648ull);
  site(9, 0, 0, 1000, 1000, 65536000, 65536000, 131072);
  site(10, 0, 0, 1, 0, 70000, 0, 70000);
  site(11, 0, 0, 10, 10, 40960, 40960, 4096);
  site(2, 1, 0, 2, 0, 16777216, 0, 16777216);
  counters(T0 + 2900 * MS, 2, (kt_t){1200000, 20000000, 400, 12000, 11600},
           (kt_t){16777216, 16777216, 2, 2, 0}, (kt_t){2147483648, 2147483648, 2, 2, 0},
           (const uint64_t[ND_TRACE_FNS]){[MALLOC] = 11000, [CALLOC] = 200, [REALLOC] = 800,
                                          [FREE] = 11600, [MMAP] = 2},
           3);
  flush(2, T0 + 3000 * MS);

  // Batch 3: final totals. The killed variant dies while writing it: one whole SITE record,
  // then the next one cut after 20 of its 56 bytes.
  site(1, 0, 0, 40, 37, 4000000, 3700000, 1000000);
  site(2, 1, 0, 3, 1, 25165824, 8388608, 16777216);
  if (killed) {
    nd_tw_flush(&w);
    if (ftruncate(w.fd, (off_t)(w.bytes_out - 36))) perror("gen_trace: ftruncate");
    return;
  }
  site(3, 0, ND_SITE_SAMPLED, 1201, 1100, 1298800, 1126400, 274800);
  counters(T0 + 4400 * MS, 2, (kt_t){1342984, 29606488, 705, 25254, 24549},
           (kt_t){16777216, 25165824, 2, 3, 1}, (kt_t){2147483648, 2147483648, 2, 2, 0},
           (const uint64_t[ND_TRACE_FNS]){[MALLOC] = 23478, [CALLOC] = 276, [REALLOC] = 1500,
                                          [FREE] = 23056, [MMAP] = 3, [MUNMAP] = 1},
           3);
  flush(3, T0 + 4500 * MS);

  // Normal exit: the tracked blocks still live, then END.
  block(1, 0, 0, 0x5555555a0000, 100000, 100000, T0 + 4100 * MS);
  block(1, 0, 0, 0x5555555c0000, 100000, 100000, T0 + 4200 * MS);
  block(1, 0, 0, 0x5555555e0000, 100000, 100000, T0 + 4300 * MS);
  block(2, 1, 0, 0x7f5000000000, 8388608, 8388608, T0 + 500 * MS);
  block(2, 1, 0, 0x7f5000800000, 8388608, 8388608, T0 + 2500 * MS);
  block(3, 0, ND_SITE_SAMPLED, 0x555555700000, 1024, 102400, T0 + 3500 * MS);
  block(3, 0, 0, 0x555555710000, 70000, 70000, T0 + 3600 * MS);
  block(7, 4, 0, 0x700000000, 1073741824, 1073741824, T0 + 1500 * MS);
  block(7, 4, 0, 0x740000000, 1073741824, 1073741824, T0 + 1600 * MS);
  block(10, 0, 0, 0x555555720000, 70000, 70000, T0 + 2000 * MS);
  end(T0 + 5250 * MS, 10);
}

// ---------------------------------------------------------------- self

static char exe_path[PATH_MAX];

static int each_module(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uint32_t *id = arg;
  const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : NULL;
  if (!name && *id == 0) name = exe_path; // the first object is the executable
  if (!name) return 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + p->p_vaddr;
    if (a < lo) lo = a;
    if (a + p->p_memsz > hi) hi = a + p->p_memsz;
  }
  if (lo < hi) module((*id)++, name, info->dlpi_addr, lo, hi);
  return 0;
}

__attribute__((noinline)) static void capture(uint64_t *out) {
  out[0] = (uint64_t)__builtin_return_address(0);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void self_caller(uint64_t *out) {
  capture(out); // SELF_CALL
  out[1] = (uint64_t)__builtin_return_address(0);
  __asm__ volatile("" ::: "memory");
}

// Always inlined, so that the second frame checks inline expansion: `self` inlined into main.
static inline __attribute__((always_inline)) void self(void) {
  ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
  if (n <= 0) {
    perror("gen_trace: /proc/self/exe");
    exit(1);
  }
  exe_path[n] = 0;
  uint64_t ips[2];
  self_caller(ips); // SELF_MAIN
  header(exe_path, (uint64_t)getpid());
  uint32_t id = 0;
  dl_iterate_phdr(each_module, &id);
  stack(1, 2, ips);
  site(1, 0, 0, 1, 0, 4096, 0, 4096);
  flush(1, T0 + 10 * MS);
  block(1, 0, 0, 0x1000, 4096, 4096, T0 + 5 * MS);
  end(T0 + 20 * MS, 1);
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "basic") && strcmp(argv[1], "killed") &&
                    strcmp(argv[1], "self"))) {
    fprintf(stderr, "usage: gen_trace basic|killed|self OUT\n");
    return 2;
  }
  int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(argv[2]);
    return 1;
  }
  nd_tw_init(&w, fd, wbuf, sizeof wbuf);
  if (!strcmp(argv[1], "self")) self(); // SELF_INLINED
  else synthetic(!strcmp(argv[1], "killed"));
  nd_tw_flush(&w);
  if (w.error || close(fd)) {
    fprintf(stderr, "gen_trace: %s: write failed\n", argv[2]);
    return 1;
  }
  return 0;
}
