// SPDX-License-Identifier: MIT
// cuda.c: device memory: the hooks' bodies and entry points. The CUDA driver API's memory
// functions are interposed, not the runtime's: cudart is linked statically into most binaries
// (nvcc's default, libtorch_cuda) and reaches the driver by dlopen("libcuda.so.1") +
// dlsym(handle, "cuGetProcAddress_v2"), then asks cuGetProcAddress for every other function. A
// dlsym with a handle never sees a preloaded library, so ndmem exports dlsym (a tail-jumping
// stub, hooks/dlsym.c) and answers lookups of the hooked names (fns.c), and of cuGetProcAddress
// itself, with its hooks; a program linked against libcuda binds to the exported hooks directly.
// libcuda is never loaded here: every real function comes from a lookup the program made, or
// from the module it already loaded.
//
// Each hooked function has three entry points: the exported one (its real function is the next
// definition of the same name) and two that take whatever pointer a dlsym or cuGetProcAddress
// answer held (the stream variants of cuMemAllocAsync come back under one name with different
// pointers: each hook calls exactly the pointer it replaced, so per-thread-stream semantics are
// kept whatever the flags meant).
//
// Accounting is exact and always by stack: device allocations are few and large. The live blocks
// live in a table of their own (books.c: a device address, or a cuMemCreate handle, is not a host
// block). The driver's own host memory inside a hooked call (bookkeeping, the pinned pages it
// maps) is not the program's and is not counted (the thread is BUSY), so pinned memory counts
// once, as kind pinned.
#include "device/books.h"

#include "common/os.h"
#include "device/driver.h"
#include "device/dws.h"
#include "device/spill.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// Function pointers travel as void * here, as dlsym and cuGetProcAddress hand them out (POSIX
// requires the conversion to work); and a '%' limit needs a 128-bit product.
#pragma GCC diagnostic ignored "-Wpedantic"

// ---------------------------------------------------------------- hook bodies

typedef nd_cu_result (*alloc_fn)(nd_cu_deviceptr *, size_t);
typedef nd_cu_result (*pitch_fn)(nd_cu_deviceptr *, size_t *, size_t, size_t, unsigned);
typedef nd_cu_result (*free_fn)(nd_cu_deviceptr);
typedef nd_cu_result (*managed_fn)(nd_cu_deviceptr *, size_t, unsigned);
typedef nd_cu_result (*host_fn)(void **, size_t);
typedef nd_cu_result (*hostalloc_fn)(void **, size_t, unsigned);
typedef nd_cu_result (*freehost_fn)(void *);
typedef nd_cu_result (*async_fn)(nd_cu_deviceptr *, size_t, nd_cu_stream);
typedef nd_cu_result (*pool_fn)(nd_cu_deviceptr *, size_t, nd_cu_mempool, nd_cu_stream);
typedef nd_cu_result (*freeasync_fn)(nd_cu_deviceptr, nd_cu_stream);
typedef nd_cu_result (*create_fn)(nd_cu_mem_handle *, size_t, const nd_cu_mem_alloc_prop_t *, unsigned long long);
typedef nd_cu_result (*release_fn)(nd_cu_mem_handle);
typedef nd_cu_result (*map_fn)(nd_cu_deviceptr, size_t, size_t, nd_cu_mem_handle, unsigned long long);
typedef nd_cu_result (*unmap_fn)(nd_cu_deviceptr, size_t);
typedef nd_cu_result (*getinfo_fn)(size_t *, size_t *);
typedef nd_cu_result (*proc_fn)(const char *, void **, int, nd_cu_u64);
typedef nd_cu_result (*proc2_fn)(const char *, void **, int, nd_cu_u64, int *);
typedef nd_cu_result (*stream_fn)(nd_cu_stream *, unsigned);
typedef nd_cu_result (*stream_prio_fn)(nd_cu_stream *, unsigned, int);
typedef nd_cu_result (*stream_destroy_fn)(nd_cu_stream);

