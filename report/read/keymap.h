// SPDX-License-Identifier: MIT
// keymap.h: an open-addressing table from a 64-bit key to an index (keymap.c): the reader's
// tables of stacks, sites, blocks, workspaces and code objects by their ids, and the
// symbolizer's frames by return address. Linear probing at a load under 3/4; keys are spread by
// a splitmix64 finalizer (nd_mix64), so ids and addresses in runs land anywhere.
#ifndef ND_KEYMAP_H
#define ND_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct nd_map {
  uint64_t *keys;
  uint32_t *vals; // index + 1; 0 is an empty slot
  size_t cap, len;
} nd_map_t;

uint64_t nd_mix64(uint64_t x);
// The index of `key`, or -1.
long nd_map_get(const nd_map_t *m, uint64_t key);
// Adds `key` (not in the table) with index `idx` (below UINT32_MAX). 0, or -1 out of memory.
int nd_map_put(nd_map_t *m, uint64_t key, uint32_t idx);
// Every key removed, the room kept; and the table freed (zeroed: empty again).
void nd_map_clear(nd_map_t *m);
void nd_map_free(nd_map_t *m);

#endif
