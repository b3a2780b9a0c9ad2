// SPDX-License-Identifier: MIT
// alloc.c: the malloc family. Each entry point forwards to the next allocator and accounts the
// block by its usable size (read from the allocator itself, so the counters equal what the heap
// really holds). The fast path is one TLS byte test, the real call, malloc_usable_size and a few
// stores into the thread's own shard: no lock, no atomic read-modify-write.
#include "runtime/shim.h"
#include "runtime/module.h"

#include "stacks/demangle.h"
#include "limits/limits.h"
#include "account/sites.h"
#include "account/track.h"
#include "ws/ws.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ---------------------------------------------------------------- the real call, by function

// fn is a constant at every hook, so the switch folds away on the fast path.
ND_INLINE void *heap_call(int fn, size_t a, size_t b) {
  switch (fn) {
  case NDMEM_FN_MALLOC: return nd_real.malloc(a);
  case NDMEM_FN_CALLOC: return nd_real.calloc(a, b);
  case NDMEM_FN_ALIGNED_ALLOC: return nd_real.aligned_alloc(a, b);
  case NDMEM_FN_MEMALIGN: return nd_real.memalign(a, b);
  case NDMEM_FN_VALLOC: return nd_real.valloc(a);
  case NDMEM_FN_PVALLOC: return nd_real.pvalloc(a);
  case NDMEM_FN_POSIX_MEMALIGN: { // only reached from the workspace path; errno carries the error
    void *p = NULL;
    int rc = nd_real.posix_memalign(&p, a, b);
    if (rc) errno = rc;
    return rc ? NULL : p;
  }
  default: __builtin_unreachable();
  }
}

// The same call served from the bootstrap pool, with the real functions' argument checks.
static void *boot_call(int fn, size_t a, size_t b) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  switch (fn) {
  case NDMEM_FN_MALLOC: return nd_boot_alloc(a, 16);
  case NDMEM_FN_CALLOC:
    if (b && a > SIZE_MAX / b) return errno = ENOMEM, NULL;
    return nd_boot_alloc(a * b, 16);
  case NDMEM_FN_ALIGNED_ALLOC:
  case NDMEM_FN_MEMALIGN: return nd_boot_alloc(b, a > page ? page : a);
  case NDMEM_FN_VALLOC: return nd_boot_alloc(a, page);
  case NDMEM_FN_PVALLOC: return nd_boot_alloc((a + page - 1) & ~(page - 1), page);
  default: return NULL;
  }
}

// A block's usable size, what malloc_usable_size answers. glibc's keeps each chunk's size in the
// word before the block (low 3 bits are flags; 2: the chunk is a mapping of its own, with a
// header twice as long), and its malloc_usable_size also reads the next chunk's header to see
// that the block is in use: a line the program's free of a small block (into the thread's
// cache) never touches, so a cache miss per call that ndmem alone would pay. A block the program
// hands to free or just got from malloc is in use, so where the next allocator is glibc's and
// its headers read as that (nd_glibc_heads_check, at start-up), the size is read from the header.
// A chunk that is a mapping of its own (flag 2) asks malloc_usable_size: such chunks are large
// and few, and the check does not make one (glibc's free of one raises its mmap threshold: the
// program's later allocations would be served otherwise than without ndmem).
int nd_glibc_heads;
ND_INLINE size_t usable_of(void *p) {
  if (ND_LIKELY(nd_glibc_heads)) {
    size_t h = ((const size_t *)p)[-1];
    if (ND_LIKELY(!(h & 2))) return (h & ~(size_t)7) - sizeof(size_t);
  }
  return nd_real.usable(p);
}

static void glibc_heads_check(void) {
  static const size_t sizes[] = {1, 24, 25, 100, 1000, 1032, 5000, 20000};
  int ok = 1;
  nd_glibc_heads = 1;
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes && ok; i++) {
    void *p = nd_real.malloc(sizes[i]), *q = nd_real.memalign(64, sizes[i]);
    ok = p && q && usable_of(p) == nd_real.usable(p) && usable_of(q) == nd_real.usable(q);
    nd_real.free(p);
    nd_real.free(q);
  }
  nd_glibc_heads = ok;
}

