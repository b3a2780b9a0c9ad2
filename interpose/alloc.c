// SPDX-License-Identifier: MIT
// alloc.c: the malloc family. Each entry point forwards to the next allocator and accounts the
// block by its usable size (read from the allocator itself, so the counters equal what the heap
// really holds). The fast path is one TLS byte test, the real call, malloc_usable_size and a few
// stores into the thread's own shard: no lock, no atomic read-modify-write.
#include "shim.h"

#include "sites.h"
#include "trace.h"

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

// The bytes the program asked for (what the trace records; the counters use usable sizes).
ND_INLINE size_t heap_req(int fn, size_t a, size_t b) {
  switch (fn) {
  case NDMEM_FN_CALLOC: return a * b; // only used on success, so no overflow
  case NDMEM_FN_ALIGNED_ALLOC:
  case NDMEM_FN_MEMALIGN: return b;
  default: return a;
  }
}

// Counts the block; tracks it when it is large, or when the byte sampler's countdown runs out.
ND_INLINE void account_alloc(nd_tls_t *t, int fn, void *p, size_t req) {
  if (ND_LIKELY(p != NULL)) {
    nd_count_alloc(t->shard, NDMEM_KIND_HEAP, nd_real.usable(p));
    if (ND_UNLIKELY(req >= nd_track_min || (t->sample_left -= (int64_t)req) < 0))
      nd_track_alloc(t, p, req, NDMEM_KIND_HEAP);
  }
  ND_BUMP(t->shard->calls[fn], 1);
}

static ND_NOINLINE void *alloc_slow(int fn, size_t a, size_t b);

ND_INLINE void *alloc_op(int fn, size_t a, size_t b) {
  nd_tls_t *t = &nd_tls;
  if (ND_LIKELY(t->mode == ND_T_COUNT)) {
    t->mode = ND_T_BUSY;
    void *p = heap_call(fn, a, b);
    account_alloc(t, fn, p, heap_req(fn, a, b));
    t->mode = ND_T_COUNT;
    return p;
  }
  return alloc_slow(fn, a, b);
}

static ND_NOINLINE void *alloc_slow(int fn, size_t a, size_t b) {
  nd_tls_t *t = &nd_tls;
  void *p;
  switch (nd_thread_prepare(t)) {
  case ND_T_INIT: return boot_call(fn, a, b);
  case ND_T_COUNT: return alloc_op(fn, a, b); // now set up: the fast path
  case ND_T_DEAD:
    p = heap_call(fn, a, b);
    if (p) nd_late_alloc(NDMEM_KIND_HEAP, nd_real.usable(p), fn);
    return p;
  default: return heap_call(fn, a, b); // BUSY, FORWARD
  }
}

void *nd_malloc(size_t n) { return alloc_op(NDMEM_FN_MALLOC, n, 0); }
void *nd_calloc(size_t n, size_t m) { return alloc_op(NDMEM_FN_CALLOC, n, m); }
void *nd_aligned_alloc(size_t align, size_t n) { return alloc_op(NDMEM_FN_ALIGNED_ALLOC, align, n); }
void *nd_memalign(size_t align, size_t n) { return alloc_op(NDMEM_FN_MEMALIGN, align, n); }
void *nd_valloc(size_t n) { return alloc_op(NDMEM_FN_VALLOC, n, 0); }
void *nd_pvalloc(size_t n) { return alloc_op(NDMEM_FN_PVALLOC, n, 0); }

