// SPDX-License-Identifier: MIT
// test_cupti_fold: cupti/cupti_fold.c on constructed CUPTI records with a known answer, per
// device: plain and stream-ordered (pool) device allocations, a pool block freed synchronously,
// pool sizes from pool records and from the allocations they serve (growth, trims, destruction,
// a stale report, managed pools, a full pool table), pinned and managed live bytes, releases of
// memory allocated before tracing (counted, never subtracted below zero), devices >= 16 ignored,
// other kinds, dropped records, and the hand-over struct. Built only with CUPTI's headers.
#include "../check.h"
#include "cupti_fold.h"

#define KIB (1ull << 10)
#define MIB (1ull << 20)

enum { ALLOC = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
       RELEASE = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE };
#define DEVICE CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
#define PINNED CUPTI_ACTIVITY_MEMORY_KIND_PINNED
#define MANAGED CUPTI_ACTIVITY_MEMORY_KIND_MANAGED
#define CREATED CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED
#define TRIMMED CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED
#define DESTROYED CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED
#define NO_DEVICE CUPTI_UNIFIED_MEMORY_CPU_DEVICE_ID // 0xFFFFFFFF

static uint64_t clock_ns = 1000; // each record a little later than the one before

// A MEMORY2 record outside pools.
static nd_cupti_mem_rec_t mem(int op, CUpti_ActivityMemoryKind kind, uint32_t device,
                              uint64_t bytes) {
  nd_cupti_mem_rec_t m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = (CUpti_ActivityMemoryOperationType)op;
  m.memoryKind = kind;
  m.deviceId = device;
  m.bytes = bytes;
  m.address = 0x7f0000000000ull + clock_ns;
  m.timestamp = clock_ns++;
  m.contextId = 1;
  m.streamId = CUPTI_INVALID_STREAM_ID;
  return m;
}

// A device MEMORY2 record served by LOCAL pool `pool`, which the record reports at `pool_size`.
static nd_cupti_mem_rec_t pooled(int op, uint32_t device, uint64_t bytes, int async, uint64_t pool,
                                 uint64_t pool_size) {
  nd_cupti_mem_rec_t m = mem(op, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device, bytes);
  m.isAsync = (uint32_t)async;
  m.streamId = async ? 7 : CUPTI_INVALID_STREAM_ID;
  m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  m.memoryPoolConfig.address = pool;
  m.memoryPoolConfig.pool.size = pool_size;
  m.memoryPoolConfig.releaseThreshold = 0;
  return m;
}

static nd_cupti_pool_rec_t pool_rec(CUpti_ActivityMemoryPoolOperationType op, uint32_t device,
                                    uint64_t address, uint64_t size) {
  nd_cupti_pool_rec_t p;
  memset(&p, 0, sizeof p);
  p.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  p.memoryPoolOperationType = op;
  p.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  p.deviceId = device;
  p.address = address;
  p.size = size;
  p.timestamp = clock_ns++;
  return p;
}

// Everything goes in as CUPTI hands it over: a generic record, dispatched on its kind.
static void feed_mem(nd_cupti_fold_t *f, nd_cupti_mem_rec_t m) {
  cupti_fold_record(f, (const CUpti_Activity *)(const void *)&m);
}
static void feed_pool(nd_cupti_fold_t *f, nd_cupti_pool_rec_t p) {
  cupti_fold_record(f, (const CUpti_Activity *)(const void *)&p);
}

static ndmem_cupti_device_t out(const nd_cupti_fold_t *f, int device) {
  ndmem_cupti_device_t d;
  memset(&d, 0xa5, sizeof d); // every field must be written
  cupti_fold_device(f, device, &d);
  return d;
}

