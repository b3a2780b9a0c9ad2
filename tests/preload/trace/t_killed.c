// SPDX-License-Identifier: MIT
// t_killed: allocates 7 blocks of 100000 B and 2 mappings of 16 pages that it keeps, frees a
// temporary, says "ready" and waits to be killed. t_killed.sh sends SIGKILL after a flush and
// checks that ndmemreport reads the cut-off trace and reports exactly these live bytes.
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
  static void *keep[7];
  for (int i = 0; i < 7; i++) keep[i] = malloc(100000); // LIVE:loop 7 x 100000
  void *tmp = malloc(50000);                              // TEMP:freed
  free(tmp);
  long page = sysconf(_SC_PAGESIZE);
  void *m[2];
  const int rw = PROT_READ | PROT_WRITE, anon = MAP_PRIVATE | MAP_ANONYMOUS;
  for (int i = 0; i < 2; i++) m[i] = mmap(NULL, 16 * (size_t)page, rw, anon, -1, 0); // LIVE:mmap 2 x 16 pages
  printf("ready %p %p\n", keep[0], m[0]);
  fflush(stdout);
  for (;;) pause();
}
