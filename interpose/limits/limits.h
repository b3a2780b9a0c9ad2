// SPDX-License-Identifier: MIT
// limits/limits.h (included by that path; the folder itself is on no include path, where the
// name would shadow the C library's <limits.h>): off-heap limits (JavaCPP's
// maxBytes and maxPhysicalBytes) and the warning watermark.
//
// maxBytes bounds *tracked* host bytes: heap usable sizes + anonymous mmaps + workspace arenas
// (an arena counts whole; its live blocks are already in the heap counters). An anonymous mapping
// of ND_TOUCH_MIN bytes or more counts by its touched pages (NDMEM_MAX_BYTES_MAPPINGS=touched, the
// default): it is untouched when made, the reading thread reads its pages again (mincore) every
// NDMEM_LIMIT_POLL_MS, and the relief before a breach reads them too, so a breach is never declared
// on a stale count; pages touched since the last reading go uncounted for one interval at most
// (mmap.c). maxPhysicalBytes
// bounds anonymous resident memory (resident - shared of /proc/self/statm), read again whenever
// NDMEM_LIMIT_STEP bytes have been allocated since the last reading, and every
// NDMEM_LIMIT_POLL_MS by a thread. An allocation is checked before the call (physical memory, and
// a request that cannot fit) and after it with the allocator's usable size; a block that would
// cross maxBytes is given back before the program sees it. Over a limit, a request is refused only
// where the program can take it (limits/admit.h: a runtime's allocator, a named object, a large
// request, or past the slack); any other is admitted, checked against the limit plus the slack
// from then on, and counted once served. On a breach: relief (idle workspace arenas are unmapped,
// malloc_trim(0)), one re-check, then NDMEM_ON_LIMIT.
//
// Precision: with one allocating thread the maxBytes check is exact to the byte. With T threads
// each thread's unpublished counter delta (+-256 KiB per kind) is covered by a margin, so checks
// near the limit go to an exact walk over the shards; allocations larger than 256 KiB reserve
// their bytes atomically and never overshoot together; only small allocations racing on other
// threads can overshoot, by at most (T-1) x 256 KiB.
#ifndef ND_LIMITS_H
#define ND_LIMITS_H

#include "runtime/shim.h"
#include "common/trace_format.h"

#include <stdint.h>

struct nd_site;
extern int nd_limits_on; // a limit or a watermark is set: allocations take the checked paths

// What every allocation's check reads (limits.c owns the rest).
typedef struct nd_lim_hot {
  int64_t max_bytes;             // maxBytes, 0: none (atomic)
  int64_t reserved;              // bytes reserved by allocations not yet published (atomic)
  int64_t peak_tracked;          // the highest tracked total a check saw (atomic)
  int64_t step;                  // bytes allocated between physical readings
  uint64_t gross, gross_at_read; // bytes allocated (added by threads in batches), and at the
                                 // last reading (atomic)
  int64_t untouched;             // bytes of large mappings not resident at the last reading, or
                                 // since they were made (atomic; mmap.c keeps it)
  int touched;                   // NDMEM_MAX_BYTES_MAPPINGS=touched
  int phys_on;                   // readings are needed (a physical limit, a watermark, or
                                 // maxBytes counting touched pages)
  int phys_due;                  // read at the next allocation (atomic)
} nd_lim_hot_t;
extern nd_lim_hot_t nd_lim;

#define ND_LIM_SMALL ND_PUBLISH_BYTES // blocks up to this size are checked without a reservation
#define ND_LIM_BATCH (256 * 1024)     // a thread adds its allocated bytes to nd_lim.gross in batches

// What other threads may hold that a thread's estimate cannot see: per thread, an unpublished
// delta of up to ND_PUBLISH_BYTES for each of heap and mmap, and one small block being allocated.
static inline int64_t nd_limit_margin(void) {
  uint32_t n = nd_counters_owned();
  return n > 1 ? (int64_t)(n - 1) * 3 * ND_PUBLISH_BYTES : 0;
}

