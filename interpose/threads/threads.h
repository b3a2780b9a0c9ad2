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

// The exported pthread_create (hooks.c): the program's start routine runs inside ndmem's wrapper.
int nd_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

// The calling thread's stack [*lo, *hi): 0, or -1 (both 0) where it is not known: a thread made
// otherwise than by pthread_create through the hook (C11 thrd_create and libc's own helper
// threads call glibc's implementation directly; raw clone), or started before ndmem was ready.
// Reads no lock and makes no libc call: safe on every hook path.
int nd_thread_stack(uintptr_t *lo, uintptr_t *hi);

// Counts for the summary: threads started through the wrapper, and those whose stack a caller
// asked for and was not known (nd_thread_unknown: the caller counts one).
typedef struct nd_threads_stats {
  uint64_t wrapped, unknown;
} nd_threads_stats_t;
void nd_threads_stats(nd_threads_stats_t *out);
void nd_thread_unknown(void);

#endif
