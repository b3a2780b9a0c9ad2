// SPDX-License-Identifier: MIT
// admit.h: which requests over a limit are refused, and the books of those admitted
// (limits/admit.c). Shared by the host limits (limits.c) and the device limit (device/books.c).
//
// A request that would take a limit's total past the limit is *refusable* when
//   (a) the code asking is a tensor runtime's allocator or an object NDMEM_LIMIT_REFUSE names
//       (limits/callers.h): the runtime turns the refusal into its own exception;
//   (b) it is large: NDMEM_LIMIT_LARGE bytes or more (64 MiB), wherever it comes from: code that
//       asks for that much checks the answer, and admitting it could not stay within any slack;
//       a fresh mapping under maxPhysicalBytes is never large (none of its pages are resident:
//       refusing it would not lower resident memory, and libraries reserve address space so:
//       OpenBLAS's 128 MiB buffers); under maxBytes a fresh mapping counted by its touched pages
//       adds nothing and never meets the limit at all;
//   (c) admitting it would take the total past the limit plus the slack (NDMEM_LIMIT_SLACK). For
//       maxPhysicalBytes, whose readings also grow as memory allocated under the limit is
//       touched later (a tensor filled after its allocation passed), the slack bounds what the
//       admissions add: the bytes admitted since a reading last stood at or under the limit.
// Any other is *admitted*: let through as NDMEM_ON_LIMIT=warn lets a request through, counted
// (requests, bytes, the most the total stood past the limit) and its asking site kept for the
// trace and the summary; it is never called a breach. The limit takes effect again at the next
// refusable request. NDMEM_ON_LIMIT applies to refusable requests only.
#ifndef ND_LIMITS_ADMIT_H
#define ND_LIMITS_ADMIT_H

#include "common/fmt.h"

#include <stdint.h>

typedef struct nd_admit_q {
  int limit;           // ND_LIMIT_BYTES, ND_LIMIT_PHYSICAL or ND_LIMIT_DEVICE
  int device;          // ND_LIMIT_DEVICE's device
  int kind;            // the request's memory kind (its site's)
  int fresh;           // a fresh anonymous mapping: none of its pages resident yet
  int aligned;         // an aligned heap request (posix_memalign, memalign, aligned_alloc)
  uint64_t size;       // the bytes asked for (whether it is large)
  int64_t value;       // the limit's total before it (tracked, the resident reading, device)
  uint64_t need;       // what it adds to that total
  int64_t limit_bytes; // the limit
  uintptr_t ra;        // the hook's caller (0: unknown: the stack is unwound)
  // Found by nd_admit_why and kept for the request's later checks:
  int cls;             // enum nd_caller; -1 before
  uintptr_t ip;        // the code asking
} nd_admit_q_t;

// Why the request may be refused (ND_BREACH_RUNTIME, _NAMED, _LARGE or _PAST_SLACK), or 0 when
// it is admitted. Classes its caller the first time (q->cls -1); may unwind the stack.
uint32_t nd_admit_why(nd_admit_q_t *q);
// The slack of a limit of `limit_bytes` (NDMEM_LIMIT_SLACK), in bytes.
int64_t nd_admit_slack(int64_t limit_bytes);
// An admitted request was served: its totals and its asking site's (whose stack is captured the
// first time that site admits, where a trace is written).
void nd_admit_count(const nd_admit_q_t *q);
// A request refused only because admitting it would have passed the slack.
void nd_admit_past_slack(const nd_admit_q_t *q);
// A reading of resident memory at or under maxPhysicalBytes: its admissions start again from 0;
// the bytes admitted past it since such a reading.
void nd_admit_phys_under(void);
uint64_t nd_admit_phys_since(void);
// Admissions so far under a limit (a device's: ND_LIMIT_DEVICE and its device).
uint64_t nd_admit_admitted(int limit, int device);
// The summary's words for a limit's admissions, appended to b after "; " (nothing when none):
// "admitted 12 requests over maxBytes (3.00 MiB; at most 1.20 MiB past it, slack 64.00 MiB),
// most from gemm_driver+0x1a2 (libopenblas.so.0); 1 refused past the slack" (maxPhysicalBytes:
// "resident at most ... past it", its readings when a request was admitted).
void nd_admit_say(nd_buf_t *b, int limit, int device);

#endif
