// SPDX-License-Identifier: MIT
// os.c: raw system calls for ndmem's own needs (see os.h). errno is preserved by every function
// here: they run inside the program's malloc/mmap calls, whose errno contract must stay exact.
#include "os.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

void *nd_os_map(size_t size) {
  int saved = errno;
  void *p = (void *)syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
  errno = saved;
  return p == MAP_FAILED ? NULL : p;
}

void nd_os_unmap(void *p, size_t size) {
  int saved = errno;
  syscall(SYS_munmap, p, size);
  errno = saved;
}

void nd_os_write_all(int fd, const char *s, size_t n) {
  int saved = errno;
  while (n > 0) {
    long w = syscall(SYS_write, fd, s, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      break;
    }
    s += w;
    n -= (size_t)w;
  }
  errno = saved;
}

pid_t nd_os_gettid(void) { return (pid_t)syscall(SYS_gettid); }
pid_t nd_os_getpid(void) { return (pid_t)syscall(SYS_getpid); }

size_t nd_os_page_size(void) {
  static size_t page;
  if (!page) {
    long v = sysconf(_SC_PAGESIZE);
    page = v > 0 ? (size_t)v : 4096;
  }
  return page;
}

uint64_t nd_os_phys_bytes(void) {
  struct sysinfo si;
  int saved = errno;
  uint64_t r = 0;
  if (sysinfo(&si) == 0) r = (uint64_t)si.totalram * si.mem_unit;
  errno = saved;
  return r;
}

uint64_t nd_os_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void nd_os_sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  int saved = errno;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  errno = saved;
}

int nd_os_thread_once(int *started, void *(*fn)(void *)) {
  int expect = 0;
  if (!__atomic_compare_exchange_n(started, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return 1;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); // the thread inherits a full mask
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t th;
  int rc = pthread_create(&th, &attr, fn, NULL) == 0 ? 0 : -1;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

void nd_spin_lock(int *l) {
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
