// SPDX-License-Identifier: MIT
// ndmem.h: the optional public API of libndmem.so.
// A program never needs it: LD_PRELOAD=libndmem.so accounts for an unmodified program. It is for
// programs (and tests) that want to read ndmem's counters in-process. Every function is declared
// weak unless NDMEM_NO_WEAK is defined, so a program built against this header runs without the
// shim: test the function's address first (`if (ndmem_stats) ...`).
#ifndef NDMEM_H
#define NDMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NDMEM_NO_WEAK) || !defined(__GNUC__)
#define NDMEM_API
#else
#define NDMEM_API __attribute__((weak))
#endif

#define NDMEM_MAX_DEVICES 16

// Memory kinds: the accounting dimension every counter carries. Device N is
// NDMEM_KIND_DEVICE0 + N.
enum ndmem_kind {
  NDMEM_KIND_HEAP = 0, // malloc family, usable sizes
  NDMEM_KIND_MMAP,     // anonymous mmap (page-rounded), not file mappings
  NDMEM_KIND_PINNED,   // page-locked host memory (cudaMallocHost / cudaHostAlloc)
  NDMEM_KIND_MANAGED,  // unified memory (cudaMallocManaged)
  NDMEM_KIND_DEVICE0,  // device 0 .. NDMEM_MAX_DEVICES-1
  NDMEM_KIND_COUNT = NDMEM_KIND_DEVICE0 + NDMEM_MAX_DEVICES
};

// Intercepted entry points, for call counts.
enum ndmem_fn {
  NDMEM_FN_MALLOC = 0,
  NDMEM_FN_CALLOC,
  NDMEM_FN_REALLOC,
  NDMEM_FN_REALLOCARRAY,
  NDMEM_FN_POSIX_MEMALIGN,
  NDMEM_FN_ALIGNED_ALLOC,
  NDMEM_FN_MEMALIGN,
  NDMEM_FN_VALLOC,
  NDMEM_FN_PVALLOC,
  NDMEM_FN_FREE,
  NDMEM_FN_FREE_SIZED,
  NDMEM_FN_FREE_ALIGNED_SIZED,
  NDMEM_FN_MMAP,
  NDMEM_FN_MUNMAP,
  NDMEM_FN_MREMAP,
  NDMEM_FN_COUNT
};

// Fallbacks: every place where ndmem did something other than the plain forward.
enum ndmem_fallback {
  NDMEM_FB_BOOTSTRAP = 0,  // allocations served from the static bootstrap pool (dlsym)
  NDMEM_FB_SYNTHESIZED,    // a malloc-family call the next allocator lacks, built from others
  NDMEM_FB_LATE_THREAD,    // calls on a thread after its ndmem state was torn down
  NDMEM_FB_UNTRACKED_FREE, // free/realloc of a block allocated while accounting was off
  NDMEM_FB_COUNT
};

typedef struct ndmem_kind_stats {
  uint64_t allocs;      // blocks (heap) or mappings (mmap) created
  uint64_t frees;       // blocks or mappings released
  uint64_t alloc_bytes; // bytes allocated, cumulative
  uint64_t free_bytes;  // bytes released, cumulative
  int64_t live_bytes;   // alloc_bytes - free_bytes
  int64_t live_count;   // allocs - frees
  int64_t peak_bytes;   // high-water mark of live_bytes
} ndmem_kind_stats_t;

typedef struct ndmem_stats {
  uint32_t size;    // caller sets sizeof(ndmem_stats_t); ndmem fills at most that much
  uint32_t version; // NDMEM_STATS_VERSION
  uint32_t threads; // process scope: threads that have allocated; thread scope: 1
  int32_t tid;      // thread scope: the thread's id; process scope: the pid
  ndmem_kind_stats_t kind[NDMEM_KIND_COUNT];
  uint64_t calls[NDMEM_FN_COUNT];
  uint64_t fallbacks[NDMEM_FB_COUNT];
} ndmem_stats_t;

#define NDMEM_STATS_VERSION 1

enum ndmem_scope { NDMEM_SCOPE_PROCESS = 0, NDMEM_SCOPE_THREAD = 1 };

// Fills *out for the process or the calling thread. Per-thread counters are flows: a block freed
// on another thread counts as a free on that thread, so a thread's live_bytes may be negative;
// process totals are exact. Returns 0, or -1 when accounting is off (NDMEM_ENABLED=0, or a fork
// child with NDMEM_FOLLOW_FORK=0).
NDMEM_API int ndmem_stats(ndmem_stats_t *out, int scope);

// The library's version string, e.g. "0.1.0".
NDMEM_API const char *ndmem_version(void);

// ---- workspaces (NDMEM_WORKSPACES=1, the default)
// Marks one iteration of the program's repeated work on the calling thread. Allocations of at
// least NDMEM_WS_MIN bytes made between begin and end are learned (the first cycle, or the first
// N with NDMEM_WS_LEARNING=over_time:N) and later cycles are served from a planned per-thread
// arena. Without marks, ndmem finds the cycles in the allocation stream itself.
NDMEM_API void ndmem_cycle_begin(void);
NDMEM_API void ndmem_cycle_end(void);
// Named workspaces (as ND4J's): each name has its own learned plan and arena; enter begins a
// cycle of it, leave ends it. They nest; leave closes the innermost.
NDMEM_API void ndmem_workspace_enter(const char *name);
NDMEM_API void ndmem_workspace_leave(void);

