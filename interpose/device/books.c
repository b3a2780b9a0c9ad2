// SPDX-License-Identifier: MIT
// books.c: the device room's books: per device totals and the device limit, the live block table
// (a device address, a pinned or managed host address, or a cuMemCreate handle: not host blocks,
// so not in account/'s table), and a hooked call's accounting (enter, track, untrack, leave).
#include "account/track.h"
#include "device/books.h"

#include "common/os.h"
#include "device/spill.h"
#include "limits/limits.h"
#include "limits/admit.h"
#include "stacks/names.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// Function pointers travel as void * here, as dlsym and cuGetProcAddress hand them out (POSIX
// requires the conversion to work); and a '%' limit needs a 128-bit product.
#pragma GCC diagnostic ignored "-Wpedantic"

struct nd_cu_calls nd_cu_calls;
struct dev nd_cu_devs[NDMEM_MAX_DEVICES];
int nd_cu_cupti_lock;
struct nd_cu_blocks nd_cu_blocks;
// ---------------------------------------------------------------- per device

static void cu_raise_peak(int64_t *peak, int64_t v) {
  int64_t p = LD(*peak);
  while (v > p && !__atomic_compare_exchange_n(peak, &p, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

// The setting for device d: its own, else the one for every device.
void cu_limit_setting(int d, int64_t *v, int *frac) {
  int i = nd_cfg.max_device_given & (1u << d) ? d : NDMEM_MAX_DEVICES;
  *v = nd_cfg.max_device[i];
  *frac = (nd_cfg.max_device_frac >> i) & 1;
}

// The limit of device d in bytes; a '%' setting is resolved against the device's memory the first
// time the device is used (the driver is loaded and initialised by then).
int64_t cu_dev_limit(int d, const void *real) {
  struct dev *v = &nd_cu_devs[d];
  if (__atomic_load_n(&v->resolved, __ATOMIC_ACQUIRE)) return LD(v->limit);
  int64_t set;
  int frac;
  cu_limit_setting(d, &set, &frac);
  cu_drv_resolve(real);
  size_t total = 0;
  if (nd_cu_drv.total_mem && nd_cu_drv.total_mem(&total, d) == ND_CUDA_SUCCESS) __atomic_store_n(&v->total, (int64_t)total, __ATOMIC_RELAXED);
  int64_t lim = set;
  if (frac) {
    // a fraction in units of 2^-40 of the device's memory; unknown memory: no limit (said once)
    lim = total ? (int64_t)(((unsigned __int128)total * (uint64_t)set) >> 40) : 0;
    if (!total && !nd_quiet()) {
      nd_buf_t b;
      nd_buf_reset(&b);
      nd_buf_str(&b, "ndmem: NDMEM_MAX_DEVICE_BYTES: the memory of device ");
      nd_buf_u64(&b, (uint64_t)d);
      nd_buf_str(&b, " is unknown (cuDeviceTotalMem failed), so its '%' limit is not applied");
      nd_buf_line(&b, 2);
    }
  }
  __atomic_store_n(&v->limit, lim, __ATOMIC_RELAXED);
  __atomic_store_n(&v->resolved, 1, __ATOMIC_RELEASE);
  return lim;
}

// ---------------------------------------------------------------- live blocks

static size_t slot_of(uint64_t key, int cls, size_t cap) {
  uint64_t h = (key ^ ((uint64_t)cls << 59)) * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & (cap - 1);
}

static int tab_grow(void) {
  size_t cap = nd_cu_blocks.cap ? nd_cu_blocks.cap * 2 : 1024;
  while (nd_cu_blocks.live * 2 >= cap) cap *= 2;
  blk_t *v = nd_os_map(cap * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < nd_cu_blocks.cap; i++) {
    if (nd_cu_blocks.v[i].state != 1) continue;
    size_t j = slot_of(nd_cu_blocks.v[i].key, nd_cu_blocks.v[i].cls, cap);
    while (v[j].state) j = (j + 1) & (cap - 1);
    v[j] = nd_cu_blocks.v[i];
  }
  if (nd_cu_blocks.v) nd_os_unmap(nd_cu_blocks.v, nd_cu_blocks.cap * sizeof *nd_cu_blocks.v);
  nd_cu_blocks.v = v;
  nd_cu_blocks.cap = cap;
  nd_cu_blocks.used = nd_cu_blocks.live;
  return 0;
}

// Finds (key, cls); with `take` the entry is removed. 1 when found.
int cu_tab_find(uint64_t key, int cls, blk_t *out, int take) {
  if (!nd_cu_blocks.cap) return 0;
  for (size_t j = slot_of(key, cls, nd_cu_blocks.cap);; j = (j + 1) & (nd_cu_blocks.cap - 1)) {
    blk_t *b = &nd_cu_blocks.v[j];
    if (!b->state) return 0;
    if (b->state == 1 && b->key == key && b->cls == cls) {
      if (out) *out = *b;
      if (take) {
        b->state = 2;
        nd_cu_blocks.live--;
      }
      return 1;
    }
  }
}

// Inserts b. The driver just handed out its key, so an entry already there is one whose release
// ndmem did not see: replaced, and given back as *stale (1).
static int tab_put(const blk_t *b, blk_t *stale) {
  int had = cu_tab_find(b->key, b->cls, stale, 1);
  if ((nd_cu_blocks.used + 1) * 2 > nd_cu_blocks.cap && tab_grow() != 0) return had ? 1 : -1;
  size_t j = slot_of(b->key, b->cls, nd_cu_blocks.cap);
  while (nd_cu_blocks.v[j].state == 1) j = (j + 1) & (nd_cu_blocks.cap - 1);
  if (!nd_cu_blocks.v[j].state) nd_cu_blocks.used++;
  nd_cu_blocks.v[j] = *b;
  nd_cu_blocks.v[j].state = 1;
  nd_cu_blocks.live++;
  return had;
}

// ---------------------------------------------------------------- accounting

void cu_enter(call_t *c, int f) {
  c->t = &nd_tls;
  // NEW settles the thread; FORKED (the forking thread in a child) creates the child's trace
  c->mode = c->t->mode == ND_T_COUNT ? ND_T_COUNT : (unsigned char)nd_thread_prepare(c->t);
  c->acct = (c->mode == ND_T_COUNT || c->mode == ND_T_DEAD) && nd_accounting_on();
  if (c->mode == ND_T_COUNT) c->t->mode = ND_T_BUSY; // the driver's own host memory is not counted
  if (c->acct) {
    ADD(nd_cu_calls.calls[f], 1);
    if (!LD(nd_cu_calls.used)) {
      uint64_t zero = 0;
      __atomic_compare_exchange_n(&nd_cu_calls.first_ns, &zero, nd_os_mono_ns(), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
      __atomic_store_n(&nd_cu_calls.used, 1, __ATOMIC_RELAXED);
    }
  }
}

void cu_leave(call_t *c) {
  if (c->mode == ND_T_COUNT) c->t->mode = ND_T_COUNT;
}

void cu_count(call_t *c, int kind, int alloc, uint64_t bytes) {
  nd_shard_t *s = c->t->shard;
  if (s) {
    if (alloc) nd_count_alloc(s, kind, bytes);
    else nd_count_free(s, kind, bytes);
    nd_shard_publish(s, kind); // device calls are rare: the process totals stay exact
  } else {
    nd_late_adjust(kind, alloc, alloc ? bytes : 0, !alloc, alloc ? 0 : bytes, NDMEM_FN_COUNT);
  }
}

static void cu_dev_book(int kind, int cls, int alloc, uint64_t bytes) {
  if (kind < NDMEM_KIND_DEVICE0 || cls >= ND_DEV_CLASSES) return;
  struct dev *v = &nd_cu_devs[kind - NDMEM_KIND_DEVICE0];
  ADD(v->cls[cls][alloc ? 0 : 1], 1);
  ADD(v->cls[cls][alloc ? 2 : 3], bytes);
}

// The site of a device block about to be made (the device workspaces key their cycles on it).
nd_site_t *cu_site_here(call_t *c, int kind) {
  return c->t->shard ? nd_track_site_here(kind) : NULL;
}

// A new block: counted, kept with its stack (`site`, taken before the call; or here). Device
// memory from the driver raises the device's peak; an arena's or host memory does not.
void cu_track_at(call_t *c, uint64_t key, int cls, int kind, uint64_t size, nd_site_t *site,
                     int flags) {
  blk_t b = {key, size, site, site ? nd_os_mono_ns() : 0,
             __atomic_load_n(&nd_cycle_clock, __ATOMIC_RELAXED), (uint16_t)kind, (uint8_t)cls, 1,
             (uint8_t)flags};
  blk_t stale;
  nd_spin_lock(&nd_cu_blocks.lock);
  int had = tab_put(&b, &stale);
  nd_spin_unlock(&nd_cu_blocks.lock);
  if (had < 0) ADD(nd_cu_calls.untracked, 1);
  if (had == 1) { // released where ndmem did not see it: its books close now
    ADD(nd_cu_calls.unknown_frees, 1);
    cu_untrack(c, &stale);
  }
  if (site) nd_site_add(site, 1, size); // before the count (heap/alloc.c account_block's order)
  cu_count(c, kind, 1, size);
  // The device's classes count what reached the driver (what CUPTI sees too): a workspace's
  // arenas, not the blocks it served (its hits), and nothing served from host memory.
  if (from_driver(flags)) cu_dev_book(kind, cls, 1, size);
  if (kind >= NDMEM_KIND_DEVICE0 && from_driver(flags)) {
    // granted blocks only: reservations in flight are not memory
    struct dev *v = &nd_cu_devs[kind - NDMEM_KIND_DEVICE0];
    cu_raise_peak(&v->peak, __atomic_add_fetch(&v->granted, (int64_t)size, __ATOMIC_RELAXED));
  }
}

void cu_track(call_t *c, uint64_t key, int cls, int kind, uint64_t size) {
  cu_track_at(c, key, cls, kind, size, cu_site_here(c, kind), 0);
}

int cu_take(uint64_t key, int cls, blk_t *out) {
  nd_spin_lock(&nd_cu_blocks.lock);
  int found = cu_tab_find(key, cls, out, 1);
  nd_spin_unlock(&nd_cu_blocks.lock);
  return found;
}

void cu_restore(const blk_t *b) {
  blk_t stale;
  nd_spin_lock(&nd_cu_blocks.lock);
  tab_put(b, &stale);
  nd_spin_unlock(&nd_cu_blocks.lock);
}

// The books of a block that was released.
void cu_untrack(call_t *c, const blk_t *b) {
  cu_count(c, b->kind, 0, b->size);
  if (from_driver(b->flags)) cu_dev_book(b->kind, b->cls, 0, b->size);
  if (b->kind >= NDMEM_KIND_DEVICE0 && from_driver(b->flags)) {
    struct dev *v = &nd_cu_devs[b->kind - NDMEM_KIND_DEVICE0];
    __atomic_fetch_sub(&v->live, (int64_t)b->size, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&v->granted, (int64_t)b->size, __ATOMIC_RELAXED);
  }
  if (b->site && !nd_track_inherited(b->born)) nd_site_sub(b->site, 1, b->size);
}

// ---------------------------------------------------------------- the device limit

// Reserves `bytes` on device d: 1 when they fit under its limit (or NDMEM_ON_LIMIT=warn let them
// through), 0 when the allocation must fail with CUDA_ERROR_OUT_OF_MEMORY. The reservation is the
// device's live counter itself, so racing threads never overshoot together.
int cu_reserve(int d, uint64_t bytes, int fn, const void *real) {
  struct dev *v = &nd_cu_devs[d];
  int64_t lim = cu_dev_limit(d, real), live = LD(v->live);
  for (;;) {
    if (lim && live + (int64_t)bytes > lim) break;
    if (__atomic_compare_exchange_n(&v->live, &live, live + (int64_t)bytes, 1, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return 1; // the peak rises when the driver has granted it (track)
  }
  // Over the limit: refused only where the program can take it (limits/admit.h: PyTorch's caching
  // allocator, a named object, a large request); anything else is admitted while the device's
  // live bytes stay within the limit plus the slack, reserved against that as against the limit.
  // Under NDMEM_ON_DEVICE_LIMIT=host nothing is refused: every request over the limit is served
  // from host memory, whoever asks (the device stays within its limit).
  nd_admit_q_t q = {.limit = ND_LIMIT_DEVICE, .device = d, .kind = cu_dev_kind(d), .size = bytes,
                    .value = live, .need = bytes, .limit_bytes = lim, .cls = -1};
  uint32_t why = nd_admit_why(&q);
  if (!why && !nd_spill_on()) {
    int64_t cap = lim + nd_admit_slack(lim);
    for (;;) {
      if (live + (int64_t)bytes > cap) { // another thread took the slack meanwhile
        why = ND_BREACH_PAST_SLACK;
        break;
      }
      if (__atomic_compare_exchange_n(&v->live, &live, live + (int64_t)bytes, 1, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
        q.value = live;
        nd_admit_count(&q);
        return 1;
      }
    }
  }
  if (why == ND_BREACH_PAST_SLACK) nd_admit_past_slack(&q);
  // NDMEM_ON_DEVICE_LIMIT=host: the caller serves it from host memory (counted failed if it
  // cannot)
  int action = nd_spill_on() ? ND_ON_LIMIT_HOST : nd_limits_action();
  uint64_t n = ADD(v->breaches, 1) + 1;
  if ((n & (n - 1)) == 0 || action == ND_ON_LIMIT_ABORT) {
    nd_limits_say_breach(d, action, bytes, 0, "tracked", live, 1, "maxDeviceBytes", lim,
                         why == ND_BREACH_PAST_SLACK ? nd_admit_slack(lim) : -1, -1, n, NULL);
    if (n == 1 || action == ND_ON_LIMIT_ABORT) nd_limits_say_top_sites(cu_dev_kind(d));
    nd_limits_device_breach(d, action, fn, bytes, live, lim, n, why);
  }
  if (action == ND_ON_LIMIT_HOST) return 0;
  if (action == ND_ON_LIMIT_WARN) {
    ADD(v->live, (int64_t)bytes);
    return 1;
  }
  if (action == ND_ON_LIMIT_ABORT) nd_limits_abort();
  ADD(v->failed, 1);
  nd_limits_device_refused(d, fn, bytes, lim,
                           nd_tls.shard ? nd_track_site_here(cu_dev_kind(d)) : NULL);
  return 0;
}

void cu_unreserve(int d, uint64_t bytes) {
  __atomic_fetch_sub(&nd_cu_devs[d].live, (int64_t)bytes, __ATOMIC_RELAXED);
}

// A device workspace's arena: device memory ndmem holds, under the limit like the program's but
// never a breach of it (the workspace then serves nothing and the program's own allocations meet
// the limit as before). 0, or -1 when it does not fit.
int nd_cuda_arena_reserve(int d, uint64_t bytes) {
  struct dev *v = &nd_cu_devs[d];
  int64_t lim = LD(v->resolved) ? LD(v->limit) : 0, live = LD(v->live);
  for (;;) {
    if (lim && live + (int64_t)bytes > lim) return -1;
    if (__atomic_compare_exchange_n(&v->live, &live, live + (int64_t)bytes, 1, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      break;
  }
  return 0;
}

// The driver made the reserved arena (a cuMemAlloc it saw): the device's peak and classes.
void nd_cuda_arena_made(int d, uint64_t bytes) {
  cu_raise_peak(&nd_cu_devs[d].peak, __atomic_add_fetch(&nd_cu_devs[d].granted, (int64_t)bytes, __ATOMIC_RELAXED));
  cu_dev_book(cu_dev_kind(d), ND_DEV_PLAIN, 1, bytes);
}

// An arena's bytes leave the device's books: freed (made), or never made.
void nd_cuda_arena_release(int d, uint64_t bytes, int made) {
  cu_unreserve(d, bytes);
  if (!made) return;
  __atomic_fetch_sub(&nd_cu_devs[d].granted, (int64_t)bytes, __ATOMIC_RELAXED);
  cu_dev_book(cu_dev_kind(d), ND_DEV_PLAIN, 0, bytes);
}

// An allocation refused (over the limit: why LIMIT; by a full device: FULL) served from host
// memory under NDMEM_ON_DEVICE_LIMIT=host. CUDA_SUCCESS and *dptr, or the refusal's error.
nd_cu_result cu_spill(call_t *c, void *real, int d, int cls, uint64_t n, nd_site_t *site,
                          int why, nd_cu_deviceptr *dptr) {
  if (!site) site = cu_site_here(c, cu_dev_kind(d));
  if (nd_spill_alloc(d, real, n, site, why, dptr) != 0) {
    ADD(nd_cu_devs[d].failed, 1);
    return ND_CUDA_ERROR_OUT_OF_MEMORY;
  }
  cu_track_at(c, *dptr, cls, cu_dev_kind(d), n, site, BLK_SPILL);
  return ND_CUDA_SUCCESS;
}

