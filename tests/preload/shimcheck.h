// SPDX-License-Identifier: MIT
// shimcheck.h: helpers for programs run under libndmem.so: snapshots of ndmem's counters through
// the weak public API, and deltas between two of them.
#ifndef ND_SHIMCHECK_H
#define ND_SHIMCHECK_H

#include "../check.h"
#include "ndmem.h"

static inline ndmem_stats_t snap(int scope) {
  ndmem_stats_t s;
  memset(&s, 0, sizeof s);
  s.size = sizeof s;
  if (!ndmem_stats) {
    fprintf(stderr, "libndmem.so is not loaded (run this test under LD_PRELOAD)\n");
    exit(1);
  }
  if (ndmem_stats(&s, scope) != 0) {
    fprintf(stderr, "ndmem_stats failed: accounting is off\n");
    exit(1);
  }
  return s;
}

#define THREAD_SNAP() snap(NDMEM_SCOPE_THREAD)
#define PROC_SNAP() snap(NDMEM_SCOPE_PROCESS)
#define D(after, before, k, field) ((long long)(after).kind[k].field - (long long)(before).kind[k].field)
#define HEAP NDMEM_KIND_HEAP
#define MMAP NDMEM_KIND_MMAP
#define DCALL(after, before, fn) ((long long)(after).calls[fn] - (long long)(before).calls[fn])

#endif