#define NO_DRIVER ND_CUDA_ERROR_NOT_INITIALIZED // a hook whose real function cannot be found

// The stream a stream-ordered call names, as the device workspaces compare streams: NULL is the
// legacy default stream, or through a _ptsz entry point the calling thread's own. A per-thread
// default stream means the program's work is in several orders. Synchronous calls: NULL.
static nd_cu_stream ws_stream(int async, nd_cu_stream s, int ptsz) {
  if (async && (ptsz || s == ND_CU_STREAM_PER_THREAD)) nd_drv_ptds_seen();
  return !async ? NULL : s ? s : ptsz ? ND_CU_STREAM_PER_THREAD : ND_CU_STREAM_LEGACY;
}

// The device of a stream: cuStreamGetDevice where the driver has it (CUDA 12.8 and later); the
// null and the special streams, or an older driver: the current device.
typedef nd_cu_result (*stream_dev_fn)(nd_cu_stream, nd_cu_device *);
static int stream_device(const void *real, nd_cu_stream s) {
  static stream_dev_fn get; // resolved once (NULL: the driver has none)
  static int tried;
  if ((uintptr_t)s > 2) {
    if (!__atomic_load_n(&tried, __ATOMIC_ACQUIRE)) {
      __atomic_store_n(&get, (stream_dev_fn)cu_drv_sym(real, "cuStreamGetDevice"), __ATOMIC_RELAXED);
      __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    nd_cu_device d = -1;
    stream_dev_fn f = __atomic_load_n(&get, __ATOMIC_RELAXED);
    if (f && f(s, &d) == ND_CUDA_SUCCESS) return d >= 0 && d < NDMEM_MAX_DEVICES ? d : -1;
  }
  return cu_current_device(real);
}

// Device memory of a known size: cuMemAlloc on the current device; cuMemAllocAsync on the
// stream's device (its pool's), and cuMemAllocFromPoolAsync on the pool's (which the driver API
// cannot be asked for: the current device, where pools usually are). Checked before the call, and
// for the stream-ordered ones again by the pointer after: a block on another device moves its
// reservation there, or is given back on the same stream and refused when it does not fit.
static nd_cu_result dev_alloc(int f, void *real, nd_cu_deviceptr *dptr, size_t n, nd_cu_mempool pool,
                              nd_cu_stream s) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, f);
  int async = f == F_ASYNC || f == F_ASYNC_PTSZ, from_pool = f == F_POOL || f == F_POOL_PTSZ;
  int ptsz = f == F_ASYNC_PTSZ || f == F_POOL_PTSZ;
  nd_cu_stream ws = ws_stream(async || from_pool, s, ptsz);
  int d = !c.acct || !dptr ? -1 : async ? stream_device(real, s) : cu_current_device(real);
  int cls = async || from_pool ? ND_DEV_ASYNC : ND_DEV_PLAIN;
  // A device workspace first: what it serves comes from its arena, with no driver call.
  nd_site_t *site = NULL;
  int routed = 0;
  if (d >= 0 && !from_pool && nd_dws_on(d)) {
    site = cu_site_here(&c, cu_dev_kind(d));
    int r = nd_dws_alloc(d, real, n, async, ws, (uint64_t)(uintptr_t)site, dptr);
    if (r == ND_DWS_SERVED) {
      cu_track_at(&c, *dptr, cls, cu_dev_kind(d), n, site, BLK_ARENA | BLK_ROUTED);
      cu_leave(&c);
      return ND_CUDA_SUCCESS;
    }
    if (r == ND_DWS_FAIL) {
      cu_leave(&c);
      return ND_CUDA_ERROR_OUT_OF_MEMORY;
    }
    routed = r == ND_DWS_DRIVER;
  }
  if (d >= 0 && !cu_reserve(d, n, f, real)) {
    nd_cu_result rc = nd_spill_on() ? cu_spill(&c, real, d, cls, n, site, ND_SPILL_WHY_LIMIT, dptr)
                                    : ND_CUDA_ERROR_OUT_OF_MEMORY;
    cu_leave(&c);
    return rc;
  }
  nd_cu_result rc = async       ? ((async_fn)real)(dptr, n, s)
                    : from_pool ? ((pool_fn)real)(dptr, n, pool, s)
                                : ((alloc_fn)real)(dptr, n);
  if (d >= 0 && rc != ND_CUDA_SUCCESS) cu_unreserve(d, n);
  if (d >= 0 && rc == ND_CUDA_ERROR_OUT_OF_MEMORY && nd_spill_on()) { // the device is full
    rc = cu_spill(&c, real, d, cls, n, site, ND_SPILL_WHY_FULL, dptr);
    cu_leave(&c);
    return rc;
  }
  if (d >= 0 && rc == ND_CUDA_SUCCESS && (async || from_pool)) {
    int at = cu_pointer_device(real, *dptr);
    if (at >= 0 && at != d) {
      cu_unreserve(d, n);
      d = at;
      routed = 0;
      if (!cu_reserve(d, n, f, real)) {
        freeasync_fn fr = (freeasync_fn)cu_drv_sym(real, ptsz ? "cuMemFreeAsync_ptsz" : "cuMemFreeAsync");
        if (fr) fr(*dptr, s);
        cu_leave(&c);
        return ND_CUDA_ERROR_OUT_OF_MEMORY;
      }
    }
  }
  if (d >= 0 && rc == ND_CUDA_SUCCESS) {
    cu_track_at(&c, *dptr, cls, cu_dev_kind(d), n, site ? site : cu_site_here(&c, cu_dev_kind(d)),
             routed ? BLK_ROUTED : 0);
    if (routed) nd_dws_external(d, *dptr, n);
  }
  cu_leave(&c);
  return rc;
}

