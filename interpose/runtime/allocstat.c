// SPDX-License-Identifier: MIT
// allocstat.c: what the next allocator says it holds free: memory the program freed that the
// allocator kept instead of returning to the system. Beside anonymous resident memory and the
// tracked bytes it tells allocator retention (fragmentation, arenas that never shrink) apart from
// memory ndmem does not see at all. Only allocators that can be asked are: glibc (mallinfo2) and
// jemalloc (mallctl); any other is "unknown", never a guess. Asking costs: mallinfo2 takes every
// arena's lock in turn and walks its free lists (DESIGN.md: no per-call work that grows with the
// arenas), so it is asked by ndmem's writer thread only, before a flush and outside every ndmem
// lock, and only when the gap it would explain has moved. Never by a program's thread: one that
// exits from a signal handler may have been interrupted inside malloc, holding the arena lock
// mallinfo2 would wait for (and a flush waiting for the writer would wait with it). A flush
// copies the last answer, and gives up rather than wait for it.
//
// A malloc_trim (ndmem's own, ws/trim.c and limits.c, or the program's, hooked in hooks.c) gives the
// pages inside free chunks back to the system, and glibc still counts those chunks free: after a
// trim, free bytes are no evidence of resident memory. From a trim's start until the next answer
// a flush then says "not read", and from it on the record carries `alloc_trimmed_bytes`, an upper bound on the free
// bytes that are not resident: the free bytes of that first answer (given back, or freed since),
// lowered by every later answer below it (free bytes taken by allocations are touched again).
// The report counts only the free bytes above it: a lower bound of what is held resident.
#include "runtime/allocstat.h"

#include "common/os.h"
#include "runtime/sysmem.h"

#include <dlfcn.h>
#include <pthread.h>
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
// And the answers together take at most 1/ALLOCSTAT_SHARE of the time: after an answer whose walk
// took d of the writer's CPU time, the next waits 100 d. mallinfo2 holds each arena's lock while
// it walks its free chunks: ~90 ms for 1M free small chunks (bench/mallinfo_cost.c), a stall of
// the program's allocations in that arena; on such a heap it is asked every 9 s at most. CPU
// time, not wall time: on a loaded machine a walk of microseconds can span a time slice taken by
// other work, and 100 times that kept the answers away for seconds (a verdict lost for no cost).
#define ALLOCSTAT_SHARE 100

static struct {
  enum nd_allocator kind;
  struct nd_mallinfo2 (*mallinfo2)(void);
  mallctl_fn mallctl;
  // The writer thread's alone (nd_allocstat_poll):
  int have;           // an answer since the start (or the fork)
  uint64_t next_ns;   // no answer before (ALLOCSTAT_SHARE)
  int64_t gap;        // resident - tracked when it was asked
  int have_trim;      // a trim was seen: `trimmed` bounds the free bytes not resident
  uint64_t trimmed;
  uint64_t seq;       // trim_seq when the last answer's walk began
  // Published under `lock` (held for a copy only), read by flushes and the metrics file:
  pthread_mutex_t lock;
  int published;          // `last` holds an answer
  nd_rec_resident_t last; // its allocator fields
  uint64_t last_seq;      // trim_seq when its walk began: it stands while the count is that
} allocator = {.lock = PTHREAD_MUTEX_INITIALIZER};

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
    allocator.mallinfo2 = FN(struct nd_mallinfo2(*)(void), f);
    allocator.kind = ND_ALLOCATOR_GLIBC;
    return;
  }
  f = dlsym(RTLD_NEXT, "mallctl");
  if (same_object(f, info.dli_fbase)) {
    allocator.mallctl = FN(mallctl_fn, f);
    allocator.kind = ND_ALLOCATOR_JEMALLOC;
  }
}

enum nd_allocator nd_allocstat_kind(void) { return allocator.kind; }

static int ask_jemalloc(nd_rec_resident_t *r) {
  // The statistics are a snapshot refreshed by writing "epoch"; without --enable-stats (or a
  // jemalloc that names them otherwise) the reads fail and nothing is claimed.
  uint64_t epoch = 1;
  size_t n = sizeof epoch;
  if (allocator.mallctl("epoch", &epoch, &n, &epoch, sizeof epoch) != 0) return -1;
  size_t resident = 0, allocated = 0, sz = sizeof resident;
  if (allocator.mallctl("stats.resident", &resident, &sz, NULL, 0) != 0) return -1;
  sz = sizeof allocated;
  if (allocator.mallctl("stats.allocated", &allocated, &sz, NULL, 0) != 0) return -1;
  r->alloc_system_bytes = resident;
  r->alloc_free_bytes = resident > allocated ? resident - allocated : 0;
  r->alloc_top_bytes = 0;
  return 0;
}

static int ask(nd_rec_resident_t *r, uint64_t *cpu_ns) {
  uint64_t t0 = nd_os_mono_ns(), c0 = nd_os_thread_cpu_ns();
  if (allocator.kind == ND_ALLOCATOR_GLIBC) {
    struct nd_mallinfo2 m = allocator.mallinfo2();
    r->alloc_free_bytes = m.fordblks;
    r->alloc_system_bytes = m.arena + m.hblkhd;
    r->alloc_top_bytes = m.keepcost <= m.fordblks ? m.keepcost : m.fordblks;
    if (r->alloc_free_bytes > r->alloc_system_bytes) r->alloc_free_bytes = r->alloc_system_bytes;
  } else if (allocator.kind == ND_ALLOCATOR_JEMALLOC) {
    if (ask_jemalloc(r) != 0) { // built without statistics: not asked again, unknown from now on
      allocator.kind = ND_ALLOCATOR_UNKNOWN;
      return -1;
    }
  } else {
    return -1;
  }
  uint64_t t1 = nd_os_mono_ns(), c1 = nd_os_thread_cpu_ns();
  *cpu_ns = c1 > c0 ? c1 - c0 : 0;
  r->alloc_ns = t1;
  uint64_t us = (t1 - t0) / 1000;
  r->alloc_query_us = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
  r->allocator = (uint32_t)allocator.kind;
  return 0;
}