// The bytes the program asked for (what the trace records; the counters use usable sizes).
ND_INLINE size_t heap_req(int fn, size_t a, size_t b) {
  switch (fn) {
  case NDMEM_FN_CALLOC: return a * b; // only used on success, so no overflow
  case NDMEM_FN_ALIGNED_ALLOC:
  case NDMEM_FN_MEMALIGN:
  case NDMEM_FN_POSIX_MEMALIGN: return b;
  default: return a;
  }
}

// Counts a heap block of `usable` bytes (a workspace block: its planned size) and one call of fn;
// tracks the block when it is large, or when the byte sampler's countdown runs out. The site
// first: a count that moves the peak moment (counters.h) then finds the block in its site.
ND_INLINE void account_block(nd_tls_t *t, int fn, void *p, size_t req, uint64_t usable) {
  if (ND_UNLIKELY(req >= nd_track_min || (t->sample_left -= (int64_t)req) < 0))
    nd_track_alloc(t, p, req, NDMEM_KIND_HEAP);
  nd_count_alloc(t->shard, NDMEM_KIND_HEAP, usable);
  ND_BUMP(t->shard->calls[fn], 1);
}

// The same for the allocator's result (NULL: a failed call, counted as a call only).
ND_INLINE void account_alloc(nd_tls_t *t, int fn, void *p, size_t req) {
  if (ND_LIKELY(p != NULL)) account_block(t, fn, p, req, usable_of(p));
  else ND_BUMP(t->shard->calls[fn], 1);
}

static ND_NOINLINE void *alloc_slow(int fn, size_t a, size_t b, void *ra);
static ND_NOINLINE void *ws_path(nd_tls_t *t, int fn, size_t a, size_t b, size_t req, void *ra);
static ND_NOINLINE void *alloc_limited(nd_tls_t *t, int fn, size_t a, size_t b, size_t req, void *ra);

ND_INLINE int calloc_overflows(int fn, size_t a, size_t b) {
  return fn == NDMEM_FN_CALLOC && b && a > SIZE_MAX / b;
}

ND_INLINE void *alloc_op(int fn, size_t a, size_t b, void *ra) {
  nd_tls_t *t = &nd_tls;
  if (ND_LIKELY(t->mode == ND_T_COUNT)) {
    // Tensor-sized requests may be served from a workspace (ws.c); an overflowing calloc goes
    // to the allocator, which fails it.
    size_t req = heap_req(fn, a, b);
    if (ND_UNLIKELY(nd_limits_on)) {
      // A small heap block: the allocator's block is checked inline (limits/limits.h); anything else,
      // or a block near a limit, takes the checked path.
      if (req <= ND_LIM_SMALL && req < nd_ws_min && !calloc_overflows(fn, a, b)) {
        t->mode = ND_T_BUSY;
        void *p = heap_call(fn, a, b);
        if (ND_LIKELY(p != NULL)) {
          size_t u = usable_of(p);
          if (ND_LIKELY(nd_limit_fast(t, u))) {
            account_block(t, fn, p, req, u);
            nd_limit_fast_done(t, req);
            t->mode = ND_T_COUNT;
            return p;
          }
          nd_real.free(p); // not handed out: the checked path decides
        }
      }
      return alloc_limited(t, fn, a, b, req, ra);
    }
    if (ND_UNLIKELY(req >= nd_ws_min) && !calloc_overflows(fn, a, b))
      return ws_path(t, fn, a, b, req, ra);
    t->mode = ND_T_BUSY;
    void *p = heap_call(fn, a, b);
    account_alloc(t, fn, p, req);
    t->mode = ND_T_COUNT;
    return p;
  }
  return alloc_slow(fn, a, b, ra);
}

static size_t fn_align(int fn, size_t a) {
  switch (fn) {
  case NDMEM_FN_ALIGNED_ALLOC:
  case NDMEM_FN_MEMALIGN:
  case NDMEM_FN_POSIX_MEMALIGN: return a;
  case NDMEM_FN_VALLOC:
  case NDMEM_FN_PVALLOC: return (size_t)sysconf(_SC_PAGESIZE);
  default: return 16;
  }
}

