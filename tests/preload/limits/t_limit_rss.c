// SPDX-License-Identifier: MIT
// t_limit_rss: a cyclic job whose temporaries fragment glibc's heap when it serves them: each
// cycle four tensors of 10, 12, 14 and 16 MiB, written whole, with a small record kept between
// them (a metrics list), then freed. From the heap, the kept records split the freed holes and
// the heap grows every cycle; from a workspace arena the tensors never touch it. t_limit_rss.sh
// runs it without a limit and under NDMEM_MAX_BYTES too low for the arena as planned (with its
// overallocation) yet above the job's live peak. It prints its resident peak (VmHWM) and its
// checksum (the same however it ran).
// usage: t_limit_rss CYCLES
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long hwm_kib(void) {
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) v = strtol(line + 6, NULL, 10);
  if (f) fclose(f);
  return v;
}

int main(int argc, char **argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : 40;
  static const size_t mib[] = {10, 12, 14, 16};
  void **kept = calloc((size_t)cycles * 4, sizeof *kept);
  unsigned long long sum = 0;
  if (!kept) return 2;
  for (int c = 0; c < cycles; c++) {
    unsigned char *t[4];
    for (int i = 0; i < 4; i++) {
      size_t n = mib[i] << 20;
      if (!(t[i] = malloc(n))) {
        printf("refused at cycle %d\npeak_rss_kib %ld\n", c, hwm_kib());
        return 3;
      }
      memset(t[i], c + i, n);
      unsigned char *k = malloc(48); // a record kept for the whole run, between the tensors
      if (!k) return 3;
      k[0] = t[i][n / 2];
      kept[c * 4 + i] = k;
    }
    for (int i = 0; i < 4; i++) sum += t[i][(size_t)c * 4099 % (mib[i] << 20)];
    for (int i = 3; i >= 0; i--) free(t[i]);
  }
  for (int i = 0; i < cycles * 4; i++) sum += ((unsigned char *)kept[i])[0];
  printf("checksum %llu\npeak_rss_kib %ld\n", sum, hwm_kib());
  return 0;
}
