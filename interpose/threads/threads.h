// SPDX-License-Identifier: MIT
// threads.h: each thread's stack, known from the thread's start (threads/threads.c), so that no
// hook ever asks libc for it. glibc's pthread_getattr_np holds the thread's own lock while it
// reallocs a cpuset: a hook that called it there (to bound the replay's reads) waited for that
// lock for ever on every JVM thread. A thread made by pthread_create starts in ndmem's wrapper,
// which reads its stack before the program's start routine runs, while the thread holds no lock
// of anyone's; the main thread's is read from what the kernel and the loader left (no libc call).
#ifndef ND_THREADS_H
#define ND_THREADS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

// The exported pthread_create (hooks.c): the program's start routine runs inside ndmem's wrapper.
int nd_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
// The exported joins and pthread_detach: glibc's, and the thread noted released (an ended thread
// that nobody joined yet keeps its return value for a join: its descriptor is still read).
int nd_thread_join(pthread_t th, void **ret);
int nd_thread_tryjoin(pthread_t th, void **ret);
int nd_thread_timedjoin(pthread_t th, void **ret, const struct timespec *abstime);
int nd_thread_clockjoin(pthread_t th, void **ret, clockid_t clock, const struct timespec *abstime);
int nd_thread_detach(pthread_t th);

// The calling thread's stack [*lo, *hi): 0, or -1 (both 0) where it is not known: a thread made
// otherwise than by pthread_create through the hook (C11 thrd_create and libc's own helper
// threads call glibc's implementation directly; raw clone), or started before ndmem was ready.
// Reads no lock and makes no libc call: safe on every hook path.
int nd_thread_stack(uintptr_t *lo, uintptr_t *hi);

// The stacks threads started on through the wrapper, for the scan at exit (reach.c): [lo, hi)
// as pthread_getattr_np gave it (with glibc's stacks, the static TLS and the thread's descriptor
// lie at its top), the descriptor's address (pthread_self) and the thread's id. glibc keeps an
// ended thread's stack mapped for the next thread (its stack cache): what the ended thread left
// there is no root, and the scan skips a record's range where its thread is no longer among
// the process's and no live thread runs on it. With every other thread stopped: no lock taken;
// NULL (and *n 0) where a stopped thread was changing them.
typedef struct nd_thread_rec {
  uintptr_t lo, hi, self;
  pid_t tid;
  int released; // joined or detached: once ended, its descriptor's return value is dead too
} nd_thread_rec_t;
const nd_thread_rec_t *nd_threads_stopped(size_t *n);
// The arguments of threads made that have not started their routine yet (their start records
// are ndmem's memory): each given to fn, with every other thread stopped.
void nd_threads_starting(void (*fn)(uint64_t word));

// Counts for the summary: threads started through the wrapper, and those whose stack a caller
// asked for and was not known (nd_thread_unknown: the caller counts one).
typedef struct nd_threads_stats {
  uint64_t wrapped, unknown;
} nd_threads_stats_t;
void nd_threads_stats(nd_threads_stats_t *out);
void nd_thread_unknown(void);

#endif