static nd_cu_result h_alloc(void *real, nd_cu_deviceptr *dptr, size_t n) {
  return dev_alloc(F_ALLOC, real, dptr, n, NULL, NULL);
}
static nd_cu_result h_async(void *real, nd_cu_deviceptr *dptr, size_t n, nd_cu_stream s) {
  return dev_alloc(F_ASYNC, real, dptr, n, NULL, s);
}
static nd_cu_result h_async_ptsz(void *real, nd_cu_deviceptr *dptr, size_t n, nd_cu_stream s) {
  return dev_alloc(F_ASYNC_PTSZ, real, dptr, n, NULL, s);
}

// The driver chooses the pitch: the bytes are known after the call. The reservation covers the
// row bytes asked for; a pitch that then crosses the limit gives the block back.
static nd_cu_result h_pitch(void *real, nd_cu_deviceptr *dptr, size_t *pitch, size_t w, size_t h,
                            unsigned elem) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, F_PITCH);
  int d = c.acct && dptr && pitch ? cu_current_device(real) : -1;
  uint64_t want = (uint64_t)w * h;
  if (d >= 0 && !cu_reserve(d, want, F_PITCH, real)) {
    // host memory: rows of the width rounded up to 512 bytes, as a device's pitch would be
    nd_cu_result rc = ND_CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t p = ((uint64_t)w + 511) & ~(uint64_t)511;
    if (nd_spill_on() && h && p <= UINT64_MAX / h) {
      rc = cu_spill(&c, real, d, ND_DEV_PLAIN, p * h, NULL, ND_SPILL_WHY_LIMIT, dptr);
      if (rc == ND_CUDA_SUCCESS) *pitch = (size_t)p;
    }
    cu_leave(&c);
    return rc;
  }
  nd_cu_result rc = ((pitch_fn)real)(dptr, pitch, w, h, elem);
  if (d >= 0) {
    cu_unreserve(d, want);
    if (rc == ND_CUDA_SUCCESS) {
      uint64_t got = (uint64_t)*pitch * h;
      if (cu_reserve(d, got, F_PITCH, real)) {
        cu_track(&c, *dptr, ND_DEV_PLAIN, cu_dev_kind(d), got);
      } else {
        free_fn fr = (free_fn)cu_drv_sym(real, "cuMemFree_v2");
        if (fr) fr(*dptr);
        rc = ND_CUDA_ERROR_OUT_OF_MEMORY;
      }
    }
  }
  cu_leave(&c);
  return rc;
}

