// SPDX-License-Identifier: MIT
// os.c: raw system calls for ndmem's own needs (see os.h). errno is preserved by every function
// here: they run inside the program's malloc/mmap calls, whose errno contract must stay exact.
#include "os.h"

#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
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

void nd_spin_lock(int *l) {
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
