// SPDX-License-Identifier: MIT
// state.c: the state every room reads (shim.h): the thread's record, the next allocator's
// functions, the settings, the life-cycle state, which process this is; and the bootstrap pool.
//
// dlsym allocates, so while a thread initialises, its malloc-family calls are served from a
// static pool that free/realloc/malloc_usable_size recognise by address (heaptrack's trick).
#include "runtime/shim.h"

#include <errno.h>

__thread nd_tls_t nd_tls __attribute__((tls_model("initial-exec")));
nd_real_t nd_real;
nd_config_t nd_cfg;
int nd_state;
int nd_child; // ND_ROOT, ND_EXEC_CHILD or ND_FORK_CHILD
int nd_finish_inside;
uint64_t nd_end_ns;

_Alignas(64) char nd_boot_pool[ND_BOOT_POOL_SIZE];
static size_t nd_boot_used;
static uint64_t nd_boot_count; // published as a fallback once the thread has a shard

// Only the initialising thread allocates here (others wait for READY), so no lock. Blocks are
// never reused: the pool is zero-filled, which also makes calloc free.
void *nd_boot_alloc(size_t size, size_t align) {
  if (align < 16) align = 16;
  uintptr_t base = (uintptr_t)nd_boot_pool;
  uintptr_t p = (base + nd_boot_used + sizeof(size_t) + align - 1) & ~(uintptr_t)(align - 1);
  if (size > ND_BOOT_POOL_SIZE || p + size > base + ND_BOOT_POOL_SIZE) {
    errno = ENOMEM;
    return NULL;
  }
  ((size_t *)p)[-1] = size;
  nd_boot_used = p + size - base;
  nd_boot_count++;
  return (void *)p;
}

size_t nd_boot_usable(const void *p) { return ((const size_t *)p)[-1]; }

uint64_t nd_boot_take_count(void) {
  uint64_t n = nd_boot_count;
  nd_boot_count = 0;
  return n;
}