// Sets the policies of the calling thread's workspace NAME (NULL: the one ndmem_cycle_begin
// uses), overriding the NDMEM_WS_* defaults: a comma-separated list of key=value with the keys
// of those variables, e.g. "learning=over_time,cycles=4,allocation=strict,spill=fail,
// max_size=1g". Keys: learning, cycles, allocation, overallocate, spill, reset, location,
// initial_size, min_size, max_size. A workspace that already has a plan learns again. Returns 0,
// or -1 when an option is unknown or its value bad (one stderr line each; the rest apply).
NDMEM_API int ndmem_workspace_configure(const char *name, const char *options);

// A block still live after its cycle ended stays valid and its plan position is no longer
// routed. Where the program declared the cycle (ndmem_cycle_begin/end, named workspaces) it is a
// leaked workspace pointer, counted in `escapes` and reported. In the automatic workspace ("auto":
// cycles ndmem found in the allocation stream) the program declared nothing, so such a block
// merely *outlived* ndmem's guess of the cycle: it is not an escape, and is never reported as one.
// Outlived blocks are counted in the trace (ndmemreport's workspaces view, "outlived"), not in
// this struct: ndmem_ws_stats writes an array of it, so it cannot grow without breaking programs
// built against an older header. `pinned_bytes` holds both kinds while they are live.
typedef struct ndmem_ws_stats {
  char name[32];
  uint64_t cycles;          // cycles closed
  uint64_t learned_cycles;  // cycles spent learning (before the plan, and re-learning)
  uint64_t arena_bytes;     // the planned arena (allocated)
  uint64_t plan_peak_bytes; // the learned cycle's peak live bytes
  uint64_t plan_sum_bytes;  // the learned cycle's sum of sizes (ND4J's arena)
  uint64_t hits;            // allocations served from the arena
  uint64_t spills, spill_bytes; // routed allocations served externally (external, spilled)
  uint64_t escapes;         // blocks that outlived a declared cycle (leaked workspace pointers)
  uint64_t relearns;        // plans dropped because the stream changed
  uint64_t deviations;      // allocations that did not match the plan
  uint64_t pinned_bytes;    // external (pinned): escaped or outlived blocks kept valid, live
} ndmem_ws_stats_t;

// Statistics of the calling thread's workspaces: fills up to `max` entries, returns how many
// exist (0 when workspaces are off).
NDMEM_API int ndmem_ws_stats(ndmem_ws_stats_t *out, int max);

// ---- limits (NDMEM_MAX_BYTES, NDMEM_MAX_PHYSICAL_BYTES, NDMEM_ON_LIMIT, NDMEM_WARN_AT)
typedef struct ndmem_limits {
  uint32_t size;    // caller sets sizeof(ndmem_limits_t); ndmem fills at most that much
  uint32_t version; // NDMEM_LIMITS_VERSION
  int64_t max_bytes;          // limit on tracked host bytes (0: none)
  int64_t max_physical_bytes; // limit on anonymous resident bytes (0: none)
  int64_t warn_at;            // watermark on anonymous resident bytes (0: none)
  int32_t on_limit;           // 0 fail, 1 warn, 2 abort
  int32_t reserved;
  int64_t tracked_bytes;  // now: heap usable + anonymous mmap + workspace arenas (exact when no
                          // other thread allocates meanwhile)
  int64_t physical_bytes; // at the last reading (-1: not read yet)
  uint64_t physical_reads;
  uint64_t since_reading; // bytes allocated since that reading (as the next check counts them)
  uint64_t breaches_bytes, breaches_physical; // breaches of each limit
  uint64_t failed;        // allocations made to fail
  uint64_t reliefs, relief_bytes; // relief runs; workspace arena bytes they released
  uint64_t snapshots;     // snapshots of live memory by site (watermark and breach)
  uint64_t ram_bytes, cgroup_bytes; // what '%' is relative to (the smaller; cgroup 0: none)
} ndmem_limits_t;

#define NDMEM_LIMITS_VERSION 1

// Fills *out; 0, or -1 when accounting is off.
NDMEM_API int ndmem_limits(ndmem_limits_t *out);
// Changes a limit while the program runs: name is "max_bytes", "max_physical_bytes", "warn_at"
// or "on_limit" (the NDMEM_* variable's name also works), value in that variable's forms
// ("8G", "75%", "off"; "fail", "warn", "abort"). 0, or -1 with one stderr line for a bad name or
// value (nothing changes).
NDMEM_API int ndmem_limit_set(const char *name, const char *value);

