// SPDX-License-Identifier: MIT
// t_ws_outlive: blocks that outlive a workspace cycle, under automatic and declared cycles.
// Each iteration allocates NT temporaries (64 KiB - 1 MiB), fills each with a pattern unique to
// (iteration, tensor), checks every pattern and frees all of them before the iteration ends. The
// program prints a checksum of everything it read on stdout, the same with and without ndmem.
// Modes (argv[1]; a second argument "marks" wraps each iteration in ndmem_cycle_begin/end):
//   extra  every 5th iteration (3, 8, ..., 58) first allocates one more 1 MiB block and keeps it
//          to the end: a correct program whose allocation stream varies slightly. Without marks
//          the extra allocation shifts the cycles ndmem detects, so temporaries are still live
//          at a detected boundary: they outlived ndmem's guess, which is not the program's
//          error. (The phase 3 makes the first learned cycle a regular one.)
//   keep   the 1 MiB block is allocated every iteration and freed at its end, except every 5th
//          iteration (5, 10, ..., 60), which keeps it to the end: with marks, a block served
//          from the workspace and kept past its declared cycle, a leaked workspace pointer.
//   stale  (automatic cycles, NDMEM_WS_GUARD=1) once the cycle is served from the arena, a
//          temporary is freed and read one cycle later: guard mode must fault and name it.
// With the shim loaded, stderr gets one line "ws NAME cycles .. hits .. escapes .. pinned .."
// per workspace of the thread (ndmem_ws_stats), for t_ws_outlive.sh to check.
#include "ndmem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT 6
#define ITERS 60
#define BIG (1 << 20)
static const size_t size[NT] = {65536, 262144, 1 << 20, 131072, 524288, 98304};

__attribute__((noinline)) static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i += 256) p[i] = (unsigned char)(seed + i / 256);
  p[n - 1] = (unsigned char)(seed * 7);
}
static int errors;
static uint64_t sum;
// Checks the pattern and adds what was read to the checksum.
__attribute__((noinline)) static void check(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i += 256) {
    if (p[i] != (unsigned char)(seed + i / 256)) errors++;
    sum = sum * 1000003u + p[i];
  }
  if (p[n - 1] != (unsigned char)(seed * 7)) errors++;
}

static unsigned char *kept[ITERS];
static unsigned kept_seed[ITERS];
static int nkept;

static uint64_t auto_hits(void) {
  ndmem_ws_stats_t s[4];
  int n = ndmem_ws_stats ? ndmem_ws_stats(s, 4) : 0;
  for (int i = 0; i < n && i < 4; i++)
    if (!strcmp(s[i].name, "auto")) return s[i].hits;
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "extra";
  int marks = argc > 2 && !strcmp(argv[2], "marks");
  int extra = !strcmp(mode, "extra"), keep = !strcmp(mode, "keep"), stale = !strcmp(mode, "stale");
  if (!extra && !keep && !stale) return fprintf(stderr, "unknown mode %s\n", mode), 2;
  if (marks && !ndmem_cycle_begin) return fprintf(stderr, "marks need libndmem.so\n"), 2;
  unsigned char *stale_p = NULL;
  for (int it = 1; it <= ITERS; it++) {
    if (marks) ndmem_cycle_begin();
    uint64_t hits_before = auto_hits();
    unsigned char *big = NULL, *t[NT];
    if ((extra && it % 5 == 3) || keep) {
      big = malloc(BIG);
      fill(big, BIG, (unsigned)it * 131u);
    }
    for (int i = 0; i < NT; i++) {
      t[i] = malloc(size[i]);
      fill(t[i], size[i], (unsigned)(it * 31 + i));
    }
    for (int i = NT - 1; i >= 0; i--) {
      check(t[i], size[i], (unsigned)(it * 31 + i));
      free(t[i]);
    }
    if (big && (extra || it % 5 == 0)) {
      kept[nkept] = big;
      kept_seed[nkept++] = (unsigned)it * 131u;
    } else if (big) {
      check(big, BIG, (unsigned)it * 131u);
      free(big);
    }
    if (marks) ndmem_cycle_end();
    if (stale_p) { // this iteration's first allocation ended the cycle stale_p was freed in
      fprintf(stderr, "reading a stale workspace pointer\n");
      volatile unsigned char v = stale_p[0]; // must fault under NDMEM_WS_GUARD=1
      (void)v;
      fprintf(stderr, "the stale read did not fault\n");
      return 1;
    }
    if (stale && it >= 30 && auto_hits() - hits_before == NT) {
      stale_p = t[0]; // served from the arena this cycle, and freed: stale from the next one
    } else if (stale && it == ITERS) {
      fprintf(stderr, "the automatic workspace never served a whole cycle\n");
      return 1;
    }
  }
  ndmem_ws_stats_t s[4];
  int n = ndmem_ws_stats ? ndmem_ws_stats(s, 4) : 0;
  for (int k = 0; k < nkept; k++) {
    check(kept[k], BIG, kept_seed[k]);
    free(kept[k]);
  }
  printf("iterations %d, kept %d, checksum %016llx, errors %d\n", ITERS, nkept,
         (unsigned long long)sum, errors);
  // pinned: before the kept blocks are freed; pinned_end: after
  ndmem_ws_stats_t e[4];
  if (n) ndmem_ws_stats(e, 4);
  for (int i = 0; i < n && i < 4; i++)
    fprintf(stderr, "ws %s cycles %llu hits %llu escapes %llu pinned %llu pinned_end %llu\n",
            s[i].name, (unsigned long long)s[i].cycles, (unsigned long long)s[i].hits,
            (unsigned long long)s[i].escapes, (unsigned long long)s[i].pinned_bytes,
            (unsigned long long)e[i].pinned_bytes);
  return errors != 0;
}
