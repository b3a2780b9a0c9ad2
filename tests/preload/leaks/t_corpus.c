// SPDX-License-Identifier: MIT
// t_corpus: planted leaks with known truth, one per mode, for the lifetime classes (t_corpus.py
// runs each under the shim and checks ndmemreport's JSON exactly: class, bytes, blocks and the
// line marked LEAK:<name>). Each mode runs a training-like loop whose per-iteration temporaries
// (64 KiB and more, freed within the iteration) give ndmem its cycles.
//   grow [N]  1 MiB kept every 5th iteration of N (60): growing, N / 5 blocks
//   table     a 4 MiB table and a 96 KiB one made before the loop, kept to exit: held since start-up
//   thread    a worker thread keeps 128 KiB per iteration while the main thread's loop only makes
//             temporaries: growing on the worker's line only, 40 blocks
//   small     50 x 100 B kept per iteration of 20, 10000 x 100 B freed: growing, 1000 blocks
//             of 100 B exactly under --exact; sampled, an honest estimate or 'untracked'
//   clean     temporaries only: nothing growing, nothing live at exit beyond start-up
//   tiny, odd, many
//             small blocks kept in one burst halfway through the loop: 1000 x 1 B, 100 x 123 B,
//             10000 x 500 B, each from one line: live at exit, exactly under --exact; sampled,
//             what --fail-on-leak cannot check unless a sample shows a leak (t_verdict.py)
//   manygrow  100 x 500 B kept per iteration of 100: growing, 10000 blocks, for the sampled
//             estimates' caps (t_verdict.py)
//   smallgrow N
//             N x 100 B kept per iteration of 60, in a list (still reachable), to exit: growing
//             by N x 100 B a cycle, which sampling shows or not (t_verdict.py)
// Built with -O0 -g so every call keeps its own line.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void pause_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

// One iteration's temporaries: all freed before it ends.
static void step(int i) {
  char *a = malloc(256 * 1024); // TEMP:a
  char *b = malloc(128 * 1024); // TEMP:b
  memset(a, i, 256 * 1024);
  memset(b, i, 128 * 1024);
  char *c = malloc(64 * 1024); // TEMP:c
  memcpy(c, a, 64 * 1024);
  free(b);
  free(c);
  free(a);
}

static void *kept[4096];
static int nkept;

static void grow(int n) {
  for (int i = 0; i < n; i++) {
    step(i);
    if (i % 5 == 3) {
      char *p = malloc(1 << 20); // LEAK:grow 12 x 1048576
      memset(p, 1, 1 << 20);
      kept[nkept++] = p;
    }
    pause_ms(8);
  }
}

static char *table, *names;

static void table_mode(void) {
  table = malloc(4 << 20); // LEAK:table 1 x 4194304
  memset(table, 7, 4 << 20);
  names = calloc(1, 96 * 1024); // LEAK:names 1 x 98304
  for (int i = 0; i < 60; i++) {
    step(i);
    table[i] = (char)i;
    pause_ms(8);
  }
}

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 40; i++) {
    step(i);
    char *p = malloc(128 * 1024); // LEAK:thread 40 x 131072
    memset(p, 2, 128 * 1024);
    kept[nkept++] = p; // only this thread writes kept
    pause_ms(10);
  }
  return NULL;
}

static void thread_mode(void) {
  pthread_t th;
  if (pthread_create(&th, NULL, worker, NULL)) exit(3);
  for (int i = 0; i < 40; i++) {
    step(i);
    pause_ms(10);
  }
  pthread_join(th, NULL);
}

static void small(void) {
  for (int i = 0; i < 20; i++) {
    step(i);
    for (int k = 0; k < 550; k++) {
      char *p = malloc(100); // LEAK:small 1000 x 100
      p[0] = (char)k;
      if (k % 11 == 5) kept[nkept++] = p; // 50 of each 550 are kept
      else free(p);
    }
    pause_ms(8);
  }
}

// `n` blocks of `size` bytes kept, each from one line: LEAK:<name> marks it for the tests.
static void keep_small(int n, size_t size, int which) {
  for (int k = 0; k < n; k++) {
    char *p;
    if (which == 0) p = malloc(size); // LEAK:tiny 1000 x 1
    else if (which == 1) p = malloc(size); // LEAK:odd 100 x 123
    else p = malloc(size); // LEAK:many 10000 x 500
    memset(p, k, size); // and dropped: definitely lost
  }
}

static void burst(int n, size_t size, int which) {
  for (int i = 0; i < 20; i++) {
    step(i);
    if (i == 10) keep_small(n, size, which);
    pause_ms(8);
  }
}

static void smallgrow(int n) {
  void **list = NULL;
  for (int i = 0; i < 60; i++) {
    step(i);
    for (int k = 0; k < n; k++) {
      void **p = malloc(100); // LEAK:smallgrow
      *p = list;
      list = p;
    }
    pause_ms(8);
  }
  kept[nkept++] = list;
}

static void manygrow(void) {
  for (int i = 0; i < 100; i++) {
    step(i);
    for (int k = 0; k < 100; k++) {
      char *p = malloc(500); // LEAK:manygrow 10000 x 500
      memset(p, k, 500);
    }
    pause_ms(8);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "grow")) grow(argc > 2 ? atoi(argv[2]) : 60);
  else if (!strcmp(mode, "table")) table_mode();
  else if (!strcmp(mode, "thread")) thread_mode();
  else if (!strcmp(mode, "small")) small();
  else if (!strcmp(mode, "clean")) for (int i = 0; i < 60; i++) step(i), pause_ms(8);
  else if (!strcmp(mode, "tiny")) burst(1000, 1, 0);
  else if (!strcmp(mode, "odd")) burst(100, 123, 1);
  else if (!strcmp(mode, "many")) burst(10000, 500, 2);
  else if (!strcmp(mode, "manygrow")) manygrow();
  else if (!strcmp(mode, "smallgrow") && argc > 2) smallgrow(atoi(argv[2]));
  else
    return fprintf(stderr, "usage: t_corpus grow|table|thread|small|clean|tiny|odd|many|"
                           "manygrow|smallgrow N\n"), 2;
  printf("%s done\n", mode);
  return 0;
}
