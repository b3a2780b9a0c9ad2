// SPDX-License-Identifier: MIT
// t_ws_effect: a cyclic job whose glibc heap keeps what it frees, served by workspaces: the
// summary and the report must say what workspaces did to resident memory (t_ws_effect.py checks
// the numbers). Each cycle allocates N blocks, writes every page and frees them all. The first
// cycle also leaves a pin after each one, kept to the end, so that no freed block
// borders another or the heap's top: glibc can neither merge nor trim them on free and holds
// N x BLOCK freed and resident until a malloc_trim gives the pages back (the mmap threshold is
// fixed above the blocks, so they come from the heap; later cycles reuse the same holes).
//   marked  ndmem_cycle_begin/end: cycle 1 goes through the heap and is learned; at its end ndmem
//           trims once, before the arena is first used, and resident memory falls by the
//           N x BLOCK glibc held (less at most two pages a block: the chunk headers' pages);
//           cycles 2..CYCLES are served: (CYCLES - 1) x N allocations of BLOCK bytes.
//   auto    no marks, block i of BLOCK + i x 4 KiB: the cycles are found in the stream; while
//           they are, ndmem trims after every 16 MiB of large frees (within its time budget).
#include "ndmem.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64
#define BLOCK (4u << 20)
#define CYCLES_MARKED 6
#define CYCLES_AUTO 16
// A pin: below NDMEM_WS_MIN (not routed), larger than any free chunk the start-up left (so it
// comes from the heap's top, right after its block).
#define PIN (16u << 10)

__attribute__((noinline)) static void touch(char *p, size_t n, int seed) {
  for (size_t i = 0; i < n; i += 4096) p[i] = (char)(seed + (int)(i >> 12));
  p[n - 1] = (char)seed;
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "marked") && strcmp(argv[1], "auto")))
    return fprintf(stderr, "usage: t_ws_effect marked|auto\n"), 2;
  int marked = !strcmp(argv[1], "marked");
  if (marked && !ndmem_cycle_begin) return fprintf(stderr, "libndmem.so is not loaded\n"), 1;
  // 32 MiB, glibc's largest threshold on 64-bit: the blocks come from the heap from the first
  // cycle (the dynamic threshold would serve the first ones by mmap).
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1) return fprintf(stderr, "mallopt\n"), 1;
  static char *blocks[N], *pins[N];
  int cycles = marked ? CYCLES_MARKED : CYCLES_AUTO;
  for (int c = 0; c < cycles; c++) {
    if (marked) ndmem_cycle_begin();
    for (int i = 0; i < N; i++) {
      size_t n = BLOCK + (marked ? 0 : (size_t)i * 4096);
      if (!(blocks[i] = malloc(n))) return perror("malloc"), 1;
      touch(blocks[i], n, c + i);
      if (c == 0 && !(pins[i] = malloc(PIN))) return perror("malloc"), 1;
    }
    for (int i = 0; i < N; i++) {
      size_t n = BLOCK + (marked ? 0 : (size_t)i * 4096);
      if (blocks[i][n - 1] != (char)(c + i)) return fprintf(stderr, "block %d changed\n", i), 1;
      free(blocks[i]);
    }
    if (marked) ndmem_cycle_end();
  }
  for (int i = 0; i < N; i++) free(pins[i]);
  return 0;
}