// A block a workspace arena served: the arena's idle bytes become a live block (limits/limits.h counts
// arenas whole); arena memory is reused, so calloc must zero it.
static void account_arena_block(nd_tls_t *t, int fn, void *p, size_t req, uint64_t usable) {
  if (fn == NDMEM_FN_CALLOC) memset(p, 0, req);
  __atomic_fetch_add(&nd_ws_live_total, (int64_t)usable, __ATOMIC_RELAXED);
  account_block(t, fn, p, req, usable);
}

static ND_NOINLINE void *ws_path(nd_tls_t *t, int fn, size_t a, size_t b, size_t req, void *ra) {
  t->mode = ND_T_BUSY;
  uint64_t usable = 0;
  void *p = nd_ws_alloc(t, req, fn_align(fn, a), (uintptr_t)ra, &usable);
  if (p == ND_WS_FAIL) {
    ND_BUMP(t->shard->calls[fn], 1);
    t->mode = ND_T_COUNT;
    errno = ENOMEM;
    return NULL;
  }
  if (p) {
    account_arena_block(t, fn, p, req, usable);
  } else {
    p = heap_call(fn, a, b);
    account_alloc(t, fn, p, req);
    nd_ws_external(t, p);
  }
  t->mode = ND_T_COUNT;
  return p;
}

// The same work as alloc_op and ws_path under NDMEM_MAX_BYTES, NDMEM_MAX_PHYSICAL_BYTES or a
// watermark (limits/limits.h). A block served by a workspace arena adds no tracked bytes (the arena is
// counted whole), so maxBytes is checked only for the heap; a heap block that would cross it goes
// back to the allocator before the program sees it. After a breach: relief and one more try, then
// NDMEM_ON_LIMIT (fail: NULL and ENOMEM; warn: the allocation goes on; abort).
static ND_NOINLINE void *alloc_limited(nd_tls_t *t, int fn, size_t a, size_t b, size_t req, void *ra) {
  t->mode = ND_T_BUSY;
  void *p;
  if (calloc_overflows(fn, a, b)) { // the allocator fails it
    p = heap_call(fn, a, b);
    account_alloc(t, fn, p, 0);
    t->mode = ND_T_COUNT;
    return p;
  }
  nd_lim_t c = ND_LIM_INIT(req, req, fn, ra);
  int ws_next = req >= nd_ws_min; // the workspace is asked once, before the heap
  for (;;) {
    int r = nd_limit_pre(t, &c, ws_next ? ND_LIM_PHYS : ND_LIM_PHYS | ND_LIM_HOST);
    if (r == ND_LIM_OK && ws_next) {
      ws_next = 0;
      uint64_t usable = 0;
      p = nd_ws_alloc(t, req, fn_align(fn, a), (uintptr_t)ra, &usable);
      if (p == ND_WS_FAIL) break;
      if (p) {
        account_arena_block(t, fn, p, req, usable);
        nd_limit_settle(t, &c, 1);
        t->mode = ND_T_COUNT;
        return p;
      }
      r = nd_limit_pre(t, &c, ND_LIM_HOST);
    }
    if (r == ND_LIM_OK) {
      p = heap_call(fn, a, b);
      if (!p) { // the allocator's own failure, errno its own
        nd_ws_external(t, NULL);
        ND_BUMP(t->shard->calls[fn], 1);
        t->mode = ND_T_COUNT;
        return NULL;
      }
      size_t usable = nd_real.usable(p);
      if (nd_limit_post(t, &c, usable) == ND_LIM_OK) {
        account_block(t, fn, p, req, usable);
        nd_ws_external(t, p);
        nd_limit_settle(t, &c, 1);
        t->mode = ND_T_COUNT;
        return p;
      }
      nd_real.free(p); // over maxBytes: never handed out
    }
    if (nd_limit_breach(t, &c) == ND_LIM_FAIL) break;
  }
  nd_ws_external(t, NULL);
  ND_BUMP(t->shard->calls[fn], 1);
  t->mode = ND_T_COUNT;
  errno = ENOMEM;
  return NULL;
}

