// SPDX-License-Identifier: MIT
// keys.c: ndmem takes none of the program's thread-specific-data keys (glibc has 1024,
// PTHREAD_KEYS_MAX, and a program may want every one).
//
// - ndmem's own per-thread teardown (the thread's counter shard, its workspace) is a TLS
//   destructor, registered with __cxa_thread_atexit_impl: the call behind C++ thread_local
//   destructors, which glibc keeps in a per-thread list, not in a key. It runs when the thread
//   ends, before the keys' destructors (whose frees are then counted as a late thread's).
// - libunwind's one key (its per-thread frame cache: pthread_once, then pthread_key_create and
//   one pthread_setspecific per thread; libunwind 1.6 to 1.8 read the cache back from their own
//   TLS, never with pthread_getspecific) is answered with ND_UNW_KEY, a number above any key
//   glibc hands out. pthread_setspecific on it keeps the value in ndmem's TLS, and the thread's
//   teardown calls libunwind's destructor with it, as glibc would have. Only a caller inside
//   libunwind gets it; every other call goes on to the next definition unchanged.
//
// The main thread registers nothing: its teardown is the process's exit, after which ndmem's
// destructor writes the trace, and a TLS destructor would run before the exit handlers whose
// frees the trace must still see as the main thread's.
#include "runtime/shim.h"
#include "runtime/module.h"

#include "runtime/keys.h"
#include "account/sites.h"

#include "common/os.h"

#include <errno.h>
#include <pthread.h>

#ifndef PTHREAD_DESTRUCTOR_ITERATIONS
#define PTHREAD_DESTRUCTOR_ITERATIONS 4 // glibc's (limits.h, with _POSIX_C_SOURCE)
#endif

// glibc's keys are below PTHREAD_KEYS_MAX; glibc answers this one EINVAL (set) or NULL (get).
#define ND_UNW_KEY ((pthread_key_t)0x7fffff00u)

static void (*unw_destructor)(void *); // libunwind's, given with its key
static int (*next_key_create)(pthread_key_t *, void (*)(void *));
static int (*next_setspecific)(pthread_key_t, const void *);
static __thread void *unw_value __attribute__((tls_model("initial-exec")));

extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso) __attribute__((weak));
extern void *__dso_handle __attribute__((weak));

void nd_keys_resolve(void *(*sym)(const char *)) {
  next_key_create = __extension__(int (*)(pthread_key_t *, void (*)(void *)))sym("pthread_key_create");
  next_setspecific = __extension__(int (*)(pthread_key_t, const void *))sym("pthread_setspecific");
}

int nd_keys_thread_atexit(void (*fn)(void *), void *arg) {
  if (!__cxa_thread_atexit_impl || nd_os_getpid() == nd_os_gettid()) return -1;
  return __cxa_thread_atexit_impl(fn, arg, &__dso_handle);
}

// libunwind's destructor may put its value back to be called again (1.6 does, until the last of
// glibc's PTHREAD_DESTRUCTOR_ITERATIONS rounds, so that later destructors can still unwind): it
// is called as glibc would call it, until it sets nothing.
// Called quietly where no handler may unwind (nd_unw_sole, decided since the last handler was
// installed; stacks/unwind.c): its pool's lock masks signals otherwise.
static void thread_exit(nd_tls_t *t) {
  (void)t;
  nd_unw_quiet = nd_unw_sole_decided();
  for (int i = 0; i < PTHREAD_DESTRUCTOR_ITERATIONS && unw_value && unw_destructor; i++) {
    void *v = unw_value;
    unw_value = NULL;
    unw_destructor(v);
  }
  nd_unw_quiet = 0;
}

int nd_key_create(pthread_key_t *key, void (*destructor)(void *), void *ra) {
  if (nd_unwinder_owns(ra)) {
    unw_destructor = destructor;
    *key = ND_UNW_KEY;
    return 0;
  }
  if (ND_UNLIKELY(!next_key_create)) nd_thread_prepare(&nd_tls); // resolves the next one
  return next_key_create ? next_key_create(key, destructor) : EAGAIN;
}

int nd_setspecific(pthread_key_t key, const void *value) {
  if (ND_UNLIKELY(key == ND_UNW_KEY)) {
    unw_value = (void *)value;
    return 0;
  }
  if (ND_UNLIKELY(!next_setspecific)) nd_thread_prepare(&nd_tls);
  return next_setspecific ? next_setspecific(key, value) : EINVAL;
}

ND_MODULE(nd_keys_module) = {.name = "keys", .order = 5, .thread_exit = thread_exit};
