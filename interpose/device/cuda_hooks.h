// SPDX-License-Identifier: MIT
// cuda_hooks.h: device memory (cuda.c): the CUDA driver API's memory functions, interposed through
// exported names, dlsym and cuGetProcAddress; per-device accounting, limits and trace records.
#ifndef ND_CUDA_HOOKS_H
#define ND_CUDA_HOOKS_H

#include "ndmem.h"

#include <stdint.h>

struct nd_site;

// The exported dlsym's filter (hooks/dlsym.c asks it first): 1 when *out answers the lookup of a
// hooked driver function, 0 to forward it to libc's dlsym.
int nd_dlsym_filter(void *handle, const char *name, void **out);
int nd_cuda_used(void); // a hooked function was called: the records and summary lines exist
int nd_cuda_device_stats(int device, ndmem_device_stats_t *out); // 0, or -1 out of range
int nd_cuda_cupti_update(const ndmem_cupti_device_t *d);         // CUPTI's view of a device

// A live block at exit: a device address, pinned or managed host memory, or a cuMemCreate handle.
typedef struct nd_cuda_block {
  uint64_t key, size;
  struct nd_site *site;
  uint64_t born, cycle;
} nd_cuda_block_t;
void nd_cuda_each_live(void (*fn)(void *ctx, const nd_cuda_block_t *b), void *ctx);
// The same with every other thread stopped (reach.c): -1 (and no call) when one holds the table.
int nd_cuda_each_live_stopped(void (*fn)(void *ctx, const nd_cuda_block_t *b), void *ctx);

// For the device modules (device/): a driver function from the module the program's calls came
// from (never a hook), and a workspace arena's bytes in and out of the device's books.
void *nd_cuda_drv_sym(const void *real, const char *name);
int nd_cuda_arena_reserve(int device, uint64_t bytes); // 0, or -1 over the device limit
void nd_cuda_arena_made(int device, uint64_t bytes);   // the driver made it
void nd_cuda_arena_release(int device, uint64_t bytes, int made);

#endif
