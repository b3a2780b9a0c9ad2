// SPDX-License-Identifier: MIT
// cupti_fold.c: folds CUPTI's MEMORY2 and MEMORY_POOL activity records into per-device totals
// (cupti_fold.h). Cumulative counters only grow; live totals (pinned, managed, and what
// alloc_bytes - free_bytes implies) never go below zero: a release larger than what is live is
// counted as unmatched instead of subtracted. Pool reserved bytes follow the newest size CUPTI
// reported for each pool, from pool records and from the allocations the pool served.
#include "cupti_fold.h"

#include <string.h>

void cupti_fold_init(nd_cupti_fold_t *f) { memset(f, 0, sizeof *f); }

static void unmatched(nd_cupti_fold_t *f, uint64_t bytes) {
  f->unmatched_releases++;
  f->unmatched_bytes += bytes;
}

// An allocation or release of a kind counted cumulatively (device memory, in or out of pools).
// A release larger than the bytes still live of that kind cannot have been allocated while
// tracing ran (or its allocation record was dropped): it is unmatched, and left out of frees and
// free_bytes so that alloc_bytes - free_bytes, the live figure a reader derives, never wraps. A
// smaller one of that sort is indistinguishable from a matched release and is counted as one.
static void count(nd_cupti_fold_t *f, int alloc, uint64_t bytes, uint64_t *allocs,
                  uint64_t *alloc_bytes, uint64_t *frees, uint64_t *free_bytes) {
  if (alloc) {
    ++*allocs;
    *alloc_bytes += bytes;
  } else if (bytes > *alloc_bytes - *free_bytes) {
    unmatched(f, bytes);
  } else {
    ++*frees;
    *free_bytes += bytes;
  }
}

// An allocation or release of a kind handed over as live bytes (pinned, managed).
static void live(nd_cupti_fold_t *f, int alloc, uint64_t bytes, uint64_t *live_bytes) {
  if (alloc)
    *live_bytes += bytes;
  else if (bytes > *live_bytes)
    unmatched(f, bytes);
  else
    *live_bytes -= bytes;
}

// ---- pools: a small table keyed by (device, base address), compact (a dropped pool's slot is
// filled by the last one), scanned linearly: a process has few pools.

static nd_cupti_pool_t *pool_find(nd_cupti_fold_t *f, uint32_t device, uint64_t address) {
  for (int i = 0; i < f->npools; i++)
    if (f->pools[i].device == device && f->pools[i].address == address) return &f->pools[i];
  return NULL;
}

// Adds (sign +1) or removes (-1) a pool's size from its device's reserved bytes. Pools of pinned
// or managed memory are not the device's: they are never in the total.
static void pool_charge(nd_cupti_fold_t *f, const nd_cupti_pool_t *p, int sign) {
  if (p->host) return;
  ndmem_cupti_device_t *d = &f->dev[p->device];
  if (sign > 0) {
    d->pool_reserved_bytes += p->size;
    if (d->pool_reserved_bytes > d->pool_reserved_peak)
      d->pool_reserved_peak = d->pool_reserved_bytes;
  } else {
    d->pool_reserved_bytes -= p->size; // exactly what was added for this pool: cannot wrap
  }
}

// A record reported pool (device, address) at `size` bytes at time `stamp`. Records of one
// buffer are in order, and cupti.c asks CUPTI for one queue so that buffers are too; the stamp
// check still keeps an older report from replacing a newer one. `host` is sticky: once a record
// shows the pool serving pinned or managed memory, it stays out of the device's total.
static void pool_seen(nd_cupti_fold_t *f, uint32_t device, uint64_t address, uint64_t size,
                      uint64_t stamp, int host) {
  nd_cupti_pool_t *p = pool_find(f, device, address);
  if (!p) {
    if (f->npools == CUPTI_FOLD_POOLS) {
      f->pools_untracked++;
      return;
    }
    p = &f->pools[f->npools++];
    memset(p, 0, sizeof *p);
    p->device = device;
    p->address = address;
  } else if (stamp < p->stamp) {
    return;
  }
  pool_charge(f, p, -1);
  p->size = size;
  p->stamp = stamp;
  p->host |= (uint8_t)(host != 0);
  pool_charge(f, p, +1);
}

static void pool_drop(nd_cupti_fold_t *f, uint32_t device, uint64_t address) {
  nd_cupti_pool_t *p = pool_find(f, device, address);
  if (!p) return; // created before tracing or while the table was full: nothing was counted
  pool_charge(f, p, -1);
  *p = f->pools[--f->npools];
}

// ---- records

