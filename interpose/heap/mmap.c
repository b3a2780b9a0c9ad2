// SPDX-License-Identifier: MIT
// mmap.c: the mmap family. Anonymous, accessible mappings (not file mappings, not PROT_NONE
// address-space reservations) are tracked page-exactly in a range table, so partial munmaps,
// MAP_FIXED replacements and mremap moves are accounted to the byte.
//
// One mutex covers the system call and the table update together: otherwise a munmap and an
// mmap on two threads could reuse an address between the call and the update and corrupt the
// table. mmap is a system call already, so the lock is not on any fast path. Mappings made by the
// allocator itself (mode BUSY: glibc's internal ones are not interposable anyway, jemalloc's are)
// belong to the heap counters and are not tracked here.
#include "runtime/shim.h"
#include "stacks/unwcache.h"
#include "runtime/module.h"

#include "limits/limits.h"
#include "common/os.h"
#include "heap/regions.h"
#include "account/sites.h"
#include "account/track.h"
#include "ws/ws.h"

#include <errno.h>
#include <linux/mman.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static nd_regions_t maps;
// Under map_lock: every anonymous mapping the program made, as it made it, with any protection
// (shim.h's nd_mmap_each_reserved_stopped): a reservation and what was committed inside it. The
// JVM reserves its heap PROT_NONE and commits regions in it with MAP_FIXED: each committed piece
// is a tracked mapping nothing points to the start of, reached through the reservation's base.
static nd_regions_t resv;

// A mapping made at [s, e): a part of the one it lies in (MAP_FIXED inside it), or one of its own.
static void resv_add(uintptr_t s, uintptr_t e, int fixed) {
  if (fixed && nd_regions_bytes_in(&resv, s, e) == e - s) return;
  uint64_t bytes, gone, split;
  nd_regions_remove(&resv, s, e, &bytes, &gone, &split, NULL, NULL);
  nd_regions_add(&resv, s, e, NULL); // no room: a pointer into it reaches the piece's start only
}

static void resv_remove(uintptr_t s, uintptr_t e) {
  uint64_t bytes, gone, split;
  nd_regions_remove(&resv, s, e, &bytes, &gone, &split, NULL, NULL);
}
// Under map_lock: the bytes of tracked mappings known not to be resident (each region's
// `untouched`, nonzero only for mappings of ND_TOUCH_MIN bytes or more while maxBytes counts
// touched pages), mirrored in nd_lim.untouched for the checks.
static int64_t untouched_sum;

static void untouched_add(int64_t v) {
  untouched_sum += v;
  __atomic_store_n(&nd_lim.untouched, untouched_sum, __ATOMIC_RELAXED);
}

static void atfork_prepare(void) { pthread_mutex_lock(&map_lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&map_lock); }
static void atfork_child(nd_tls_t *t) { (void)t, pthread_mutex_init(&map_lock, NULL); }

static size_t map_unit(int flags) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (flags & MAP_HUGETLB) {
    int shift = (flags >> MAP_HUGE_SHIFT) & MAP_HUGE_MASK;
    return shift ? (size_t)1 << shift : (size_t)2 << 20;
  }
  return page;
}

static uintptr_t round_up(uintptr_t v, size_t unit) { return (v + unit - 1) & ~(uintptr_t)(unit - 1); }

// Accounting goes to the thread's shard, or atomically to the shared one for a DEAD thread.
static void map_acct(nd_tls_t *t, uint64_t allocs, uint64_t alloc_bytes, uint64_t frees,
                 uint64_t free_bytes, int fn) {
  if (t->shard) nd_count_adjust(t->shard, NDMEM_KIND_MMAP, allocs, alloc_bytes, frees, free_bytes);
  else nd_late_adjust(NDMEM_KIND_MMAP, allocs, alloc_bytes, frees, free_bytes, fn);
}

// Each piece taken from a region is taken from its allocation site too, and its untouched bytes
// from the sum (*ctx gets them: an mremap moves them).
static void site_piece(void *ctx, const nd_range_t *r, uint64_t bytes, int what) {
  if (r->untouched) {
    untouched_add(-(int64_t)r->untouched);
    *(uint64_t *)ctx += r->untouched;
  }
  nd_site_t *site = r->tag;
  if (!site || nd_track_inherited(r->born)) return; // a fork child's sites count its own only
  nd_site_sub(site, what == ND_PIECE_GONE, bytes);
  if (what == ND_PIECE_SPLIT) nd_site_add(site, 1, 0);
}

