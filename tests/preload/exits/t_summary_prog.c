// SPDX-License-Identifier: MIT
// t_summary_prog: a program with known anonymous-mmap behaviour, for the exit-summary test: it
// maps 3 pages and keeps them, maps 5 pages and unmaps them, and prints one line on stdout.
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
  long p = sysconf(_SC_PAGESIZE);
  void *keep = mmap(NULL, 3 * p, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *tmp = mmap(NULL, 5 * p, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (keep == MAP_FAILED || tmp == MAP_FAILED) return 1;
  munmap(tmp, 5 * p);
  printf("program output\n");
  return 0;
}
