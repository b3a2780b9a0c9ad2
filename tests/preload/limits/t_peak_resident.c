// SPDX-License-Identifier: MIT
// t_peak_resident: what t_peak_resident.sh runs under the shim. `spike`: five 64 MiB blocks
// written and freed at once, between two flushes (the limit checks read resident memory every
// NDMEM_LIMIT_STEP bytes, so they see the spikes; a flush does not), then a quiet half second.
// `hold`: 32 MiB written and held, a line on stdout, then a sleep until the test kills it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1 << 20)

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  if (!strcmp(argv[1], "spike")) {
    usleep(300 * 1000); // past the writer's first flush
    for (int i = 0; i < 5; i++) {
      char *p = malloc(64 * MIB); // mmap'd by glibc: freed, it leaves resident memory
      if (!p) return 1;
      memset(p, 1, 64 * MIB);
      char *q = malloc(MIB); // a checked allocation while the spike is resident
      free(q);
      free(p);
    }
    usleep(500 * 1000);
    return 0;
  }
  if (!strcmp(argv[1], "hold")) {
    char *p = malloc(32 * MIB);
    if (!p) return 1;
    memset(p, 1, 32 * MIB);
    printf("holding\n");
    fflush(stdout);
    for (;;) pause();
  }
  return 2;
}