static ND_NOINLINE void *alloc_slow(int fn, size_t a, size_t b, void *ra) {
  nd_tls_t *t = &nd_tls;
  void *p;
  switch (nd_thread_prepare(t)) {
  case ND_T_INIT: return boot_call(fn, a, b);
  case ND_T_COUNT: return alloc_op(fn, a, b, ra); // now set up: the fast path
  case ND_T_DEAD:
    p = heap_call(fn, a, b);
    if (p) nd_late_alloc(NDMEM_KIND_HEAP, nd_real.usable(p), fn);
    return p;
  default: return heap_call(fn, a, b); // BUSY, FORWARD
  }
}

void *nd_malloc(size_t n, void *ra) { return alloc_op(NDMEM_FN_MALLOC, n, 0, ra); }
void *nd_calloc(size_t n, size_t m, void *ra) { return alloc_op(NDMEM_FN_CALLOC, n, m, ra); }
void *nd_aligned_alloc(size_t align, size_t n, void *ra) {
  return alloc_op(NDMEM_FN_ALIGNED_ALLOC, align, n, ra);
}
void *nd_memalign(size_t align, size_t n, void *ra) {
  return alloc_op(NDMEM_FN_MEMALIGN, align, n, ra);
}
void *nd_valloc(size_t n, void *ra) { return alloc_op(NDMEM_FN_VALLOC, n, 0, ra); }
void *nd_pvalloc(size_t n, void *ra) { return alloc_op(NDMEM_FN_PVALLOC, n, 0, ra); }

// posix_memalign reports through its return value and must leave errno alone.
int nd_posix_memalign(void **out, size_t align, size_t n, void *ra) {
  nd_tls_t *t = &nd_tls;
  int mode = t->mode == ND_T_COUNT ? ND_T_COUNT : nd_thread_prepare(t);
  if (mode == ND_T_COUNT && (ND_UNLIKELY(n >= nd_ws_min) || ND_UNLIKELY(nd_limits_on)) && align &&
      !(align & (align - 1)) && align % sizeof(void *) == 0) {
    int saved = errno; // posix_memalign reports through its result, never errno
    errno = 0;
    void *p = nd_limits_on ? alloc_limited(t, NDMEM_FN_POSIX_MEMALIGN, align, n, n, ra)
                           : ws_path(t, NDMEM_FN_POSIX_MEMALIGN, align, n, n, ra);
    int err = errno;
    errno = saved;
    if (!p) return err ? err : ENOMEM;
    *out = p;
    return 0;
  }
  if (mode == ND_T_INIT) {
    if (!align || (align & (align - 1)) || align % sizeof(void *)) return EINVAL;
    int saved = errno;
    void *p = boot_call(NDMEM_FN_MEMALIGN, align, n);
    errno = saved;
    if (!p) return ENOMEM;
    *out = p;
    return 0;
  }
  if (mode != ND_T_COUNT && mode != ND_T_DEAD) return nd_real.posix_memalign(out, align, n);
  if (mode == ND_T_DEAD) {
    int rc = nd_real.posix_memalign(out, align, n);
    if (rc == 0 && *out) nd_late_alloc(NDMEM_KIND_HEAP, nd_real.usable(*out), NDMEM_FN_POSIX_MEMALIGN);
    return rc;
  }
  t->mode = ND_T_BUSY;
  int rc = nd_real.posix_memalign(out, align, n);
  account_alloc(t, NDMEM_FN_POSIX_MEMALIGN, rc == 0 ? *out : NULL, n);
  t->mode = ND_T_COUNT;
  return rc;
}

// ---------------------------------------------------------------- free

// Untracks a block as the thread inside ndmem (ND_T_BUSY): the block table's lock is held for
// it, and a signal handler that interrupts it and calls exit() must find the thread marked so
// (nd_finish then waits for ndmem's locks a bounded time).
static ND_NOINLINE void track_free(void *p) {
  nd_tls_t *t = &nd_tls;
  unsigned char saved = t->mode;
  t->mode = ND_T_BUSY;
  nd_track_free(p);
  t->mode = saved;
}