// Device ordinal a record is charged to, or -1 (counted in ignored_records). Pinned and managed
// memory belong to the process rather than a device (the shim sums them over devices): a record
// of those kinds that names no device (CUPTI's 0xFFFFFFFF, as unified memory's CPU side is
// named) is charged to device 0 rather than lost.
static int device_of(nd_cupti_fold_t *f, uint32_t id, int host_kind) {
  if (id == CUPTI_UNIFIED_MEMORY_CPU_DEVICE_ID && host_kind) return 0;
  if (id >= NDMEM_MAX_DEVICES) {
    f->ignored_records++;
    return -1;
  }
  return (int)id;
}

void cupti_fold_memory(nd_cupti_fold_t *f, const nd_cupti_mem_rec_t *m) {
  int host_kind = m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED ||
                  m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  int dev = device_of(f, m->deviceId, host_kind);
  if (dev < 0) return;
  ndmem_cupti_device_t *d = &f->dev[dev];
  d->records++;
  int alloc = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  if (!alloc && m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
    f->other_records++;
    return;
  }
  // Served by a stream-ordered pool: cuMemAllocAsync / cuMemAllocFromPoolAsync and their frees
  // set isAsync; a pool's block released by the synchronous cuMemFree may not, but still names
  // its pool in memoryPoolConfig (type LOCAL, or IMPORTED for a pointer imported from another
  // process's pool). A LOCAL pool's record also carries the pool's size at that moment: the
  // only report of a pool growing, which no pool record announces.
  CUpti_ActivityMemoryPoolType pool_type = m->memoryPoolConfig.memoryPoolType;
  int pooled = m->isAsync != 0 || pool_type != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID;
  if (pool_type == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL)
    pool_seen(f, (uint32_t)dev, m->memoryPoolConfig.address, m->memoryPoolConfig.pool.size,
              m->timestamp, host_kind);
  uint64_t b = m->bytes;
  switch (m->memoryKind) {
  case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    if (pooled)
      count(f, alloc, b, &d->pool_allocs, &d->pool_alloc_bytes, &d->pool_frees,
            &d->pool_free_bytes);
    else
      count(f, alloc, b, &d->allocs, &d->alloc_bytes, &d->frees, &d->free_bytes);
    break;
  case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
    live(f, alloc, b, &d->pinned_bytes);
    break;
  case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    live(f, alloc, b, &d->managed_bytes);
    break;
  default:
    // ARRAY (cuArrayCreate), DEVICE_STATIC and MANAGED_STATIC (a module's __device__ and
    // __managed__ variables), PAGEABLE, UNKNOWN: memory the shim's hooks do not account, so
    // folding it would only make the two views disagree.
    f->other_records++;
    break;
  }
}

void cupti_fold_pool(nd_cupti_fold_t *f, const nd_cupti_pool_rec_t *p) {
  int dev = device_of(f, p->deviceId, 0);
  if (dev < 0) return;
  f->dev[dev].records++;
  // An imported pool's memory is held by the process that exported it, and its size is not
  // reported (the record's size is valid for LOCAL pools only).
  if (p->memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL) {
    f->other_records++;
    return;
  }
  switch (p->memoryPoolOperationType) {
  case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
  case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
    // `size` is read as the pool's size after the operation (for a trim: what it kept, at least
    // minBytesToKeep or what is in use). Later allocation records restate it either way.
    pool_seen(f, (uint32_t)dev, p->address, p->size, p->timestamp, p->isManagedPool != 0);
    break;
  case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
    pool_drop(f, (uint32_t)dev, p->address);
    break;
  default:
    f->other_records++;
    break;
  }
}

void cupti_fold_record(nd_cupti_fold_t *f, const CUpti_Activity *rec) {
  // CUPTI's records start with their kind and are 8-byte aligned in its buffers; the cast to the
  // kind's own layout is how CUPTI is meant to be read.
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_MEMORY2:
    cupti_fold_memory(f, (const nd_cupti_mem_rec_t *)(const void *)rec);
    break;
  case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
    cupti_fold_pool(f, (const nd_cupti_pool_rec_t *)(const void *)rec);
    break;
  default:
    f->other_records++;
    break;
  }
}

void cupti_fold_dropped(nd_cupti_fold_t *f, uint64_t n) { f->dropped += n; }

int cupti_fold_active(const nd_cupti_fold_t *f, int device) {
  return device >= 0 && device < NDMEM_MAX_DEVICES && f->dev[device].records > 0;
}

void cupti_fold_device(const nd_cupti_fold_t *f, int device, ndmem_cupti_device_t *out) {
  *out = f->dev[device];
  out->size = (uint32_t)sizeof *out;
  out->device = device;
  // CUPTI delivers one queue for the whole process and counts its losses there, naming no
  // device: any device's totals may lack them, so each carries the process-wide count (do not
  // sum it over devices).
  out->dropped = f->dropped;
}
