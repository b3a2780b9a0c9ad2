// SPDX-License-Identifier: MIT
// t_kernel_peak: a program whose peak the kernel measures, with a large reservation it barely
// touches (as OpenBLAS maps its 256 MiB buffer and uses a corner of it): it maps 256 MiB and
// touches 1 MiB of it, allocates and fills a 32 MiB heap block, holds them over a few flushes and
// exits. The report's peak is the kernel's, its parts add up to it, and neither the flame graph
// nor the top sites count the untouched 255 MiB (t_kernel_peak.sh).
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

int main(void) {
  char *resv = mmap(NULL, 256u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (resv == MAP_FAILED) return 1;
  memset(resv, 1, 1u << 20);
  char *heap = malloc(32u << 20);
  if (!heap) return 1;
  memset(heap, 2, 32u << 20);
  struct timespec ts = {0, 300 * 1000 * 1000}; // several flushes at NDMEM_FLUSH_MS=50
  nanosleep(&ts, NULL);
  int sum = resv[4096] + heap[12345];
  free(heap);
  munmap(resv, 256u << 20);
  return sum == 3 ? 0 : 2;
}