// posix_memalign reports through its return value and must leave errno alone.
int nd_posix_memalign(void **out, size_t align, size_t n) {
  nd_tls_t *t = &nd_tls;
  int mode = t->mode == ND_T_COUNT ? ND_T_COUNT : nd_thread_prepare(t);
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

static ND_NOINLINE void free_slow(void *p, int fn) {
  nd_tls_t *t = &nd_tls;
  switch (nd_thread_prepare(t)) {
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
  default: nd_real.free(p); return;
  }
}

void nd_free(void *p, int fn) {
  if (!p) return; // free(NULL) is a no-op by definition; nothing to forward or count
  if (ND_UNLIKELY(nd_boot_owns(p))) return; // bootstrap blocks are never reused
  // Untrack before the memory goes back: afterwards its address may be handed out again.
  if (ND_UNLIKELY(nd_blocks_maybe((uintptr_t)p))) nd_track_free(p);
  nd_tls_t *t = &nd_tls;
  if (ND_LIKELY(t->mode == ND_T_COUNT)) {
    t->mode = ND_T_BUSY;
    size_t u = nd_real.usable(p);
    nd_real.free(p);
    nd_count_free(t->shard, NDMEM_KIND_HEAP, u);
    ND_BUMP(t->shard->calls[fn], 1);
    t->mode = ND_T_COUNT;
    return;
  }
  free_slow(p, fn);
}

// ---------------------------------------------------------------- realloc

static void *realloc_op(void *p, size_t n, int fn) {
  nd_tls_t *t = &nd_tls;
  if (ND_UNLIKELY(p && nd_boot_owns(p))) {
    // Move a bootstrap block into the real heap; the pool block is simply abandoned.
    size_t old = nd_boot_usable(p);
    if (n == 0) return NULL; // glibc semantics: realloc(p, 0) frees p
    void *q = t->mode == ND_T_INIT ? nd_boot_alloc(n, 16) : nd_malloc(n);
    if (q) memcpy(q, p, old < n ? old : n);
    return q;
  }
  int mode = t->mode == ND_T_COUNT ? ND_T_COUNT : nd_thread_prepare(t);
  if (mode == ND_T_INIT) {
    if (p) return nd_real.realloc(p, n); // cannot happen before the allocator is resolved
    return nd_boot_alloc(n, 16);
  }
  nd_block_t tracked;
  int was_tracked = p && nd_blocks_maybe((uintptr_t)p) && nd_track_take(p, &tracked);
  if (mode != ND_T_COUNT && mode != ND_T_DEAD) {
    void *q = nd_real.realloc(p, n);
    if (was_tracked) {
      if (!q && n) nd_track_restore(&tracked);
      else nd_site_sub(tracked.site, tracked.count, tracked.weight);
    }
    return q;
  }
  if (mode == ND_T_COUNT) t->mode = ND_T_BUSY;
  size_t old = p ? nd_real.usable(p) : 0;
  void *q = nd_real.realloc(p, n);
  if (was_tracked) { // the old block is gone unless realloc failed
    if (!q && n) nd_track_restore(&tracked);
    else nd_site_sub(tracked.site, tracked.count, tracked.weight);
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
  t->mode = ND_T_COUNT;
  return q;
}

void *nd_realloc(void *p, size_t n) { return realloc_op(p, n, NDMEM_FN_REALLOC); }

// glibc's reallocarray is realloc with an overflow check; doing the check here means the next
// allocator need not have reallocarray at all (jemalloc has none).
void *nd_reallocarray(void *p, size_t n, size_t m) {
  size_t bytes;
  if (__builtin_mul_overflow(n, m, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc_op(p, bytes, NDMEM_FN_REALLOCARRAY);
}

size_t nd_malloc_usable_size(void *p) {
  if (!p) return 0;
  if (nd_boot_owns(p)) return nd_boot_usable(p);
  if (ND_UNLIKELY(!nd_real.usable)) nd_thread_prepare(&nd_tls);
  return nd_real.usable ? nd_real.usable(p) : 0;
}

// ---------------------------------------------------------------- synthesised members
// Used only when the next allocator lacks a function (see init.c). Each is built from the
// allocator's own posix_memalign or memalign, with glibc's argument handling, and counted as a
// fallback.

static void *aligned_via_family(size_t align, size_t n) {
  nd_fallback(&nd_tls, NDMEM_FB_SYNTHESIZED);
  if (nd_real.memalign != nd_synth_memalign) return nd_real.memalign(align, n);
  void *p = NULL;
  if (align < sizeof(void *)) align = sizeof(void *);
  int rc = nd_real.posix_memalign(&p, align, n);
  if (rc) errno = rc;
  return rc ? NULL : p;
}

// glibc memalign: alignments below the minimum are raised, non-powers of two rounded up, and an
// alignment above SIZE_MAX/2+1 is EINVAL.
void *nd_synth_memalign(size_t align, size_t n) {
  if (align > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return NULL;
  }
  if (align & (align - 1)) {
    size_t a = 1;
    while (a < align) a <<= 1;
    align = a;
  }
  return aligned_via_family(align, n);
}

void *nd_synth_aligned_alloc(size_t align, size_t n) { return nd_synth_memalign(align, n); }

void *nd_synth_valloc(size_t n) { return nd_synth_memalign((size_t)sysconf(_SC_PAGESIZE), n); }

void *nd_synth_pvalloc(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (n > SIZE_MAX - page) {
    errno = ENOMEM;
    return NULL;
  }
  size_t rounded = n ? (n + page - 1) & ~(page - 1) : page;
  return nd_synth_memalign(page, rounded);
}

int nd_synth_posix_memalign(void **out, size_t align, size_t n) {
  if (!align || (align & (align - 1)) || align % sizeof(void *)) return EINVAL;
  int saved = errno;
  nd_fallback(&nd_tls, NDMEM_FB_SYNTHESIZED);
  void *p = nd_real.memalign(align, n);
  errno = saved;
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
