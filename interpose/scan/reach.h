// SPDX-License-Identifier: MIT
// reach.h: the reachability scan at exit (reach.c): which live blocks the program can still reach,
// as LeakSanitizer and memcheck judge, without recompiling it.
#ifndef ND_REACH_H
#define ND_REACH_H

#include "common/trace_format.h"

#include <stdint.h>

// Runs the scan once, on the thread that ends the process (nd_trace_flush's final flush, under
// the trace lock): stops the program's other threads and classes every live tracked block. `how`:
// enum nd_exit_how. Fills *rec; returns 1 when it ran (ND_SCAN_DONE): the other threads are then
// still stopped, and the live blocks are the ones nd_reach_each gives, until nd_reach_release.
int nd_reach_scan(int how, nd_rec_scan_t *rec);
// Which table a live block is of (its BLOCK record is built from it).
enum nd_reach_from { ND_REACH_FROM_BLOCKS = 0, ND_REACH_FROM_MAPS = 1, ND_REACH_FROM_DEVICE = 2 };
typedef struct nd_reach_block {
  uintptr_t addr;
  uint64_t size, born, cycle;
  struct nd_site *site;
  int from;       // enum nd_reach_from
  unsigned reach; // enum nd_block_reach
} nd_reach_block_t;
// Every live block the scan saw, with its class (the threads stopped: no lock taken).
void nd_reach_each(void (*fn)(void *ctx, const nd_reach_block_t *b), void *ctx);
// Lets the other threads go (after the trace's END; a no-op when none is held).
void nd_reach_release(void);

#endif
