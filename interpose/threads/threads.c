// SPDX-License-Identifier: MIT
// threads.c: each thread's stack from its start (threads.h says why). pthread_create is hooked:
// the program's start routine and its argument travel in a small record of ndmem's own pages to
// a wrapper that reads the new thread's stack first (pthread_getattr_np, while the thread holds
// no lock and its hooks only forward, so the cpuset glibc reallocs there is not the program's
// block), then calls the routine. pthread_exit and cancellation unwind through the wrapper as
// through any frame. The main thread's stack ends where the program's began (__libc_stack_end)
// and begins where the mapping under the caller's stack pointer does (mincore: the kernel keeps a
// gap below a stack, so no other mapping joins it; a stack that grows below that later is not
// known there).
#include "threads/threads.h"
#include "runtime/module.h"
#include "runtime/shim.h"

#include "account/counters.h"
#include "common/os.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static __thread uintptr_t stk_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t stk_hi __attribute__((tls_model("initial-exec")));

typedef struct start {
  void *(*fn)(void *);
  void *arg;
  struct start *next;
  int own_stack; // the program gave the stack (pthread_attr_setstack): its memory, not glibc's
  int detached;  // made detached: nobody joins it, glibc takes its stack back when it ends
  int used;      // handed to a thread that has not taken its routine and argument yet
} start_t;

#define RECORD_PAGES 64 // pages of records: threads starting at once, a hundred per page

// Every stack a wrapped thread started on, with the thread: the scan at exit tells the ended
// threads' apart (threads.h). A new thread on a stack an ended one left (glibc's cache) replaces
// its record; a record whose stack was unmapped since stays (the scan checks it is still the
// same thread's descriptor) until a stack overlapping it replaces it.
static struct {
  int lock;
  nd_thread_rec_t *v;
  size_t n, cap;
  uint64_t replaced;
} reg;

static struct {
  int lock;
  start_t *free;
  start_t *pages[RECORD_PAGES]; // every page of records (the exit scan reads the used ones)
  int npages;
  int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  uintptr_t main_lo, main_hi; // the main thread's (0: not read yet)
  uint64_t wrapped, unknown;  // atomic
} thr;

// ---------------------------------------------------------------- start records

// A page of records at a time from ndmem's own pages, kept on a free list for the next threads.
// Past RECORD_PAGES pages at once, NULL: the thread starts unwrapped.
static start_t *record_get(void) {
  nd_spin_lock(&thr.lock);
  start_t *s = thr.free;
  if (s) thr.free = s->next, s->used = 1;
  int full = thr.npages == RECORD_PAGES;
  nd_spin_unlock(&thr.lock);
  if (s || full) return s;
  size_t page = nd_os_page_size(), n = page / sizeof(start_t);
  start_t *v = nd_os_map(page);
  if (!v) return NULL;
  nd_spin_lock(&thr.lock);
  if (thr.npages == RECORD_PAGES) { // another thread's page came first: a leaf lock, no unmap here
    nd_spin_unlock(&thr.lock);
    nd_os_unmap(v, page);
    return NULL;
  }
  thr.pages[thr.npages++] = v;
  for (size_t i = 1; i < n; i++) v[i].next = thr.free, thr.free = &v[i];
  v[0].used = 1;
  nd_spin_unlock(&thr.lock);
  return &v[0];
}

static void record_put(start_t *s) {
  nd_spin_lock(&thr.lock);
  s->used = 0;
  s->next = thr.free;
  thr.free = s;
  nd_spin_unlock(&thr.lock);
}

// Until the new thread has taken it, a record holds the program's argument for its routine,
// in ndmem's own pages (no root of the scan's): the exit scan reads it here (glibc's descriptor
// of the new thread points at the record, not at the argument).
void nd_threads_starting(void (*fn)(uint64_t word)) {
  size_t n = nd_os_page_size() / sizeof(start_t);
  int pages = __atomic_load_n(&thr.npages, __ATOMIC_ACQUIRE);
  for (int p = 0; p < pages; p++)
    for (size_t i = 0; i < n; i++)
      if (thr.pages[p][i].used) fn((uint64_t)(uintptr_t)thr.pages[p][i].arg);
}

// ---------------------------------------------------------------- the stacks' records

static void reg_add(uintptr_t lo, uintptr_t hi, int detached) {
  nd_thread_rec_t r = {lo, hi, (uintptr_t)pthread_self(), nd_os_gettid(), detached};
  nd_spin_lock(&reg.lock);
  size_t k = 0;
  for (size_t i = 0; i < reg.n; i++) // those it overlaps are gone: one stack, one thread
    if (reg.v[i].lo >= hi || reg.v[i].hi <= lo) reg.v[k++] = reg.v[i];
    else reg.replaced++;
  reg.n = k;
  if (reg.n == reg.cap) {
    size_t cap = reg.cap ? reg.cap * 2 : 4096 / sizeof *reg.v;
    nd_thread_rec_t *v = nd_os_map(cap * sizeof *v);
    if (!v) {
      nd_spin_unlock(&reg.lock);
      return; // unknown: its stack stays a root when it ends
    }
    if (reg.n) memcpy(v, reg.v, reg.n * sizeof *v);
    if (reg.v) nd_os_unmap(reg.v, reg.cap * sizeof *v);
    reg.v = v;
    reg.cap = cap;
  }
  reg.v[reg.n++] = r;
  nd_spin_unlock(&reg.lock);
}

