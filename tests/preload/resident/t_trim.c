// SPDX-License-Identifier: MIT
// t_trim: threads that come and go, each allocating and freeing tensor-sized (256 KiB) blocks
// with no cycle to learn: the shape of mimalloc's test-stress that once made ndmem call
// malloc_trim on every large free (4096 per thread), 21x slower than without it. Prints the
// routed bytes it freed; t_trim.sh checks the trims ndmem asked for against them.
//   t_trim ROUNDS THREADS FREES
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (256 * 1024)
static int frees;

static void *worker(void *arg) {
  unsigned seed = (unsigned)(size_t)arg;
  void *keep[8] = {0};
  for (int i = 0; i < frees; i++) {
    int k = (int)(rand_r(&seed) % 8);
    free(keep[k]); // free(NULL) the first time round
    keep[k] = malloc(BLOCK + (size_t)(rand_r(&seed) % 4096));
    memset(keep[k], i, 64);
  }
  for (int k = 0; k < 8; k++) free(keep[k]);
  return NULL;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20, threads = argc > 2 ? atoi(argv[2]) : 4;
  frees = argc > 3 ? atoi(argv[3]) : 200;
  for (int r = 0; r < rounds; r++) {
    pthread_t t[64];
    for (int i = 0; i < threads && i < 64; i++)
      pthread_create(&t[i], NULL, worker, (void *)(size_t)(r * 64 + i + 1));
    for (int i = 0; i < threads && i < 64; i++) pthread_join(t[i], NULL);
  }
  // every malloc above is freed once, each at least BLOCK bytes
  printf("large frees %d, at least %llu bytes\n", rounds * threads * frees,
         (unsigned long long)rounds * threads * frees * BLOCK);
  return 0;
}
