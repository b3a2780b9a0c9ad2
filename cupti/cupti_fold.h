// SPDX-License-Identifier: MIT
// cupti_fold.h: CUPTI's memory activity records (MEMORY2, MEMORY_POOL) folded into the per-device
// totals the shim receives (ndmem_cupti_device_t, include/ndmem.h). Pure C: no CUPTI call, only
// the record layouts of cupti_activity.h, so the unit test (tests/unit/test_cupti_fold.c) feeds it
// constructed records and checks exact totals without a GPU. One fold per process; the caller
// serialises every call (cupti.c holds a mutex around the fold and the hand-over).
#ifndef ND_CUPTI_FOLD_H
#define ND_CUPTI_FOLD_H

#include <stdint.h>

#include <cupti_activity.h>

#include "ndmem.h"

// The record versions CUDA 13's CUPTI writes for these kinds. CUPTI fills the newest version its
// library knows, and libndmem_cupti.so is linked against libcupti.so.13 (the soname pins the
// major version), so these are the layouts that arrive. The fields read here are the ones that
// CUpti_ActivityMemory3/4 and CUpti_ActivityMemoryPool2/3 share at the same offsets, except
// isManagedPool (MemoryPool3). cupti/meson.build refuses to build against headers without them.
typedef CUpti_ActivityMemory4 nd_cupti_mem_rec_t;
typedef CUpti_ActivityMemoryPool3 nd_cupti_pool_rec_t;

// Pools tracked at once (all devices). A process has one default pool per device plus the pools
// it creates; past this, a new pool's size is not counted (pools_untracked says how often).
#define CUPTI_FOLD_POOLS 256

typedef struct nd_cupti_pool {
  uint64_t address; // the pool's base address (memoryPoolConfig.address / the pool record's)
  uint64_t size;    // its size as last reported
  uint64_t stamp;   // the timestamp of the record that reported it: an older record never wins
  uint32_t device;
  uint8_t host;     // holds pinned or managed memory: not part of the device's reserved bytes
} nd_cupti_pool_t;

typedef struct nd_cupti_fold {
  ndmem_cupti_device_t dev[NDMEM_MAX_DEVICES]; // size, device and dropped filled on the way out
  uint64_t dropped; // records CUPTI lost, process-wide (cuptiActivityGetNumDroppedRecords)
  // Kept here, not handed over (the hand-over struct has no field for them):
  uint64_t ignored_records;   // records naming a device >= NDMEM_MAX_DEVICES (or none): not folded
  uint64_t unmatched_releases, unmatched_bytes; // releases larger than what was live (memory
                                                // allocated before tracing, or whose allocation
                                                // record was lost): counted here, not subtracted
  uint64_t other_records;     // records folded into no total (other memory kinds, other activity
                              // kinds, invalid operations); still counted in dev[].records
  uint64_t pools_untracked;   // pool sizes not counted because the pool table was full
  int npools;
  nd_cupti_pool_t pools[CUPTI_FOLD_POOLS];
} nd_cupti_fold_t;

// ---- cupti_fold.c
void cupti_fold_init(nd_cupti_fold_t *f);
// Any activity record: MEMORY2 and MEMORY_POOL are folded, every other kind is counted in
// other_records (with no device to charge it to).
void cupti_fold_record(nd_cupti_fold_t *f, const CUpti_Activity *rec);
void cupti_fold_memory(nd_cupti_fold_t *f, const nd_cupti_mem_rec_t *m);
void cupti_fold_pool(nd_cupti_fold_t *f, const nd_cupti_pool_rec_t *p);
// Adds records CUPTI reports lost since its previous report (its counter resets on each read).
void cupti_fold_dropped(nd_cupti_fold_t *f, uint64_t n);
// Whether device `device` has any activity to hand over (a record folded for it).
int cupti_fold_active(const nd_cupti_fold_t *f, int device);
// The hand-over struct of device `device`: size = sizeof *out, dropped = the process-wide count.
void cupti_fold_device(const nd_cupti_fold_t *f, int device, ndmem_cupti_device_t *out);

#endif