static nd_cu_result h_pool(void *real, nd_cu_deviceptr *dptr, size_t n, nd_cu_mempool pool, nd_cu_stream s) {
  return dev_alloc(F_POOL, real, dptr, n, pool, s);
}
static nd_cu_result h_pool_ptsz(void *real, nd_cu_deviceptr *dptr, size_t n, nd_cu_mempool pool,
                                nd_cu_stream s) {
  return dev_alloc(F_POOL_PTSZ, real, dptr, n, pool, s);
}

// Releases of device addresses and pinned host memory: the entry leaves the table before the
// call (nobody else can be handed the address until the driver has it back) and returns if the
// call fails.
static nd_cu_result release(int f, void *real, uint64_t key, int cls, nd_cu_stream s) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, f);
  blk_t b;
  int found = c.acct && key && cu_take(key, cls, &b);
  int async = f == F_FREEASYNC || f == F_FREEASYNC_PTSZ;
  if (!found && c.acct && key && cls != ND_DEV_HOSTMEM) // an async free of a plain block, or back
    found = cu_take(key, async ? ND_DEV_PLAIN : ND_DEV_ASYNC, &b);
  int d = found && b.kind >= NDMEM_KIND_DEVICE0 ? b.kind - NDMEM_KIND_DEVICE0 : -1;
  nd_cu_stream ws = ws_stream(async, s, f == F_FREEASYNC_PTSZ);
  if (d >= 0 && (b.flags & (BLK_ARENA | BLK_SPILL))) { // ndmem's memory: no driver call for it
    nd_cu_result rc = ND_CUDA_SUCCESS;
    if (b.flags & BLK_ARENA) nd_dws_free(d, key, b.size, async, ws);
    else rc = nd_spill_free(d, key, b.size, async, ws);
    if (rc == ND_CUDA_SUCCESS) cu_untrack(&c, &b);
    else cu_restore(&b);
    cu_leave(&c);
    return rc;
  }
  nd_cu_result rc = cls == ND_DEV_HOSTMEM ? ((freehost_fn)real)((void *)(uintptr_t)key)
                    : async               ? ((freeasync_fn)real)(key, s)
                                          : ((free_fn)real)(key);
  if (found) {
    if (rc == ND_CUDA_SUCCESS) cu_untrack(&c, &b);
    else cu_restore(&b);
    if (rc == ND_CUDA_SUCCESS && d >= 0 && (b.flags & BLK_ROUTED)) nd_dws_external_free(d, key, b.size);
  } else if (c.acct && key && rc == ND_CUDA_SUCCESS) {
    ADD(nd_cu_calls.unknown_frees, 1);
  }
  cu_leave(&c);
  return rc;
}
static nd_cu_result h_free(void *real, nd_cu_deviceptr p) { return release(F_FREE, real, p, ND_DEV_PLAIN, NULL); }
static nd_cu_result h_freeasync(void *real, nd_cu_deviceptr p, nd_cu_stream s) {
  return release(F_FREEASYNC, real, p, ND_DEV_ASYNC, s);
}
static nd_cu_result h_freeasync_ptsz(void *real, nd_cu_deviceptr p, nd_cu_stream s) {
  return release(F_FREEASYNC_PTSZ, real, p, ND_DEV_ASYNC, s);
}
static nd_cu_result h_freehost(void *real, void *p) {
  return release(F_FREEHOST, real, (uintptr_t)p, ND_DEV_HOSTMEM, NULL);
}

