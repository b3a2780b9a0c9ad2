// SPDX-License-Identifier: MIT
// sites.c: stack capture (libunwind) and the site intern table (see sites.h).
// The table is striped 64 ways by stack hash, each stripe an open-addressing array under its own
// spinlock: interning runs only for tracked blocks, never on the untracked fast path. Sites live
// in ndmem's own pages and are never freed, so a site pointer stays valid for the process, which
// lets each thread keep a lock-free cache of the sites it used last (nd_site_frames): with every
// block tracked (NDMEM_TRACK_MIN=0) a repeated stack then costs its unwinding, a hash and a
// compare, and no lock shared with other threads.
#include "account/sites.h"
#include "runtime/module.h"
#include "runtime/shim.h"

#include "account/counters.h"
#include "common/os.h"
#include "stacks/python.h"
#include "stacks/unwind.h"

#include <dlfcn.h>
#include <string.h>

#define STRIPES 64
#define DIR_CHUNK 4096
#define DIR_MAX 1024 // up to 4M sites

// A slot keeps the site's hash beside the pointer: a probe compares hashes in the table's own
// lines and touches a site only when they agree. With every block tracked, most look-ups that
// reach the table are of new stacks (hundreds of thousands while `import torch` runs), whose
// probes used to miss the cache once for each site passed.
// The outer frames' table (nd_outer_t) is one more such array, its slots the outer parts.
typedef struct slot {
  uint64_t hash;
  void *p; // nd_site_t * (a stripe) or nd_outer_t * (the outer frames' table)
} slot_t;

typedef struct stripe {
  int lock;
  size_t n, cap;
  slot_t *v;
} stripe_t;

static stripe_t stripes[STRIPES];
static nd_site_t **dir[DIR_MAX];
static int64_t *at_peak[DIR_MAX]; // nd_site_at_peak, a chunk per chunk of dir (made on first use)