static ND_NOINLINE void free_slow(void *p, int fn) {
  nd_tls_t *t = &nd_tls;
  int mode = nd_thread_prepare(t);
  if (mode != ND_T_COUNT && mode != ND_T_INIT && nd_blocks_maybe((uintptr_t)p)) track_free(p);
  switch (mode) {
  case ND_T_COUNT: nd_free(p, fn); return;
  case ND_T_INIT:
    // A block from before the pool existed: only possible if the allocator was already resolved.
    if (nd_real.free) nd_real.free(p);
    return;
  case ND_T_DEAD: {
    size_t u = nd_real.usable(p);
    nd_real.free(p);
    nd_late_free(NDMEM_KIND_HEAP, u, fn);
    return;
  }
  case ND_T_EXITING: // glibc's record of ndmem's TLS destructor (init.c, thread_exit)
    t->mode = t->exit_mode;
    nd_real.free(p);
    return;
  default: nd_real.free(p); return;
  }
}

// A workspace block goes back to its arena (no allocator call). 0 when p is not one.
static ND_NOINLINE int ws_free_path(void *p, int fn) {
  uint64_t u;
  int handled = nd_ws_free(p, &u);
  if (handled <= 0) return handled == 0; // 0: inside an arena but not a live block: dropped
  nd_tls_t *t = &nd_tls;
  __atomic_fetch_sub(&nd_ws_live_total, (int64_t)u, __ATOMIC_RELAXED);
  if (t->shard) {
    nd_count_free(t->shard, NDMEM_KIND_HEAP, u);
    ND_BUMP(t->shard->calls[fn], 1);
  } else {
    nd_late_free(NDMEM_KIND_HEAP, u, fn);
  }
  nd_ws_note_free(u);
  return 1;
}

// A heap block of routed size is freed: the workspace learning may have recorded it.
static ND_NOINLINE void ws_note_external(void *p, size_t u) {
  nd_ws_note_free(u);
  if (__atomic_load_n(&nd_ws_recording, __ATOMIC_RELAXED)) nd_ws_free_external(p);
}

// A tracked block is untracked before its memory goes back: afterwards its address may be
// handed out again. On the fast path the usable size decides where to ask: a block below
// NDMEM_TRACK_MIN is tracked only if the byte sampler picked it, and few are.
void nd_free(void *p, int fn) {
  if (!p) return; // free(NULL) is a no-op by definition; nothing to forward or count
  if (ND_UNLIKELY(nd_boot_owns(p))) return; // bootstrap blocks are never reused
  if (ND_UNLIKELY(nd_ws_owns(p))) {
    if (nd_blocks_maybe((uintptr_t)p)) track_free(p);
    if (ws_free_path(p, fn)) return;
  }
  nd_tls_t *t = &nd_tls;
  if (ND_LIKELY(t->mode == ND_T_COUNT)) {
    t->mode = ND_T_BUSY;
    size_t u = usable_of(p);
    if (ND_UNLIKELY(u >= nd_track_min ? nd_blocks_maybe((uintptr_t)p)
                                      : nd_blocks_maybe_sampled((uintptr_t)p)))
      nd_track_free(p);
    if (ND_UNLIKELY(u >= nd_ws_min)) ws_note_external(p, u);
    nd_real.free(p);
    if (ND_UNLIKELY(u >= nd_ws_min)) nd_ws_heap_freed(u);
    nd_count_free(t->shard, NDMEM_KIND_HEAP, u);
    ND_BUMP(t->shard->calls[fn], 1);
    t->mode = ND_T_COUNT;
    return;
  }
  free_slow(p, fn);
}

// ---------------------------------------------------------------- realloc

