// SPDX-License-Identifier: MIT
// books.h: what the device room's files share (device/ only): the hooked functions' table
// (fns.c), the books (books.c) and a hooked call's accounting, used by the hook bodies (cuda.c)
// and the views (views.c).
#ifndef ND_DEVICE_BOOKS_H
#define ND_DEVICE_BOOKS_H

#include "account/sites.h"
#include "common/trace_format.h"
#include "device/cuda_abi.h"
#include "runtime/shim.h"

#include <stdint.h>

enum cu_fn {
  F_ALLOC, F_PITCH, F_FREE, F_MANAGED, F_HOST, F_HOSTALLOC, F_FREEHOST, F_ASYNC, F_ASYNC_PTSZ,
  F_POOL, F_POOL_PTSZ, F_FREEASYNC, F_FREEASYNC_PTSZ, F_CREATE, F_RELEASE, F_MAP, F_UNMAP,
  F_GETINFO, F_PROC, F_PROC2, F_STREAM, F_STREAM_PRIO, F_STREAM_DESTROY, F_COUNT
};
_Static_assert(F_COUNT == ND_CUDA_FN_USED && F_COUNT <= ND_CUDA_FNS, "a call count per hooked function");

// sym: the exported name; base: the name cuGetProcAddress is asked for, answered with this entry
// point for versions in [minver, maxver).
struct cu_name {
  const char *sym, *base;
  int minver, maxver;
};
extern const struct cu_name nd_cu_names[F_COUNT];

#define INSTANCES 3 // 0: the exported name; 1, 2: answers to lookups
extern void *const nd_cu_hook_fn[F_COUNT][INSTANCES]; // each hook's three entry points (cuda.c)

// What happened, for the CUDA record and the summary (atomic).
struct nd_cu_calls {
  uint64_t calls[F_COUNT];
  uint64_t answered_dlsym, answered_proc; // lookups answered with a hook
  uint64_t unhooked;       // lookups left to the driver: no instance left for another pointer
  uint64_t unknown_frees;  // frees of memory ndmem did not see allocated (before it saw libcuda)
  uint64_t untracked;      // allocations not kept in the table (no memory for it)
  uint64_t first_ns;       // the first hooked call
  int used;                // a hooked function was called
};
extern struct nd_cu_calls nd_cu_calls;

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

// Functions ndmem calls itself, from the module that holds a real function the program reached.
typedef nd_cu_result (*ctx_get_device_fn)(nd_cu_device *);
typedef nd_cu_result (*total_mem_fn)(size_t *, nd_cu_device);
typedef nd_cu_result (*ptr_attr_fn)(void *, int, nd_cu_deviceptr);
struct nd_cu_drv {
  ctx_get_device_fn ctx_get_device;
  total_mem_fn total_mem;
  ptr_attr_fn ptr_attr;
  int lock;
};
extern struct nd_cu_drv nd_cu_drv;

struct dev {
  int64_t live, peak;       // device bytes (atomic): exact, and what the limit checks
  int64_t granted;          // bytes of the blocks the driver granted (atomic): the peak's basis
  int64_t limit;            // bytes (0: none), resolved from the setting once the total is known
  int64_t total;            // the device's memory (0: not asked yet)
  int resolved;             // limit resolved
  uint64_t cls[ND_DEV_CLASSES][4]; // allocs, frees, alloc bytes, free bytes per class
  uint64_t breaches, failed, getinfo_calls, getinfo_clamped;
  ndmem_cupti_device_t cupti; // CUPTI's view (under nd_cu_cupti_lock)
  int cupti_seen;
};
extern struct dev nd_cu_devs[NDMEM_MAX_DEVICES];
extern int nd_cu_cupti_lock; // CUPTI's views of the devices

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
static inline int from_driver(int flags) { return !(flags & (BLK_ARENA | BLK_SPILL)); }

struct nd_cu_blocks {
  blk_t *v;
  size_t cap, used, live; // used: full + deleted
  int lock;
};
extern struct nd_cu_blocks nd_cu_blocks;

typedef struct call {
  nd_tls_t *t;
  unsigned char mode;
  int acct; // this thread accounts
} call_t;

static inline int cu_dev_kind(int d) { return NDMEM_KIND_DEVICE0 + d; }

// ---------------------------------------------------------------- across the room's files

int cu_current_device(const void *real);
void cu_drv_resolve(const void *real);
void *cu_drv_sym(const void *real, const char *name);
int cu_fn_by_base(const char *name, int version);
void *cu_instance_for(int f, void *real);
int cu_is_hook(const void *p);
void cu_learn_module(void *handle, const void *real);
int cu_pointer_device(const void *real, nd_cu_deviceptr p);
void *cu_real_of(int f, int inst);
void cu_count(call_t *c, int kind, int alloc, uint64_t bytes);
int64_t cu_dev_limit(int d, const void *real);
void cu_enter(call_t *c, int f);
void cu_leave(call_t *c);
void cu_limit_setting(int d, int64_t *v, int *frac);
int cu_reserve(int d, uint64_t bytes, int fn, const void *real);
void cu_restore(const blk_t *b);
nd_site_t *cu_site_here(call_t *c, int kind);
nd_cu_result cu_spill(call_t *c, void *real, int d, int cls, uint64_t n, nd_site_t *site,
                          int why, nd_cu_deviceptr *dptr);
int cu_take(uint64_t key, int cls, blk_t *out);
int cu_tab_find(uint64_t key, int cls, blk_t *out, int take); // under nd_cu_blocks.lock
void cu_track(call_t *c, uint64_t key, int cls, int kind, uint64_t size);
void cu_track_at(call_t *c, uint64_t key, int cls, int kind, uint64_t size, nd_site_t *site,
                     int flags);
void cu_unreserve(int d, uint64_t bytes);
void cu_untrack(call_t *c, const blk_t *b);

#endif
