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
#include <sys/syscall.h>
#include <unistd.h>

static __thread uintptr_t stk_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t stk_hi __attribute__((tls_model("initial-exec")));

typedef struct start {
  void *(*fn)(void *);
  void *arg;
  struct start *next;
} start_t;

static struct {
  int lock;
  start_t *free;
  int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  uintptr_t main_lo, main_hi; // the main thread's (0: not read yet)
  uint64_t wrapped, unknown;  // atomic
} thr;

// ---------------------------------------------------------------- start records

// A page of records at a time from ndmem's own pages, kept on a free list for the next threads.
static start_t *record_get(void) {
  nd_spin_lock(&thr.lock);
  start_t *s = thr.free;
  if (s) thr.free = s->next;
  nd_spin_unlock(&thr.lock);
  if (s) return s;
  size_t page = nd_os_page_size(), n = page / sizeof(start_t);
  start_t *v = nd_os_map(page);
  if (!v) return NULL;
  nd_spin_lock(&thr.lock);
  for (size_t i = 1; i < n; i++) v[i].next = thr.free, thr.free = &v[i];
  nd_spin_unlock(&thr.lock);
  return &v[0];
}

static void record_put(start_t *s) {
  nd_spin_lock(&thr.lock);
  s->next = thr.free;
  thr.free = s;
  nd_spin_unlock(&thr.lock);
}

// ---------------------------------------------------------------- stacks

// The new thread, before any code of the program's: its hooks forward while glibc reads the
// stack (BUSY), so nothing here is counted or tracked, and no hook asks for a stack meanwhile.
static void read_own_stack(void) {
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
  t->mode = mode;
}

static void *wrapper(void *arg) {
  start_t *s = arg;
  void *(*fn)(void *) = s->fn;
  void *fn_arg = s->arg;
  record_put(s);
  read_own_stack();
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
  int rc = thr.create(th, attr, wrapper, s);
  if (rc) record_put(s);
  else __atomic_fetch_add(&thr.wrapped, 1, __ATOMIC_RELAXED);
  return rc;
}

// ---------------------------------------------------------------- module

// glibc's pthread_create found at start-up, not in the hook of a later thread's creation.
static void setup(char *const *envp) {
  (void)envp;
  if (!thr.create) {
    void *f = dlsym(RTLD_NEXT, "pthread_create");
    if (f) __atomic_store_n(&thr.create, (__extension__(__typeof__(thr.create))f), __ATOMIC_RELEASE);
  }
}

// The records' list lock is a leaf, held for two stores: a holder cut off by the fork loses a
// record at worst (or hands the child one its thread took: that thread is not in the child).
static void atfork_child(nd_tls_t *t) { (void)t, thr.lock = 0; }

ND_MODULE(nd_threads_module) = {.name = "threads", .rank = 11, .order = 3, .setup = setup,
                                .atfork_child = atfork_child};
