// SPDX-License-Identifier: MIT
// cuda.c: device memory. The CUDA driver API's memory functions are interposed, not the
// runtime's: cudart is linked statically into most binaries (nvcc's default, libtorch_cuda) and
// reaches the driver by dlopen("libcuda.so.1") + dlsym(handle, "cuGetProcAddress_v2"), then asks
// cuGetProcAddress for every other function. A dlsym with a handle never sees a preloaded
// library, so ndmem exports dlsym (a tail-jumping stub, below) and answers lookups of the hooked
// names, and of cuGetProcAddress itself, with its hooks; a program linked against libcuda binds to
// the exported hooks directly. libcuda is never loaded here: every real function comes from a
// lookup the program made, or from the module it already loaded.
//
// Each hooked function has three entry points: the exported one (its real function is the next
// definition of the same name) and two that take whatever pointer a dlsym or cuGetProcAddress
// answer held (the stream variants of cuMemAllocAsync come back under one name with different
// pointers: each hook calls exactly the pointer it replaced, so per-thread-stream semantics are
// kept whatever the flags meant).
//
// Accounting is exact and always by stack: device allocations are few and large. The live blocks
// live in a table of their own (a device address, or a cuMemCreate handle, is not a host block).
// The driver's own host memory inside a hooked call (bookkeeping, the pinned pages it maps) is
// not the program's and is not counted (the thread is BUSY), so pinned memory counts once, as
// kind pinned.
#include "runtime/shim.h"
#include "runtime/module.h"

#include "device/cuda_hooks.h"
#include "device/cuda_abi.h"
#include "device/driver.h"
#include "device/dws.h"
#include "device/spill.h"
#include "common/fmt.h"
#include "limits/limits.h"
#include "stacks/names.h"
#include "common/os.h"
#include "account/sites.h"
#include "output/trace.h"
#include "common/trace_format.h"
#include "ws/ws.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// Function pointers travel as void * here, as dlsym and cuGetProcAddress hand them out (POSIX
// requires the conversion to work); and a '%' limit needs a 128-bit product.
#pragma GCC diagnostic ignored "-Wpedantic"

// ---------------------------------------------------------------- dlsym

// The next dlsym (libc's), and the filter: 1 when *out answers the lookup, 0 to forward it.
__attribute__((visibility("hidden"))) void *(*nd_dlsym_next)(void *, const char *);
__attribute__((visibility("hidden"))) int nd_dlsym_filter(void *handle, const char *name, void **out);

// glibc's dlsym finds RTLD_NEXT relative to its caller's return address, so the stub must not
// be a frame of its own when it forwards: it asks the filter, restores the arguments and jumps to
// libc's dlsym with the program's return address still on the stack.
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "  .cfi_startproc\n"
        "  push %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  push %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  sub $24, %rsp\n" // 16-byte aligned for the call; 0(%rsp) receives *out
        "  .cfi_adjust_cfa_offset 24\n"
        "  mov %rsp, %rdx\n"
        "  call nd_dlsym_filter\n"
        "  mov (%rsp), %rcx\n"
        "  add $24, %rsp\n"
        "  .cfi_adjust_cfa_offset -24\n"
        "  pop %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  pop %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  test %eax, %eax\n"
        "  jz 1f\n"
        "  mov %rcx, %rax\n"
        "  ret\n"
        "1:\n"
        "  jmp *nd_dlsym_next(%rip)\n"
        "  .cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        "dlsym:\n"
        "  stp x29, x30, [sp, #-48]!\n"
        "  mov x29, sp\n"
        "  stp x0, x1, [sp, #16]\n"
        "  add x2, sp, #32\n"
        "  bl nd_dlsym_filter\n"
        "  ldr x3, [sp, #32]\n"
        "  ldp x0, x1, [sp, #16]\n"
        "  ldp x29, x30, [sp], #48\n"
        "  cbz w0, 1f\n"
        "  mov x0, x3\n"
        "  ret\n"
        "1:\n"
        "  adrp x16, nd_dlsym_next\n"
        "  ldr x16, [x16, :lo12:nd_dlsym_next]\n"
        "  br x16\n"
        ".size dlsym, .-dlsym\n");
#else
#error "the dlsym stub is written for x86-64 and aarch64"
#endif

static void resolve_dlsym(void) {
  void *f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!f) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (!f) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); // aarch64's first version
  __atomic_store_n(&nd_dlsym_next, (void *(*)(void *, const char *))f, __ATOMIC_RELEASE);
}

// ndmem's own lookups (not the program's): out of the program's books (BUSY mode: glibc
// allocates a failed lookup's message, which the program's heap counters must not see).
// `clear`: a lookup on one of the program's threads (its own dlsym and cuGetProcAddress calls,
// which are hooked) also leaves nothing for that thread's dlerror: glibc frees the message at the
// second dlerror that reads it, both here. The first dlerror translates the message through
// gettext, which takes glibc's setlocale lock and reads the environment: never from a malloc or
// mmap hook (a hook may run inside setlocale holding that lock: python.h), never from ndmem's
// threads (a shell replaces `environ` as it likes; bash crashed in gettext's getenv). On those
// threads a failed lookup's message stays in the thread's own dlerror state, which nothing reads.
void *nd_dlsym_own(void *handle, const char *name, int clear) {
  if (!__atomic_load_n(&nd_dlsym_next, __ATOMIC_ACQUIRE)) resolve_dlsym();
  if (!nd_dlsym_next) return NULL;
  nd_tls_t *t = &nd_tls;
  unsigned char mode = t->mode;
  if (mode == ND_T_COUNT) t->mode = ND_T_BUSY;
  void *r = nd_dlsym_next(handle, name);
  if (!r && clear) {
    dlerror();
    dlerror();
  }
  if (mode == ND_T_COUNT) t->mode = mode;
  return r;
}

// ---------------------------------------------------------------- the hooked functions

enum cu_fn {
  F_ALLOC, F_PITCH, F_FREE, F_MANAGED, F_HOST, F_HOSTALLOC, F_FREEHOST, F_ASYNC, F_ASYNC_PTSZ,
  F_POOL, F_POOL_PTSZ, F_FREEASYNC, F_FREEASYNC_PTSZ, F_CREATE, F_RELEASE, F_MAP, F_UNMAP,
  F_GETINFO, F_PROC, F_PROC2, F_STREAM, F_STREAM_PRIO, F_STREAM_DESTROY, F_COUNT
};
_Static_assert(F_COUNT == ND_CUDA_FN_USED && F_COUNT <= ND_CUDA_FNS, "a call count per hooked function");