// Remove [s, e) from the table and account it; returns the untouched bytes the pieces had.
static uint64_t untrack(nd_tls_t *t, uintptr_t s, uintptr_t e) {
  uint64_t bytes, gone, split, untouched = 0;
  nd_regions_remove(&maps, s, e, &bytes, &gone, &split, site_piece, &untouched);
  // A mapping cut in two by a hole counts as one more mapping (live count = tracked regions).
  map_acct(t, split, 0, gone, bytes, NDMEM_FN_MUNMAP);
  return untouched;
}

// fresh: bytes of it known untouched (a new mapping: all of it, unless MAP_POPULATE); they count
// only for a large mapping while maxBytes counts touched pages. After the counters: for a moment
// the mapping counts whole, never not at all.
static void track(nd_tls_t *t, uintptr_t s, uintptr_t e, uint64_t fresh) {
  nd_site_t *site = t->shard ? nd_track_site_here(NDMEM_KIND_MMAP) : NULL;
  int large = e - s >= ND_TOUCH_MIN;
  uint64_t untouched = large && nd_lim.touched ? (fresh < e - s ? fresh : e - s) : 0;
  if (nd_regions_add_born(&maps, s, e, site, site ? nd_os_mono_ns() : 0,
                          __atomic_load_n(&nd_cycle_clock, __ATOMIC_RELAXED), untouched) != 0)
    return;
  if (site) nd_site_add(site, 1, e - s); // before the count (account_block's order)
  map_acct(t, 1, e - s, 0, 0, NDMEM_FN_MMAP);
  if (untouched) {
    if (t->shard) nd_shard_publish(t->shard, NDMEM_KIND_MMAP);
    untouched_add((int64_t)untouched);
  }
}

static int64_t untouched_read(void) {
  if (!nd_lim.touched) return 0;
  size_t page = nd_os_page_size();
  unsigned char vec[4096];
  int saved = errno;
  pthread_mutex_lock(&map_lock);
  for (size_t i = 0; i < maps.n; i++) {
    nd_range_t *r = &maps.v[i];
    if (r->end - r->start < ND_TOUCH_MIN) continue;
    uint64_t resident = 0;
    int ok = 1;
    for (uintptr_t a = r->start; a < r->end && ok;) {
      size_t pages = (r->end - a) / page;
      if (pages > sizeof vec) pages = sizeof vec;
      ok = syscall(SYS_mincore, a, pages * page, vec) == 0;
      for (size_t k = 0; ok && k < pages; k++) resident += vec[k] & 1;
      a += pages * page;
    }
    // A range mincore cannot read (the program unmapped it behind ndmem's back) counts whole.
    uint64_t u = ok ? (r->end - r->start) - resident * page : 0;
    untouched_add((int64_t)u - (int64_t)r->untouched);
    r->untouched = u;
  }
  int64_t v = untouched_sum;
  pthread_mutex_unlock(&map_lock);
  errno = saved;
  return v;
}

int64_t nd_mmap_read_touched(void (*fn)(void *ctx, struct nd_site *site, uint64_t untouched),
                             void *ctx) {
  int saved = errno;
  if (pthread_mutex_trylock(&map_lock) != 0) return -1;
  int64_t sum = 0;
  for (size_t i = 0; i < maps.n; i++) {
    nd_range_t *r = &maps.v[i];
    int64_t res = nd_os_resident_in(r->start, r->end);
    // A range mincore cannot read (unmapped behind ndmem's back) counts touched, as the limits'.
    uint64_t u = res < 0 ? 0 : (r->end - r->start) - (uint64_t)res;
    if (nd_lim.touched && r->end - r->start >= ND_TOUCH_MIN) {
      untouched_add((int64_t)u - (int64_t)r->untouched);
      r->untouched = u;
    }
    sum += (int64_t)u;
    if (u && fn) fn(ctx, nd_track_inherited(r->born) ? NULL : r->tag, u);
  }
  pthread_mutex_unlock(&map_lock);
  errno = saved;
  return sum;
}

// Every live tracked mapping (for the trace's leaks at exit).
void nd_mmap_each_live(void (*fn)(void *ctx, const nd_range_t *r), void *ctx) {
  nd_os_mutex_lock(&map_lock);
  for (size_t i = 0; i < maps.n; i++) fn(ctx, &maps.v[i]);
  pthread_mutex_unlock(&map_lock);
}

