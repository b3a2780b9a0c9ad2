// SPDX-License-Identifier: MIT
// scan_cost: a heap for the reachability scan at exit to read (bench/scan_cost.py). MIB MiB of
// live blocks of 1-16 KiB (sizes drawn from a fixed seed), each holding pointers to 8 others at
// random and data words, every one kept in a global table, and 1 in 64 dropped (lost, with what
// only it points to); then it times one read of every word of every block (the ideal: the
// scan's reads without its lookups), prints "ideal_ns BYTES", and exits.
// usage: scan_cost MIB
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void **blocks;
static size_t *sizes;

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256, total = 0, n = 0, cap = 1024;
  blocks = malloc(cap * sizeof *blocks);
  sizes = malloc(cap * sizeof *sizes);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  while (total < mib << 20) {
    size_t size = 1024 + (size_t)(rnd(&s) % (15 * 1024)) / 8 * 8;
    if (n == cap) {
      cap *= 2;
      blocks = realloc(blocks, cap * sizeof *blocks);
      sizes = realloc(sizes, cap * sizeof *sizes);
    }
    uint64_t *b = malloc(size);
    for (size_t w = 0; w < size / 8; w++) b[w] = rnd(&s) & 0xffffffff; // data, never an address
    blocks[n] = b;
    sizes[n++] = size;
    total += size;
  }
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 8; k++) ((void **)blocks[i])[k * 8] = blocks[rnd(&s) % n];
  uint64_t t0 = now_ns(), sum = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t w = 0; w < sizes[i] / 8; w++) sum += ((volatile uint64_t *)blocks[i])[w];
  uint64_t ideal = now_ns() - t0;
  for (size_t i = 0; i < n; i += 64) blocks[i] = NULL; // lost (unless another block points to it)
  printf("ideal_ns %llu bytes %zu blocks %zu sum %llu\n", (unsigned long long)ideal, total, n,
         (unsigned long long)(sum & 1));
  return 0;
}
