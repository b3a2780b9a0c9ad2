// SPDX-License-Identifier: MIT
// os.h: the few kernel services ndmem's own code uses, as raw system calls.
// Nothing here goes through the hooked libc functions or allocates, so it is safe on every hook
// path, inside fork handlers and before the shim is initialised (jemalloc's malloc_io habit).
#ifndef ND_OS_H
#define ND_OS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

void *nd_os_map(size_t size);                   // anonymous RW pages, or NULL; never the hooked mmap
void nd_os_unmap(void *p, size_t size);
void nd_os_write_all(int fd, const char *s, size_t n); // best effort, retries on EINTR/short writes
pid_t nd_os_gettid(void);
pid_t nd_os_getpid(void);
size_t nd_os_page_size(void);
uint64_t nd_os_phys_bytes(void);               // physical RAM in bytes (sysinfo), 0 if unknown
uint64_t nd_os_mono_ns(void);                  // CLOCK_MONOTONIC in nanoseconds
void nd_os_sleep_ms(int64_t ms);               // the whole interval, through EINTR

// Starts fn on a background thread of ndmem's own, once: *started goes from 0 to 1 first (a
// second caller returns 1). Detached, 256 KiB of stack, every signal blocked (the program's
// handlers never run on it). 0, or -1 when the thread could not be created (*started stays 1).
int nd_os_thread_once(int *started, void *(*fn)(void *));

// The spinlock of ndmem's rare paths (registries, tables): no allocation, fork-safe to reset by
// storing 0, and yields rather than spins hot since its holder may be descheduled.
void nd_spin_lock(int *l);
static inline void nd_spin_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

#endif
