// SPDX-License-Identifier: MIT
// test_symidx: ndmemreport's symbol index (symbolize.c) gives the names dwfl_module_addrinfo
// gives, address by address, on the real libraries this test has loaded (libc, libdw, libelf,
// libstdc++, ld.so ...) and on large ones where the machine has them (libpython, OpenBLAS,
// libtorch_cpu): every symbol's first, middle and last byte, the bytes just outside it, and
// addresses drawn at random across each file's loaded segments, where symbols without a size,
// gaps between symbols and nested symbols are met. Any difference is printed and fails.
#include "../../check.h"
#include "analyse/symbolize.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BASE 0x7f0000000000ull
#define PER_MODULE 4000 // addresses compared per file (libdwfl scans its whole table for each)

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static int files, compared, differ;

static void check_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  Dwfl *dwfl = dwfl_begin(&callbacks);
  Dwfl_Module *mod = dwfl ? dwfl_report_elf(dwfl, path, path, fd, BASE, true) : NULL;
  if (!mod) {
    close(fd);
    if (dwfl) dwfl_end(dwfl);
    return;
  }
  dwfl_report_end(dwfl, NULL, NULL);
  nd_symidx_t *x = nd_symidx_new(mod);
  CHECK(x != NULL);
  int n = dwfl_module_getsymtab(mod);
  Dwarf_Addr lo = 0, hi = 0;
  dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
  // candidates: around every symbol, then random addresses in [lo, hi)
  size_t cap = (size_t)(n > 0 ? n : 0) * 6 + 4096, nc = 0;
  uint64_t *cand = malloc(cap * sizeof *cand);
  CHECK(cand != NULL);
  if (!cand) return;
  for (int i = 1; i < n; i++) {
    GElf_Sym sym;
    GElf_Addr a;
    if (!dwfl_module_getsym_info(mod, i, &sym, &a, NULL, NULL, NULL)) continue;
    uint64_t sz = sym.st_size;
    uint64_t pts[6] = {a, a + 1, a + sz / 2, a + (sz ? sz - 1 : 0), a + sz, a - 1};
    for (int k = 0; k < 6; k++) cand[nc++] = pts[k];
  }
  for (int i = 0; i < 4096 && hi > lo; i++) cand[nc++] = lo + next() % (hi - lo);
  int here = 0;
  for (int i = 0; i < PER_MODULE && nc; i++) {
    uint64_t pc = cand[next() % nc];
    GElf_Off off;
    GElf_Sym sym;
    const char *want = dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
    const char *got = nd_symidx_lookup(x, mod, pc);
    compared++;
    here++;
    if (!want != !got || (want && strcmp(want, got))) {
      if (differ++ < 20)
        fprintf(stderr, "%s +0x%llx: libdwfl '%s', index '%s'\n", path,
                (unsigned long long)(pc - BASE), want ? want : "(none)", got ? got : "(none)");
    }
  }
  printf("%-60s %7d symbols, %5d addresses compared\n", path, n, here);
  files++;
  free(cand);
  nd_symidx_free(x);
  dwfl_end(dwfl);
}

static int loaded(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  if (info->dlpi_name && info->dlpi_name[0] == '/') check_file(info->dlpi_name);
  return 0;
}

int main(int argc, char **argv) {
  dl_iterate_phdr(loaded, NULL);
  check_file("/proc/self/exe");
  static const char *big[] = {
      "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
      "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
      "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13",
  };
  for (size_t i = 0; i < sizeof big / sizeof *big; i++) check_file(big[i]);
  for (int i = 1; i < argc; i++) check_file(argv[i]);
  printf("%d files, %d addresses, %d differ\n", files, compared, differ);
  CHECK(files >= 4); // libc, libdw, libelf, ld.so at least
  CHECK_EQ(differ, 0);
  return CHECK_DONE();
}