// The real realloc on a COUNT or DEAD thread (a COUNT caller has set BUSY): the tracked block
// moves with it, the old usable size is counted out and the new one in.
static void *realloc_real(nd_tls_t *t, void *p, size_t n, int fn, int mode) {
  nd_block_t tracked;
  int was_tracked = p && nd_blocks_maybe((uintptr_t)p) && nd_track_take(p, &tracked);
  size_t old = p ? nd_real.usable(p) : 0;
  if (ND_UNLIKELY(old >= nd_ws_min)) ws_note_external(p, old);
  void *q = nd_real.realloc(p, n);
  if (was_tracked) { // the old block is gone unless realloc failed
    if (!q && n) nd_track_restore(&tracked);
    else nd_track_untrack(&tracked);
  }
  // Success moves the block (old usable size out, new in). A NULL result with n == 0 and p set
  // means the allocator freed p (glibc, and jemalloc's default zero_realloc:free); any other NULL
  // is a failure that leaves p untouched.
  int freed_old = p && (q || n == 0);
  if (mode == ND_T_DEAD) {
    if (freed_old) nd_late_free(NDMEM_KIND_HEAP, old, fn);
    if (q) nd_late_alloc(NDMEM_KIND_HEAP, nd_real.usable(q), fn);
    return q;
  }
  if (freed_old) nd_count_free(t->shard, NDMEM_KIND_HEAP, old);
  account_alloc(t, fn, q, n); // counts the call too
  return q;
}

// realloc growth under the limits (alloc_limited's rules). Far from maxBytes the real realloc
// runs with its growth reserved (rounded up generously: the allocator's usable size is not known
// before); near it, a new block is checked by its usable size, then the data moves and the old
// block is freed, so a refused realloc leaves the old block as it was.
static ND_NOINLINE void *realloc_limited(nd_tls_t *t, void *p, size_t n, int fn, void *ra) {
  t->mode = ND_T_BUSY;
  size_t old = p ? nd_real.usable(p) : 0;
  if (n <= old || !n) { // no growth
    void *q = realloc_real(t, p, n, fn, ND_T_COUNT);
    t->mode = ND_T_COUNT;
    return q;
  }
  nd_lim_t c = ND_LIM_INIT(n - old, n, fn, ra);
  uint64_t bound = n - old + n / 4 + 4096; // >= usable(new) - old for glibc's and jemalloc's classes
  for (;;) {
    if (nd_limit_pre(t, &c, ND_LIM_PHYS | ND_LIM_HOST) == ND_LIM_OK) {
      if (nd_limit_post(t, &c, bound) == ND_LIM_OK) {
        void *q = realloc_real(t, p, n, fn, ND_T_COUNT);
        nd_limit_settle(t, &c, q != NULL);
        t->mode = ND_T_COUNT;
        return q;
      }
      void *q = nd_real.malloc(n);
      if (!q) {
        ND_BUMP(t->shard->calls[fn], 1);
        t->mode = ND_T_COUNT;
        return NULL;
      }
      size_t u = nd_real.usable(q);
      if (nd_limit_post(t, &c, u > old ? u - old : 0) == ND_LIM_OK) {
        if (p) {
          memcpy(q, p, old);
          if (nd_blocks_maybe((uintptr_t)p)) nd_track_free(p);
          if (ND_UNLIKELY(old >= nd_ws_min)) ws_note_external(p, old);
          nd_real.free(p);
          nd_count_free(t->shard, NDMEM_KIND_HEAP, old);
        }
        account_block(t, fn, q, n, u);
        nd_limit_settle(t, &c, 1);
        t->mode = ND_T_COUNT;
        return q;
      }
      nd_real.free(q);
    }
    if (nd_limit_breach(t, &c) == ND_LIM_FAIL) break;
  }
  ND_BUMP(t->shard->calls[fn], 1);
  t->mode = ND_T_COUNT;
  errno = ENOMEM;
  return NULL;
}

