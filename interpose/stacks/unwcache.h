// SPDX-License-Identifier: MIT
// unwcache.h: libunwind's per-thread frame caches, kept for the next thread (unwcache.c).
#ifndef ND_UNWCACHE_H
#define ND_UNWCACHE_H

#include <stddef.h>

// A region libunwind unmapped earlier, of len bytes, zeroed; NULL: map a new one.
void *nd_unwcache_map(void *addr, size_t len, int prot, int flags, int fd);
// 1 when the region libunwind unmaps is kept for the next request instead.
int nd_unwcache_keep(void *addr, size_t len);

#endif
