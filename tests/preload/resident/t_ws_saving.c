// SPDX-License-Identifier: MIT
// t_ws_saving: a cyclic job whose glibc heap keeps a known amount of freed memory resident, for
// the workspace savings line (t_ws_saving.py runs it with workspaces on and off). Each cycle makes
// N temporaries one after another, each written, then freed, block i of BLOCK + i x STEP bytes;
// the first cycle leaves a small pin after each one, kept to the end. A freed temporary then
// borders pins on both sides (glibc can neither merge nor trim it on free) and is too small for
// the next, larger one, which comes from the heap's top: after the first cycle glibc holds the
// N temporaries' bytes freed and resident, and later cycles reuse those holes. Without
// workspaces the resident peak is that (about N x BLOCK + the steps) though never more than one
// temporary is live; with them, after the cycle is learned, one arena of about the largest
// temporary serves every cycle. No marks: the cycle is found in the stream. Then the job maps and
// writes a long-lived buffer of LATER bytes (a dataset, a pool) and runs CYCLES_LATER more
// cycles: without workspaces glibc still holds the holes, and the resident peak is theirs plus
// the buffer; with them the holes went back just before the arena was first used (ndmem's
// trim), and the peak is the learning's or the buffer plus the arena.
#include <malloc.h>
#include <string.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>

#define N 48
#define BLOCK (4u << 20)
#define STEP (64u << 10)
#define CYCLES 24
#define CYCLES_LATER 8
#define LATER (320u << 20)
// A pin: larger than any temporary, so that it never fits a hole and comes from the heap's top,
// right after its temporary; never written, so only its chunk header's page is resident.
#define PIN (8u << 20)

__attribute__((noinline)) static void touch(char *p, size_t n, int seed) {
  for (size_t i = 0; i < n; i += 4096) p[i] = (char)(seed + (int)(i >> 12));
  p[n - 1] = (char)seed;
}

int main(void) {
  // 32 MiB, glibc's largest threshold on 64-bit: the temporaries come from the heap from the
  // first (the dynamic threshold would serve each larger one by mmap).
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1) return fprintf(stderr, "mallopt\n"), 1;
  static char *pins[N];
  char *later = NULL;
  for (int c = 0; c < CYCLES + CYCLES_LATER; c++) {
    if (c == CYCLES) {
      later = mmap(NULL, LATER, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (later == MAP_FAILED) return perror("mmap"), 1;
      memset(later, 1, LATER);
    }
    for (int i = 0; i < N; i++) {
      size_t n = BLOCK + (size_t)i * STEP;
      char *p = malloc(n);
      if (!p) return perror("malloc"), 1;
      touch(p, n, c + i);
      if (c == 0 && !(pins[i] = malloc(PIN))) return perror("malloc"), 1;
      if (p[n - 1] != (char)(c + i)) return fprintf(stderr, "block %d changed\n", i), 1;
      free(p);
    }
  }
  if (later[LATER - 1] != 1) return fprintf(stderr, "buffer changed\n"), 1;
  munmap(later, LATER);
  for (int i = 0; i < N; i++) free(pins[i]);
  return 0;
}