static void *realloc_op(void *p, size_t n, int fn, void *ra) {
  nd_tls_t *t = &nd_tls;
  if (ND_UNLIKELY(p && nd_ws_owns(p))) {
    uint64_t old = nd_ws_usable(p);
    if (old) { // a workspace block moves to a new block (which may be a workspace one too)
      void *q = n ? nd_malloc(n, ra) : NULL;
      if (q) memcpy(q, p, old < n ? old : n);
      if (q || !n) nd_free(p, fn);
      return q;
    }
  }
  if (ND_UNLIKELY(p && nd_boot_owns(p))) {
    // Move a bootstrap block into the real heap; the pool block is simply abandoned.
    size_t old = nd_boot_usable(p);
    if (n == 0) return NULL; // glibc semantics: realloc(p, 0) frees p
    void *q = t->mode == ND_T_INIT ? nd_boot_alloc(n, 16) : nd_malloc(n, ra);
    if (q) memcpy(q, p, old < n ? old : n);
    return q;
  }
  int mode = t->mode == ND_T_COUNT ? ND_T_COUNT : nd_thread_prepare(t);
  if (mode == ND_T_INIT) {
    if (p) return nd_real.realloc(p, n); // cannot happen before the allocator is resolved
    return nd_boot_alloc(n, 16);
  }
  if (mode == ND_T_COUNT) {
    if (ND_UNLIKELY(nd_limits_on)) return realloc_limited(t, p, n, fn, ra);
    t->mode = ND_T_BUSY;
    void *q = realloc_real(t, p, n, fn, ND_T_COUNT);
    t->mode = ND_T_COUNT;
    return q;
  }
  if (mode == ND_T_DEAD) return realloc_real(t, p, n, fn, ND_T_DEAD);
  // BUSY, FORWARD: forwarded; the tracked-block table stays right
  nd_block_t tracked;
  int was_tracked = p && nd_blocks_maybe((uintptr_t)p) && nd_track_take(p, &tracked);
  void *q = nd_real.realloc(p, n);
  if (was_tracked) {
    if (!q && n) nd_track_restore(&tracked);
    else nd_track_untrack(&tracked);
  }
  return q;
}

void *nd_realloc(void *p, size_t n, void *ra) { return realloc_op(p, n, NDMEM_FN_REALLOC, ra); }

