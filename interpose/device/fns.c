// SPDX-License-Identifier: MIT
// fns.c: the driver's hooked functions: their names, the real function behind each entry point,
// the lookups answered with a hook (dlsym's filter; cuGetProcAddress in cuda.c), and the
// driver's other functions ndmem calls itself, from the module the program's calls came from.
#include "device/books.h"

#include "common/os.h"
#include "device/driver.h"
#include "runtime/lookup.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// Function pointers travel as void * here, as dlsym and cuGetProcAddress hand them out (POSIX
// requires the conversion to work); and a '%' limit needs a 128-bit product.
#pragma GCC diagnostic ignored "-Wpedantic"

// ---------------------------------------------------------------- the hooked functions

const struct cu_name nd_cu_names[F_COUNT] = {
    [F_ALLOC] = {"cuMemAlloc_v2", "cuMemAlloc", ND_CU_V2_MEM_VERSION, 1 << 30},
    [F_PITCH] = {"cuMemAllocPitch_v2", "cuMemAllocPitch", ND_CU_V2_MEM_VERSION, 1 << 30},
    [F_FREE] = {"cuMemFree_v2", "cuMemFree", ND_CU_V2_MEM_VERSION, 1 << 30},
    [F_MANAGED] = {"cuMemAllocManaged", "cuMemAllocManaged", 0, 1 << 30},
    [F_HOST] = {"cuMemAllocHost_v2", "cuMemAllocHost", ND_CU_V2_MEM_VERSION, 1 << 30},
    [F_HOSTALLOC] = {"cuMemHostAlloc", "cuMemHostAlloc", 0, 1 << 30},
    [F_FREEHOST] = {"cuMemFreeHost", "cuMemFreeHost", 0, 1 << 30},
    [F_ASYNC] = {"cuMemAllocAsync", "cuMemAllocAsync", 0, 1 << 30},
    [F_ASYNC_PTSZ] = {"cuMemAllocAsync_ptsz", NULL, 0, 0},
    [F_POOL] = {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 0, 1 << 30},
    [F_POOL_PTSZ] = {"cuMemAllocFromPoolAsync_ptsz", NULL, 0, 0},
    [F_FREEASYNC] = {"cuMemFreeAsync", "cuMemFreeAsync", 0, 1 << 30},
    [F_FREEASYNC_PTSZ] = {"cuMemFreeAsync_ptsz", NULL, 0, 0},
    [F_CREATE] = {"cuMemCreate", "cuMemCreate", 0, 1 << 30},
    [F_RELEASE] = {"cuMemRelease", "cuMemRelease", 0, 1 << 30},
    [F_MAP] = {"cuMemMap", "cuMemMap", 0, 1 << 30},
    [F_UNMAP] = {"cuMemUnmap", "cuMemUnmap", 0, 1 << 30},
    [F_GETINFO] = {"cuMemGetInfo_v2", "cuMemGetInfo", ND_CU_V2_MEM_VERSION, 1 << 30},
    [F_PROC] = {"cuGetProcAddress", "cuGetProcAddress", 0, ND_CU_V2_PROC_VERSION},
    [F_PROC2] = {"cuGetProcAddress_v2", "cuGetProcAddress", ND_CU_V2_PROC_VERSION, 1 << 30},
    // the program's streams: how its work is ordered, which device workspaces must know
    [F_STREAM] = {"cuStreamCreate", "cuStreamCreate", 0, 1 << 30},
    [F_STREAM_PRIO] = {"cuStreamCreateWithPriority", "cuStreamCreateWithPriority", 0, 1 << 30},
    [F_STREAM_DESTROY] = {"cuStreamDestroy_v2", "cuStreamDestroy", 4000, 1 << 30},
};

// The driver's module as the program reached it: the handle of a dlsym that found a hooked name,
// or the module of a function cuGetProcAddress handed out (atomic; never loaded by ndmem).
static void *drv_module;
static void *real_fn[F_COUNT][INSTANCES]; // atomic: the real function behind each entry point

void *cu_real_of(int f, int inst) {
  void *r = __atomic_load_n(&real_fn[f][inst], __ATOMIC_ACQUIRE);
  if (ND_LIKELY(r) || inst) return r;
  // The exported name: the next definition after libndmem (libcuda, which the program loaded to
  // bind to this name; called from here, RTLD_NEXT is relative to libndmem), else the one in the
  // driver's module: a driver dlopened without RTLD_GLOBAL is not in the global scope, and one
  // whose own references to its functions are interposable hands out ndmem's exported hook.
  if (!LD(nd_dlsym_next)) nd_dlsym_resolve();
  if (!nd_dlsym_next) return NULL;
  r = nd_dlsym_own(RTLD_NEXT, nd_cu_names[f].sym, 1);
  void *m = __atomic_load_n(&drv_module, __ATOMIC_ACQUIRE);
  if (!r && m) r = nd_dlsym_own(m, nd_cu_names[f].sym, 1);
  if (r && cu_is_hook(r)) r = NULL; // never ndmem's own
  if (r) __atomic_store_n(&real_fn[f][inst], r, __ATOMIC_RELEASE);
  return r;
}

