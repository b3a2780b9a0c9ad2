// SPDX-License-Identifier: MIT
// counters.c: shard registry, publishing and snapshots (see counters.h for the model).
// The registry is an append-only list of shards in ndmem's own pages; a shard whose thread exits
// is folded into `retired` and becomes free for the next new thread, so the number of shards is
// bounded by the peak number of live threads, not by how many threads ever ran.
#include "account/counters.h"

#include "common/os.h"
#include "common/trace_format.h"

#include <string.h>

nd_counters_pub_t nd_pub;

static struct {
  int64_t peak[NDMEM_KIND_COUNT]; // atomic
  nd_shard_t *head;               // registry, atomic
  nd_shard_t retired;             // totals of exited threads, under lock
  nd_shard_t late;                // atomic RMW only
  int lock;                       // spinlock for acquire/release/retire (rare paths)
  uint32_t threads;               // threads that ever got a shard
  char *chunk;                    // bump allocation of new shards
  size_t chunk_left;
} g;

static void lock(void) { nd_spin_lock(&g.lock); }
static void unlock(void) { nd_spin_unlock(&g.lock); }

nd_shard_t *nd_shard_acquire(pid_t tid) {
  nd_shard_t *s;
  lock();
  for (s = g.head; s; s = s->next)
    if (s->state == ND_SHARD_FREE) break;
  if (!s) {
    if (g.chunk_left < sizeof *s) {
      size_t size = 64 * sizeof *s;
      char *c = nd_os_map(size);
      if (!c) {
        unlock();
        return NULL;
      }
      g.chunk = c;
      g.chunk_left = size;
    }
    s = (nd_shard_t *)(void *)g.chunk;
    g.chunk += sizeof *s;
    g.chunk_left -= sizeof *s;
    s->next = g.head;
    __atomic_store_n(&g.head, s, __ATOMIC_RELEASE);
  }
  s->state = ND_SHARD_OWNED;
  s->tid = tid;
  g.threads++;
  __atomic_store_n(&nd_pub.owned, nd_pub.owned + 1, __ATOMIC_RELAXED);
  unlock();
  return s;
}

nd_peaks_t nd_peaks;
_Static_assert(ND_PEAK_GROUPS == ND_TRACE_PEAK_GROUPS && NDMEM_KIND_DEVICE0 == 4,
               "the trace's peak groups are the shim's");

// A publish that may have moved a group's peak (counters.h): rare, so a lock keeps the moment's
// fields and its epoch together.
static void peak_moment(int kind) {
  int grp = nd_peak_group(kind);
  int64_t total = 0;
  if (grp) {
    total = ND_LOAD(nd_pub.live[kind]);
  } else {
    for (int i = 0; i < NDMEM_KIND_DEVICE0; i++) total += ND_LOAD(nd_pub.live[i]);
  }
  nd_peak_moment_t *m = &nd_peaks.at[grp];
  if (total <= ND_LOAD(m->max)) return;
  nd_spin_lock(&nd_peaks.lock);
  if (total > m->max) ND_STORE(m->max, total);
  int64_t step = m->bytes / 1024 > ND_PUBLISH_BYTES ? m->bytes / 1024 : ND_PUBLISH_BYTES;
  uint16_t e = nd_peaks.epoch[grp];
  if ((total > m->bytes + step || !e) && e < UINT16_MAX) {
    ND_STORE(m->bytes, total);
    ND_STORE(m->mono_ns, nd_os_mono_ns());
    __atomic_store_n(&nd_peaks.epoch[grp], (uint16_t)(e + 1), __ATOMIC_RELEASE);
  }
  nd_spin_unlock(&nd_peaks.lock);
}

uint16_t nd_peak_read(int group, nd_peak_moment_t *out) {
  nd_spin_lock(&nd_peaks.lock);
  *out = nd_peaks.at[group];
  uint16_t e = nd_peaks.epoch[group];
  nd_spin_unlock(&nd_peaks.lock);
  return e;
}

