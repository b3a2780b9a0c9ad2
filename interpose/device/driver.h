// SPDX-License-Identifier: MIT
// driver.h: what the device modules (device workspaces, spill to host) need of the CUDA driver
// beyond the hooked functions: the driver functions ndmem calls itself, found in the module the
// program's own calls came from (never loaded by ndmem), a pool of events per device, and what
// ndmem has seen of the program's streams (the ordering that makes reusing device memory safe).
#ifndef ND_DEVICE_DRIVER_H
#define ND_DEVICE_DRIVER_H

#include "device/cuda_abi.h"

#include <stdint.h>

typedef struct nd_drv {
  nd_cu_result (*mem_alloc)(nd_cu_deviceptr *, size_t);           // cuMemAlloc_v2
  nd_cu_result (*mem_free)(nd_cu_deviceptr);                      // cuMemFree_v2
  nd_cu_result (*host_alloc)(void **, size_t, unsigned);          // cuMemHostAlloc
  nd_cu_result (*host_devptr)(nd_cu_deviceptr *, void *, unsigned); // cuMemHostGetDevicePointer_v2
  nd_cu_result (*free_host)(void *);                              // cuMemFreeHost
  nd_cu_result (*ctx_current)(nd_cu_context *);                   // cuCtxGetCurrent
  nd_cu_result (*ctx_sync)(void);                                 // cuCtxSynchronize
  nd_cu_result (*stream_sync)(nd_cu_stream);                      // cuStreamSynchronize
  nd_cu_result (*capturing)(nd_cu_stream, int *);                 // cuStreamIsCapturing
  nd_cu_result (*event_create)(nd_cu_event *, unsigned);          // cuEventCreate
  nd_cu_result (*event_destroy)(nd_cu_event);                     // cuEventDestroy_v2
  nd_cu_result (*event_record)(nd_cu_event, nd_cu_stream);        // cuEventRecord
  nd_cu_result (*event_query)(nd_cu_event);                       // cuEventQuery
  nd_cu_result (*event_sync)(nd_cu_event);                        // cuEventSynchronize
  nd_cu_result (*stream_wait)(nd_cu_stream, nd_cu_event, unsigned); // cuStreamWaitEvent
} nd_drv_t;

extern nd_drv_t nd_drv;

// Resolves nd_drv from the module that holds `real` (a driver function the program reached).
// 0 when every function the device workspaces need is there; -1 otherwise (then they stay off).
int nd_drv_resolve(const void *real);
int nd_drv_resolved(void); // 1 after a successful nd_drv_resolve

// The program's streams, as the hooks of cuStreamCreate[WithPriority] and cuStreamDestroy and
// the lookups of per-thread-default-stream entry points show them. "Several streams": the program
// made a stream or uses per-thread default streams, so its work is no longer in one order.
void nd_drv_stream_created(nd_cu_stream s, unsigned flags, int device);
void nd_drv_stream_destroyed(nd_cu_stream s); // before the driver destroys it
void nd_drv_ptds_seen(void);
int nd_drv_several(void);              // several streams (atomic read)
int nd_drv_nonblocking(int device);    // live non-blocking streams on device

// Events of device `device`'s context (that context must be current): from the pool, or created
// without timing. NULL when the driver has none to give.
nd_cu_event nd_drv_event_get(int device);
void nd_drv_event_put(int device, nd_cu_event e);

void nd_drv_atfork_child(void); // a fork child has no CUDA context: forget streams and events

#endif