// Tracked host bytes workspaces hold beyond their live blocks (which the heap counters hold):
// arena bytes mapped (ws/) minus bytes of live arena blocks (heap/). Both atomic.
extern int64_t nd_ws_arena_total, nd_ws_live_total;
static inline int64_t nd_ws_idle_bytes(void) {
  int64_t v = __atomic_load_n(&nd_ws_arena_total, __ATOMIC_RELAXED) -
              __atomic_load_n(&nd_ws_live_total, __ATOMIC_RELAXED);
  return v > 0 ? v : 0;
}

// Published heap + mmap bytes, this thread's unpublished part, and idle workspace arena bytes:
// exact with one thread; other threads' unpublished parts are within nd_limit_margin().
static inline int64_t nd_limit_tracked_est(const nd_shard_t *s) {
  int64_t v = nd_counters_published(NDMEM_KIND_HEAP) + nd_counters_published(NDMEM_KIND_MMAP) +
              nd_ws_idle_bytes() - ND_LOAD(nd_lim.untouched);
  if (s) v += ND_LOAD(s->k[NDMEM_KIND_HEAP].pending) + ND_LOAD(s->k[NDMEM_KIND_MMAP].pending);
  return v;
}

void nd_limit_peak(int64_t v);
void nd_limit_flush_acc(nd_tls_t *t);

// The whole check for a small heap block (at most ND_LIM_SMALL bytes, not routed) on a COUNT
// thread, once the allocator gave `usable` bytes: 1 when it certainly fits and no physical
// reading is due; 0 sends the allocation to the checked path.
static inline int nd_limit_fast(nd_tls_t *t, uint64_t usable) {
  if (nd_lim.phys_on && (ND_LOAD(nd_lim.phys_due) ||
                         ND_LOAD(nd_lim.gross) + t->lim_acc - ND_LOAD(nd_lim.gross_at_read) >=
                             (uint64_t)nd_lim.step))
    return 0;
  int64_t max = ND_LOAD(nd_lim.max_bytes);
  if (!max) return 1;
  int64_t v = nd_limit_tracked_est(t->shard) + ND_LOAD(nd_lim.reserved) + (int64_t)usable;
  if (__builtin_expect(v > ND_LOAD(nd_lim.peak_tracked), 0)) nd_limit_peak(v);
  return v + nd_limit_margin() <= max;
}

// After a block passed the checks and is accounted: its bytes count towards the next reading.
static inline void nd_limit_fast_done(nd_tls_t *t, uint64_t req) {
  if (nd_lim.phys_on && (t->lim_acc += req) >= ND_LIM_BATCH) nd_limit_flush_acc(t);
}

typedef struct nd_lim {
  uint64_t req;     // bytes this allocation adds (for realloc and mremap: the growth)
  uint64_t size;    // bytes asked for (realloc, mremap: the new size): whether it is large
  uintptr_t ra;     // the caller (a retried refusal is recognised by it; the code asking)
  int fn;           // enum ndmem_fn
  int untouched;    // a large fresh mapping: it adds no touched bytes (maxBytes is not asked)
  int fresh;        // a fresh mapping (not MAP_POPULATE, or mremap's growth): nothing resident
  int limit;        // after a breach: enum nd_limit_id
  int allow;        // NDMEM_ON_LIMIT=warn let it through: no more checks for it
  int relieved;     // relief has run for it
  uint64_t relief_arenas, relief_resident; // what it gave back: idle workspace arenas unmapped,
                                           // resident memory fallen across it (malloc_trim)
  int64_t value;    // after a breach: tracked or physical bytes before it
  uint64_t need;    // after a breach: the bytes it adds to that total
  int64_t reserved; // bytes it holds in the reservation (settled after accounting)
  // Admissions (limits/admit.h): why it may be refused after its last breach (ND_BREACH_*; 0:
  // admitted), the class of the code asking (-1: not found yet) and where that is; per limit
  // (bit 1 << nd_limit_id) whether it was admitted over it, checked against the limit plus the
  // slack from then on, and counted as an admission once served (nd_limit_settle).
  uint32_t why;
  int cls;
  uintptr_t ip;
  int admitted;
  int64_t adm_value[ND_LIMIT_COUNT];
  uint64_t adm_need[ND_LIMIT_COUNT];
} nd_lim_t;
// A checked request: its size, function and caller (the rest zero, the class not found yet).
#define ND_LIM_INIT(req_, size_, fn_, ra_) \
  { .req = (req_), .size = (size_), .ra = (uintptr_t)(ra_), .fn = (fn_), .cls = -1 }

