// SPDX-License-Identifier: MIT
// driver.c: the driver functions the device modules call themselves, the program's streams as
// ndmem has seen them, and a pool of events per device (driver.h).
#include "device/driver.h"

#include "device/cuda_hooks.h"
#include "ndmem.h"
#include "common/os.h"

#include <string.h>

#pragma GCC diagnostic ignored "-Wpedantic" // function pointers from dlsym, as cuda.c

nd_drv_t nd_drv;
static int resolved; // 1 done, -1 failed (atomic)
static int resolve_lock;

int nd_drv_resolve(const void *real) {
  int r = __atomic_load_n(&resolved, __ATOMIC_ACQUIRE);
  if (r) return r > 0 ? 0 : -1;
  nd_spin_lock(&resolve_lock);
  if (!resolved) {
    nd_drv_t v;
#define GET(field, name) v.field = (__typeof__(v.field))nd_cuda_drv_sym(real, name)
    GET(mem_alloc, "cuMemAlloc_v2");
    GET(mem_free, "cuMemFree_v2");
    GET(host_alloc, "cuMemHostAlloc");
    GET(host_devptr, "cuMemHostGetDevicePointer_v2");
    GET(free_host, "cuMemFreeHost");
    GET(ctx_current, "cuCtxGetCurrent");
    GET(ctx_sync, "cuCtxSynchronize");
    GET(stream_sync, "cuStreamSynchronize");
    GET(capturing, "cuStreamIsCapturing");
    GET(event_create, "cuEventCreate");
    GET(event_destroy, "cuEventDestroy_v2");
    GET(event_record, "cuEventRecord");
    GET(event_query, "cuEventQuery");
    GET(event_sync, "cuEventSynchronize");
    GET(stream_wait, "cuStreamWaitEvent");
#undef GET
    int ok = v.mem_alloc && v.mem_free && v.ctx_current && v.ctx_sync && v.stream_sync &&
             v.event_create && v.event_destroy && v.event_record && v.event_query &&
             v.event_sync && v.stream_wait;
    nd_drv = v;
    __atomic_store_n(&resolved, ok ? 1 : -1, __ATOMIC_RELEASE);
  }
  nd_spin_unlock(&resolve_lock);
  return __atomic_load_n(&resolved, __ATOMIC_ACQUIRE) > 0 ? 0 : -1;
}

int nd_drv_resolved(void) { return __atomic_load_n(&resolved, __ATOMIC_ACQUIRE) > 0; }

// ---------------------------------------------------------------- the program's streams

// Its non-blocking streams, by handle (open addressing, under one lock: streams are made and
// destroyed rarely). Blocking streams need no entry: they are ordered with the legacy stream.
#define STREAMS 1024
static struct {
  int lock;
  struct { nd_cu_stream s; int dev; } nb[STREAMS];
  int nonblocking[NDMEM_MAX_DEVICES]; // live ones per device (atomic reads)
  int several;                        // atomic
} streams;

static void went_several(void) { __atomic_store_n(&streams.several, 1, __ATOMIC_RELEASE); }

static size_t slot(nd_cu_stream s) {
  return (size_t)(((uintptr_t)s >> 4) * 0x9e3779b97f4a7c15ull >> 40) & (STREAMS - 1);
}

void nd_drv_stream_created(nd_cu_stream s, unsigned flags, int device) {
  went_several();
  if (!(flags & ND_CU_STREAM_NON_BLOCKING) || device < 0 || device >= NDMEM_MAX_DEVICES) return;
  nd_spin_lock(&streams.lock);
  size_t i = slot(s);
  for (size_t k = 0; k < STREAMS; k++, i = (i + 1) & (STREAMS - 1))
    if (!streams.nb[i].s) {
      streams.nb[i].s = s;
      streams.nb[i].dev = device;
      __atomic_fetch_add(&streams.nonblocking[device], 1, __ATOMIC_RELAXED);
      break;
    }
  // a full table: the device still counts one more (safe: more waiting, never less)
  if (streams.nb[i].s != s) __atomic_fetch_add(&streams.nonblocking[device], 1, __ATOMIC_RELAXED);
  nd_spin_unlock(&streams.lock);
}

void nd_drv_stream_destroyed(nd_cu_stream s) {
  nd_spin_lock(&streams.lock);
  size_t i = slot(s);
  for (size_t k = 0; k < STREAMS && streams.nb[i].s; k++, i = (i + 1) & (STREAMS - 1)) {
    if (streams.nb[i].s != s) continue;
    __atomic_fetch_sub(&streams.nonblocking[streams.nb[i].dev], 1, __ATOMIC_RELAXED);
    // backward-shift deletion keeps every probe chain whole
    size_t hole = i;
    for (size_t j = (i + 1) & (STREAMS - 1); streams.nb[j].s; j = (j + 1) & (STREAMS - 1)) {
      size_t home = slot(streams.nb[j].s);
      if (((j - home) & (STREAMS - 1)) >= ((j - hole) & (STREAMS - 1))) {
        streams.nb[hole] = streams.nb[j];
        hole = j;
      }
    }
    streams.nb[hole].s = NULL;
    break;
  }
  nd_spin_unlock(&streams.lock);
}

void nd_drv_ptds_seen(void) { went_several(); }
int nd_drv_several(void) { return __atomic_load_n(&streams.several, __ATOMIC_ACQUIRE); }
int nd_drv_nonblocking(int device) {
  return device >= 0 && device < NDMEM_MAX_DEVICES &&
         __atomic_load_n(&streams.nonblocking[device], __ATOMIC_RELAXED) > 0;
}

// ---------------------------------------------------------------- events

#define POOL 64
static struct {
  int lock;
  nd_cu_event ev[POOL];
  int n;
} pool[NDMEM_MAX_DEVICES];

nd_cu_event nd_drv_event_get(int device) {
  if (device < 0 || device >= NDMEM_MAX_DEVICES || !nd_drv_resolved()) return NULL;
  nd_spin_lock(&pool[device].lock);
  nd_cu_event e = pool[device].n ? pool[device].ev[--pool[device].n] : NULL;
  nd_spin_unlock(&pool[device].lock);
  if (!e && nd_drv.event_create(&e, ND_CU_EVENT_DISABLE_TIMING) != ND_CUDA_SUCCESS) e = NULL;
  return e;
}

void nd_drv_event_put(int device, nd_cu_event e) {
  if (!e) return;
  nd_spin_lock(&pool[device].lock);
  int kept = pool[device].n < POOL;
  if (kept) pool[device].ev[pool[device].n++] = e;
  nd_spin_unlock(&pool[device].lock);
  if (!kept) nd_drv.event_destroy(e);
}

void nd_drv_atfork_child(void) {
  memset(&streams, 0, sizeof streams);
  memset(pool, 0, sizeof pool);
  resolve_lock = 0;
}
