// SPDX-License-Identifier: MIT
// keymap.c: the open-addressing table from a 64-bit key to an index (keymap.h).
#include "read/keymap.h"

#include <stdlib.h>
#include <string.h>

uint64_t nd_mix64(uint64_t x) { // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

long nd_map_get(const nd_map_t *m, uint64_t key) {
  if (!m->cap) return -1;
  size_t mask = m->cap - 1;
  for (size_t i = nd_mix64(key) & mask;; i = (i + 1) & mask) {
    if (!m->vals[i]) return -1;
    if (m->keys[i] == key) return (long)m->vals[i] - 1;
  }
}

int nd_map_put(nd_map_t *m, uint64_t key, uint32_t idx) {
  if ((m->len + 1) * 4 > m->cap * 3) { // keep the load factor under 3/4
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    uint64_t *nk = malloc(ncap * sizeof *nk);
    uint32_t *nv = calloc(ncap, sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      return -1;
    }
    for (size_t j = 0; j < m->cap; j++) {
      if (!m->vals[j]) continue;
      size_t i = nd_mix64(m->keys[j]) & (ncap - 1);
      while (nv[i]) i = (i + 1) & (ncap - 1);
      nk[i] = m->keys[j];
      nv[i] = m->vals[j];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
  }
  size_t mask = m->cap - 1, i = nd_mix64(key) & mask;
  while (m->vals[i]) i = (i + 1) & mask;
  m->keys[i] = key;
  m->vals[i] = idx + 1;
  m->len++;
  return 0;
}

void nd_map_clear(nd_map_t *m) {
  if (m->vals) memset(m->vals, 0, m->cap * sizeof *m->vals);
  m->len = 0;
}

void nd_map_free(nd_map_t *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}