// Pinned host and managed memory: kinds of their own, not under the device limit.
static nd_cu_result host_alloc(int f, void *real, void **pp, nd_cu_deviceptr *dp, size_t n, unsigned flags) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, f);
  nd_cu_result rc = f == F_HOST        ? ((host_fn)real)(pp, n)
                    : f == F_HOSTALLOC ? ((hostalloc_fn)real)(pp, n, flags)
                                       : ((managed_fn)real)(dp, n, flags);
  if (c.acct && rc == ND_CUDA_SUCCESS) {
    uint64_t key = f == F_MANAGED ? (uint64_t)*dp : (uintptr_t)*pp;
    cu_track(&c, key, ND_DEV_HOSTMEM, f == F_MANAGED ? NDMEM_KIND_MANAGED : NDMEM_KIND_PINNED, n);
  }
  cu_leave(&c);
  return rc;
}
static nd_cu_result h_host(void *real, void **pp, size_t n) { return host_alloc(F_HOST, real, pp, NULL, n, 0); }
static nd_cu_result h_hostalloc(void *real, void **pp, size_t n, unsigned flags) {
  return host_alloc(F_HOSTALLOC, real, pp, NULL, n, flags);
}
static nd_cu_result h_managed(void *real, nd_cu_deviceptr *dp, size_t n, unsigned flags) {
  return host_alloc(F_MANAGED, real, NULL, dp, n, flags);
}
// cuMemFree releases managed memory too: its entry is found under the host-memory class.
static nd_cu_result h_free_any(void *real, nd_cu_deviceptr p) {
  if (!real) return NO_DRIVER;
  blk_t b;
  nd_spin_lock(&nd_cu_blocks.lock);
  int managed = p && cu_tab_find(p, ND_DEV_HOSTMEM, &b, 0) && b.kind == NDMEM_KIND_MANAGED;
  nd_spin_unlock(&nd_cu_blocks.lock);
  return managed ? release(F_FREE, real, p, ND_DEV_HOSTMEM, NULL) : h_free(real, p);
}

// The virtual-memory API (PyTorch's expandable segments): cuMemCreate allocates physical memory
// and is what counts; cuMemMap and cuMemUnmap only map it (counted as calls). Memory on a host
// location counts as pinned.
static nd_cu_result h_create(void *real, nd_cu_mem_handle *h, size_t n, const nd_cu_mem_alloc_prop_t *prop,
                             unsigned long long flags) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, F_CREATE);
  int d = -1, host = 0;
  if (c.acct && h && prop) {
    if (prop->location.type == ND_CU_MEM_LOCATION_TYPE_DEVICE)
      d = prop->location.id >= 0 && prop->location.id < NDMEM_MAX_DEVICES ? prop->location.id : -1;
    else
      host = 1;
  }
  if (d >= 0 && !cu_reserve(d, n, F_CREATE, real)) {
    cu_leave(&c);
    return ND_CUDA_ERROR_OUT_OF_MEMORY;
  }
  nd_cu_result rc = ((create_fn)real)(h, n, prop, flags);
  if (d >= 0 || host) {
    if (rc == ND_CUDA_SUCCESS) cu_track(&c, *h, host ? ND_DEV_HOSTMEM : ND_DEV_VMM, host ? NDMEM_KIND_PINNED : cu_dev_kind(d), n);
    else if (d >= 0) cu_unreserve(d, n);
  }
  cu_leave(&c);
  return rc;
}