int nd_allocstat_held(uint64_t *held) {
  nd_rec_resident_t r;
  uint64_t cpu;
  memset(&r, 0, sizeof r);
  if (ask(&r, &cpu) != 0) return -1;
  *held = r.alloc_free_bytes - r.alloc_top_bytes; // top <= free (ask)
  return 0;
}

static void copy_view(nd_rec_resident_t *to, const nd_rec_resident_t *from) {
  to->alloc_free_bytes = from->alloc_free_bytes;
  to->alloc_system_bytes = from->alloc_system_bytes;
  to->alloc_top_bytes = from->alloc_top_bytes;
  to->alloc_trimmed_bytes = from->alloc_trimmed_bytes;
  to->alloc_ns = from->alloc_ns;
  to->allocator = from->allocator;
  to->alloc_query_us = from->alloc_query_us;
}

// Trims begun and ended: each trim counts once before it starts (from then on its pages may be
// going back) and once after it returns. An answer stands only while the count is the one read
// before it was asked: a trim during or after the walk voids it until the next answer.
static uint64_t trim_seq;

static void trimmed(void) {
  if (allocator.kind == ND_ALLOCATOR_GLIBC) __atomic_add_fetch(&trim_seq, 1, __ATOMIC_ACQ_REL);
}

int nd_allocstat_trim(int (*trim)(size_t), size_t pad, uint64_t *fell) {
  uint64_t before = 0, after = 0;
  int read = fell && nd_statm_self(&before) == 0;
  trimmed(); // from now on its pages may be going back
  int r = trim(pad);
  trimmed();
  if (read && nd_statm_self(&after) == 0) *fell = before > after ? before - after : 0;
  return r;
}

void nd_allocstat_poll(uint64_t anon, uint64_t tracked) {
  if (allocator.kind == ND_ALLOCATOR_UNKNOWN) return;
  int64_t gap = (int64_t)anon - (int64_t)tracked;
  uint64_t seq = __atomic_load_n(&trim_seq, __ATOMIC_ACQUIRE);
  int trim = seq != allocator.seq; // a trim since the last answer's walk began
  int due = !allocator.have || trim;
  if (!due) {
    uint64_t move = gap > allocator.gap ? (uint64_t)(gap - allocator.gap) : (uint64_t)(allocator.gap - gap);
    uint64_t was = allocator.gap < 0 ? (uint64_t)-allocator.gap : (uint64_t)allocator.gap;
    due = move >= ALLOCSTAT_MIN_MOVE && move * 100 >= was * ALLOCSTAT_MIN_FRAC;
  }
  if (!due || nd_os_mono_ns() < allocator.next_ns) return;
  nd_rec_resident_t v;
  memset(&v, 0, sizeof v);
  uint64_t cpu_ns;
  if (ask(&v, &cpu_ns) != 0) return;
  // The first answer after a trim: all its free bytes may have been given back. Later ones can
  // only lower that bound (free bytes taken by allocations are touched again).
  if (trim || (allocator.have_trim && v.alloc_free_bytes < allocator.trimmed)) allocator.trimmed = v.alloc_free_bytes;
  allocator.have_trim |= trim;
  v.alloc_trimmed_bytes = allocator.have_trim ? allocator.trimmed : 0;
  allocator.seq = seq;
  allocator.gap = gap;
  allocator.have = 1;
  allocator.next_ns = v.alloc_ns + cpu_ns * ALLOCSTAT_SHARE;
  pthread_mutex_lock(&allocator.lock);
  allocator.last = v;
  allocator.last_seq = seq;
  allocator.published = 1;
  pthread_mutex_unlock(&allocator.lock);
}

// The last answer, unless a trim began since its walk did, or it cannot be had at once (a copy in
// progress in another thread; this one may be a signal handler's that interrupted its own copy).
static int last(nd_rec_resident_t *r) {
  if (pthread_mutex_trylock(&allocator.lock)) return -1;
  int have = allocator.published && allocator.last_seq == __atomic_load_n(&trim_seq, __ATOMIC_ACQUIRE);
  if (have) copy_view(r, &allocator.last);
  pthread_mutex_unlock(&allocator.lock);
  return have ? 0 : -1;
}

void nd_allocstat_fill(nd_rec_resident_t *r) {
  if (last(r) != 0) {
    r->alloc_free_bytes = r->alloc_system_bytes = r->alloc_top_bytes = 0;
    r->alloc_trimmed_bytes = r->alloc_ns = 0;
    r->alloc_query_us = 0;
  }
  r->allocator = (uint32_t)allocator.kind;
}

int nd_allocstat_last(nd_rec_resident_t *r) { return last(r); }

// The child's heap is the parent's copy: pages given back stay away, so the trim bound holds.
void nd_allocstat_atfork_child(void) {
  allocator.have = 0, allocator.next_ns = 0;
  pthread_mutex_init(&allocator.lock, NULL); // the parent's copier thread is not in the child
  allocator.published = 0;
}