// ---- device memory (CUDA driver API hooks; NDMEM_MAX_DEVICE_BYTES[_<i>])
// One device's memory as the hooks see it: cuMemAlloc/cuMemAllocPitch, stream-ordered
// cuMemAllocAsync/cuMemAllocFromPoolAsync (bytes handed out, whatever the pool keeps), and
// cuMemCreate (physical memory of the virtual-memory API). Pinned host and managed memory are the
// kinds NDMEM_KIND_PINNED and NDMEM_KIND_MANAGED of ndmem_stats.
typedef struct ndmem_device_stats {
  uint32_t size;    // caller sets sizeof(ndmem_device_stats_t); ndmem fills at most that much
  int32_t device;   // the ordinal asked for
  int64_t live_bytes, peak_bytes;  // exact
  uint64_t allocs, frees;
  int64_t limit_bytes;             // NDMEM_MAX_DEVICE_BYTES[_<i>] in bytes (0: none)
  int64_t total_bytes;             // the device's memory as the driver reports it (0: not asked yet)
  uint64_t breaches, failed;       // breaches of the limit; allocations made to fail
  uint64_t getinfo_calls, getinfo_clamped; // cuMemGetInfo answers; those the limit lowered
  // NDMEM_ON_DEVICE_LIMIT=host: allocations over the limit (or refused by a full device) served
  // from page-locked host memory the device reaches; counted in allocs/frees above, not in
  // live_bytes (they take no device memory)
  uint64_t host_allocs, host_frees, host_alloc_bytes;
  int64_t host_live_bytes, host_peak_bytes;
  int64_t arena_bytes; // device workspace arenas (in live_bytes: device memory ndmem holds)
} ndmem_device_stats_t;

// Fills *out for device `device` (0..NDMEM_MAX_DEVICES-1); 0, or -1 when accounting is off or
// the ordinal is out of range.
NDMEM_API int ndmem_device_stats(int device, ndmem_device_stats_t *out);

// ---- device workspaces (NDMEM_DEVICE_WS[_<i>]; off by default)
// One device's workspace: cuMemAlloc/cuMemFree and cuMemAllocAsync/cuMemFreeAsync of a learned
// cycle served from one planned arena, with no driver call in steady state. A range is handed out
// again only when no work that may still use its previous owner can be in flight
// (docs/device-memory.md, "Device workspaces").
typedef struct ndmem_device_ws_stats {
  uint32_t size;    // caller sets sizeof(ndmem_device_ws_stats_t); ndmem fills at most that much
  int32_t device;
  uint32_t enabled; // NDMEM_DEVICE_WS[_<i>] asked for it
  uint32_t mode;    // 0 off, 1 finding the cycle, 2 learning, 3 planned, 4 ND4J bump arena
  uint32_t sync;    // 0 free (a workspace cuMemFree waits for the device, as the driver's), 1 ordered
  uint32_t streams; // what the program has shown: 0 one stream, 1 several, 2 non-blocking ones
  uint64_t cycles, learned_cycles, relearns;
  uint64_t arena_bytes, plan_peak_bytes, plan_sum_bytes;
  uint64_t hits, hit_bytes;      // allocations served from the arena
  uint64_t spills, spill_bytes;  // routed allocations the plan could not serve (the driver's)
  uint64_t deviations, outlived; // allocations off the plan; blocks live past their cycle
  uint64_t frees;                // arena blocks freed (no driver call)
  uint64_t ctx_syncs;            // cuCtxSynchronize at a workspace free (sync=free; ordered with
                                 // non-blocking streams)
  uint64_t fences;               // events recorded where a block was freed
  uint64_t host_waits;           // reuses that waited on the host for earlier work
  uint64_t stream_waits;         // reuses ordered on the device (cuStreamWaitEvent)
  uint64_t fallbacks;            // allocations left to the driver: another context, a capture
  uint64_t arena_allocs, arena_frees; // cuMemAlloc and cuMemFree ndmem made for its arenas
} ndmem_device_ws_stats_t;

// Fills *out for device `device`; 0, or -1 when accounting is off or the ordinal is out of range.
NDMEM_API int ndmem_device_ws_stats(int device, ndmem_device_ws_stats_t *out);

// CUPTI's view of one device, handed to the shim by ndmem's CUPTI injection library
// (libndmem_cupti.so, CUDA_INJECTION64_PATH; `ndmem run --cupti`). Totals are cumulative: each
// call replaces the previous one for that device. The shim writes them to the trace, where
// ndmemreport sets them beside the hooks' own totals.
typedef struct ndmem_cupti_device {
  uint32_t size;    // sizeof(ndmem_cupti_device_t)
  int32_t device;
  uint64_t allocs, frees, alloc_bytes, free_bytes;  // device memory outside stream-ordered pools
  uint64_t pool_allocs, pool_frees, pool_alloc_bytes, pool_free_bytes; // served by pools
  uint64_t pool_reserved_bytes, pool_reserved_peak; // what the pools hold from the device
  uint64_t pinned_bytes, managed_bytes;             // live pinned host and managed memory
  uint64_t records, dropped;                        // activity records read; lost by CUPTI
} ndmem_cupti_device_t;

NDMEM_API int ndmem_cupti_update(const ndmem_cupti_device_t *d);

#ifdef __cplusplus
}
#endif
#endif
