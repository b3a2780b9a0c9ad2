// SPDX-License-Identifier: MIT
// limits.h: off-heap limits (JavaCPP's maxBytes and maxPhysicalBytes) and the warning watermark.
//
// maxBytes bounds *tracked* host bytes: heap usable sizes + anonymous mmaps + workspace arenas
// (an arena counts whole; its live blocks are already in the heap counters). maxPhysicalBytes
// bounds anonymous resident memory (resident - shared of /proc/self/statm), read again whenever
// NDMEM_LIMIT_STEP bytes have been allocated since the last reading, and every
// NDMEM_LIMIT_POLL_MS by a thread. An allocation is checked before the call (physical memory, and
// a request that cannot fit) and after it with the allocator's usable size; a block that would
// cross maxBytes is given back before the program sees it. On a breach: relief (idle workspace
// arenas are unmapped, malloc_trim(0)), one re-check, then NDMEM_ON_LIMIT.
//
// Precision: with one allocating thread the maxBytes check is exact to the byte. With T threads
// each thread's unpublished counter delta (+-256 KiB per kind) is covered by a margin, so checks
// near the limit go to an exact walk over the shards; allocations larger than 256 KiB reserve
// their bytes atomically and never overshoot together; only small allocations racing on other
// threads can overshoot, by at most (T-1) x 256 KiB.
#ifndef ND_LIMITS_H
#define ND_LIMITS_H

#include <stdint.h>

struct nd_tls;

extern int nd_limits_on; // a limit or a watermark is set: allocations take the checked paths

typedef struct nd_lim {
  uint64_t req;     // bytes this allocation adds (for realloc and mremap: the growth)
  int fn;           // enum ndmem_fn
  int limit;        // after a breach: enum nd_limit_id
  int allow;        // NDMEM_ON_LIMIT=warn let it through: no more checks for it
  int relieved;     // relief has run for it
  int64_t value;    // after a breach: tracked or physical bytes before it
  int64_t reserved; // bytes it holds in the reservation (settled after accounting)
} nd_lim_t;

enum { ND_LIM_OK = 0, ND_LIM_OVER = 1 };
enum { ND_LIM_PHYS = 1, ND_LIM_HOST = 2 }; // what nd_limit_pre checks
enum { ND_LIM_RETRY = 0, ND_LIM_FAIL = 1, ND_LIM_ALLOW = 2 };

void nd_limits_setup(void);
// Before the call: physical memory (ND_LIM_PHYS, when a reading is due) and a request that
// cannot fit under maxBytes (ND_LIM_HOST; not for a block a workspace arena may serve).
int nd_limit_pre(struct nd_tls *t, nd_lim_t *c, int what);
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

// In-process view (ndmem_limits) and run-time changes (ndmem_limit_set).
struct ndmem_limits;
void nd_limits_get(struct ndmem_limits *out);
int nd_limits_set(const char *name, const char *value);

void nd_limits_summary(int fd);      // one line in the exit summary, when limits are set
int nd_limits_aborting(void);        // the process is stopping on a breach (NDMEM_ON_LIMIT=abort)
typedef void (*nd_limits_record_fn)(void *ctx, uint16_t tag, const void *payload, uint32_t size);
void nd_limits_write_records(nd_limits_record_fn rec, void *ctx); // at each trace flush
void nd_limits_atfork_child(void);

#endif