// A thread joined or detached: once it ends, nothing can ask for its return value.
static void reg_released(pthread_t th) {
  nd_spin_lock(&reg.lock);
  for (size_t i = 0; i < reg.n; i++)
    if (reg.v[i].self == (uintptr_t)th) reg.v[i].released = 1;
  nd_spin_unlock(&reg.lock);
}

const nd_thread_rec_t *nd_threads_stopped(size_t *n) {
  if (__atomic_load_n(&reg.lock, __ATOMIC_ACQUIRE)) { // a stopped thread is changing them
    *n = 0;
    return NULL;
  }
  *n = reg.n;
  return reg.v;
}

// ---------------------------------------------------------------- stacks

// The new thread, before any code of the program's: its hooks forward while glibc reads the
// stack (BUSY), so nothing here is counted or tracked, and no hook asks for a stack meanwhile.
static void read_own_stack(int own_stack, int detached) {
  if (__atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) != ND_READY) return; // nothing to forward to yet
  nd_tls_t *t = &nd_tls;
  unsigned char mode = t->mode;
  t->mode = ND_T_BUSY;
  pthread_attr_t a;
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&a, &addr, &size) == 0 && size)
      stk_lo = (uintptr_t)addr, stk_hi = (uintptr_t)addr + size;
    pthread_attr_destroy(&a);
  }
  if (stk_hi && !own_stack) reg_add(stk_lo, stk_hi, detached);
  t->mode = mode;
}

static void *wrapper(void *arg) {
  start_t *s = arg;
  void *(*fn)(void *) = s->fn;
  void *fn_arg = s->arg;
  int own_stack = s->own_stack, detached = s->detached;
  record_put(s);
  read_own_stack(own_stack, detached);
  return fn(fn_arg);
}

extern void *__libc_stack_end __attribute__((weak));
static int mapped(uintptr_t lo, uintptr_t hi) {
  static unsigned char vec[1 << 16]; // 256 MiB of pages at most (the main thread only)
  size_t pg = nd_os_page_size();
  if ((hi - lo) / pg > sizeof vec) return 0;
  return syscall(SYS_mincore, lo, hi - lo, vec) == 0;
}
static void main_stack(uintptr_t *lo, uintptr_t *hi) {
  *lo = *hi = 0;
  if (!&__libc_stack_end || !__libc_stack_end) return;
  uintptr_t pg = nd_os_page_size(), top = (uintptr_t)&pg & ~(pg - 1), step = pg, low = top;
  while (step <= (1ul << 27) && low >= step && mapped(low - step, low)) low -= step, step *= 2;
  for (; step >= pg; step /= 2) // the rest, halving
    if (low >= step && mapped(low - step, low)) low -= step;
  *lo = low;
  *hi = (uintptr_t)__libc_stack_end;
}

int nd_thread_stack(uintptr_t *lo, uintptr_t *hi) {
  if (stk_hi) { // a thread started through the wrapper (or the forking one, in a fork child)
    *lo = stk_lo, *hi = stk_hi;
    return 0;
  }
  if (nd_os_gettid() == nd_os_getpid()) {
    if (!__atomic_load_n(&thr.main_hi, __ATOMIC_ACQUIRE)) { // the main thread alone writes them
      uintptr_t l, h;
      main_stack(&l, &h);
      thr.main_lo = l;
      __atomic_store_n(&thr.main_hi, h, __ATOMIC_RELEASE);
    }
    *lo = thr.main_lo, *hi = thr.main_hi;
    return *hi ? 0 : -1;
  }
  *lo = *hi = 0;
  return -1;
}

void nd_thread_unknown(void) { __atomic_fetch_add(&thr.unknown, 1, __ATOMIC_RELAXED); }

void nd_threads_stats(nd_threads_stats_t *out) {
  out->wrapped = __atomic_load_n(&thr.wrapped, __ATOMIC_RELAXED);
  out->unknown = __atomic_load_n(&thr.unknown, __ATOMIC_RELAXED);
}

// ---------------------------------------------------------------- the hook

