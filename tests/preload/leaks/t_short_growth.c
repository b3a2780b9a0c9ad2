// SPDX-License-Identifier: MIT
// t_short_growth: a short job's growth. A quiet start-up (a table made and kept, then a pause, as
// a job importing its framework), then a loop of STEPS steps of STEP_MS whose temporaries (256 and
// 128 KiB, freed within the step) give ndmem its cycles; t_short_growth.py runs it under the shim
// and checks the report exactly. usage: t_short_growth MODE STEPS STEP_MS START_MS
//   leak   each step keeps 256 KiB in a list that is freed after the loop, as a Python list is
//          at interpreter shutdown: released at teardown, 256 KiB per cycle
//   keep   the same kept to exit: growing, 256 KiB per cycle, STEPS blocks
//   clean  temporaries only: nothing grows
// Built with -O0 -g so every call keeps its own line.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

// One step's temporaries: all freed before it ends.
static void step(int i) {
  char *a = malloc(256 * 1024); // TEMP:a
  char *b = malloc(128 * 1024); // TEMP:b
  memset(a, i, 256 * 1024);
  memset(b, i, 128 * 1024);
  free(b);
  free(a);
}

static void *kept[4096];
static char *table; // held to exit: still reachable there

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: t_short_growth leak|keep|clean STEPS STEP_MS START_MS\n");
    return 2;
  }
  const char *mode = argv[1];
  int steps = atoi(argv[2]), step_ms = atoi(argv[3]), start_ms = atoi(argv[4]);
  int leak = !strcmp(mode, "leak"), keep = !strcmp(mode, "keep");
  if ((!leak && !keep && strcmp(mode, "clean")) || steps < 1 || steps > 4096) return 2;
  table = malloc(1 << 20); // STARTUP:table, held to exit
  memset(table, 1, 1 << 20);
  pause_ms(start_ms);
  for (int i = 0; i < steps; i++) {
    step(i);
    if (leak || keep) {
      char *p = malloc(256 * 1024); // LEAK:step 256 KiB per step
      memset(p, 2, 256 * 1024);
      kept[i] = p;
    }
    pause_ms(step_ms);
  }
  if (leak)
    for (int i = 0; i < steps; i++) free(kept[i]);
  printf("%s: %d steps\n", mode, steps);
  return table[0] == 1 ? 0 : 1;
}
