// SPDX-License-Identifier: MIT
// counters.h: exact allocation counters, sharded per thread so the hook fast path takes no lock
// and touches no shared cache line.
//
// Each thread owns a shard (ndmem's own mmap'd memory, never the hooked malloc) and updates it
// with plain stores; readers sum all shards. Live bytes and counts are exact sums. The process
// peak needs a global view: each shard keeps a pending byte delta per kind and publishes it to a
// global atomic once it moves more than ND_PUBLISH_BYTES either way (so a loop of small
// malloc/free pairs never touches shared memory). On publish the candidate peak is the global
// value plus the highest point the pending delta reached; a thread publishes too when it starts
// another (threads.c) and when it ends (its high, even where its delta is back to 0). With one
// thread allocating at a time the peak is exact; with T at once it can be off by up to
// ND_PUBLISH_BYTES for each of the others (their deltas not yet published).
#ifndef ND_COUNTERS_H
#define ND_COUNTERS_H

#include "ndmem.h"

#include <stdint.h>
#include <sys/types.h>

#define ND_PUBLISH_BYTES (256 * 1024)

typedef struct nd_kstat {
  uint64_t allocs, frees, alloc_bytes, free_bytes;
  int64_t peak;       // this shard's high-water of alloc_bytes - free_bytes
  int64_t pending;    // bytes not yet published to the global live counter
  int64_t pending_hi; // highest value of pending since the last publish (>= 0)
} nd_kstat_t;

enum { ND_SHARD_FREE = 0, ND_SHARD_OWNED = 1 };

typedef struct nd_shard {
  nd_kstat_t k[NDMEM_KIND_COUNT];
  uint64_t calls[NDMEM_FN_COUNT];
  uint64_t fallbacks[NDMEM_FB_COUNT];
  struct nd_shard *next; // registry list, append-only
  pid_t tid;
  int state;
} nd_shard_t;

// Stores that a concurrent reader may observe: relaxed atomics, plain movs on x86-64.
#define ND_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ND_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ND_BUMP(x, v) ND_STORE(x, (x) + (v))

// The moment of the peak, for "live at the peak" (memray's high-water mark), without a snapshot:
// kinds are grouped as the memory they compete for (host: heap, mmap, pinned and managed; each
// device on its own). When a publish finds a group's published total above its peak moment's
// by more than max(ND_PUBLISH_BYTES, 1/1024 of it), the moment moves there and its epoch goes up;
// each site notes its live bytes as they stood then at the first change it sees after
// (sites.c), so a site's bytes at the moment are those it noted, or, if it has not changed
// since, those it holds. The moment's total is within ND_PUBLISH_BYTES per allocating thread
// and 1/1024 of the highest total published; the epoch stops at 65535 (that many moves take
// 16 GiB of new peaks by the smallest step and far more by the relative one).
#define ND_PEAK_GROUPS (1 + NDMEM_MAX_DEVICES)
typedef struct nd_peak_moment {
  uint64_t mono_ns; // when the moment was taken (0: none yet)
  int64_t bytes;    // the group's published live bytes then
  int64_t max;      // the highest published total seen (>= bytes)
} nd_peak_moment_t;
typedef struct nd_peaks {
  uint16_t epoch[ND_PEAK_GROUPS]; // atomic; 0: no moment yet
  nd_peak_moment_t at[ND_PEAK_GROUPS];
  int lock;
} nd_peaks_t;
extern nd_peaks_t nd_peaks;
static inline int nd_peak_group(int kind) {
  return kind >= NDMEM_KIND_DEVICE0 ? 1 + kind - NDMEM_KIND_DEVICE0 : 0;
}
static inline uint16_t nd_peak_epoch(int kind) {
  return __atomic_load_n(&nd_peaks.epoch[nd_peak_group(kind)], __ATOMIC_RELAXED);
}
// A group's moment and epoch, read together (the trace writer).
uint16_t nd_peak_read(int group, nd_peak_moment_t *out);

// counters.c
nd_shard_t *nd_shard_acquire(pid_t tid);   // a zeroed shard owned by tid, or NULL (no memory)
void nd_shard_release(nd_shard_t *s);      // thread exit: folds into the retired totals
void nd_shard_publish(nd_shard_t *s, int kind);
// Every kind's pending change (and high) published: a thread about to start another (threads.c),
// so that what it holds is in the published total the new thread's peaks are measured against.
void nd_shard_publish_all(nd_shard_t *s);
nd_shard_t *nd_shard_late(void);           // shared shard for threads past their teardown
void nd_count_adjust(nd_shard_t *s, int kind, uint64_t allocs, uint64_t alloc_bytes,
                     uint64_t frees, uint64_t free_bytes);
void nd_late_adjust(int kind, uint64_t allocs, uint64_t alloc_bytes, uint64_t frees,
                    uint64_t free_bytes, int fn);
#define nd_late_alloc(kind, bytes, fn) nd_late_adjust(kind, 1, bytes, 0, 0, fn)
#define nd_late_free(kind, bytes, fn) nd_late_adjust(kind, 0, 0, 1, bytes, fn)
void nd_late_fallback(int fb);
void nd_counters_snapshot_process(ndmem_stats_t *out);
void nd_counters_snapshot_shard(const nd_shard_t *s, ndmem_stats_t *out);
// The live blocks of a kind (allocs - frees) and their bytes, with every other thread stopped
// (reach.c): no lock taken; -1 when a stopped thread held the registry.
int nd_counters_live_stopped(int kind, int64_t *count, int64_t *bytes);
nd_shard_t *nd_counters_first(void);       // registry walk (summary rows)
void nd_counters_atfork_prepare(void);
void nd_counters_atfork_parent(void);
void nd_counters_atfork_child(nd_shard_t *keep); // keep: the forking thread's shard or NULL
void nd_counters_reset_for_tests(void);
// Live bytes of a kind: the published part (exact less every shard's pending delta, each within
// +-ND_PUBLISH_BYTES), and the sum of the pending deltas (a walk over the shards: exact when no
// other thread is allocating). For the limit checks.
typedef struct nd_counters_pub {
  int64_t live[NDMEM_KIND_COUNT]; // published live bytes (atomic)
  uint32_t owned;                 // shards owned by live threads (atomic)
} nd_counters_pub_t;
extern nd_counters_pub_t nd_pub;
static inline int64_t nd_counters_published(int kind) { return ND_LOAD(nd_pub.live[kind]); }
static inline uint32_t nd_counters_owned(void) { return ND_LOAD(nd_pub.owned); }
int64_t nd_counters_pending_sum(int kind);

static inline void nd_count_alloc(nd_shard_t *s, int kind, uint64_t bytes) {
  nd_kstat_t *k = &s->k[kind];
  ND_BUMP(k->allocs, 1);
  ND_BUMP(k->alloc_bytes, bytes);
  int64_t live = (int64_t)(k->alloc_bytes - k->free_bytes);
  if (live > k->peak) ND_STORE(k->peak, live);
  ND_STORE(k->pending, k->pending + (int64_t)bytes);
  if (k->pending > k->pending_hi) {
    k->pending_hi = k->pending;
    if (k->pending > ND_PUBLISH_BYTES) nd_shard_publish(s, kind);
  }
}

static inline void nd_count_free(nd_shard_t *s, int kind, uint64_t bytes) {
  nd_kstat_t *k = &s->k[kind];
  ND_BUMP(k->frees, 1);
  ND_BUMP(k->free_bytes, bytes);
  ND_STORE(k->pending, k->pending - (int64_t)bytes);
  if (k->pending < -ND_PUBLISH_BYTES) nd_shard_publish(s, kind);
}

#endif