int nd_mmap_each_reserved_stopped(void (*fn)(void *ctx, uintptr_t lo, uintptr_t hi), void *ctx) {
  if (pthread_mutex_trylock(&map_lock) != 0) return -1;
  for (size_t i = 0; i < resv.n; i++) fn(ctx, resv.v[i].start, resv.v[i].end);
  pthread_mutex_unlock(&map_lock);
  return 0;
}

int nd_mmap_each_live_stopped(void (*fn)(void *ctx, const nd_range_t *r), void *ctx) {
  if (pthread_mutex_trylock(&map_lock) != 0) return -1;
  for (size_t i = 0; i < maps.n; i++) fn(ctx, &maps.v[i]);
  pthread_mutex_unlock(&map_lock);
  return 0;
}

static int accounts(nd_tls_t *t) {
  int mode = t->mode == ND_T_NEW || t->mode == ND_T_FORKED ? nd_thread_prepare(t) : t->mode;
  return mode == ND_T_COUNT || mode == ND_T_DEAD;
}

static void *raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (nd_real.mmap) return nd_real.mmap(addr, len, prot, flags, fd, off);
  return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off); // sets errno like libc
}

// Checks `bytes` more tracked mmap bytes against the limits before the call (the size is exact:
// pages; a large fresh mapping while maxBytes counts touched pages adds none). 0: go on (settle c
// afterwards); -1: refused (errno ENOMEM). Called without map_lock: a breach may write the trace,
// which reads the table.
static int map_limited(nd_tls_t *t, nd_lim_t *c) {
  for (;;) {
    if (nd_limit_pre(t, c, c->untouched ? ND_LIM_PHYS : ND_LIM_PHYS | ND_LIM_HOST) == ND_LIM_OK &&
        (c->untouched || nd_limit_post(t, c, c->req) == ND_LIM_OK))
      return 0;
    if (nd_limit_breach(t, c) == ND_LIM_FAIL) return -1;
  }
}

static void *map_refused(nd_tls_t *t, unsigned char mode, int fn) {
  ND_BUMP(t->shard->calls[fn], 1);
  t->mode = mode;
  errno = ENOMEM;
  return MAP_FAILED;
}

void *nd_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void *ra) {
  nd_tls_t *t = &nd_tls;
  if (ND_UNLIKELY(nd_unwinder_owns(ra))) { // libunwind's own, inside ndmem: not counted
    void *p = nd_unwcache_map(addr, len, prot, flags, fd);
    return p ? p : raw_mmap(addr, len, prot, flags, fd, off);
  }
  if (!accounts(t)) return raw_mmap(addr, len, prot, flags, fd, off);
  unsigned char mode = t->mode;
  t->mode = ND_T_BUSY;
  nd_lim_t c = ND_LIM_INIT(0, 0, NDMEM_FN_MMAP, ra);
  uint64_t fresh = flags & MAP_POPULATE ? 0 : UINT64_MAX; // a new mapping's pages are untouched
  if (ND_UNLIKELY(nd_limits_on) && mode == ND_T_COUNT && (flags & MAP_ANONYMOUS) && prot != PROT_NONE &&
      len) {
    c.req = c.size = round_up(len, map_unit(flags));
    c.untouched = nd_lim.touched && fresh && c.req >= ND_TOUCH_MIN;
    c.fresh = fresh != 0;
    if (map_limited(t, &c) != 0) return map_refused(t, mode, NDMEM_FN_MMAP);
  }
  pthread_mutex_lock(&map_lock);
  void *r = raw_mmap(addr, len, prot, flags, fd, off);
  if (r != MAP_FAILED) {
    uintptr_t s = (uintptr_t)r, e = round_up(s + len, map_unit(flags));
    if (flags & MAP_FIXED) untrack(t, s, e); // the new mapping replaced whatever was there
    if ((flags & MAP_ANONYMOUS) && prot != PROT_NONE) track(t, s, e, fresh);
    if (flags & MAP_ANONYMOUS) resv_add(s, e, flags & MAP_FIXED);
    else if (flags & MAP_FIXED) resv_remove(s, e); // a file's mapping over part of one: not its
  }
  pthread_mutex_unlock(&map_lock);
  if (c.req) nd_limit_settle(t, &c, r != MAP_FAILED);
  if (t->shard) ND_BUMP(t->shard->calls[NDMEM_FN_MMAP], 1);
  t->mode = mode;
  return r;
}