int nd_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  if (ND_UNLIKELY(!thr.create)) {
    // The first thread: whatever the shim's state, the next pthread_create (glibc's) is found
    // once; a call before the shim is ready starts the thread unwrapped (it may not forward).
    void *f = dlsym(RTLD_NEXT, "pthread_create");
    if (!f) return EAGAIN;
    __atomic_store_n(&thr.create, (__extension__(__typeof__(thr.create))f), __ATOMIC_RELEASE);
  }
  start_t *s = __atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) == ND_READY ? record_get() : NULL;
  if (!s) return thr.create(th, attr, fn, arg);
  // What this thread holds joins the published total before the new one runs: a worker's
  // peak is measured against it (counters.h), exact where the worker alone allocates.
  nd_tls_t *t = &nd_tls;
  if (t->shard && t->mode == ND_T_COUNT) nd_shard_publish_all(t->shard);
  s->fn = fn;
  s->arg = arg;
  // A stack the program gave stays its memory when the thread ends: never skipped (glibc answers
  // an attribute without one with a null address or with one that ends at 0).
  void *saddr = NULL;
  size_t ssize = 0;
  s->own_stack = attr && pthread_attr_getstack(attr, &saddr, &ssize) == 0 && saddr &&
                 (uintptr_t)saddr + ssize != 0;
  int state = PTHREAD_CREATE_JOINABLE;
  s->detached = attr && pthread_attr_getdetachstate(attr, &state) == 0 &&
                state == PTHREAD_CREATE_DETACHED;
  int rc = thr.create(th, attr, wrapper, s);
  if (rc) record_put(s);
  else __atomic_fetch_add(&thr.wrapped, 1, __ATOMIC_RELAXED);
  return rc;
}

// The joins and pthread_detach (hooks.c): glibc's, then the thread's record marked released.
static struct {
  int (*join)(pthread_t, void **);
  int (*tryjoin)(pthread_t, void **);
  int (*timedjoin)(pthread_t, void **, const struct timespec *);
  int (*clockjoin)(pthread_t, void **, clockid_t, const struct timespec *);
  int (*detach)(pthread_t);
} real;

#define REAL(name, sym)                                                                            \
  if (ND_UNLIKELY(!real.name)) {                                                                   \
    void *f = dlsym(RTLD_NEXT, sym);                                                               \
    if (!f) return ENOSYS;                                                                         \
    __atomic_store_n(&real.name, (__extension__(__typeof__(real.name))f), __ATOMIC_RELEASE);       \
  }
static int released(pthread_t th, int rc) {
  if (rc == 0) reg_released(th);
  return rc;
}
int nd_thread_join(pthread_t th, void **ret) {
  REAL(join, "pthread_join");
  return released(th, real.join(th, ret));
}
int nd_thread_tryjoin(pthread_t th, void **ret) {
  REAL(tryjoin, "pthread_tryjoin_np");
  return released(th, real.tryjoin(th, ret));
}
int nd_thread_timedjoin(pthread_t th, void **ret, const struct timespec *abstime) {
  REAL(timedjoin, "pthread_timedjoin_np");
  return released(th, real.timedjoin(th, ret, abstime));
}
int nd_thread_clockjoin(pthread_t th, void **ret, clockid_t clock, const struct timespec *abstime) {
  REAL(clockjoin, "pthread_clockjoin_np");
  return released(th, real.clockjoin(th, ret, clock, abstime));
}
int nd_thread_detach(pthread_t th) {
  REAL(detach, "pthread_detach");
  return released(th, real.detach(th));
}

// ---------------------------------------------------------------- module

// glibc's pthread_create found at start-up, not in the hook of a later thread's creation.
static void setup(char *const *envp) {
  (void)envp;
  real.join = (__extension__(__typeof__(real.join))dlsym(RTLD_NEXT, "pthread_join"));
  real.tryjoin = (__extension__(__typeof__(real.tryjoin))dlsym(RTLD_NEXT, "pthread_tryjoin_np"));
  real.timedjoin = (__extension__(__typeof__(real.timedjoin))dlsym(RTLD_NEXT, "pthread_timedjoin_np"));
  real.clockjoin = (__extension__(__typeof__(real.clockjoin))dlsym(RTLD_NEXT, "pthread_clockjoin_np"));
  real.detach = (__extension__(__typeof__(real.detach))dlsym(RTLD_NEXT, "pthread_detach"));
  if (!thr.create) {
    void *f = dlsym(RTLD_NEXT, "pthread_create");
    if (f) __atomic_store_n(&thr.create, (__extension__(__typeof__(thr.create))f), __ATOMIC_RELEASE);
  }
}

// The records' list lock is a leaf, held for two stores: a holder cut off by the fork loses a
// record at worst (or hands the child one its thread took: that thread is not in the child).
// The stacks' records likewise (a record lost, or one twice: a stack read as a root, or the same
// one twice); the forking thread's record gets its new thread id, and every other thread of the
// parent has no thread in the child: what they left is no root of the child's.
static void atfork_child(nd_tls_t *t) {
  (void)t;
  thr.lock = reg.lock = 0;
  uintptr_t self = (uintptr_t)pthread_self();
  for (size_t i = 0; i < reg.n; i++) {
    if (reg.v[i].self == self) reg.v[i].tid = nd_os_gettid();
    else reg.v[i].released = 1; // glibc puts the others' stacks in its cache in the child
  }
}

ND_MODULE(nd_threads_module) = {.name = "threads", .rank = 11, .order = 3, .setup = setup,
                                .atfork_child = atfork_child};