void nd_shard_publish(nd_shard_t *s, int kind) {
  nd_kstat_t *k = &s->k[kind];
  int64_t before = __atomic_fetch_add(&nd_pub.live[kind], k->pending, __ATOMIC_RELAXED);
  int64_t cand = before + k->pending_hi;
  int64_t peak = __atomic_load_n(&g.peak[kind], __ATOMIC_RELAXED);
  while (cand > peak &&
         !__atomic_compare_exchange_n(&g.peak[kind], &peak, cand, 1, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  if (k->pending > 0) peak_moment(kind);
  ND_STORE(k->pending, 0);
  k->pending_hi = 0;
}

void nd_shard_publish_all(nd_shard_t *s) {
  for (int i = 0; i < NDMEM_KIND_COUNT; i++)
    if (s->k[i].pending || s->k[i].pending_hi) nd_shard_publish(s, i);
}

static void add_shard(nd_shard_t *dst, const nd_shard_t *src) {
  for (int i = 0; i < NDMEM_KIND_COUNT; i++) {
    const nd_kstat_t *a = &src->k[i];
    nd_kstat_t *d = &dst->k[i];
    d->allocs += ND_LOAD(a->allocs);
    d->frees += ND_LOAD(a->frees);
    d->alloc_bytes += ND_LOAD(a->alloc_bytes);
    d->free_bytes += ND_LOAD(a->free_bytes);
  }
  for (int i = 0; i < NDMEM_FN_COUNT; i++) dst->calls[i] += ND_LOAD(src->calls[i]);
  for (int i = 0; i < NDMEM_FB_COUNT; i++) dst->fallbacks[i] += ND_LOAD(src->fallbacks[i]);
}

// A thread's last publish: its pending high, too, where its pending is back to 0 (a worker that
// allocated and freed below the publishing step: its high is the process's peak).
static void retire_locked(nd_shard_t *s) {
  nd_shard_publish_all(s);
  add_shard(&g.retired, s);
  // Zero the counters with relaxed stores: a concurrent snapshot may briefly count this
  // thread twice or not at all, never crash; quiescent snapshots are exact.
  nd_kstat_t zero_k = {0};
  for (int i = 0; i < NDMEM_KIND_COUNT; i++) s->k[i] = zero_k;
  memset(s->calls, 0, sizeof s->calls);
  memset(s->fallbacks, 0, sizeof s->fallbacks);
  s->state = ND_SHARD_FREE;
  __atomic_store_n(&nd_pub.owned, nd_pub.owned - 1, __ATOMIC_RELAXED);
}

void nd_shard_release(nd_shard_t *s) {
  lock();
  retire_locked(s);
  unlock();
}

nd_shard_t *nd_shard_late(void) { return &g.late; }

void nd_count_adjust(nd_shard_t *s, int kind, uint64_t allocs, uint64_t alloc_bytes,
                     uint64_t frees, uint64_t free_bytes) {
  nd_kstat_t *k = &s->k[kind];
  ND_BUMP(k->allocs, allocs);
  ND_BUMP(k->frees, frees);
  ND_BUMP(k->alloc_bytes, alloc_bytes);
  ND_BUMP(k->free_bytes, free_bytes);
  int64_t live = (int64_t)(k->alloc_bytes - k->free_bytes);
  if (live > k->peak) ND_STORE(k->peak, live);
  ND_STORE(k->pending, k->pending + (int64_t)alloc_bytes - (int64_t)free_bytes);
  if (k->pending > k->pending_hi) k->pending_hi = k->pending;
  if (k->pending > ND_PUBLISH_BYTES || k->pending < -ND_PUBLISH_BYTES) nd_shard_publish(s, kind);
}

// Threads past their teardown share one shard, updated atomically and published at once.
void nd_late_adjust(int kind, uint64_t allocs, uint64_t alloc_bytes, uint64_t frees,
                    uint64_t free_bytes, int fn) {
  nd_kstat_t *k = &g.late.k[kind];
  __atomic_fetch_add(&k->allocs, allocs, __ATOMIC_RELAXED);
  __atomic_fetch_add(&k->frees, frees, __ATOMIC_RELAXED);
  __atomic_fetch_add(&k->alloc_bytes, alloc_bytes, __ATOMIC_RELAXED);
  __atomic_fetch_add(&k->free_bytes, free_bytes, __ATOMIC_RELAXED);
  __atomic_fetch_add(&nd_pub.live[kind], (int64_t)alloc_bytes - (int64_t)free_bytes, __ATOMIC_RELAXED);
  __atomic_fetch_add(&g.late.calls[fn], 1, __ATOMIC_RELAXED);
  nd_late_fallback(NDMEM_FB_LATE_THREAD);
}

void nd_late_fallback(int fb) { __atomic_fetch_add(&g.late.fallbacks[fb], 1, __ATOMIC_RELAXED); }

static void finish(ndmem_stats_t *out, const nd_shard_t *sum) {
  for (int i = 0; i < NDMEM_KIND_COUNT; i++) {
    ndmem_kind_stats_t *o = &out->kind[i];
    o->allocs = sum->k[i].allocs;
    o->frees = sum->k[i].frees;
    o->alloc_bytes = sum->k[i].alloc_bytes;
    o->free_bytes = sum->k[i].free_bytes;
    o->live_bytes = (int64_t)(o->alloc_bytes - o->free_bytes);
    o->live_count = (int64_t)(o->allocs - o->frees);
    if (o->peak_bytes < o->live_bytes) o->peak_bytes = o->live_bytes;
  }
  memcpy(out->calls, sum->calls, sizeof out->calls);
  memcpy(out->fallbacks, sum->fallbacks, sizeof out->fallbacks);
  out->version = NDMEM_STATS_VERSION;
}

void nd_counters_snapshot_process(ndmem_stats_t *out) {
  nd_shard_t sum;
  memset(&sum, 0, sizeof sum);
  memset(out, 0, sizeof *out);
  lock();
  add_shard(&sum, &g.retired);
  for (nd_shard_t *s = __atomic_load_n(&g.head, __ATOMIC_ACQUIRE); s; s = s->next)
    add_shard(&sum, s);
  out->threads = g.threads;
  unlock();
  add_shard(&sum, &g.late);
  for (int i = 0; i < NDMEM_KIND_COUNT; i++)
    out->kind[i].peak_bytes = __atomic_load_n(&g.peak[i], __ATOMIC_RELAXED);
  finish(out, &sum);
  out->tid = nd_os_getpid();
}

int nd_counters_live_stopped(int kind, int64_t *count, int64_t *bytes) {
  if (__atomic_load_n(&g.lock, __ATOMIC_ACQUIRE)) return -1; // a shard half retired
  const nd_kstat_t *r = &g.retired.k[kind], *l = &g.late.k[kind];
  uint64_t a = r->allocs + l->allocs, f = r->frees + l->frees;
  uint64_t ab = r->alloc_bytes + l->alloc_bytes, fb = r->free_bytes + l->free_bytes;
  for (nd_shard_t *s = __atomic_load_n(&g.head, __ATOMIC_ACQUIRE); s; s = s->next) {
    a += ND_LOAD(s->k[kind].allocs);
    f += ND_LOAD(s->k[kind].frees);
    ab += ND_LOAD(s->k[kind].alloc_bytes);
    fb += ND_LOAD(s->k[kind].free_bytes);
  }
  *count = (int64_t)(a - f);
  *bytes = (int64_t)(ab - fb);
  return 0;
}

void nd_counters_snapshot_shard(const nd_shard_t *s, ndmem_stats_t *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < NDMEM_KIND_COUNT; i++) out->kind[i].peak_bytes = ND_LOAD(s->k[i].peak);
  nd_shard_t copy;
  memset(&copy, 0, sizeof copy);
  add_shard(&copy, s);
  finish(out, &copy);
  out->threads = 1;
  out->tid = s->tid;
}

int64_t nd_counters_pending_sum(int kind) {
  int64_t sum = 0;
  for (nd_shard_t *s = __atomic_load_n(&g.head, __ATOMIC_ACQUIRE); s; s = s->next)
    sum += ND_LOAD(s->k[kind].pending); // a free shard's pending is 0
  return sum;
}

nd_shard_t *nd_counters_first(void) { return __atomic_load_n(&g.head, __ATOMIC_ACQUIRE); }

// fork: the child inherits every shard, so its accounting starts from the parent's live state.
// Only the forking thread lives on in the child; the lock must not be held by a vanished thread.
void nd_counters_atfork_prepare(void) { lock(); }
void nd_counters_atfork_parent(void) { unlock(); }
// The shards of threads that did not survive the fork are retired (their blocks stay live in the
// child's copy of memory, so their counts stay too).
void nd_counters_atfork_child(nd_shard_t *keep) {
  g.threads = 0;
  nd_pub.owned = keep ? 1 : 0; // retire_locked counts the others down; recounted below
  for (nd_shard_t *s = g.head; s; s = s->next) {
    if (s == keep) g.threads = 1;
    else if (s->state == ND_SHARD_OWNED) retire_locked(s);
  }
  nd_pub.owned = keep ? 1 : 0;
  g.lock = 0;
  memset(&nd_peaks, 0, sizeof nd_peaks); // the child's own moment (its sites count from the fork)
}

void nd_counters_reset_for_tests(void) {
  memset(&g, 0, sizeof g);
  memset(&nd_peaks, 0, sizeof nd_peaks);
  memset(&nd_pub, 0, sizeof nd_pub);
}
