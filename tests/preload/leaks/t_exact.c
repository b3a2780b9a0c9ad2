// SPDX-License-Identifier: MIT
// t_exact: under NDMEM_TRACK_MIN=0 (`ndmem run --exact`) every block is tracked, however small.
// Leaks of a few bytes at known lines through each allocating function (malloc, calloc, realloc
// moving a block, memalign, posix_memalign, aligned_alloc, valloc, mmap), one line reached from
// two callers (VIA: two stacks), and 10000 small blocks that are freed; t_exact.sh checks the
// leak groups exactly (check_report.py reads the LEAK/TEMP markers, t_exact.sh the VIA ones) and
// that the trace's blocks and sites add up to the shim's own counters.
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *keep[1200];
static volatile unsigned sink;

static void *leak_one(void) {
  return malloc(100); // LEAK:small 1000 x 100
}

// One allocating line reached from two callers at the same stack depth (the same return address
// and stack pointer at the malloc): two stacks, two sites, never merged.
static __attribute__((noinline)) void *leak_via(void) {
  return malloc(40);
}

int main(void) {
  long page = sysconf(_SC_PAGESIZE);
  int k = 0;
  for (int i = 0; i < 1000; i++) keep[k++] = leak_one();
  for (int i = 0; i < 10000; i++) { // freed: never reported
    char *p = malloc(1 + (size_t)i % 300); // TEMP:freed
    p[0] = (char)i;
    sink += (unsigned char)p[0];
    free(p);
  }
  for (int i = 0; i < 30; i++) {
    if (i % 3) keep[k++] = leak_via(); // VIA:a 20 x 40
    else keep[k++] = leak_via();       // VIA:b 10 x 40
  }
  for (int i = 0; i < 10; i++) keep[k++] = calloc(3, 8); // LEAK:calloc 10 x 24
  for (int i = 0; i < 7; i++) {
    char *r = malloc(16); // TEMP:realloc-source
    memset(r, 1, 16);
    char *hold = malloc(16); // TEMP:realloc-neighbour (freed below; keeps r from growing in place)
    keep[k++] = realloc(r, 3000); // LEAK:realloc 7 x 3000
    free(hold);
  }
  for (int i = 0; i < 4; i++) keep[k++] = memalign(64, 40); // LEAK:memalign 4 x 40
  for (int i = 0; i < 2; i++)
    if (posix_memalign(&keep[k++], 32, 56)) return 2; // LEAK:posix_memalign 2 x 56
  for (int i = 0; i < 3; i++) keep[k++] = aligned_alloc(128, 256); // LEAK:aligned_alloc 3 x 256
  keep[k++] = valloc(10);                                          // LEAK:valloc 1 x 10
  void *shrunk = malloc(64);                                       // TEMP:realloc-shrunk
  free(realloc(shrunk, 8));
  const int rw = PROT_READ | PROT_WRITE, anon = MAP_PRIVATE | MAP_ANONYMOUS;
  keep[k++] = mmap(NULL, (size_t)page, rw, anon, -1, 0); // LEAK:mmap 1 x 1 pages
  for (int i = 0; i < k; i++)
    if (!keep[i] || keep[i] == MAP_FAILED) return 3;
  return 0;
}