static nd_cu_result h_release(void *real, nd_cu_mem_handle h) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, F_RELEASE);
  blk_t b;
  int found = c.acct && (cu_take(h, ND_DEV_VMM, &b) || cu_take(h, ND_DEV_HOSTMEM, &b));
  nd_cu_result rc = ((release_fn)real)(h);
  if (found) {
    if (rc == ND_CUDA_SUCCESS) cu_untrack(&c, &b);
    else cu_restore(&b);
  } else if (c.acct && rc == ND_CUDA_SUCCESS) {
    ADD(nd_cu_calls.unknown_frees, 1);
  }
  cu_leave(&c);
  return rc;
}

static nd_cu_result h_map(void *real, nd_cu_deviceptr p, size_t n, size_t off, nd_cu_mem_handle h,
                          unsigned long long flags) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, F_MAP);
  nd_cu_result rc = ((map_fn)real)(p, n, off, h, flags);
  cu_leave(&c);
  return rc;
}

static nd_cu_result h_unmap(void *real, nd_cu_deviceptr p, size_t n) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, F_UNMAP);
  nd_cu_result rc = ((unmap_fn)real)(p, n);
  cu_leave(&c);
  return rc;
}

// Limit-aware cuMemGetInfo: under a limit the device is as large as the limit and its free
// memory is what the limit leaves, never more than the driver's own free memory. Frameworks that
// size their pools from it (JAX's preallocation, PyTorch's memory fraction) stay inside.
static nd_cu_result h_getinfo(void *real, size_t *free_b, size_t *total_b) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, F_GETINFO);
  nd_cu_result rc = ((getinfo_fn)real)(free_b, total_b);
  int d = c.acct && rc == ND_CUDA_SUCCESS && free_b && total_b ? cu_current_device(real) : -1;
  if (d >= 0) {
    struct dev *v = &nd_cu_devs[d];
    ADD(v->getinfo_calls, 1);
    int64_t lim = cu_dev_limit(d, real);
    if (lim) {
      int64_t room = lim - LD(v->live);
      size_t f = room > 0 ? (size_t)room : 0, t = (size_t)lim;
      if (f > *free_b) f = *free_b;
      if (t > *total_b) t = *total_b;
      if (f != *free_b || t != *total_b) ADD(v->getinfo_clamped, 1);
      *free_b = f;
      *total_b = t;
    }
  }
  cu_leave(&c);
  return rc;
}

// The program's streams (device/driver.c): a second stream means its work is in several orders,
// which device workspaces must respect before they reuse memory; a destroyed stream's pending
// frees are marked first (device/dws.c).
static nd_cu_result stream_new(int f, void *real, nd_cu_stream *ps, unsigned flags, int prio) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, f);
  nd_cu_result rc = f == F_STREAM ? ((stream_fn)real)(ps, flags) : ((stream_prio_fn)real)(ps, flags, prio);
  if (rc == ND_CUDA_SUCCESS && ps) nd_drv_stream_created(*ps, flags, cu_current_device(real));
  cu_leave(&c);
  return rc;
}
static nd_cu_result h_stream(void *real, nd_cu_stream *ps, unsigned flags) {
  return stream_new(F_STREAM, real, ps, flags, 0);
}
static nd_cu_result h_stream_prio(void *real, nd_cu_stream *ps, unsigned flags, int prio) {
  return stream_new(F_STREAM_PRIO, real, ps, flags, prio);
}
static nd_cu_result h_stream_destroy(void *real, nd_cu_stream s) {
  if (!real) return NO_DRIVER;
  call_t c;
  cu_enter(&c, F_STREAM_DESTROY);
  nd_dws_stream_gone(s);
  nd_drv_stream_destroyed(s);
  nd_cu_result rc = ((stream_destroy_fn)real)(s);
  cu_leave(&c);
  return rc;
}

