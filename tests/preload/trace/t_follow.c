// SPDX-License-Identifier: MIT
// t_follow: a program whose live heap grows while it runs, for t_follow.sh: six times it keeps a
// 2 MiB block (touched, so it is real) and sleeps 0.3 s, then exits 0 with them live: freeing
// them would let a flush land among the frees, and the live bytes at a flush would fall.
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void) {
  void *kept[6];
  struct timespec ts = {0, 300 * 1000000L};
  for (int i = 0; i < 6; i++) {
    kept[i] = malloc(2 << 20);
    if (!kept[i]) return 1;
    memset(kept[i], i + 1, 2 << 20);
    nanosleep(&ts, NULL);
  }
  return 0;
}