enum { ND_LIM_OK = 0, ND_LIM_OVER = 1 };
enum { ND_LIM_PHYS = 1, ND_LIM_HOST = 2 }; // what nd_limit_pre checks
enum { ND_LIM_RETRY = 0, ND_LIM_FAIL = 1, ND_LIM_ALLOW = 2 };

// Before the call: physical memory (ND_LIM_PHYS, when a reading is due) and a request that
// cannot fit under maxBytes (ND_LIM_HOST; not for a block a workspace arena may serve).
int nd_limit_pre(nd_tls_t *t, nd_lim_t *c, int what);
// After the call (or before it, when the size is known exactly): may `bytes` more be tracked?
// ND_LIM_OK may leave a reservation that nd_limit_settle gives back.
int nd_limit_post(struct nd_tls *t, nd_lim_t *c, uint64_t bytes);
// After the block is accounted (or the call failed): publishes and settles the reservation.
void nd_limit_settle(struct nd_tls *t, nd_lim_t *c, int ok);
// A breach: the first time relief (ND_LIM_RETRY: check again), then NDMEM_ON_LIMIT: ND_LIM_FAIL,
// ND_LIM_ALLOW (warn), or no return (abort).
int nd_limit_breach(struct nd_tls *t, nd_lim_t *c);
// May `bytes` more be tracked (a workspace arena)? Always 1 without maxBytes.
int nd_limit_room(uint64_t bytes);
// The bytes that may still be tracked under maxBytes, less what other threads may hold unseen
// (nd_limit_margin); UINT64_MAX without maxBytes.
uint64_t nd_limit_room_left(void);

// In-process view (ndmem_limits) and run-time changes (ndmem_limit_set).
struct ndmem_limits;
void nd_limits_get(struct ndmem_limits *out);
// Breaches of NDMEM_MAX_BYTES and NDMEM_MAX_PHYSICAL_BYTES so far, without nd_limits_get's walk
// over the counter shards (the metrics file, at every flush).
void nd_limits_breaches(uint64_t *max_bytes, uint64_t *max_physical);
int nd_limits_set(const char *name, const char *value);

// Shared with the device limits (cuda.c): NDMEM_ON_LIMIT, the top live sites of a kind (-1: all)
// on stderr, a device breach's record and snapshot, and the stop of NDMEM_ON_LIMIT=abort.
int nd_limits_action(void);
// One breach line in JavaCPP's words ("Can't allocate [HOST] memory: ..."; device >= 0: [DEVICE
// n]): `what` VALUE (+ REQ where `plus`: the sum that would cross) > LIMIT_NAME LIM, then for a
// request refused only because admitting it would have passed the slack (slack >= 0) " + slack
// SLACK", or for maxPhysicalBytes (admitted >= 0: what admissions added past it) "; admitted past
// it A + REQ > slack SLACK"; the thread, the action and which breaches are logged. more: the
// request is a growth. relief: what relief gave back before the refusal (NULL: none ran; a host
// limit's).
void nd_limits_say_breach(int device, int action, uint64_t req, int more, const char *what,
                          int64_t value, int plus, const char *limit_name, int64_t lim, int64_t slack,
                          int64_t admitted, uint64_t n, const nd_lim_t *relief);
void nd_limits_say_top_sites(int kind);
void nd_limits_device_breach(int device, int action, int fn, uint64_t req, int64_t live, int64_t limit,
                             uint64_t n, uint32_t why);
// A device allocation refused by its limit (every one, logged or not), with its stack where one was
// taken: the last refused request, as the host limits keep theirs (the REFUSAL record).
void nd_limits_device_refused(int device, int fn, uint64_t req, int64_t lim,
                              const struct nd_site *site);
__attribute__((noreturn)) void nd_limits_abort(void);

int nd_limits_aborting(void);
// How limits read which pages of the large mappings are resident (mincore) into nd_lim.untouched
// (heap/mmap.c gives it at start-up): only from a thread that holds none of ndmem's locks.
void nd_limits_untouched_reader(int64_t (*read)(void));        // the process is stopping on a breach (NDMEM_ON_LIMIT=abort)

#endif