// cuGetProcAddress: the driver's answer, replaced by a hook for the memory functions (and for
// cuGetProcAddress itself, which the CUDA runtime asks for first).
static void answer(const char *sym, void **pfn, int version, nd_cu_u64 flags) {
  // a program that asks for per-thread default streams has its work in several orders
  if (flags & ND_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) nd_drv_ptds_seen();
  if (!sym || !pfn || !*pfn) return;
  int f = cu_fn_by_base(sym, version);
  if (f < 0) return;
  if (!cu_is_hook(*pfn)) cu_learn_module(NULL, *pfn);
  void *h = cu_instance_for(f, *pfn);
  if (h != *pfn) ADD(nd_cu_calls.answered_proc, 1);
  *pfn = h;
}

static nd_cu_result h_proc(void *real, const char *sym, void **pfn, int version, nd_cu_u64 flags) {
  if (!real) return NO_DRIVER;
  nd_tls_t *t = &nd_tls;
  unsigned char mode = t->mode;
  if (mode == ND_T_COUNT) t->mode = ND_T_BUSY;
  nd_cu_result rc = ((proc_fn)real)(sym, pfn, version, flags);
  if (rc == ND_CUDA_SUCCESS) answer(sym, pfn, version, flags);
  if (mode == ND_T_COUNT) t->mode = mode;
  return rc;
}

static nd_cu_result h_proc2(void *real, const char *sym, void **pfn, int version, nd_cu_u64 flags,
                            int *status) {
  if (!real) return NO_DRIVER;
  nd_tls_t *t = &nd_tls;
  unsigned char mode = t->mode;
  if (mode == ND_T_COUNT) t->mode = ND_T_BUSY;
  nd_cu_result rc = ((proc2_fn)real)(sym, pfn, version, flags, status);
  if (rc == ND_CUDA_SUCCESS) answer(sym, pfn, version, flags);
  if (mode == ND_T_COUNT) t->mode = mode;
  return rc;
}

// ---------------------------------------------------------------- entry points

// The exported name and two instances for lookups, each calling the body with its own real.
#define HOOK(F, name, body, params, ...)                                                   \
  ND_EXPORT nd_cu_result name params { return body(cu_real_of(F, 0), __VA_ARGS__); }         \
  static nd_cu_result name##_1 params { return body(cu_real_of(F, 1), __VA_ARGS__); }        \
  static nd_cu_result name##_2 params { return body(cu_real_of(F, 2), __VA_ARGS__); }

HOOK(F_ALLOC, cuMemAlloc_v2, h_alloc, (nd_cu_deviceptr * p, size_t n), p, n)
HOOK(F_PITCH, cuMemAllocPitch_v2, h_pitch,
     (nd_cu_deviceptr * p, size_t *pitch, size_t w, size_t h, unsigned e), p, pitch, w, h, e)
HOOK(F_FREE, cuMemFree_v2, h_free_any, (nd_cu_deviceptr p), p)
HOOK(F_MANAGED, cuMemAllocManaged, h_managed, (nd_cu_deviceptr * p, size_t n, unsigned fl), p, n, fl)
HOOK(F_HOST, cuMemAllocHost_v2, h_host, (void **p, size_t n), p, n)
HOOK(F_HOSTALLOC, cuMemHostAlloc, h_hostalloc, (void **p, size_t n, unsigned fl), p, n, fl)
HOOK(F_FREEHOST, cuMemFreeHost, h_freehost, (void *p), p)
HOOK(F_ASYNC, cuMemAllocAsync, h_async, (nd_cu_deviceptr * p, size_t n, nd_cu_stream s), p, n, s)
HOOK(F_ASYNC_PTSZ, cuMemAllocAsync_ptsz, h_async_ptsz, (nd_cu_deviceptr * p, size_t n, nd_cu_stream s),
     p, n, s)
HOOK(F_POOL, cuMemAllocFromPoolAsync, h_pool,
     (nd_cu_deviceptr * p, size_t n, nd_cu_mempool pool, nd_cu_stream s), p, n, pool, s)
HOOK(F_POOL_PTSZ, cuMemAllocFromPoolAsync_ptsz, h_pool_ptsz,
     (nd_cu_deviceptr * p, size_t n, nd_cu_mempool pool, nd_cu_stream s), p, n, pool, s)
