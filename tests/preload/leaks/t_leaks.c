// SPDX-License-Identifier: MIT
// t_leaks: leaks at known lines (malloc in a loop, calloc, realloc, mmap), temporaries that are
// freed, and a partially unmapped mapping. Built with -O0 -g so each call keeps its own line;
// check_leaks.py finds the lines by the LEAK/TEMP markers and compares ndmemreport's JSON with
// the exact bytes and counts below. Every size is at least NDMEM_TRACK_MIN (8 KiB): exact.
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *keep[16];

static void *make_buffer(size_t n) {
  return malloc(n); // LEAK:helper 3 x 12288
}

int main(void) {
  long page = sysconf(_SC_PAGESIZE);
  for (int i = 0; i < 5; i++) keep[i] = malloc(20000); // LEAK:loop 5 x 20000
  keep[5] = calloc(1, 50000);                            // LEAK:calloc 1 x 50000
  void *r = malloc(9000);                                // TEMP:realloc-source
  keep[6] = realloc(r, 40000);                           // LEAK:realloc 1 x 40000
  for (int i = 0; i < 3; i++) keep[7 + i] = make_buffer(12288);
  for (int i = 0; i < 100; i++) {
    char *tmp = malloc(30000); // TEMP:loop
    memset(tmp, i, 30000);
    free(tmp);
  }
  const int rw = PROT_READ | PROT_WRITE, anon = MAP_PRIVATE | MAP_ANONYMOUS;
  char *m = mmap(NULL, 4 * (size_t)page, rw, anon, -1, 0); // LEAK:mmap 1 x 3 pages
  munmap(m + 3 * page, (size_t)page);
  void *gone = mmap(NULL, 2 * (size_t)page, rw, anon, -1, 0); // TEMP:mmap
  munmap(gone, 2 * (size_t)page);
  return keep[0] == NULL;
}
