// SPDX-License-Identifier: MIT
// keys.h: no pthread key of the program's is ndmem's (keys.c).
#ifndef ND_KEYS_H
#define ND_KEYS_H

#include <pthread.h>

// The next pthread_key_create and pthread_setspecific, by name (init.c's look-up).
void nd_keys_resolve(void *(*sym)(const char *));
// fn(arg) when this thread ends (a TLS destructor); -1 on the main thread, which registers none.
int nd_keys_thread_atexit(void (*fn)(void *), void *arg);
// The ending thread's part of keys.c: libunwind's destructor for its value, if it set one.
// The exported pthread_key_create and pthread_setspecific (hooks.c). ra: the caller.
int nd_key_create(pthread_key_t *key, void (*destructor)(void *), void *ra);
int nd_setspecific(pthread_key_t key, const void *value);

#endif