HOOK(F_FREEASYNC, cuMemFreeAsync, h_freeasync, (nd_cu_deviceptr p, nd_cu_stream s), p, s)
HOOK(F_FREEASYNC_PTSZ, cuMemFreeAsync_ptsz, h_freeasync_ptsz, (nd_cu_deviceptr p, nd_cu_stream s), p, s)
HOOK(F_CREATE, cuMemCreate, h_create,
     (nd_cu_mem_handle * h, size_t n, const nd_cu_mem_alloc_prop_t *prop, unsigned long long fl), h, n,
     prop, fl)
HOOK(F_RELEASE, cuMemRelease, h_release, (nd_cu_mem_handle h), h)
HOOK(F_MAP, cuMemMap, h_map,
     (nd_cu_deviceptr p, size_t n, size_t off, nd_cu_mem_handle h, unsigned long long fl), p, n, off, h, fl)
HOOK(F_UNMAP, cuMemUnmap, h_unmap, (nd_cu_deviceptr p, size_t n), p, n)
HOOK(F_GETINFO, cuMemGetInfo_v2, h_getinfo, (size_t * f, size_t *t), f, t)
HOOK(F_PROC, cuGetProcAddress, h_proc, (const char *s, void **pfn, int v, nd_cu_u64 fl), s, pfn, v, fl)
HOOK(F_PROC2, cuGetProcAddress_v2, h_proc2,
     (const char *s, void **pfn, int v, nd_cu_u64 fl, int *st), s, pfn, v, fl, st)
HOOK(F_STREAM, cuStreamCreate, h_stream, (nd_cu_stream * ps, unsigned fl), ps, fl)
HOOK(F_STREAM_PRIO, cuStreamCreateWithPriority, h_stream_prio, (nd_cu_stream * ps, unsigned fl, int pr),
     ps, fl, pr)
HOOK(F_STREAM_DESTROY, cuStreamDestroy_v2, h_stream_destroy, (nd_cu_stream s), s)

#define ROW(name) {(void *)name, (void *)name##_1, (void *)name##_2}
void *const nd_cu_hook_fn[F_COUNT][INSTANCES] = {
    [F_ALLOC] = ROW(cuMemAlloc_v2), [F_PITCH] = ROW(cuMemAllocPitch_v2), [F_FREE] = ROW(cuMemFree_v2),
    [F_MANAGED] = ROW(cuMemAllocManaged), [F_HOST] = ROW(cuMemAllocHost_v2),
    [F_HOSTALLOC] = ROW(cuMemHostAlloc), [F_FREEHOST] = ROW(cuMemFreeHost),
    [F_ASYNC] = ROW(cuMemAllocAsync), [F_ASYNC_PTSZ] = ROW(cuMemAllocAsync_ptsz),
    [F_POOL] = ROW(cuMemAllocFromPoolAsync), [F_POOL_PTSZ] = ROW(cuMemAllocFromPoolAsync_ptsz),
    [F_FREEASYNC] = ROW(cuMemFreeAsync), [F_FREEASYNC_PTSZ] = ROW(cuMemFreeAsync_ptsz),
    [F_CREATE] = ROW(cuMemCreate), [F_RELEASE] = ROW(cuMemRelease), [F_MAP] = ROW(cuMemMap),
    [F_UNMAP] = ROW(cuMemUnmap), [F_GETINFO] = ROW(cuMemGetInfo_v2),
    [F_PROC] = ROW(cuGetProcAddress), [F_PROC2] = ROW(cuGetProcAddress_v2),
    [F_STREAM] = ROW(cuStreamCreate), [F_STREAM_PRIO] = ROW(cuStreamCreateWithPriority),
    [F_STREAM_DESTROY] = ROW(cuStreamDestroy_v2),
};