// The chunk in *slot, mapped (zeroed) on first use; several threads may race to make it: one
// wins, the others use it. NULL when out of memory.
static void *chunk_at(void **slot, size_t bytes) {
  void *chunk = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (chunk) return chunk;
  void *fresh = nd_os_map(bytes), *expect = NULL;
  if (!fresh) return NULL;
  if (__atomic_compare_exchange_n(slot, &expect, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return fresh;
  nd_os_unmap(fresh, bytes);
  return expect;
}
static uint32_t nsites; // atomic
static int arena_lock;
static char *arena;
static size_t arena_left;
static uintptr_t self_lo, self_hi;

// Sites are cache-line aligned (sites.h); chunks are whole pages.
static void *arena_alloc(size_t n) {
  n = (n + 63) & ~(size_t)63;
  nd_spin_lock(&arena_lock);
  if (arena_left < n) {
    size_t chunk = n > (1u << 20) ? n : (1u << 20);
    char *c = nd_os_map(chunk);
    if (!c) {
      nd_spin_unlock(&arena_lock);
      return NULL;
    }
    arena = c;
    arena_left = chunk;
  }
  void *p = arena;
  arena += n;
  arena_left -= n;
  nd_spin_unlock(&arena_lock);
  return p;
}

int nd_sites_init(int depth) {
  nd_sites_want = depth + 2 < ND_CAPTURE_MAX ? depth + 2 : ND_CAPTURE_MAX;
  nd_object_of((uintptr_t)&nd_sites_init, &self_lo, &self_hi);
  if (nd_unwind_init() != 0) return -1;
  return self_hi ? 0 : -1;
}

int nd_stack_capture(uintptr_t *ips, int max) {
  void *buf[ND_CAPTURE_MAX];
  int want = max + 8 < ND_CAPTURE_MAX ? max + 8 : ND_CAPTURE_MAX;
  int n = nd_backtrace(buf, want), i = 0, d = 0;
  while (i < n && (uintptr_t)buf[i] >= self_lo && (uintptr_t)buf[i] < self_hi) i++;
  for (; i < n && d < max; i++) ips[d++] = (uintptr_t)buf[i];
  return d;
}

// Two independent multiply chains (half the latency of one over a deep stack), then a final mix
// so that both the low bits (table slots, the thread cache) and the high bits (stripes) spread.
static inline __attribute__((always_inline)) uint64_t hash_stack(int kind, int sampled,
                                                                  const uintptr_t *ips, int depth) {
  uint64_t a = 0x9e3779b97f4a7c15ull ^ (uint64_t)(kind * 2 + sampled);
  uint64_t b = 0xc2b2ae3d27d4eb4full ^ (uint64_t)depth;
  int i = 0;
  for (; i + 1 < depth; i += 2) {
    a = (a ^ ips[i]) * 0xff51afd7ed558ccdull;
    b = (b ^ ips[i + 1]) * 0xc4ceb9fe1a85ec53ull;
    a = a << 23 | a >> 41;
    b = b << 29 | b >> 35;
  }
  if (i < depth) a = (a ^ ips[i]) * 0xff51afd7ed558ccdull;
  uint64_t h = a ^ (b * 0x9e3779b97f4a7c15ull);
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return h ? h : 1;
}

// Word by word: stacks are short and usually differ in their first frames (a memcmp call costs
// more than the compare). The outer frames are compared in the shared part the site points to.
// The hash was compared where it is kept (the table's slot, the thread's cache).
static inline __attribute__((always_inline)) int same(const nd_site_t *s, int kind, int sampled,
                                                      const uintptr_t *ips, int depth) {
  if (s->kind != kind || s->sampled != sampled || s->depth != depth) return 0;
  int in = depth < ND_SITE_INLINE ? depth : ND_SITE_INLINE;
  for (int i = 0; i < in; i++)
    if (s->ips[i] != ips[i]) return 0;
  if (depth > ND_SITE_INLINE) {
    const uintptr_t *o = s->outer->ips;
    for (int i = ND_SITE_INLINE; i < depth; i++)
      if (o[i - ND_SITE_INLINE] != ips[i]) return 0;
  }
  return 1;
}

// ---------------------------------------------------------------- outer frames

// The first free slot from h's, in a table of cap (a power of two) slots.
static size_t free_slot(const slot_t *v, size_t cap, uint64_t h) {
  size_t j = h & (cap - 1);
  while (v[j].p) j = (j + 1) & (cap - 1);
  return j;
}

// Room for one more entry, the table kept at most 3/4 full: a probe compares the hashes kept in
// the slots, so a longer run of them costs little, and 685 000 sites (an import of torch) fit
// 16 MB of slots instead of 32. 0, or -1 when out of memory.
static int room(stripe_t *st) {
  if ((st->n + 1) * 4 <= st->cap * 3) return 0;
  size_t cap = st->cap ? st->cap * 2 : 64;
  slot_t *v = nd_os_map(cap * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < st->cap; i++)
    if (st->v[i].p) v[free_slot(v, cap, st->v[i].hash)] = st->v[i];
  if (st->v) nd_os_unmap(st->v, st->cap * sizeof *v);
  __atomic_store_n(&st->v, v, __ATOMIC_RELAXED); // read without the lock for a prefetch (intern)
  __atomic_store_n(&st->cap, cap, __ATOMIC_RELAXED);
  return 0;
}

// The outer parts (sites.h, nd_outer_t), one table under one lock: it is asked only when a new
// site is made, already under that site's stripe lock (lock order: stripe, then outers).
static stripe_t outers;

// The interned outer part of n frames, whose hash is h; NULL when out of memory.
static const nd_outer_t *outer_intern(const uintptr_t *ips, int n, uint64_t h) {
  nd_spin_lock(&outers.lock);
  nd_outer_t *o = NULL;
  if (outers.cap) {
    for (size_t j = h & (outers.cap - 1); (o = outers.v[j].p); j = (j + 1) & (outers.cap - 1))
      if (outers.v[j].hash == h && o->n == (uint64_t)n &&
          !memcmp(o->ips, ips, (size_t)n * sizeof *ips))
        goto out;
  }
  if (room(&outers)) goto out; // o is NULL
  o = arena_alloc(sizeof *o + (size_t)n * sizeof *ips);
  if (!o) goto out;
  o->n = (uint64_t)n;
  memcpy(o->ips, ips, (size_t)n * sizeof *ips);
  outers.v[free_slot(outers.v, outers.cap, h)] = (slot_t){h, o};
  outers.n++;
out:
  nd_spin_unlock(&outers.lock);
  return o;
}

static nd_site_t *intern(uint64_t h, int kind, int sampled, const uintptr_t *ips, int depth) {
  stripe_t *st = &stripes[(h >> 58) % STRIPES];
  // A new site looks its outer part up too: that slot starts loading now, while the site's own
  // slot does (both tables are far larger than the caches: each probe is a miss to memory). A
  // table moved meanwhile makes it a useless hint, never a fault (a prefetch does not fault).
  uint64_t ho = 0;
  if (depth > ND_SITE_INLINE) {
    ho = hash_stack(0, 0, ips + ND_SITE_INLINE, depth - ND_SITE_INLINE);
    size_t cap = __atomic_load_n(&outers.cap, __ATOMIC_RELAXED);
    slot_t *v = __atomic_load_n(&outers.v, __ATOMIC_RELAXED);
    if (v && cap) __builtin_prefetch(&v[ho & (cap - 1)]);
  }
  nd_spin_lock(&st->lock);
  if (st->cap) {
    for (size_t j = h & (st->cap - 1); st->v[j].p; j = (j + 1) & (st->cap - 1))
      if (st->v[j].hash == h && same(st->v[j].p, kind, sampled, ips, depth)) {
        nd_site_t *s = st->v[j].p;
        nd_spin_unlock(&st->lock);
        return s;
      }
  }
  nd_site_t *s = NULL;
  uint32_t id = __atomic_load_n(&nsites, __ATOMIC_RELAXED);
  if (room(st)) goto out;
  const nd_outer_t *outer = NULL;
  if (depth > ND_SITE_INLINE &&
      !(outer = outer_intern(ips + ND_SITE_INLINE, depth - ND_SITE_INLINE, ho)))
    goto out;
  int in = depth < ND_SITE_INLINE ? depth : ND_SITE_INLINE;
  s = arena_alloc(sizeof *s + (size_t)in * sizeof *ips);
  if (!s) goto out;
  id = __atomic_fetch_add(&nsites, 1, __ATOMIC_RELAXED);
  if (id / DIR_CHUNK >= DIR_MAX) {
    s = NULL;
    goto out;
  }
  memset(s, 0, sizeof *s);
  s->id = id;
  s->kind = (uint16_t)kind;
  s->sampled = (uint8_t)sampled;
  s->depth = (uint8_t)depth;
  s->pk_epoch = nd_peak_epoch(kind); // it held nothing at the moment (its noted bytes: 0)
  s->outer = outer;
  memcpy(s->ips, ips, (size_t)in * sizeof *ips);
  nd_site_t **chunk = chunk_at((void **)&dir[id / DIR_CHUNK], DIR_CHUNK * sizeof *chunk);
  if (!chunk) {
    s = NULL;
    goto out;
  }
  __atomic_store_n(&chunk[id % DIR_CHUNK], s, __ATOMIC_RELEASE);
  st->v[free_slot(st->v, st->cap, h)] = (slot_t){h, s};
  st->n++;
out:
  nd_spin_unlock(&st->lock);
  return s;
}

nd_site_t *nd_site_intern(int kind, int sampled, const uintptr_t *ips, int depth) {
  return intern(hash_stack(kind, sampled, ips, depth), kind, sampled, ips, depth);
}

int nd_sites_depth = 32;
// The hooks' paths into nd_site_here have 2 to 4 frames of ndmem's own (nd_track_alloc and the
// hook's nd_malloc; realloc, workspace and mmap paths one or two more). Asking for a fixed 8 more
// than NDMEM_DEPTH made every deep stack unwind frames that were thrown away; this is instead the
// most ndmem frames seen so far in a capture that was cut short, so a deep stack unwinds at most
// what it keeps plus the own frames of the deepest path.
int nd_sites_want = 32 + 2;

// The thread's recently used sites, by stack hash (direct-mapped): a hit is checked against the
// whole stack, so it is exact; a miss interns (one stripe lock) and takes the slot. Sites are
// never freed, and a hook never re-enters this on the same thread (mode BUSY), so no lock.
#define CACHE_SLOTS 256
typedef struct cached {
  uint64_t h; // the stack's hash, compared first
  nd_site_t *s;
} cached_t;
static __thread cached_t site_cache[CACHE_SLOTS];

static int own_frame(uintptr_t ip) { return ip >= self_lo && ip < self_hi; }

nd_site_t *nd_site_frames(int kind, int sampled, uintptr_t *frames, int n, int want,
                          const uintptr_t *at) {
  uintptr_t sp = at[0], rbp = at[1];
  nd_replay_t *native = sp ? (nd_replay_t *)at[2] : NULL;
  int own = 0;
  while (own < n && own_frame(frames[own])) own++;
  if (n == want && n - own < nd_sites_depth && want < ND_CAPTURE_MAX) {
    // Cut short with ndmem's own frames counted in: capture again with room for them (and this
    // function's frame), and keep asking for that many from now on.
    int more = nd_sites_depth + own + 1;
    if (more > ND_CAPTURE_MAX) more = ND_CAPTURE_MAX;
    int seen = __atomic_load_n(&nd_sites_want, __ATOMIC_RELAXED);
    while (seen < more && !__atomic_compare_exchange_n(&nd_sites_want, &seen, more, 1,
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    if (seen < more) nd_replay_invalidate(); // stacks recorded for fewer frames: unwound again
    n = nd_backtrace((void **)frames, more);
    for (own = 0; own < n && own_frame(frames[own]);) own++;
    sp = 0; // frames[0] is this function's now: not the capture the replay would check
  }
  const uintptr_t *ips = frames + own;
  int depth = n - own;
  uintptr_t py[ND_STACK_MAX];
  nd_py_trail_t trail, *tr = sp ? &trail : NULL;
  int m = nd_py_rewrite(ips, depth, nd_sites_depth, py, tr); // python.c: a call and two loads where there is no Python
  if (m >= 0) ips = py, depth = m;
  else if (depth > nd_sites_depth) depth = nd_sites_depth;
  uint64_t h = hash_stack(kind, sampled, ips, depth);
  cached_t *slot = &site_cache[h & (CACHE_SLOTS - 1)];
  nd_site_t *s = slot->s;
  if (!(s && slot->h == h && same(s, kind, sampled, ips, depth))) {
    s = intern(h, kind, sampled, ips, depth);
    if (s) *slot = (cached_t){h, s};
  }
  if (sp) nd_replay_note(sp, rbp, (uint32_t)(kind * 2 + sampled) + 1, s, frames, n, tr, native);
  return s;
}

int64_t nd_site_at_peak(const nd_site_t *s) {
  int64_t *chunk = __atomic_load_n(&at_peak[s->id / DIR_CHUNK], __ATOMIC_ACQUIRE);
  return chunk ? __atomic_load_n(&chunk[s->id % DIR_CHUNK], __ATOMIC_RELAXED) : 0;
}

// The first change since its group's peak moment moved (counters.h): the bytes it held then.
// Two threads may both note them; both read what the site held before either changed it, give
// or take the other's change in flight.
static __attribute__((noinline)) void peak_note(nd_site_t *s, uint16_t e) {
  int64_t *chunk = chunk_at((void **)&at_peak[s->id / DIR_CHUNK], DIR_CHUNK * sizeof *chunk);
  if (!chunk) return; // out of memory: noted at the next change
  int64_t live = (int64_t)(__atomic_load_n(&s->alloc_bytes, __ATOMIC_RELAXED) -
                           __atomic_load_n(&s->free_bytes, __ATOMIC_RELAXED));
  __atomic_store_n(&chunk[s->id % DIR_CHUNK], live, __ATOMIC_RELAXED);
  __atomic_store_n(&s->pk_epoch, e, __ATOMIC_RELEASE);
}

static inline void peak_check(nd_site_t *s) {
  uint16_t e = nd_peak_epoch(s->kind);
  if (__builtin_expect(__atomic_load_n(&s->pk_epoch, __ATOMIC_RELAXED) != e, 0)) peak_note(s, e);
}

void nd_site_add(nd_site_t *s, uint64_t count, uint64_t bytes) {
  peak_check(s);
  __atomic_fetch_add(&s->allocs, count, __ATOMIC_RELAXED);
  uint64_t a = __atomic_add_fetch(&s->alloc_bytes, bytes, __ATOMIC_RELAXED);
  int64_t live = (int64_t)(a - __atomic_load_n(&s->free_bytes, __ATOMIC_RELAXED));
  int64_t peak = __atomic_load_n(&s->peak, __ATOMIC_RELAXED);
  while (live > peak && !__atomic_compare_exchange_n(&s->peak, &peak, live, 1, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED)) {
  }
  __atomic_store_n(&s->dirty, 1, __ATOMIC_RELAXED);
}

void nd_site_sub(nd_site_t *s, uint64_t count, uint64_t bytes) {
  peak_check(s);
  __atomic_fetch_add(&s->frees, count, __ATOMIC_RELAXED);
  uint64_t f = __atomic_add_fetch(&s->free_bytes, bytes, __ATOMIC_RELAXED);
  // Live bytes only fall at a free: the window's floor is the lowest value seen after one.
  int64_t live = (int64_t)(__atomic_load_n(&s->alloc_bytes, __ATOMIC_RELAXED) - f);
  int64_t fl = __atomic_load_n(&s->floor, __ATOMIC_RELAXED);
  while (live < fl && !__atomic_compare_exchange_n(&s->floor, &fl, live, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {
  }
  __atomic_store_n(&s->dirty, 1, __ATOMIC_RELAXED);
}

uint64_t nd_site_window(nd_site_t *s) {
  int64_t now = (int64_t)(__atomic_load_n(&s->alloc_bytes, __ATOMIC_RELAXED) -
                          __atomic_load_n(&s->free_bytes, __ATOMIC_RELAXED));
  if (now < 0) now = 0; // a free counted before its allocation (another thread): momentary
  int64_t f = __atomic_exchange_n(&s->floor, now, __ATOMIC_RELAXED);
  return f < 0 ? 0 : f > now ? (uint64_t)now : (uint64_t)f;
}

uint32_t nd_sites_count(void) { return __atomic_load_n(&nsites, __ATOMIC_ACQUIRE); }

nd_site_t *nd_site_by_id(uint32_t id) {
  nd_site_t **chunk = __atomic_load_n(&dir[id / DIR_CHUNK], __ATOMIC_ACQUIRE);
  return chunk ? __atomic_load_n(&chunk[id % DIR_CHUNK], __ATOMIC_ACQUIRE) : NULL;
}

void nd_sites_atfork_rebase(void) {
  uint32_t n = nd_sites_count();
  for (uint32_t i = 0; i < n; i++) {
    nd_site_t *s = nd_site_by_id(i);
    if (!s) continue;
    s->allocs = s->frees = s->alloc_bytes = s->free_bytes = 0;
    s->peak = s->floor = 0;
    s->g = NULL; // the parent's growth state (growth.c's pages, left as they are)
    s->close_win = 0;
    s->written = 0, s->dirty = 0;
    s->pk_epoch = 0; // the child's moments start again (counters.c)
  }
}

static void atfork_prepare(void) {
  for (int i = 0; i < STRIPES; i++) nd_spin_lock(&stripes[i].lock);
  nd_spin_lock(&outers.lock);
  nd_spin_lock(&arena_lock);
}
static void atfork_parent(void) {
  nd_spin_unlock(&arena_lock);
  nd_spin_unlock(&outers.lock);
  for (int i = 0; i < STRIPES; i++) nd_spin_unlock(&stripes[i].lock);
}
static void atfork_child(nd_tls_t *t) { (void)t, atfork_parent(); }

ND_MODULE(nd_sites_module) = {.name = "sites", .rank = 50, .atfork_prepare = atfork_prepare,
                              .atfork_parent = atfork_parent, .atfork_child = atfork_child};

// The block table and the counters (hook-free, in the core the unit tests link) join the runtime
// here, where the forking thread's shard is known.
static void blocks_child(nd_tls_t *t) { (void)t, nd_blocks_atfork_child(); }
ND_MODULE(nd_blocks_module) = {.name = "blocks", .rank = 60,
                               .atfork_prepare = nd_blocks_atfork_prepare,
                               .atfork_parent = nd_blocks_atfork_parent, .atfork_child = blocks_child};
static void counters_child(nd_tls_t *t) { nd_counters_atfork_child(t->shard); }
ND_MODULE(nd_counters_module) = {.name = "counters", .rank = 70,
                                 .atfork_prepare = nd_counters_atfork_prepare,
                                 .atfork_parent = nd_counters_atfork_parent,
                                 .atfork_child = counters_child};
