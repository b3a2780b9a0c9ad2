// SPDX-License-Identifier: MIT
// spill.h: device memory served from host memory (NDMEM_ON_DEVICE_LIMIT=host), ND4J's
// MirroringPolicy.HOST_ONLY for unmodified programs. An allocation that would cross the device
// limit, or that the driver refuses because the device is full, is served from page-locked host
// memory mapped into the device's address space: kernels read and write it over the bus, slower,
// and the job runs on. cuMemFree (or cuMemFreeAsync) of such a pointer releases that memory.
#ifndef ND_DEVICE_SPILL_H
#define ND_DEVICE_SPILL_H

#include "device/cuda_abi.h"
#include "ndmem.h"

#include <stddef.h>
#include <stdint.h>

struct nd_site;

enum { ND_SPILL_WHY_LIMIT = 0, ND_SPILL_WHY_FULL = 1 };
int nd_spill_on(void); // NDMEM_ON_DEVICE_LIMIT=host
// n bytes for device d from host memory, for the program's allocation at `site` (NULL: no
// stack); `real`: the driver function the program reached. 0 with *dptr, or -1 (the driver gave
// none: the caller fails the allocation as before).
int nd_spill_alloc(int d, const void *real, size_t n, struct nd_site *site, int why,
                   nd_cu_deviceptr *dptr);
// p came from nd_spill_alloc (the caller's table says so): released now, or for a stream-ordered
// free once stream s has run its earlier work. 0, or the driver's error (nothing released).
nd_cu_result nd_spill_free(int d, nd_cu_deviceptr p, uint64_t n, int async, nd_cu_stream s);

// Device d's totals into the device statistics (host_* fields).
void nd_spill_device_stats(int d, ndmem_device_stats_t *out);
typedef void (*nd_spill_record_fn)(void *ctx, uint16_t tag, const void *payload, uint32_t size);
void nd_spill_write_records(nd_spill_record_fn rec, void *ctx); // DEVICE_SPILL, at each flush
void nd_spill_summary(int fd);
void nd_spill_atfork_child(void);

#endif