// sym: the exported name; base: the name cuGetProcAddress is asked for, answered with this entry
// point for versions in [minver, maxver).
static const struct cu_name {
  const char *sym, *base;
  int minver, maxver;
} names[F_COUNT] = {
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

#define INSTANCES 3 // 0: the exported name; 1, 2: answers to lookups
static void *real_fn[F_COUNT][INSTANCES]; // atomic
static void *const hook_fn[F_COUNT][INSTANCES];

// What happened, for the CUDA record and the summary (atomic).
static struct {
  uint64_t calls[F_COUNT];
  uint64_t answered_dlsym, answered_proc; // lookups answered with a hook
  uint64_t unhooked;       // lookups left to the driver: no instance left for another pointer
  uint64_t unknown_frees;  // frees of memory ndmem did not see allocated (before it saw libcuda)
  uint64_t untracked;      // allocations not kept in the table (no memory for it)
  uint64_t first_ns;       // the first hooked call
  int used;                // a hooked function was called
} C;

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

static int is_hook(const void *p);

// The driver's module as the program reached it: the handle of a dlsym that found a hooked name,
// or the module of a function cuGetProcAddress handed out (atomic; never loaded by ndmem).
static void *drv_module;

static void *real_of(int f, int inst) {
  void *r = __atomic_load_n(&real_fn[f][inst], __ATOMIC_ACQUIRE);
  if (ND_LIKELY(r) || inst) return r;
  // The exported name: the next definition after libndmem (libcuda, which the program loaded to
  // bind to this name; called from here, RTLD_NEXT is relative to libndmem), else the one in the
  // driver's module: a driver dlopened without RTLD_GLOBAL is not in the global scope, and one
  // whose own references to its functions are interposable hands out ndmem's exported hook.
  if (!LD(nd_dlsym_next)) resolve_dlsym();
  if (!nd_dlsym_next) return NULL;
  r = nd_dlsym_own(RTLD_NEXT, names[f].sym, 1);
  void *m = __atomic_load_n(&drv_module, __ATOMIC_ACQUIRE);
  if (!r && m) r = nd_dlsym_own(m, names[f].sym, 1);
  if (r && is_hook(r)) r = NULL; // never ndmem's own
  if (r) __atomic_store_n(&real_fn[f][inst], r, __ATOMIC_RELEASE);
  return r;
}

// Remembers the driver's module from a real function of it (dladdr) or a handle.
static void learn_module(void *handle, const void *real) {
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

static int is_hook(const void *p) {
  for (int f = 0; f < F_COUNT; f++)
    for (int i = 0; i < INSTANCES; i++)
      if (hook_fn[f][i] == p) return 1;
  return 0;
}

// The hook that calls `real`: the instance already holding it, or a free one; real itself when
// both are taken by other pointers (counted: that path is then not seen).
static void *instance_for(int f, void *real) {
  if (!real || is_hook(real)) return real;
  for (int i = 1; i < INSTANCES; i++) {
    void *cur = NULL;
    if (__atomic_compare_exchange_n(&real_fn[f][i], &cur, real, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
        cur == real)
      return hook_fn[f][i];
  }
  ADD(C.unhooked, 1);
  return real;
}

static int fn_by_symbol(const char *name) {
  for (int f = 0; f < F_COUNT; f++)
    if (strcmp(names[f].sym, name) == 0) return f;
  return -1;
}

static int fn_by_base(const char *name, int version) {
  for (int f = 0; f < F_COUNT; f++)
    if (names[f].base && version >= names[f].minver && version < names[f].maxver &&
        strcmp(names[f].base, name) == 0)
      return f;
  return fn_by_symbol(name);
}

int nd_dlsym_filter(void *handle, const char *name, void **out) {
  if (ND_UNLIKELY(!LD(nd_dlsym_next))) resolve_dlsym();
  if (!name || name[0] != 'c' || name[1] != 'u' || !nd_dlsym_next) return 0;
  size_t len = strlen(name);
  if (len > 5 && (strcmp(name + len - 5, "_ptsz") == 0 || strcmp(name + len - 5, "_ptds") == 0))
    nd_drv_ptds_seen(); // per-thread default streams: the program's work is in several orders
  int f = fn_by_symbol(name);
  // RTLD_NEXT is relative to the caller: forwarded untouched (libc's dlsym sees its address).
  if (f < 0 || handle == RTLD_NEXT) return 0;
  // The program's lookup, made in its name (a failed one leaves its message, counted as the
  // program's, as without ndmem). RTLD_DEFAULT would find ndmem's own export first: the
  // definition after it is the real one, and NULL when there is none (a process without libcuda
  // still finds no CUDA).
  void *real = nd_dlsym_next(handle == RTLD_DEFAULT ? RTLD_NEXT : handle, name);
  if (real && !is_hook(real)) learn_module(handle == RTLD_DEFAULT ? NULL : handle, real);
  *out = real ? instance_for(f, real) : NULL;
  if (real && *out != real) ADD(C.answered_dlsym, 1);
  return 1;
}

// ---------------------------------------------------------------- the driver's other functions

// Functions ndmem calls itself, from the module that holds a real function the program reached.
typedef nd_cu_result (*ctx_get_device_fn)(nd_cu_device *);
typedef nd_cu_result (*total_mem_fn)(size_t *, nd_cu_device);
typedef nd_cu_result (*ptr_attr_fn)(void *, int, nd_cu_deviceptr);
static struct {
  ctx_get_device_fn ctx_get_device;
  total_mem_fn total_mem;
  ptr_attr_fn ptr_attr;
  int lock;
} drv;

static void *drv_sym(const void *real, const char *name) {
  if (!is_hook(real)) learn_module(NULL, real);
  void *m = __atomic_load_n(&drv_module, __ATOMIC_ACQUIRE);
  void *f = m ? nd_dlsym_own(m, name, 1) : NULL;
  return f && !is_hook(f) ? f : NULL;
}
void *nd_cuda_drv_sym(const void *real, const char *name) { return drv_sym(real, name); }

static void drv_resolve(const void *real) {
  if (__atomic_load_n(&drv.ctx_get_device, __ATOMIC_ACQUIRE)) return;
  nd_spin_lock(&drv.lock);
  if (!drv.ctx_get_device) {
    drv.total_mem = (total_mem_fn)drv_sym(real, "cuDeviceTotalMem_v2");
    drv.ptr_attr = (ptr_attr_fn)drv_sym(real, "cuPointerGetAttribute");
    __atomic_store_n(&drv.ctx_get_device, (ctx_get_device_fn)drv_sym(real, "cuCtxGetDevice"),
                     __ATOMIC_RELEASE);
  }
  nd_spin_unlock(&drv.lock);
}

// The calling thread's current device, or -1 (no context, or beyond ndmem's 16).
static int current_device(const void *real) {
  drv_resolve(real);
  nd_cu_device d = -1;
  if (!drv.ctx_get_device || drv.ctx_get_device(&d) != ND_CUDA_SUCCESS) return -1;
  return d >= 0 && d < NDMEM_MAX_DEVICES ? d : -1;
}

static int pointer_device(const void *real, nd_cu_deviceptr p) {
  drv_resolve(real);
  int d = -1;
  if (!drv.ptr_attr || drv.ptr_attr(&d, ND_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) != ND_CUDA_SUCCESS)
    return -1;
  return d >= 0 && d < NDMEM_MAX_DEVICES ? d : -1;
}

// ---------------------------------------------------------------- per device

static struct dev {
  int64_t live, peak;       // device bytes (atomic): exact, and what the limit checks
  int64_t granted;          // bytes of the blocks the driver granted (atomic): the peak's basis
  int64_t limit;            // bytes (0: none), resolved from the setting once the total is known
  int64_t total;            // the device's memory (0: not asked yet)
  int resolved;             // limit resolved
  uint64_t cls[ND_DEV_CLASSES][4]; // allocs, frees, alloc bytes, free bytes per class
  uint64_t breaches, failed, getinfo_calls, getinfo_clamped;
  ndmem_cupti_device_t cupti; // CUPTI's view (under cupti_lock)
  int cupti_seen;
} devs[NDMEM_MAX_DEVICES];
static int cupti_lock;

static void raise_peak(int64_t *peak, int64_t v) {
  int64_t p = LD(*peak);
  while (v > p && !__atomic_compare_exchange_n(peak, &p, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

// The setting for device d: its own, else the one for every device.
static void limit_setting(int d, int64_t *v, int *frac) {
  int i = nd_cfg.max_device_given & (1u << d) ? d : NDMEM_MAX_DEVICES;
  *v = nd_cfg.max_device[i];
  *frac = (nd_cfg.max_device_frac >> i) & 1;
}

// The limit of device d in bytes; a '%' setting is resolved against the device's memory the first
// time the device is used (the driver is loaded and initialised by then).
static int64_t dev_limit(int d, const void *real) {
  struct dev *v = &devs[d];
  if (__atomic_load_n(&v->resolved, __ATOMIC_ACQUIRE)) return LD(v->limit);
  int64_t set;
  int frac;
  limit_setting(d, &set, &frac);
  drv_resolve(real);
  size_t total = 0;
  if (drv.total_mem && drv.total_mem(&total, d) == ND_CUDA_SUCCESS) __atomic_store_n(&v->total, (int64_t)total, __ATOMIC_RELAXED);
  int64_t lim = set;
  if (frac) {
    // a fraction in units of 2^-40 of the device's memory; unknown memory: no limit (said once)
    lim = total ? (int64_t)(((unsigned __int128)total * (uint64_t)set) >> 40) : 0;
    if (!total && !nd_quiet()) {
      nd_buf_t b;
      nd_buf_reset(&b);
      nd_buf_str(&b, "ndmem: NDMEM_MAX_DEVICE_BYTES: the memory of device ");
      nd_buf_u64(&b, (uint64_t)d);
      nd_buf_str(&b, " is unknown (cuDeviceTotalMem failed), so its '%' limit is not applied");
      nd_buf_line(&b, 2);
    }
  }
  __atomic_store_n(&v->limit, lim, __ATOMIC_RELAXED);
  __atomic_store_n(&v->resolved, 1, __ATOMIC_RELEASE);
  return lim;
}

// ---------------------------------------------------------------- live blocks

// Open addressing by (key, class): a device address, a pinned or managed host address, or a
// cuMemCreate handle (handles and addresses are different spaces). Under one spinlock: device
// calls cost microseconds in the driver, and the lock is never held across one.
typedef struct blk {
  uint64_t key;
  uint64_t size;
  nd_site_t *site;
  uint64_t born, cycle;
  uint16_t kind;
  uint8_t cls;   // enum nd_dev_class, or ND_DEV_HOSTMEM for pinned and managed memory
  uint8_t state; // 0 empty, 1 full, 2 deleted
  uint8_t flags; // enum blk_flags
} blk_t;
enum { ND_DEV_HOSTMEM = ND_DEV_CLASSES };
// Where a device block's memory came from: the driver (0), a device workspace's arena (no driver
// call; its bytes are in the arena's), or host memory (spill: no device memory at all). ROUTED:
// made while the device's workspace looks at allocations (its free is reported to it).
enum blk_flags { BLK_ARENA = 1, BLK_SPILL = 2, BLK_ROUTED = 4 };
// The driver made it: it is in the device's classes (what CUPTI sees too), live bytes and peak.
static int from_driver(int flags) { return !(flags & (BLK_ARENA | BLK_SPILL)); }

static struct {
  blk_t *v;
  size_t cap, used, live; // used: full + deleted
  int lock;
} tab;

static size_t slot_of(uint64_t key, int cls, size_t cap) {
  uint64_t h = (key ^ ((uint64_t)cls << 59)) * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & (cap - 1);
}

static int tab_grow(void) {
  size_t cap = tab.cap ? tab.cap * 2 : 1024;
  while (tab.live * 2 >= cap) cap *= 2;
  blk_t *v = nd_os_map(cap * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < tab.cap; i++) {
    if (tab.v[i].state != 1) continue;
    size_t j = slot_of(tab.v[i].key, tab.v[i].cls, cap);
    while (v[j].state) j = (j + 1) & (cap - 1);
    v[j] = tab.v[i];
  }
  if (tab.v) nd_os_unmap(tab.v, tab.cap * sizeof *tab.v);
  tab.v = v;
  tab.cap = cap;
  tab.used = tab.live;
  return 0;
}

// Finds (key, cls); with `take` the entry is removed. 1 when found.
static int tab_find(uint64_t key, int cls, blk_t *out, int take) {
  if (!tab.cap) return 0;
  for (size_t j = slot_of(key, cls, tab.cap);; j = (j + 1) & (tab.cap - 1)) {
    blk_t *b = &tab.v[j];
    if (!b->state) return 0;
    if (b->state == 1 && b->key == key && b->cls == cls) {
      if (out) *out = *b;
      if (take) {
        b->state = 2;
        tab.live--;
      }
      return 1;
    }
  }
}

// Inserts b. The driver just handed out its key, so an entry already there is one whose release
// ndmem did not see: replaced, and given back as *stale (1).
static int tab_put(const blk_t *b, blk_t *stale) {
  int had = tab_find(b->key, b->cls, stale, 1);
  if ((tab.used + 1) * 2 > tab.cap && tab_grow() != 0) return had ? 1 : -1;
  size_t j = slot_of(b->key, b->cls, tab.cap);
  while (tab.v[j].state == 1) j = (j + 1) & (tab.cap - 1);
  if (!tab.v[j].state) tab.used++;
  tab.v[j] = *b;
  tab.v[j].state = 1;
  tab.live++;
  return had;
}

// ---------------------------------------------------------------- accounting

static int dev_kind(int d) { return NDMEM_KIND_DEVICE0 + d; }

typedef struct call {
  nd_tls_t *t;
  unsigned char mode;
  int acct; // this thread accounts
} call_t;

static void enter(call_t *c, int f) {
  c->t = &nd_tls;
  // NEW settles the thread; FORKED (the forking thread in a child) creates the child's trace
  c->mode = c->t->mode == ND_T_COUNT ? ND_T_COUNT : (unsigned char)nd_thread_prepare(c->t);
  c->acct = (c->mode == ND_T_COUNT || c->mode == ND_T_DEAD) && nd_accounting_on();
  if (c->mode == ND_T_COUNT) c->t->mode = ND_T_BUSY; // the driver's own host memory is not counted
  if (c->acct) {
    ADD(C.calls[f], 1);
    if (!LD(C.used)) {
      uint64_t zero = 0;
      __atomic_compare_exchange_n(&C.first_ns, &zero, nd_os_mono_ns(), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
      __atomic_store_n(&C.used, 1, __ATOMIC_RELAXED);
    }
  }
}

static void leave(call_t *c) {
  if (c->mode == ND_T_COUNT) c->t->mode = ND_T_COUNT;
}

static void count(call_t *c, int kind, int alloc, uint64_t bytes) {
  nd_shard_t *s = c->t->shard;
  if (s) {
    if (alloc) nd_count_alloc(s, kind, bytes);
    else nd_count_free(s, kind, bytes);
    nd_shard_publish(s, kind); // device calls are rare: the process totals stay exact
  } else {
    nd_late_adjust(kind, alloc, alloc ? bytes : 0, !alloc, alloc ? 0 : bytes, NDMEM_FN_COUNT);
  }
}

static void dev_book(int kind, int cls, int alloc, uint64_t bytes) {
  if (kind < NDMEM_KIND_DEVICE0 || cls >= ND_DEV_CLASSES) return;
  struct dev *v = &devs[kind - NDMEM_KIND_DEVICE0];
  ADD(v->cls[cls][alloc ? 0 : 1], 1);
  ADD(v->cls[cls][alloc ? 2 : 3], bytes);
}

// The site of a device block about to be made (the device workspaces key their cycles on it).
static nd_site_t *site_here(call_t *c, int kind) {
  return c->t->shard ? nd_track_site_here(kind) : NULL;
}

static void untrack(call_t *c, const blk_t *b);

// A new block: counted, kept with its stack (`site`, taken before the call; or here). Device
// memory from the driver raises the device's peak; an arena's or host memory does not.
static void track_at(call_t *c, uint64_t key, int cls, int kind, uint64_t size, nd_site_t *site,
                     int flags) {
  blk_t b = {key, size, site, site ? nd_os_mono_ns() : 0,
             __atomic_load_n(&nd_cycle_clock, __ATOMIC_RELAXED), (uint16_t)kind, (uint8_t)cls, 1,
             (uint8_t)flags};
  blk_t stale;
  nd_spin_lock(&tab.lock);
  int had = tab_put(&b, &stale);
  nd_spin_unlock(&tab.lock);
  if (had < 0) ADD(C.untracked, 1);
  if (had == 1) { // released where ndmem did not see it: its books close now
    ADD(C.unknown_frees, 1);
    untrack(c, &stale);
  }
  count(c, kind, 1, size);
  // The device's classes count what reached the driver (what CUPTI sees too): a workspace's
  // arenas, not the blocks it served (its hits), and nothing served from host memory.
  if (from_driver(flags)) dev_book(kind, cls, 1, size);
  if (kind >= NDMEM_KIND_DEVICE0 && from_driver(flags)) {
    // granted blocks only: reservations in flight are not memory
    struct dev *v = &devs[kind - NDMEM_KIND_DEVICE0];
    raise_peak(&v->peak, __atomic_add_fetch(&v->granted, (int64_t)size, __ATOMIC_RELAXED));
  }
  if (site) nd_site_add(site, 1, size);
}

static void track(call_t *c, uint64_t key, int cls, int kind, uint64_t size) {
  track_at(c, key, cls, kind, size, site_here(c, kind), 0);
}

static int take(uint64_t key, int cls, blk_t *out) {
  nd_spin_lock(&tab.lock);
  int found = tab_find(key, cls, out, 1);
  nd_spin_unlock(&tab.lock);
  return found;
}

static void restore(const blk_t *b) {
  blk_t stale;
  nd_spin_lock(&tab.lock);
  tab_put(b, &stale);
  nd_spin_unlock(&tab.lock);
}

// The books of a block that was released.
static void untrack(call_t *c, const blk_t *b) {
  count(c, b->kind, 0, b->size);
  if (from_driver(b->flags)) dev_book(b->kind, b->cls, 0, b->size);
  if (b->kind >= NDMEM_KIND_DEVICE0 && from_driver(b->flags)) {
    struct dev *v = &devs[b->kind - NDMEM_KIND_DEVICE0];
    __atomic_fetch_sub(&v->live, (int64_t)b->size, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&v->granted, (int64_t)b->size, __ATOMIC_RELAXED);
  }
  if (b->site && !nd_track_inherited(b->born)) nd_site_sub(b->site, 1, b->size);
}

// ---------------------------------------------------------------- the device limit

// Reserves `bytes` on device d: 1 when they fit under its limit (or NDMEM_ON_LIMIT=warn let them
// through), 0 when the allocation must fail with CUDA_ERROR_OUT_OF_MEMORY. The reservation is the
// device's live counter itself, so racing threads never overshoot together.
static int reserve(int d, uint64_t bytes, int fn, const void *real) {
  struct dev *v = &devs[d];
  int64_t lim = dev_limit(d, real), live = LD(v->live);
  for (;;) {
    if (lim && live + (int64_t)bytes > lim) break;
    if (__atomic_compare_exchange_n(&v->live, &live, live + (int64_t)bytes, 1, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return 1; // the peak rises when the driver has granted it (track)
  }
  // NDMEM_ON_DEVICE_LIMIT=host: the caller serves it from host memory (counted failed if it
  // cannot)
  int action = nd_spill_on() ? ND_ON_LIMIT_HOST : nd_limits_action();
  uint64_t n = ADD(v->breaches, 1) + 1;
  if ((n & (n - 1)) == 0 || action == ND_ON_LIMIT_ABORT) {
    nd_limits_say_breach(d, action, bytes, 0, "tracked", live, 1, "maxDeviceBytes", lim, n, NULL);
    if (n == 1 || action == ND_ON_LIMIT_ABORT) nd_limits_say_top_sites(dev_kind(d));
    nd_limits_device_breach(d, action, fn, bytes, live, lim, n);
  }
  if (action == ND_ON_LIMIT_HOST) return 0;
  if (action == ND_ON_LIMIT_WARN) {
    ADD(v->live, (int64_t)bytes);
    return 1;
  }
  if (action == ND_ON_LIMIT_ABORT) nd_limits_abort();
  ADD(v->failed, 1);
  return 0;
}

static void unreserve(int d, uint64_t bytes) {
  __atomic_fetch_sub(&devs[d].live, (int64_t)bytes, __ATOMIC_RELAXED);
}

// A device workspace's arena: device memory ndmem holds, under the limit like the program's but
// never a breach of it (the workspace then serves nothing and the program's own allocations meet
// the limit as before). 0, or -1 when it does not fit.
int nd_cuda_arena_reserve(int d, uint64_t bytes) {
  struct dev *v = &devs[d];
  int64_t lim = LD(v->resolved) ? LD(v->limit) : 0, live = LD(v->live);
  for (;;) {
    if (lim && live + (int64_t)bytes > lim) return -1;
    if (__atomic_compare_exchange_n(&v->live, &live, live + (int64_t)bytes, 1, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      break;
  }
  return 0;
}

// The driver made the reserved arena (a cuMemAlloc it saw): the device's peak and classes.
void nd_cuda_arena_made(int d, uint64_t bytes) {
  raise_peak(&devs[d].peak, __atomic_add_fetch(&devs[d].granted, (int64_t)bytes, __ATOMIC_RELAXED));
  dev_book(dev_kind(d), ND_DEV_PLAIN, 1, bytes);
}

// An arena's bytes leave the device's books: freed (made), or never made.
void nd_cuda_arena_release(int d, uint64_t bytes, int made) {
  unreserve(d, bytes);
  if (!made) return;
  __atomic_fetch_sub(&devs[d].granted, (int64_t)bytes, __ATOMIC_RELAXED);
  dev_book(dev_kind(d), ND_DEV_PLAIN, 0, bytes);
}

// An allocation refused (over the limit: why LIMIT; by a full device: FULL) served from host
// memory under NDMEM_ON_DEVICE_LIMIT=host. CUDA_SUCCESS and *dptr, or the refusal's error.
static nd_cu_result spill(call_t *c, void *real, int d, int cls, uint64_t n, nd_site_t *site,
                          int why, nd_cu_deviceptr *dptr) {
  if (!site) site = site_here(c, dev_kind(d));
  if (nd_spill_alloc(d, real, n, site, why, dptr) != 0) {
    ADD(devs[d].failed, 1);
    return ND_CUDA_ERROR_OUT_OF_MEMORY;
  }
  track_at(c, *dptr, cls, dev_kind(d), n, site, BLK_SPILL);
  return ND_CUDA_SUCCESS;
}

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
      __atomic_store_n(&get, (stream_dev_fn)drv_sym(real, "cuStreamGetDevice"), __ATOMIC_RELAXED);
      __atomic_store_n(&tried, 1, __ATOMIC_RELEASE);
    }
    nd_cu_device d = -1;
    stream_dev_fn f = __atomic_load_n(&get, __ATOMIC_RELAXED);
    if (f && f(s, &d) == ND_CUDA_SUCCESS) return d >= 0 && d < NDMEM_MAX_DEVICES ? d : -1;
  }
  return current_device(real);
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
  enter(&c, f);
  int async = f == F_ASYNC || f == F_ASYNC_PTSZ, from_pool = f == F_POOL || f == F_POOL_PTSZ;
  int ptsz = f == F_ASYNC_PTSZ || f == F_POOL_PTSZ;
  nd_cu_stream ws = ws_stream(async || from_pool, s, ptsz);
  int d = !c.acct || !dptr ? -1 : async ? stream_device(real, s) : current_device(real);
  int cls = async || from_pool ? ND_DEV_ASYNC : ND_DEV_PLAIN;
  // A device workspace first: what it serves comes from its arena, with no driver call.
  nd_site_t *site = NULL;
  int routed = 0;
  if (d >= 0 && !from_pool && nd_dws_on(d)) {
    site = site_here(&c, dev_kind(d));
    int r = nd_dws_alloc(d, real, n, async, ws, (uint64_t)(uintptr_t)site, dptr);
    if (r == ND_DWS_SERVED) {
      track_at(&c, *dptr, cls, dev_kind(d), n, site, BLK_ARENA | BLK_ROUTED);
      leave(&c);
      return ND_CUDA_SUCCESS;
    }
    if (r == ND_DWS_FAIL) {
      leave(&c);
      return ND_CUDA_ERROR_OUT_OF_MEMORY;
    }
    routed = r == ND_DWS_DRIVER;
  }
  if (d >= 0 && !reserve(d, n, f, real)) {
    nd_cu_result rc = nd_spill_on() ? spill(&c, real, d, cls, n, site, ND_SPILL_WHY_LIMIT, dptr)
                                    : ND_CUDA_ERROR_OUT_OF_MEMORY;
    leave(&c);
    return rc;
  }
  nd_cu_result rc = async       ? ((async_fn)real)(dptr, n, s)
                    : from_pool ? ((pool_fn)real)(dptr, n, pool, s)
                                : ((alloc_fn)real)(dptr, n);
  if (d >= 0 && rc != ND_CUDA_SUCCESS) unreserve(d, n);
  if (d >= 0 && rc == ND_CUDA_ERROR_OUT_OF_MEMORY && nd_spill_on()) { // the device is full
    rc = spill(&c, real, d, cls, n, site, ND_SPILL_WHY_FULL, dptr);
    leave(&c);
    return rc;
  }
  if (d >= 0 && rc == ND_CUDA_SUCCESS && (async || from_pool)) {
    int at = pointer_device(real, *dptr);
    if (at >= 0 && at != d) {
      unreserve(d, n);
      d = at;
      routed = 0;
      if (!reserve(d, n, f, real)) {
        freeasync_fn fr = (freeasync_fn)drv_sym(real, ptsz ? "cuMemFreeAsync_ptsz" : "cuMemFreeAsync");
        if (fr) fr(*dptr, s);
        leave(&c);
        return ND_CUDA_ERROR_OUT_OF_MEMORY;
      }
    }
  }
  if (d >= 0 && rc == ND_CUDA_SUCCESS) {
    track_at(&c, *dptr, cls, dev_kind(d), n, site ? site : site_here(&c, dev_kind(d)),
             routed ? BLK_ROUTED : 0);
    if (routed) nd_dws_external(d, *dptr, n);
  }
  leave(&c);
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
  enter(&c, F_PITCH);
  int d = c.acct && dptr && pitch ? current_device(real) : -1;
  uint64_t want = (uint64_t)w * h;
  if (d >= 0 && !reserve(d, want, F_PITCH, real)) {
    // host memory: rows of the width rounded up to 512 bytes, as a device's pitch would be
    nd_cu_result rc = ND_CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t p = ((uint64_t)w + 511) & ~(uint64_t)511;
    if (nd_spill_on() && h && p <= UINT64_MAX / h) {
      rc = spill(&c, real, d, ND_DEV_PLAIN, p * h, NULL, ND_SPILL_WHY_LIMIT, dptr);
      if (rc == ND_CUDA_SUCCESS) *pitch = (size_t)p;
    }
    leave(&c);
    return rc;
  }
  nd_cu_result rc = ((pitch_fn)real)(dptr, pitch, w, h, elem);
  if (d >= 0) {
    unreserve(d, want);
    if (rc == ND_CUDA_SUCCESS) {
      uint64_t got = (uint64_t)*pitch * h;
      if (reserve(d, got, F_PITCH, real)) {
        track(&c, *dptr, ND_DEV_PLAIN, dev_kind(d), got);
      } else {
        free_fn fr = (free_fn)drv_sym(real, "cuMemFree_v2");
        if (fr) fr(*dptr);
        rc = ND_CUDA_ERROR_OUT_OF_MEMORY;
      }
    }
  }
  leave(&c);
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
  enter(&c, f);
  blk_t b;
  int found = c.acct && key && take(key, cls, &b);
  int async = f == F_FREEASYNC || f == F_FREEASYNC_PTSZ;
  if (!found && c.acct && key && cls != ND_DEV_HOSTMEM) // an async free of a plain block, or back
    found = take(key, async ? ND_DEV_PLAIN : ND_DEV_ASYNC, &b);
  int d = found && b.kind >= NDMEM_KIND_DEVICE0 ? b.kind - NDMEM_KIND_DEVICE0 : -1;
  nd_cu_stream ws = ws_stream(async, s, f == F_FREEASYNC_PTSZ);
  if (d >= 0 && (b.flags & (BLK_ARENA | BLK_SPILL))) { // ndmem's memory: no driver call for it
    nd_cu_result rc = ND_CUDA_SUCCESS;
    if (b.flags & BLK_ARENA) nd_dws_free(d, key, b.size, async, ws);
    else rc = nd_spill_free(d, key, b.size, async, ws);
    if (rc == ND_CUDA_SUCCESS) untrack(&c, &b);
    else restore(&b);
    leave(&c);
    return rc;
  }
  nd_cu_result rc = cls == ND_DEV_HOSTMEM ? ((freehost_fn)real)((void *)(uintptr_t)key)
                    : async               ? ((freeasync_fn)real)(key, s)
                                          : ((free_fn)real)(key);
  if (found) {
    if (rc == ND_CUDA_SUCCESS) untrack(&c, &b);
    else restore(&b);
    if (rc == ND_CUDA_SUCCESS && d >= 0 && (b.flags & BLK_ROUTED)) nd_dws_external_free(d, key, b.size);
  } else if (c.acct && key && rc == ND_CUDA_SUCCESS) {
    ADD(C.unknown_frees, 1);
  }
  leave(&c);
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
  enter(&c, f);
  nd_cu_result rc = f == F_HOST        ? ((host_fn)real)(pp, n)
                    : f == F_HOSTALLOC ? ((hostalloc_fn)real)(pp, n, flags)
                                       : ((managed_fn)real)(dp, n, flags);
  if (c.acct && rc == ND_CUDA_SUCCESS) {
    uint64_t key = f == F_MANAGED ? (uint64_t)*dp : (uintptr_t)*pp;
    track(&c, key, ND_DEV_HOSTMEM, f == F_MANAGED ? NDMEM_KIND_MANAGED : NDMEM_KIND_PINNED, n);
  }
  leave(&c);
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
  nd_spin_lock(&tab.lock);
  int managed = p && tab_find(p, ND_DEV_HOSTMEM, &b, 0) && b.kind == NDMEM_KIND_MANAGED;
  nd_spin_unlock(&tab.lock);
  return managed ? release(F_FREE, real, p, ND_DEV_HOSTMEM, NULL) : h_free(real, p);
}

// The virtual-memory API (PyTorch's expandable segments): cuMemCreate allocates physical memory
// and is what counts; cuMemMap and cuMemUnmap only map it (counted as calls). Memory on a host
// location counts as pinned.
static nd_cu_result h_create(void *real, nd_cu_mem_handle *h, size_t n, const nd_cu_mem_alloc_prop_t *prop,
                             unsigned long long flags) {
  if (!real) return NO_DRIVER;
  call_t c;
  enter(&c, F_CREATE);
  int d = -1, host = 0;
  if (c.acct && h && prop) {
    if (prop->location.type == ND_CU_MEM_LOCATION_TYPE_DEVICE)
      d = prop->location.id >= 0 && prop->location.id < NDMEM_MAX_DEVICES ? prop->location.id : -1;
    else
      host = 1;
  }
  if (d >= 0 && !reserve(d, n, F_CREATE, real)) {
    leave(&c);
    return ND_CUDA_ERROR_OUT_OF_MEMORY;
  }
  nd_cu_result rc = ((create_fn)real)(h, n, prop, flags);
  if (d >= 0 || host) {
    if (rc == ND_CUDA_SUCCESS) track(&c, *h, host ? ND_DEV_HOSTMEM : ND_DEV_VMM, host ? NDMEM_KIND_PINNED : dev_kind(d), n);
    else if (d >= 0) unreserve(d, n);
  }
  leave(&c);
  return rc;
}

static nd_cu_result h_release(void *real, nd_cu_mem_handle h) {
  if (!real) return NO_DRIVER;
  call_t c;
  enter(&c, F_RELEASE);
  blk_t b;
  int found = c.acct && (take(h, ND_DEV_VMM, &b) || take(h, ND_DEV_HOSTMEM, &b));
  nd_cu_result rc = ((release_fn)real)(h);
  if (found) {
    if (rc == ND_CUDA_SUCCESS) untrack(&c, &b);
    else restore(&b);
  } else if (c.acct && rc == ND_CUDA_SUCCESS) {
    ADD(C.unknown_frees, 1);
  }
  leave(&c);
  return rc;
}

static nd_cu_result h_map(void *real, nd_cu_deviceptr p, size_t n, size_t off, nd_cu_mem_handle h,
                          unsigned long long flags) {
  if (!real) return NO_DRIVER;
  call_t c;
  enter(&c, F_MAP);
  nd_cu_result rc = ((map_fn)real)(p, n, off, h, flags);
  leave(&c);
  return rc;
}

static nd_cu_result h_unmap(void *real, nd_cu_deviceptr p, size_t n) {
  if (!real) return NO_DRIVER;
  call_t c;
  enter(&c, F_UNMAP);
  nd_cu_result rc = ((unmap_fn)real)(p, n);
  leave(&c);
  return rc;
}

// Limit-aware cuMemGetInfo: under a limit the device is as large as the limit and its free
// memory is what the limit leaves, never more than the driver's own free memory. Frameworks that
// size their pools from it (JAX's preallocation, PyTorch's memory fraction) stay inside.
static nd_cu_result h_getinfo(void *real, size_t *free_b, size_t *total_b) {
  if (!real) return NO_DRIVER;
  call_t c;
  enter(&c, F_GETINFO);
  nd_cu_result rc = ((getinfo_fn)real)(free_b, total_b);
  int d = c.acct && rc == ND_CUDA_SUCCESS && free_b && total_b ? current_device(real) : -1;
  if (d >= 0) {
    struct dev *v = &devs[d];
    ADD(v->getinfo_calls, 1);
    int64_t lim = dev_limit(d, real);
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
  leave(&c);
  return rc;
}

// The program's streams (device/driver.c): a second stream means its work is in several orders,
// which device workspaces must respect before they reuse memory; a destroyed stream's pending
// frees are marked first (device/dws.c).
static nd_cu_result stream_new(int f, void *real, nd_cu_stream *ps, unsigned flags, int prio) {
  if (!real) return NO_DRIVER;
  call_t c;
  enter(&c, f);
  nd_cu_result rc = f == F_STREAM ? ((stream_fn)real)(ps, flags) : ((stream_prio_fn)real)(ps, flags, prio);
  if (rc == ND_CUDA_SUCCESS && ps) nd_drv_stream_created(*ps, flags, current_device(real));
  leave(&c);
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
  enter(&c, F_STREAM_DESTROY);
  nd_dws_stream_gone(s);
  nd_drv_stream_destroyed(s);
  nd_cu_result rc = ((stream_destroy_fn)real)(s);
  leave(&c);
  return rc;
}

// cuGetProcAddress: the driver's answer, replaced by a hook for the memory functions (and for
// cuGetProcAddress itself, which the CUDA runtime asks for first).
static void answer(const char *sym, void **pfn, int version, nd_cu_u64 flags) {
  // a program that asks for per-thread default streams has its work in several orders
  if (flags & ND_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) nd_drv_ptds_seen();
  if (!sym || !pfn || !*pfn) return;
  int f = fn_by_base(sym, version);
  if (f < 0) return;
  if (!is_hook(*pfn)) learn_module(NULL, *pfn);
  void *h = instance_for(f, *pfn);
  if (h != *pfn) ADD(C.answered_proc, 1);
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
  ND_EXPORT nd_cu_result name params { return body(real_of(F, 0), __VA_ARGS__); }         \
  static nd_cu_result name##_1 params { return body(real_of(F, 1), __VA_ARGS__); }        \
  static nd_cu_result name##_2 params { return body(real_of(F, 2), __VA_ARGS__); }

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
static void *const hook_fn[F_COUNT][INSTANCES] = {
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

// ---------------------------------------------------------------- views

int nd_cuda_used(void) { return LD(C.used); }

// PYTORCH_CUDA_ALLOC_CONF as the process started (enum nd_torch_conf), for the report: whether a
// PyTorch job's device sites are tensors (backend:cudaMallocAsync) or the caching allocator's
// segments. Read once at start-up, without allocating.
static uint64_t torch_conf;
static int has_word(const char *s, const char *w) {
  for (size_t n = strlen(w); *s; s++) {
    size_t i = 0;
    while (i < n && s[i] && (s[i] | 32) == (w[i] | 32)) i++;
    if (i == n) return 1;
  }
  return 0;
}
static void setup(char *const *envp) {
  uint64_t f = 0;
  for (char *const *e = envp; e && *e; e++) {
    if (strncmp(*e, "PYTORCH_CUDA_ALLOC_CONF=", 24) == 0) {
      const char *v = *e + 24;
      f |= ND_TORCH_CONF_SET;
      if (has_word(v, "backend:cudamallocasync")) f |= ND_TORCH_CONF_ASYNC;
      if (has_word(v, "expandable_segments:true")) f |= ND_TORCH_CONF_EXPANDABLE;
    }
  }
  if (nd_cfg.torch_tensors) f |= ND_TORCH_CONF_BY_NDMEM;
  torch_conf = f;
  nd_dws_setup();
}

int nd_cuda_device_stats(int d, ndmem_device_stats_t *out) {
  if (d < 0 || d >= NDMEM_MAX_DEVICES) return -1;
  struct dev *v = &devs[d];
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  out->device = d;
  out->live_bytes = LD(v->live);
  out->peak_bytes = LD(v->peak);
  for (int k = 0; k < ND_DEV_CLASSES; k++) {
    out->allocs += LD(v->cls[k][0]);
    out->frees += LD(v->cls[k][1]);
  }
  if (__atomic_load_n(&v->resolved, __ATOMIC_ACQUIRE)) {
    out->limit_bytes = LD(v->limit);
  } else { // not used yet: a byte setting is known, a '%' one is not until the device is
    int64_t set;
    int frac;
    limit_setting(d, &set, &frac);
    out->limit_bytes = frac ? 0 : set;
  }
  out->total_bytes = LD(v->total);
  out->breaches = LD(v->breaches);
  out->failed = LD(v->failed);
  out->getinfo_calls = LD(v->getinfo_calls);
  out->getinfo_clamped = LD(v->getinfo_clamped);
  nd_spill_device_stats(d, out);
  out->arena_bytes = nd_dws_arena_bytes(d);
  return 0;
}

int nd_cuda_cupti_update(const ndmem_cupti_device_t *in) {
  if (!in || in->size < sizeof *in || in->device < 0 || in->device >= NDMEM_MAX_DEVICES) return -1;
  nd_spin_lock(&cupti_lock);
  devs[in->device].cupti = *in;
  devs[in->device].cupti_seen = 1;
  nd_spin_unlock(&cupti_lock);
  return 0;
}

// One line per device used, and one for pinned and managed memory and the hooks, in the summary.
static void summary(int fd) {
  if (!LD(C.used)) return;
  nd_buf_t b;
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    ndmem_device_stats_t s;
    nd_cuda_device_stats(d, &s);
    if (!s.allocs && !s.getinfo_calls && !s.arena_bytes) continue;
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem[");
    nd_buf_u64(&b, (uint64_t)nd_os_getpid());
    nd_buf_str(&b, "]: device ");
    nd_buf_u64(&b, (uint64_t)d);
    nd_buf_str(&b, ": peak ");
    nd_buf_bytes(&b, s.peak_bytes);
    nd_buf_str(&b, ", live ");
    nd_buf_bytes(&b, s.live_bytes);
    nd_buf_str(&b, " in ");
    nd_buf_u64(&b, s.allocs - s.frees);
    nd_buf_str(&b, " blocks; ");
    nd_buf_u64(&b, s.allocs);
    nd_buf_str(&b, " allocations");
    if (s.arena_bytes) {
      nd_buf_str(&b, " (workspace arenas ");
      nd_buf_bytes(&b, s.arena_bytes);
      nd_buf_str(&b, " of it)");
    }
    if (s.limit_bytes) {
      nd_buf_str(&b, "; maxDeviceBytes ");
      nd_buf_bytes(&b, s.limit_bytes);
      nd_buf_str(&b, ", breaches ");
      nd_buf_u64(&b, s.breaches);
      nd_buf_str(&b, ", failed ");
      nd_buf_u64(&b, s.failed);
    }
    nd_buf_line(&b, fd);
  }
  nd_dws_summary(fd);
  nd_spill_summary(fd);
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem[");
  nd_buf_u64(&b, (uint64_t)nd_os_getpid());
  nd_buf_str(&b, "]: cuda: lookups answered ");
  nd_buf_u64(&b, LD(C.answered_dlsym) + LD(C.answered_proc));
  nd_buf_str(&b, " (cuGetProcAddress ");
  nd_buf_u64(&b, LD(C.answered_proc));
  nd_buf_str(&b, "); fallbacks: unhooked lookups ");
  nd_buf_u64(&b, LD(C.unhooked));
  nd_buf_str(&b, ", frees of unseen memory ");
  nd_buf_u64(&b, LD(C.unknown_frees));
  nd_buf_str(&b, ", untracked ");
  nd_buf_u64(&b, LD(C.untracked));
  nd_buf_line(&b, fd);
}

static void write_records(nd_record_fn rec, void *ctx) {
  if (!LD(C.used)) return;
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    struct dev *v = &devs[d];
    ndmem_device_stats_t s;
    nd_cuda_device_stats(d, &s);
    if (!s.allocs && !s.getinfo_calls && !s.breaches && !v->cupti_seen) continue;
    nd_rec_device_t r;
    memset(&r, 0, sizeof r);
    r.device = (uint32_t)d;
    r.total_bytes = (uint64_t)s.total_bytes;
    r.limit_bytes = (uint64_t)s.limit_bytes;
    r.live_bytes = s.live_bytes;
    r.peak_bytes = s.peak_bytes;
    for (int k = 0; k < ND_DEV_CLASSES; k++) {
      r.cls[k].allocs = LD(v->cls[k][0]);
      r.cls[k].frees = LD(v->cls[k][1]);
      r.cls[k].alloc_bytes = LD(v->cls[k][2]);
      r.cls[k].free_bytes = LD(v->cls[k][3]);
    }
    r.breaches = s.breaches;
    r.failed = s.failed;
    r.getinfo_calls = s.getinfo_calls;
    r.getinfo_clamped = s.getinfo_clamped;
    nd_spin_lock(&cupti_lock);
    if (v->cupti_seen) {
      const ndmem_cupti_device_t *u = &v->cupti;
      r.flags |= ND_DEV_CUPTI;
      r.cupti = (nd_rec_dev_class_t){u->allocs, u->frees, u->alloc_bytes, u->free_bytes};
      r.cupti_pool = (nd_rec_dev_class_t){u->pool_allocs, u->pool_frees, u->pool_alloc_bytes, u->pool_free_bytes};
      r.cupti_pool_reserved = u->pool_reserved_bytes;
      r.cupti_pool_reserved_peak = u->pool_reserved_peak;
      r.cupti_pinned = u->pinned_bytes;
      r.cupti_managed = u->managed_bytes;
      r.cupti_records = u->records;
      r.cupti_dropped = u->dropped;
    }
    nd_spin_unlock(&cupti_lock);
    rec(ctx, ND_REC_DEVICE, &r, sizeof r);
  }
  nd_rec_cuda_t r;
  memset(&r, 0, sizeof r);
  r.first_ns = LD(C.first_ns);
  for (int f = 0; f < F_COUNT; f++) r.calls[f] = LD(C.calls[f]);
  r.answered_dlsym = LD(C.answered_dlsym);
  r.answered_proc = LD(C.answered_proc);
  r.unhooked = LD(C.unhooked);
  r.unknown_frees = LD(C.unknown_frees);
  r.untracked = LD(C.untracked);
  r.torch_conf = torch_conf;
  rec(ctx, ND_REC_CUDA, &r, sizeof r);
  nd_dws_write_records(rec, ctx);
  nd_spill_write_records(rec, ctx);
}

// Live blocks at exit, as the trace writer's BLOCK records.
void nd_cuda_each_live(void (*fn)(void *ctx, const nd_cuda_block_t *b), void *ctx) {
  if (!LD(C.used)) return;
  nd_spin_lock(&tab.lock);
  for (size_t i = 0; i < tab.cap; i++) {
    blk_t *b = &tab.v[i];
    if (b->state != 1 || !b->site) continue;
    nd_cuda_block_t o = {b->key, b->size, b->site, b->born, b->cycle};
    fn(ctx, &o);
  }
  nd_spin_unlock(&tab.lock);
}

int nd_cuda_each_live_stopped(void (*fn)(void *ctx, const nd_cuda_block_t *b), void *ctx) {
  if (!LD(C.used)) return 0;
  if (__atomic_load_n(&tab.lock, __ATOMIC_ACQUIRE)) return -1;
  for (size_t i = 0; i < tab.cap; i++) {
    blk_t *b = &tab.v[i];
    if (b->state != 1 || !b->site) continue;
    nd_cuda_block_t o = {b->key, b->size, b->site, b->born, b->cycle};
    fn(ctx, &o);
  }
  return 0;
}

static void atfork_prepare(void) { nd_spin_lock(&tab.lock); }
static void atfork_parent(void) { nd_spin_unlock(&tab.lock); }

// A fork child holds none of its parent's device memory (a CUDA context does not survive fork):
// the parent's device blocks leave the child's books, as frees at the fork. Pinned and managed
// pages are inherited as host memory is, and stay.
static void atfork_child(nd_tls_t *t) {
  nd_dws_atfork_child();
  nd_spill_atfork_child();
  nd_drv_atfork_child();
  tab.lock = 0;
  cupti_lock = 0;
  drv.lock = 0;
  for (size_t i = 0; i < tab.cap; i++) {
    blk_t *b = &tab.v[i];
    if (b->state != 1 || b->cls == ND_DEV_HOSTMEM) continue; // host spill is a device class
    call_t c = {t, t->mode, 1};
    untrack(&c, b);
    b->state = 2;
    tab.live--;
  }
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    __atomic_store_n(&devs[d].live, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&devs[d].granted, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&devs[d].peak, 0, __ATOMIC_RELAXED);
    memset(devs[d].cls, 0, sizeof devs[d].cls);
    devs[d].breaches = devs[d].failed = devs[d].getinfo_calls = devs[d].getinfo_clamped = 0;
    devs[d].cupti_seen = 0;
  }
}

ND_MODULE(nd_cuda_module) = {.name = "cuda", .rank = 40, .order = 30, .setup = setup,
                             .atfork_prepare = atfork_prepare, .atfork_parent = atfork_parent,
                             .atfork_child = atfork_child, .summary = summary,
                             .write_records = write_records};