int main(void) {
  static nd_cupti_fold_t fold; // ~12 KiB: not on the stack
  nd_cupti_fold_t *f = &fold;
  cupti_fold_init(f);
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) CHECK(!cupti_fold_active(f, d));

  const uint64_t P0 = 0x7e0000000000ull, P1 = 0x7e1000000000ull, P2 = 0x7e2000000000ull;

  // ---- device 0: cuMemAlloc/cuMemFree, cuMemAllocAsync from the default pool, a pool block
  // freed by the synchronous cuMemFree, pinned memory.
  feed_mem(f, mem(ALLOC, DEVICE, 0, 1 * MIB));
  feed_mem(f, mem(ALLOC, DEVICE, 0, 3 * MIB));
  feed_mem(f, mem(RELEASE, DEVICE, 0, 1 * MIB));
  // The default pool grows from 2 to 4 MiB as it serves; the reports are all the fold gets.
  feed_mem(f, pooled(ALLOC, 0, 4 * KIB, 1, P0, 2 * MIB));
  feed_mem(f, pooled(ALLOC, 0, 8 * KIB, 1, P0, 2 * MIB));
  feed_mem(f, pooled(ALLOC, 0, 3 * MIB, 1, P0, 4 * MIB));
  feed_mem(f, pooled(RELEASE, 0, 4 * KIB, 1, P0, 4 * MIB));
  feed_mem(f, pooled(RELEASE, 0, 3 * MIB, 0, P0, 4 * MIB)); // cuMemFree: not async, still pooled
  // cudaMallocHost 64 KiB + 4 KiB, one freed; pinned memory named by no device goes to device 0
  feed_mem(f, mem(ALLOC, PINNED, 0, 64 * KIB));
  feed_mem(f, mem(ALLOC, PINNED, NO_DEVICE, 4 * KIB));
  feed_mem(f, mem(RELEASE, PINNED, 0, 64 * KIB));
  // a pinned block allocated before tracing started: more than is live, so not subtracted
  feed_mem(f, mem(RELEASE, PINNED, 0, 8 * KIB));
  CHECK_EQ(f->unmatched_releases, 1);
  CHECK_EQ(f->unmatched_bytes, 8 * KIB);

  ndmem_cupti_device_t d0 = out(f, 0);
  CHECK_EQ(d0.size, sizeof(ndmem_cupti_device_t));
  CHECK_EQ(d0.device, 0);
  CHECK_EQ(d0.allocs, 2);
  CHECK_EQ(d0.frees, 1);
  CHECK_EQ(d0.alloc_bytes, 4 * MIB);
  CHECK_EQ(d0.free_bytes, 1 * MIB);
  CHECK_EQ(d0.pool_allocs, 3);
  CHECK_EQ(d0.pool_frees, 2);
  CHECK_EQ(d0.pool_alloc_bytes, 3 * MIB + 12 * KIB);
  CHECK_EQ(d0.pool_free_bytes, 3 * MIB + 4 * KIB);
  CHECK_EQ(d0.pool_reserved_bytes, 4 * MIB);
  CHECK_EQ(d0.pool_reserved_peak, 4 * MIB);
  CHECK_EQ(d0.pinned_bytes, 4 * KIB);
  CHECK_EQ(d0.managed_bytes, 0);
  CHECK_EQ(d0.records, 12);
  CHECK_EQ(d0.dropped, 0);

  // ---- device 1: a pool created empty, grown by cuMemAllocFromPoolAsync, a second pool, a trim,
  // a destruction, and a report older than the trim that must not undo it. Managed memory.
  feed_pool(f, pool_rec(CREATED, 1, P1, 0));
  CHECK_EQ(out(f, 1).pool_reserved_bytes, 0);
  uint64_t before_trim = clock_ns;
  feed_mem(f, pooled(ALLOC, 1, 30 * MIB, 1, P1, 32 * MIB));
  feed_pool(f, pool_rec(CREATED, 1, P2, 16 * MIB));
  CHECK_EQ(out(f, 1).pool_reserved_bytes, 48 * MIB);
  feed_mem(f, pooled(RELEASE, 1, 30 * MIB, 1, P1, 32 * MIB));
  nd_cupti_pool_rec_t trim = pool_rec(TRIMMED, 1, P1, 4 * MIB);
  trim.minBytesToKeep = 4 * MIB;
  feed_pool(f, trim);
  CHECK_EQ(out(f, 1).pool_reserved_bytes, 20 * MIB);
  feed_pool(f, pool_rec(DESTROYED, 1, P2, 16 * MIB));
  CHECK_EQ(out(f, 1).pool_reserved_bytes, 4 * MIB);
  nd_cupti_mem_rec_t stale = pooled(ALLOC, 1, 1 * MIB, 1, P1, 32 * MIB);
  stale.timestamp = before_trim; // written before the trim, read after it
  feed_mem(f, stale);
  // destroying a pool the fold never saw (created before tracing) changes nothing
  feed_pool(f, pool_rec(DESTROYED, 1, 0x1234000, 8 * MIB));
  // a managed-memory pool holds no device memory
  nd_cupti_pool_rec_t managed_pool = pool_rec(CREATED, 1,
                                              0x7e3000000000ull, 64 * MIB);
  managed_pool.isManagedPool = 1;
  feed_pool(f, managed_pool);
  // cudaMallocManaged 1 MiB twice, one freed
  feed_mem(f, mem(ALLOC, MANAGED, 1, 1 * MIB));
  feed_mem(f, mem(ALLOC, MANAGED, 1, 1 * MIB));
  feed_mem(f, mem(RELEASE, MANAGED, 1, 1 * MIB));

  ndmem_cupti_device_t d1 = out(f, 1);
  CHECK_EQ(d1.device, 1);
  CHECK_EQ(d1.allocs + d1.frees + d1.alloc_bytes + d1.free_bytes, 0);
  CHECK_EQ(d1.pool_allocs, 2);
  CHECK_EQ(d1.pool_frees, 1);
  CHECK_EQ(d1.pool_alloc_bytes, 31 * MIB);
  CHECK_EQ(d1.pool_free_bytes, 30 * MIB);
  CHECK_EQ(d1.pool_reserved_bytes, 4 * MIB);
  CHECK_EQ(d1.pool_reserved_peak, 48 * MIB);
  CHECK_EQ(d1.managed_bytes, 1 * MIB);
  CHECK_EQ(d1.pinned_bytes, 0);
  CHECK_EQ(d1.records, 12);

  // ---- device 2: only releases of memory allocated before tracing started. Nothing goes
  // below zero: the totals stay where they were and the releases are counted apart.
  feed_mem(f, mem(RELEASE, DEVICE, 2, 1 * MIB));
  feed_mem(f, pooled(RELEASE, 2, 64 * KIB, 1, P0 + 1, 2 * MIB));
  feed_mem(f, mem(RELEASE, MANAGED, 2, 4 * KIB));
  feed_mem(f, mem(ALLOC, DEVICE, 2, 2 * MIB));
  feed_mem(f, mem(RELEASE, DEVICE, 2, 2 * MIB));
  ndmem_cupti_device_t d2 = out(f, 2);
  CHECK_EQ(d2.allocs, 1);
  CHECK_EQ(d2.frees, 1);
  CHECK_EQ(d2.alloc_bytes, 2 * MIB);
  CHECK_EQ(d2.free_bytes, 2 * MIB);
  CHECK_EQ(d2.pool_allocs + d2.pool_frees + d2.pool_alloc_bytes + d2.pool_free_bytes, 0);
  CHECK_EQ(d2.pool_reserved_bytes, 2 * MIB); // the pool itself was reported, at 2 MiB
  CHECK_EQ(d2.managed_bytes, 0);
  CHECK_EQ(d2.records, 5);
  CHECK_EQ(f->unmatched_releases, 4);
  CHECK_EQ(f->unmatched_bytes, 8 * KIB + 1 * MIB + 64 * KIB + 4 * KIB);

  // ---- devices past NDMEM_MAX_DEVICES, and device memory naming no device: ignored, counted
  feed_mem(f, mem(ALLOC, DEVICE, NDMEM_MAX_DEVICES, 1 * MIB));
  feed_mem(f, mem(ALLOC, DEVICE, 40, 1 * MIB));
  feed_mem(f, mem(ALLOC, DEVICE, NO_DEVICE, 1 * MIB));
  feed_pool(f, pool_rec(CREATED, 17, P1, 8 * MIB));
  CHECK_EQ(f->ignored_records, 4);
  CHECK(!cupti_fold_active(f, NDMEM_MAX_DEVICES));
  CHECK(!cupti_fold_active(f, -1));

  // ---- records folded into no total: other memory kinds, an invalid operation, an imported
  // pool's record, another activity kind
  CHECK_EQ(f->other_records, 0); // so far every record was folded (or ignored by device)
  feed_mem(f, mem(ALLOC, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, 3, 1 * MIB));
  feed_mem(f, mem(ALLOC, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, 3, 1 * MIB));
  feed_mem(f, mem(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID, DEVICE, 3, 1 * MIB));
  nd_cupti_pool_rec_t imported = pool_rec(CREATED, 3, P2, 8 * MIB);
  imported.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
  feed_pool(f, imported);
  CUpti_Activity kernel = {.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
  cupti_fold_record(f, &kernel);
  CHECK_EQ(f->other_records, 5);
  ndmem_cupti_device_t d3 = out(f, 3);
  CHECK_EQ(d3.records, 4);
  CHECK_EQ(d3.allocs + d3.pool_allocs + d3.pool_reserved_bytes, 0);
  CHECK_EQ(d3.pinned_bytes + d3.managed_bytes, 0);
  CHECK(cupti_fold_active(f, 3)); // records but no totals: still handed over, its records count

  // ---- the pool table full: the pool past it is counted, not charged
  for (int i = 0; i < CUPTI_FOLD_POOLS; i++)
    if (f->npools < CUPTI_FOLD_POOLS)
      feed_pool(f, pool_rec(CREATED, 4,
                            0x100000000ull * (uint64_t)(i + 1), 1 * MIB));
  CHECK_EQ(f->npools, CUPTI_FOLD_POOLS);
  uint64_t d4_full = out(f, 4).pool_reserved_bytes;
  feed_pool(f, pool_rec(CREATED, 4, 0x1, 1 * MIB));
  CHECK_EQ(f->pools_untracked, 1);
  CHECK_EQ(out(f, 4).pool_reserved_bytes, d4_full);
  // freeing a slot by destruction makes room again
  feed_pool(f, pool_rec(DESTROYED, 4, 0x100000000ull, 0));
  feed_pool(f, pool_rec(CREATED, 4, 0x1, 1 * MIB));
  CHECK_EQ(f->pools_untracked, 1);
  CHECK_EQ(out(f, 4).pool_reserved_bytes, d4_full);
  CHECK_EQ(out(f, 4).pool_reserved_peak, d4_full);

  // ---- dropped records: CUPTI's counter resets on each read, the fold adds the readings; the
  // process-wide total is on every device's struct
  cupti_fold_dropped(f, 3);
  cupti_fold_dropped(f, 0);
  cupti_fold_dropped(f, 4);
  CHECK_EQ(out(f, 0).dropped, 7);
  CHECK_EQ(out(f, 2).dropped, 7);

  // ---- which devices are handed over: those with a record, no others
  int active = 0;
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) active |= cupti_fold_active(f, d) << d;
  CHECK_EQ(active, 0x1f);
  // the hand-over copies: the fold's own totals are not touched by it
  CHECK_EQ(f->dev[0].dropped, 0);
  CHECK_EQ(out(f, 0).pool_reserved_bytes, 4 * MIB);

  return CHECK_DONE();
}