// glibc's reallocarray is realloc with an overflow check; doing the check here means the next
// allocator need not have reallocarray at all (jemalloc has none).
void *nd_reallocarray(void *p, size_t n, size_t m, void *ra) {
  size_t bytes;
  if (__builtin_mul_overflow(n, m, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc_op(p, bytes, NDMEM_FN_REALLOCARRAY, ra);
}

size_t nd_malloc_usable_size(void *p) {
  if (!p) return 0;
  if (nd_boot_owns(p)) return nd_boot_usable(p);
  if (ND_UNLIKELY(nd_ws_owns(p))) {
    uint64_t u = nd_ws_usable(p);
    if (u) return u;
  }
  if (ND_UNLIKELY(!nd_real.usable)) nd_thread_prepare(&nd_tls);
  return nd_real.usable ? nd_real.usable(p) : 0;
}

// ---------------------------------------------------------------- C++ operator new

// operator new is interposed too: an allocator chained behind ndmem (jemalloc, tcmalloc) defines
// its own, which would bypass the malloc hooks while its operator delete calls free: every
// `delete` was counted and no `new`. ndmem's new allocates through the same path as malloc (the
// next allocator's heap, so the next allocator's delete and free take the block) and keeps the
// C++ contract as libstdc++ does: size 0 is 1 byte, and on failure the new_handler is called until
// it gives up, then std::bad_alloc is thrown (these frames carry unwind tables; nothing is held
// while the handler or the throw run).
//
// The C++ runtime's functions are looked up when first needed, in the runtime itself: a process
// that reaches operator new has one loaded, but not always where a global look-up finds it (a
// Python extension is dlopen'ed RTLD_LOCAL with its libstdc++: torch under a limit reached
// abort() where it should have thrown). The runtime is found among the loaded objects by name
// and asked through its own handle (nd_cxx_runtime), so no look-up fails (a failure would leave a
// message for the program's dlerror); else the global scope after ndmem.
enum { CXX_THROW, CXX_GET_HANDLER, CXX_NOTHROW }; // slots; the nothrow forms follow (4)
static void *cxx_fn[CXX_NOTHROW + 4];
static int cxx_found; // atomic: 1 once cxx_fn holds what the runtime has

static const char *const nothrow_names[4] = {
    "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t"};

// Fills cxx_fn once (racing threads find the same). Marked inside ndmem: the loader's own
// allocations are not the program's.
static void cxx_resolve(void) {
  if (__atomic_load_n(&cxx_found, __ATOMIC_ACQUIRE)) return;
  nd_tls_t *t = &nd_tls;
  unsigned char m = t->mode;
  if (m == ND_T_COUNT) t->mode = ND_T_BUSY;
  int llvm;
  void *h = nd_cxx_runtime(&llvm);
  void *scope = h ? h : RTLD_NEXT; // never ndmem's own nothrow new
  const char *names[CXX_NOTHROW + 4] = {llvm ? "_ZNSt3__117__throw_bad_allocEv" : "_ZSt17__throw_bad_allocv",
                                        "_ZSt15get_new_handlerv"};
  for (int i = 0; i < 4; i++) names[CXX_NOTHROW + i] = nothrow_names[i];
  void *fn[CXX_NOTHROW + 4];
  for (int i = 0; i < CXX_NOTHROW + 4; i++) fn[i] = dlsym(scope, names[i]);
  // the runtime is never unloaded while its operator new may be called: the handle is kept
  for (int i = 0; i < CXX_NOTHROW + 4; i++) __atomic_store_n(&cxx_fn[i], fn[i], __ATOMIC_RELAXED);
  __atomic_store_n(&cxx_found, 1, __ATOMIC_RELEASE);
  t->mode = m;
}

static void cxx_bad_alloc(void) {
  cxx_resolve();
  void *f = cxx_fn[CXX_THROW];
  if (f) (__extension__(void (*)(void)) f)();
  abort(); // no C++ runtime to throw with: what an uncaught bad_alloc would do
}

static void (*cxx_handler(void))(void) {
  cxx_resolve();
  void *f = cxx_fn[CXX_GET_HANDLER];
  return f ? (__extension__(void (*(*)(void))(void)) f)() : NULL;
}

static void *cxx_alloc(size_t n, size_t align, void *ra) {
  if (!n) n = 1;
  if (!align) return nd_malloc(n, ra);
  void *p = NULL;
  if (align < sizeof(void *)) align = sizeof(void *);
  return nd_posix_memalign(&p, align, n, ra) == 0 ? p : NULL;
}

// The nothrow forms catch what the handler throws and return NULL; C cannot catch, so with a
// handler installed they are left to the runtime's definition of the same form (libstdc++'s calls
// back into ndmem's throwing new; another allocator's is counted here).
void *nd_cxx_new(size_t n, size_t align, int form, void *ra) {
  for (;;) {
    void *p = cxx_alloc(n, align, ra);
    if (p) return p;
    void (*h)(void) = cxx_handler();
    if (!h) {
      if (form & ND_NEW_NOTHROW) return NULL;
      cxx_bad_alloc();
    }
    if (!(form & ND_NEW_NOTHROW)) {
      h();
      continue;
    }
    cxx_resolve();
    void *f = cxx_fn[CXX_NOTHROW + (form & 3)];
    if (!f) return NULL;
    nd_tls_t *t = &nd_tls;
    unsigned char m = t->mode;
    if (m == ND_T_COUNT) t->mode = ND_T_BUSY;
    p = align ? (__extension__(void *(*)(size_t, size_t, const void *)) f)(n, align, NULL)
              : (__extension__(void *(*)(size_t, const void *)) f)(n, NULL);
    t->mode = m;
    if (m == ND_T_COUNT && p) account_alloc(t, NDMEM_FN_MALLOC, p, n);
    return p;
  }
}

// Where the next allocator is glibc's, whether its headers can be read (usable_of); before the
// other rooms' setups.
static void setup(char *const *envp) {
  (void)envp;
  if (nd_real.is_glibc) glibc_heads_check();
}

ND_MODULE(nd_heap_module) = {.name = "heap", .order = 0, .setup = setup};