// Remembers the driver's module from a real function of it (dladdr) or a handle.
void cu_learn_module(void *handle, const void *real) {
  if (__atomic_load_n(&drv_module, __ATOMIC_ACQUIRE)) return;
  void *m = handle;
  if (!m) {
    Dl_info info;
    if (!real || !dladdr(real, &info) || !info.dli_fname) return;
    m = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD); // already loaded: no load happens
    if (!m) return;
  }
  void *none = NULL;
  if (!__atomic_compare_exchange_n(&drv_module, &none, m, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
      !handle)
    dlclose(m); // another thread won: drop the extra reference
}

int cu_is_hook(const void *p) {
  for (int f = 0; f < F_COUNT; f++)
    for (int i = 0; i < INSTANCES; i++)
      if (nd_cu_hook_fn[f][i] == p) return 1;
  return 0;
}

// The hook that calls `real`: the instance already holding it, or a free one; real itself when
// both are taken by other pointers (counted: that path is then not seen).
void *cu_instance_for(int f, void *real) {
  if (!real || cu_is_hook(real)) return real;
  for (int i = 1; i < INSTANCES; i++) {
    void *cur = NULL;
    if (__atomic_compare_exchange_n(&real_fn[f][i], &cur, real, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
        cur == real)
      return nd_cu_hook_fn[f][i];
  }
  ADD(nd_cu_calls.unhooked, 1);
  return real;
}

static int cu_fn_by_symbol(const char *name) {
  for (int f = 0; f < F_COUNT; f++)
    if (strcmp(nd_cu_names[f].sym, name) == 0) return f;
  return -1;
}

int cu_fn_by_base(const char *name, int version) {
  for (int f = 0; f < F_COUNT; f++)
    if (nd_cu_names[f].base && version >= nd_cu_names[f].minver && version < nd_cu_names[f].maxver &&
        strcmp(nd_cu_names[f].base, name) == 0)
      return f;
  return cu_fn_by_symbol(name);
}

int nd_dlsym_filter(void *handle, const char *name, void **out) {
  if (ND_UNLIKELY(!LD(nd_dlsym_next))) nd_dlsym_resolve();
  if (!name || name[0] != 'c' || name[1] != 'u' || !nd_dlsym_next) return 0;
  size_t len = strlen(name);
  if (len > 5 && (strcmp(name + len - 5, "_ptsz") == 0 || strcmp(name + len - 5, "_ptds") == 0))
    nd_drv_ptds_seen(); // per-thread default streams: the program's work is in several orders
  int f = cu_fn_by_symbol(name);
  // RTLD_NEXT is relative to the caller: forwarded untouched (libc's dlsym sees its address).
  if (f < 0 || handle == RTLD_NEXT) return 0;
  // The program's lookup, made in its name (a failed one leaves its message, counted as the
  // program's, as without ndmem). RTLD_DEFAULT would find ndmem's own export first: the
  // definition after it is the real one, and NULL when there is none (a process without libcuda
  // still finds no CUDA).
  void *real = nd_dlsym_next(handle == RTLD_DEFAULT ? RTLD_NEXT : handle, name);
  if (real && !cu_is_hook(real)) cu_learn_module(handle == RTLD_DEFAULT ? NULL : handle, real);
  *out = real ? cu_instance_for(f, real) : NULL;
  if (real && *out != real) ADD(nd_cu_calls.answered_dlsym, 1);
  return 1;
}

// ---------------------------------------------------------------- the driver's other functions

struct nd_cu_drv nd_cu_drv;

void *cu_drv_sym(const void *real, const char *name) {
  if (!cu_is_hook(real)) cu_learn_module(NULL, real);
  void *m = __atomic_load_n(&drv_module, __ATOMIC_ACQUIRE);
  void *f = m ? nd_dlsym_own(m, name, 1) : NULL;
  return f && !cu_is_hook(f) ? f : NULL;
}
void *nd_cuda_drv_sym(const void *real, const char *name) { return cu_drv_sym(real, name); }

void cu_drv_resolve(const void *real) {
  if (__atomic_load_n(&nd_cu_drv.ctx_get_device, __ATOMIC_ACQUIRE)) return;
  nd_spin_lock(&nd_cu_drv.lock);
  if (!nd_cu_drv.ctx_get_device) {
    nd_cu_drv.total_mem = (total_mem_fn)cu_drv_sym(real, "cuDeviceTotalMem_v2");
    nd_cu_drv.ptr_attr = (ptr_attr_fn)cu_drv_sym(real, "cuPointerGetAttribute");
    __atomic_store_n(&nd_cu_drv.ctx_get_device, (ctx_get_device_fn)cu_drv_sym(real, "cuCtxGetDevice"),
                     __ATOMIC_RELEASE);
  }
  nd_spin_unlock(&nd_cu_drv.lock);
}

// The calling thread's current device, or -1 (no context, or beyond ndmem's 16).
int cu_current_device(const void *real) {
  cu_drv_resolve(real);
  nd_cu_device d = -1;
  if (!nd_cu_drv.ctx_get_device || nd_cu_drv.ctx_get_device(&d) != ND_CUDA_SUCCESS) return -1;
  return d >= 0 && d < NDMEM_MAX_DEVICES ? d : -1;
}

int cu_pointer_device(const void *real, nd_cu_deviceptr p) {
  cu_drv_resolve(real);
  int d = -1;
  if (!nd_cu_drv.ptr_attr || nd_cu_drv.ptr_attr(&d, ND_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) != ND_CUDA_SUCCESS)
    return -1;
  return d >= 0 && d < NDMEM_MAX_DEVICES ? d : -1;
}

