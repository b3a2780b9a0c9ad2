// SPDX-License-Identifier: MIT
// dws.h: device workspaces (NDMEM_DEVICE_WS[_<i>]). Per device, the cyclic cuMemAlloc/cuMemFree
// and cuMemAllocAsync/cuMemFreeAsync of a program are found and learned with the workspace engine
// (workspace/: the same detector, planner and ND4J sizing as the host's), then served from one
// planned arena that ndmem allocates from the driver once. cuda.c's hooks ask this module first;
// what it does not serve goes to the driver as before.
#ifndef ND_DEVICE_DWS_H
#define ND_DEVICE_DWS_H

#include "device/cuda_abi.h"
#include "ndmem.h"

#include <stddef.h>
#include <stdint.h>

void nd_dws_setup(void);   // reads NDMEM_DEVICE_WS[_<i>] (after the configuration is loaded)
int nd_dws_on(int device); // the device's workspace may serve (cheap: an atomic load)

enum { ND_DWS_DRIVER = 0, ND_DWS_SERVED = 1, ND_DWS_FAIL = 2, ND_DWS_UNROUTED = 3 };
// An allocation of n bytes on device `device`: synchronous (cuMemAlloc) or stream-ordered on
// stream s (async; s normalised: CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or the program's).
// `site` identifies the call site (the interned stack, else a return address). `real`: the
// driver function the program reached (where ndmem finds the others). ND_DWS_SERVED: *dptr is an
// arena block; ND_DWS_DRIVER: the caller allocates from the driver and reports the block with
// nd_dws_external (and its free with nd_dws_external_free); ND_DWS_FAIL: spill=fail, the
// allocation fails with CUDA_ERROR_OUT_OF_MEMORY; ND_DWS_UNROUTED: not the workspace's at all
// (off, or below its min): the driver's, nothing to report.
int nd_dws_alloc(int device, const void *real, size_t n, int async, nd_cu_stream s, uint64_t site,
                 nd_cu_deviceptr *dptr);
void nd_dws_external(int device, nd_cu_deviceptr p, uint64_t n); // after ND_DWS_DRIVER
// A free of an arena block (the caller knows it is one): no driver call, except the waits that
// keep the reuse invariant (sync: cuMemFree's synchronisation; fences). The block's bytes.
void nd_dws_free(int device, nd_cu_deviceptr p, uint64_t n, int async, nd_cu_stream s);
// A driver block of routed size was freed (the learning cycle sees when).
void nd_dws_external_free(int device, nd_cu_deviceptr p, uint64_t n);
void nd_dws_stream_gone(nd_cu_stream s); // the program destroys a stream

int nd_dws_stats(int device, ndmem_device_ws_stats_t *out); // 0, or -1 out of range
int64_t nd_dws_arena_bytes(int device);                    // the device's live arenas
typedef void (*nd_dws_record_fn)(void *ctx, uint16_t tag, const void *payload, uint32_t size);
void nd_dws_write_records(nd_dws_record_fn rec, void *ctx); // DEVICE_WS, at each flush
void nd_dws_summary(int fd);                                // the summary's lines
void nd_dws_atfork_child(void);

#endif
