// SPDX-License-Identifier: MIT
// allocstat.c: what the next allocator says it holds free: memory the program freed that the
// allocator kept instead of returning to the system. Beside anonymous resident memory and the
// tracked bytes it tells allocator retention (fragmentation, arenas that never shrink) apart from
// memory ndmem does not see at all. Only allocators that can be asked are: glibc (mallinfo2) and
// jemalloc (mallctl); any other is "unknown", never a guess. Asking costs: mallinfo2 takes every
// arena's lock in turn and walks its free lists (DESIGN.md: no per-call work that grows with the
// arenas), so it is asked at a flush only, and only when the gap it would explain has moved.
#include "allocstat.h"

#include "os.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

// glibc's struct mallinfo2 (2.33 and later), declared here so that ndmem builds against older
// headers; its layout is glibc's ABI.
struct nd_mallinfo2 {
  size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

// A move of the gap (resident - tracked) smaller than both is not worth a walk of the arenas: 16
// MiB is far above the noise of a heap's top chunk and thread caches (glibc's tcache holds ~0.5
// MiB a thread at most), 10 % keeps a large steady gap from being asked at every flush.
#define ALLOCSTAT_MIN_MOVE (16ull << 20)
#define ALLOCSTAT_MIN_FRAC 10 // percent of the gap at the last answer
// And the answers together take at most 1/ALLOCSTAT_SHARE of the time: after an answer that took
// d, the next waits 100 d. mallinfo2 holds each arena's lock while it walks its free chunks: ~90
// ms for 1M free small chunks (bench/mallinfo_cost.c), a stall of the program's allocations in
// that arena; on such a heap it is asked every 9 s at most.
#define ALLOCSTAT_SHARE 100

static struct {
  enum nd_allocator kind;
  struct nd_mallinfo2 (*mallinfo2)(void);
  mallctl_fn mallctl;
  int have;           // an answer since the start (or the fork)
  uint64_t next_ns;   // no answer before (ALLOCSTAT_SHARE)
  int64_t gap;        // resident - tracked when it was asked
  nd_rec_resident_t last; // its allocator fields
} A;

#define FN(type, p) (__extension__(type)(p))

static int same_object(void *fn, const void *base) {
  Dl_info info;
  return fn && dladdr(fn, &info) && info.dli_fbase == base;
}

void nd_allocstat_resolve(void *real_malloc) {
  Dl_info info;
  if (!real_malloc || !dladdr(real_malloc, &info) || !info.dli_fname) return;
  const char *base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  // glibc: mallinfo2 beside malloc in libc.so itself. Another allocator that copies the name
  // (a tcmalloc defines mallinfo) lives in its own object and stays unknown.
  void *f = dlsym(RTLD_NEXT, "mallinfo2");
  if (!strncmp(base, "libc.so", 7) && same_object(f, info.dli_fbase)) {
    A.mallinfo2 = FN(struct nd_mallinfo2(*)(void), f);
    A.kind = ND_ALLOCATOR_GLIBC;
    return;
  }
  f = dlsym(RTLD_NEXT, "mallctl");
  if (same_object(f, info.dli_fbase)) {
    A.mallctl = FN(mallctl_fn, f);
    A.kind = ND_ALLOCATOR_JEMALLOC;
  }
}

enum nd_allocator nd_allocstat_kind(void) { return A.kind; }

static int ask_jemalloc(nd_rec_resident_t *r) {
  // The statistics are a snapshot refreshed by writing "epoch"; without --enable-stats (or a
  // jemalloc that names them otherwise) the reads fail and nothing is claimed.
  uint64_t epoch = 1;
  size_t n = sizeof epoch;
  if (A.mallctl("epoch", &epoch, &n, &epoch, sizeof epoch) != 0) return -1;
  size_t resident = 0, allocated = 0, sz = sizeof resident;
  if (A.mallctl("stats.resident", &resident, &sz, NULL, 0) != 0) return -1;
  sz = sizeof allocated;
  if (A.mallctl("stats.allocated", &allocated, &sz, NULL, 0) != 0) return -1;
  r->alloc_system_bytes = resident;
  r->alloc_free_bytes = resident > allocated ? resident - allocated : 0;
  r->alloc_top_bytes = 0;
  return 0;
}

static int ask(nd_rec_resident_t *r) {
  uint64_t t0 = nd_os_mono_ns();
  if (A.kind == ND_ALLOCATOR_GLIBC) {
    struct nd_mallinfo2 m = A.mallinfo2();
    r->alloc_free_bytes = m.fordblks;
    r->alloc_system_bytes = m.arena + m.hblkhd;
    r->alloc_top_bytes = m.keepcost <= m.fordblks ? m.keepcost : m.fordblks;
    if (r->alloc_free_bytes > r->alloc_system_bytes) r->alloc_free_bytes = r->alloc_system_bytes;
  } else if (A.kind == ND_ALLOCATOR_JEMALLOC) {
    if (ask_jemalloc(r) != 0) { // built without statistics: not asked again, unknown from now on
      A.kind = ND_ALLOCATOR_UNKNOWN;
      return -1;
    }
  } else {
    return -1;
  }
  uint64_t t1 = nd_os_mono_ns();
  r->alloc_ns = t1;
  uint64_t us = (t1 - t0) / 1000;
  r->alloc_query_us = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
  r->allocator = (uint32_t)A.kind;
  return 0;
}

static void copy_view(nd_rec_resident_t *to, const nd_rec_resident_t *from) {
  to->alloc_free_bytes = from->alloc_free_bytes;
  to->alloc_system_bytes = from->alloc_system_bytes;
  to->alloc_top_bytes = from->alloc_top_bytes;
  to->alloc_ns = from->alloc_ns;
  to->allocator = from->allocator;
  to->alloc_query_us = from->alloc_query_us;
}

void nd_allocstat_flush(uint64_t anon, uint64_t tracked, int may_ask, nd_rec_resident_t *r) {
  r->allocator = (uint32_t)A.kind;
  if (A.kind == ND_ALLOCATOR_UNKNOWN) return;
  int64_t gap = (int64_t)anon - (int64_t)tracked;
  int due = !A.have;
  if (!due) {
    uint64_t move = gap > A.gap ? (uint64_t)(gap - A.gap) : (uint64_t)(A.gap - gap);
    uint64_t was = A.gap < 0 ? (uint64_t)-A.gap : (uint64_t)A.gap;
    due = move >= ALLOCSTAT_MIN_MOVE && move * 100 >= was * ALLOCSTAT_MIN_FRAC;
  }
  nd_rec_resident_t v;
  memset(&v, 0, sizeof v);
  if (due && may_ask && nd_os_mono_ns() >= A.next_ns && ask(&v) == 0) {
    A.last = v;
    A.gap = gap;
    A.have = 1;
    A.next_ns = v.alloc_ns + (uint64_t)v.alloc_query_us * 1000 * ALLOCSTAT_SHARE;
  }
  if (A.have) copy_view(r, &A.last);
}

int nd_allocstat_last(nd_rec_resident_t *r) {
  if (!A.have) return -1;
  copy_view(r, &A.last);
  return 0;
}

void nd_allocstat_atfork_child(void) { A.have = 0, A.next_ns = 0; }