int nd_munmap(void *addr, size_t len, void *ra) {
  nd_tls_t *t = &nd_tls;
  // libunwind maps its per-thread cache inside ndmem (not counted) and unmaps it from the thread's
  // teardown (keys.c): not the program's, not counted; kept for the next thread when there is room.
  int unwinder = ND_UNLIKELY(nd_unwinder_owns(ra));
  if (unwinder && nd_unwcache_keep(addr, len)) return 0;
  if (unwinder || !accounts(t))
    return nd_real.munmap ? nd_real.munmap(addr, len) : (int)syscall(SYS_munmap, addr, len);
  unsigned char mode = t->mode;
  t->mode = ND_T_BUSY;
  pthread_mutex_lock(&map_lock);
  int rc = nd_real.munmap(addr, len);
  if (rc == 0) {
    uintptr_t e = round_up((uintptr_t)addr + len, (size_t)sysconf(_SC_PAGESIZE));
    untrack(t, (uintptr_t)addr, e);
    resv_remove((uintptr_t)addr, e);
  }
  pthread_mutex_unlock(&map_lock);
  if (t->shard) ND_BUMP(t->shard->calls[NDMEM_FN_MUNMAP], 1);
  t->mode = mode;
  return rc;
}

void *nd_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr, void *ra) {
  nd_tls_t *t = &nd_tls;
  if (!accounts(t)) {
    if (nd_real.mremap) return nd_real.mremap(old, old_len, new_len, flags, new_addr);
    return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
  }
  unsigned char mode = t->mode;
  t->mode = ND_T_BUSY;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t os = (uintptr_t)old, oe = round_up(os + old_len, page);
  nd_lim_t c = ND_LIM_INIT(0, round_up(new_len, page), NDMEM_FN_MREMAP, ra);
  c.fresh = 1; // the growth: new pages, none resident
  uint64_t growth = round_up(new_len, page) > oe - os ? round_up(new_len, page) - (oe - os) : 0;
  if (ND_UNLIKELY(nd_limits_on) && mode == ND_T_COUNT && growth) {
    pthread_mutex_lock(&map_lock);
    int grows_tracked = nd_regions_bytes_in(&maps, os, oe) > 0;
    pthread_mutex_unlock(&map_lock);
    c.req = grows_tracked ? growth : 0;
    c.untouched = nd_lim.touched && round_up(new_len, page) >= ND_TOUCH_MIN; // new pages: untouched
    if (c.req && map_limited(t, &c) != 0) return map_refused(t, mode, NDMEM_FN_MREMAP);
  }
  pthread_mutex_lock(&map_lock);
  int tracked = nd_regions_bytes_in(&maps, os, oe) > 0;
  int reserved = nd_regions_bytes_in(&resv, os, oe) > 0; // anonymous (a file's mapping is not)
  void *r = nd_real.mremap(old, old_len, new_len, flags, new_addr);
  if (r != MAP_FAILED) {
    uintptr_t ns = (uintptr_t)r, ne = round_up(ns + new_len, page);
    if (flags & MREMAP_FIXED) untrack(t, ns, ne); // the target range was unmapped first
    if (tracked) {
      // MREMAP_DONTUNMAP leaves the old range mapped (and empty); otherwise it is gone, and its
      // untouched bytes move with its pages. The growth is untouched.
      uint64_t moved = flags & MREMAP_DONTUNMAP ? 0 : untrack(t, os, oe);
      track(t, ns, ne, moved + growth);
    }
    if (!(flags & MREMAP_DONTUNMAP)) resv_remove(os, oe);
    if (reserved) resv_add(ns, ne, 1);
    else if (flags & MREMAP_FIXED) resv_remove(ns, ne);
  }
  pthread_mutex_unlock(&map_lock);
  if (c.req) nd_limit_settle(t, &c, r != MAP_FAILED);
  if (t->shard) ND_BUMP(t->shard->calls[NDMEM_FN_MREMAP], 1);
  t->mode = mode;
  return r;
}

static void setup(char *const *envp) { (void)envp, nd_limits_untouched_reader(untouched_read); }

ND_MODULE(nd_mmap_module) = {.name = "mmap", .rank = 30, .setup = setup,
                              .atfork_prepare = atfork_prepare,
                              .atfork_parent = atfork_parent, .atfork_child = atfork_child};
