// SPDX-License-Identifier: MIT
// unwcache.c: libunwind's per-thread frame caches outlive their threads.
//
// libunwind's fast unwinder (unw_backtrace) keeps a frame cache per thread: 256 KiB mapped at
// the thread's first unwind and filled, 64 pages faulted in, unmapped when the thread ends (its
// destructor, keys.c), an unmap that interrupts every other CPU running the process to flush its
// TLB. A program whose threads come and go paid that for each thread. ndmem keeps up to
// UNW_POOL of the regions libunwind unmaps, still resident, and hands one back, zeroed as a new
// mapping is, at libunwind's next request of that size. Only libunwind's calls come here
// (mmap.c: by the caller's address), and only private anonymous read-write mappings are pooled.
#include "runtime/shim.h"
#include "runtime/module.h"

#include "common/os.h"
#include "stacks/unwcache.h"

#include <string.h>
#include <sys/mman.h>

#define UNW_POOL 4
#define UNW_POOL_MAX (1u << 20) // libunwind's caches are 256 KiB, 1 MiB after one growth

static int lock;
static struct {
  void *p;
  size_t len;
} pool[UNW_POOL];

static size_t pages(size_t len) {
  size_t pg = nd_os_page_size();
  return (len + pg - 1) & ~(pg - 1);
}

void *nd_unwcache_map(void *addr, size_t len, int prot, int flags, int fd) {
  if (addr || fd != -1 || prot != (PROT_READ | PROT_WRITE) ||
      flags != (MAP_PRIVATE | MAP_ANONYMOUS) || !len || len > UNW_POOL_MAX)
    return NULL;
  len = pages(len);
  void *p = NULL;
  nd_spin_lock(&lock);
  for (int i = 0; i < UNW_POOL; i++)
    if (pool[i].p && pool[i].len == len) {
      p = pool[i].p;
      pool[i].p = NULL;
      break;
    }
  nd_spin_unlock(&lock);
  if (p) memset(p, 0, len);
  return p;
}

int nd_unwcache_keep(void *addr, size_t len) {
  size_t pg = nd_os_page_size();
  if (!len || len > UNW_POOL_MAX || ((uintptr_t)addr & (pg - 1))) return 0;
  len = pages(len);
  int kept = 0;
  nd_spin_lock(&lock);
  for (int i = 0; i < UNW_POOL && !kept; i++)
    if (!pool[i].p) pool[i].p = addr, pool[i].len = len, kept = 1;
  nd_spin_unlock(&lock);
  return kept;
}

// A leaf lock: held across fork, so the child's pool is whole. Taken last (the highest rank): an
// unwind under another lock of ndmem's (an mmap's site, under the mapping table's) maps libunwind's
// cache through it.
static void atfork_prepare(void) { nd_spin_lock(&lock); }
static void atfork_parent(void) { nd_spin_unlock(&lock); }
static void atfork_child(nd_tls_t *t) { (void)t, nd_spin_unlock(&lock); }

// The cache pool is a leaf lock, taken last (runtime/init.c lists the order).
ND_MODULE(nd_unwcache_module) = {.name = "unwcache", .rank = 90, .atfork_prepare = atfork_prepare,
                                  .atfork_parent = atfork_parent, .atfork_child = atfork_child};
