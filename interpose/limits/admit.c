// SPDX-License-Identifier: MIT
// admit.c: which requests over a limit are refused, and the books of those admitted (admit.h).
//
// The slack bounds what admissions can do: the total never stands past the limit plus the slack
// through admissions (maxBytes checks it exactly, as it checks the limit; the device limit
// reserves against it); under maxPhysicalBytes the admissions since resident memory was last read
// at or under the limit never add more than the slack. Its default (auto: the larger of 64 MiB and 10 % of the limit) covers
// what the libraries of the jobs in the tests asked for past a limit: docs/limits.md gives the
// figures. NDMEM_LIMIT_SLACK=0 refuses every request over a limit, as before admissions existed.
//
// The books: per limit (maxBytes, maxPhysicalBytes, each device's), and per asking site (the
// code asking's address, limits/callers.h) in a table of ADMIT_SITES entries filled without a
// lock (a slot is claimed with one compare-exchange; its stack is captured by the thread that
// claimed it); an admission past a full table counts in its limit's totals as unplaced. The trace
// writer takes each changed entry at a flush (ADMITTED, ADMIT_SITE records, version 16).
#include "limits/admit.h"

#include "account/sites.h"
#include "account/track.h"
#include "common/os.h"
#include "common/trace_format.h"
#include "limits/callers.h"
#include "runtime/module.h"
#include "runtime/shim.h"
#include "stacks/names.h"

#include "ndmem.h"

#define SLOTS (2 + NDMEM_MAX_DEVICES) // maxBytes, maxPhysicalBytes, each device's limit
#define ADMIT_SITES 512               // asking sites kept (a power of two)

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

typedef struct totals {
  uint64_t admitted, bytes, over_max, past_slack, unplaced; // atomic
  int64_t limit_bytes, slack;                               // at the last admission (atomic)
  int dirty;                                                // changed since the last flush
} totals_t;

typedef struct entry {
  uint64_t key;        // the slot and the asking frame (0: empty)
  nd_site_t *site;     // the first admitted request's stack (NULL: none, or not yet)
  uint64_t admitted, bytes, over_max, first_ns, last_ns; // atomic
  uint16_t kind;
  int dirty;
} entry_t;

static totals_t totals[SLOTS];
static entry_t sites[ADMIT_SITES];
static uint64_t phys_since; // bytes admitted over maxPhysicalBytes since a reading was under it

static int slot_of(int limit, int device) {
  return limit == ND_LIMIT_DEVICE ? 2 + (device >= 0 && device < NDMEM_MAX_DEVICES ? device : 0)
                                  : limit;
}

static void raise_to(uint64_t *peak, uint64_t v) {
  uint64_t p = LD(*peak);
  while (v > p && !__atomic_compare_exchange_n(peak, &p, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

int64_t nd_admit_slack(int64_t limit_bytes) {
  return nd_config_slack_bytes(nd_cfg.limit_slack, limit_bytes);
}

uint32_t nd_admit_why(nd_admit_q_t *q) {
  if (q->cls < 0)
    q->cls = nd_caller_class(q->ra, q->limit == ND_LIMIT_DEVICE ? ND_ASK_DEVICE
                                    : q->aligned               ? ND_ASK_ALIGNED
                                                               : ND_ASK_HOST,
                             &q->ip);
  uint32_t why = q->cls == ND_CALLER_RUNTIME ? ND_BREACH_RUNTIME
                 : q->cls == ND_CALLER_NAMED ? ND_BREACH_NAMED
                                             : 0;
  if (q->size >= (uint64_t)nd_cfg.limit_large && !(q->fresh && q->limit == ND_LIMIT_PHYSICAL))
    why |= ND_BREACH_LARGE;
  int64_t slack = nd_admit_slack(q->limit_bytes);
  if (!why && (q->limit == ND_LIMIT_PHYSICAL
                   ? LD(phys_since) + q->need > (uint64_t)slack
                   : q->value + (int64_t)q->need > q->limit_bytes + slack))
    why = ND_BREACH_PAST_SLACK;
  return why;
}

uint64_t nd_admit_phys_since(void) { return LD(phys_since); }

void nd_admit_phys_under(void) {
  if (LD(phys_since)) __atomic_store_n(&phys_since, 0, __ATOMIC_RELAXED);
}

// The entry of the asking site under slot s, claimed if new (NULL: the table is full).
static entry_t *entry_of(int s, uintptr_t ip, int kind, int *fresh) {
  uint64_t key = ((uint64_t)(s + 1) << 56) ^ (uint64_t)ip;
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  *fresh = 0;
  for (unsigned i = 0; i < ADMIT_SITES; i++) {
    entry_t *e = &sites[((h >> 32) + i) & (ADMIT_SITES - 1)];
    uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
    if (k == key) return e;
    if (k) continue;
    if (__atomic_compare_exchange_n(&e->key, &k, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      e->kind = (uint16_t)kind;
      *fresh = 1;
      return e;
    }
    if (k == key) return e; // another thread claimed it for the same site
  }
  return NULL;
}

void nd_admit_count(const nd_admit_q_t *q) {
  int s = slot_of(q->limit, q->device);
  totals_t *t = &totals[s];
  int64_t over = q->value + (int64_t)q->need - q->limit_bytes;
  uint64_t o = over > 0 ? (uint64_t)over : 0, now = nd_os_mono_ns();
  ADD(t->admitted, 1);
  ADD(t->bytes, q->need);
  if (q->limit == ND_LIMIT_PHYSICAL) ADD(phys_since, q->need);
  raise_to(&t->over_max, o);
  __atomic_store_n(&t->limit_bytes, q->limit_bytes, __ATOMIC_RELAXED);
  __atomic_store_n(&t->slack, nd_admit_slack(q->limit_bytes), __ATOMIC_RELAXED);
  int fresh;
  entry_t *e = entry_of(s, q->ip, q->kind, &fresh);
  if (!e) {
    ADD(t->unplaced, 1);
  } else {
    if (fresh) {
      __atomic_store_n(&e->first_ns, now, __ATOMIC_RELAXED);
      // Its stack, once: the first request admitted from there (a trace names it by this site).
      __atomic_store_n(&e->site, nd_track_site_here(q->kind), __ATOMIC_RELEASE);
    }
    ADD(e->admitted, 1);
    ADD(e->bytes, q->need);
    raise_to(&e->over_max, o);
    __atomic_store_n(&e->last_ns, now, __ATOMIC_RELAXED);
    __atomic_store_n(&e->dirty, 1, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&t->dirty, 1, __ATOMIC_RELEASE);
}

void nd_admit_past_slack(const nd_admit_q_t *q) {
  totals_t *t = &totals[slot_of(q->limit, q->device)];
  ADD(t->past_slack, 1);
  __atomic_store_n(&t->limit_bytes, q->limit_bytes, __ATOMIC_RELAXED);
  __atomic_store_n(&t->slack, nd_admit_slack(q->limit_bytes), __ATOMIC_RELAXED);
  __atomic_store_n(&t->dirty, 1, __ATOMIC_RELEASE);
}

uint64_t nd_admit_admitted(int limit, int device) {
  return LD(totals[slot_of(limit, device)].admitted);
}

void nd_admit_say(nd_buf_t *b, int limit, int device) {
  int s = slot_of(limit, device);
  totals_t *t = &totals[s];
  uint64_t n = LD(t->admitted), past = LD(t->past_slack);
  if (!n && !past) return;
  if (n) {
    nd_buf_str(b, "; admitted ");
    nd_buf_u64(b, n);
    nd_buf_str(b, n == 1 ? " request over " : " requests over ");
    nd_buf_str(b, limit == ND_LIMIT_BYTES ? "maxBytes" : limit == ND_LIMIT_PHYSICAL ? "maxPhysicalBytes"
                                                                                   : "maxDeviceBytes");
    nd_buf_str(b, " (");
    nd_buf_ubytes(b, LD(t->bytes));
    // maxPhysicalBytes: its readings, which the program's own pages move too
    nd_buf_str(b, limit == ND_LIMIT_PHYSICAL ? "; resident at most " : "; at most ");
    nd_buf_ubytes(b, LD(t->over_max));
    nd_buf_str(b, " past it, slack ");
    nd_buf_bytes(b, LD(t->slack));
    nd_buf_str(b, ")");
    const entry_t *top = NULL; // the most bytes; of equals, the first to admit
    for (unsigned i = 0; i < ADMIT_SITES; i++) {
      const entry_t *e = &sites[i];
      uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
      if (!k || (int)(k >> 56) != s + 1) continue;
      if (!top || LD(e->bytes) > LD(top->bytes) ||
          (LD(e->bytes) == LD(top->bytes) && LD(e->first_ns) < LD(top->first_ns)))
        top = e;
    }
    if (top) {
      uintptr_t ip = (uintptr_t)(LD(top->key) & ((1ull << 56) - 1));
      nd_buf_str(b, ", most from ");
      if (ip) nd_buf_frame(b, ip);
      else nd_buf_str(b, "an unknown caller");
    }
  }
  if (past) {
    nd_buf_str(b, "; ");
    nd_buf_u64(b, past);
    nd_buf_str(b, " refused past the slack");
  }
}

// ---------------------------------------------------------------- records

// Changed totals and sites; a site whose stack is not in the trace yet waits for the next flush
// (the writer writes the sites' stacks before the modules' records).
static void write_records(nd_record_fn rec, void *ctx) {
  for (int s = 0; s < SLOTS; s++) {
    totals_t *t = &totals[s];
    if (!__atomic_exchange_n(&t->dirty, 0, __ATOMIC_ACQ_REL)) continue;
    nd_rec_admitted_t r = {(uint16_t)(s < 2 ? s : ND_LIMIT_DEVICE), 0, (uint32_t)(s < 2 ? 0 : s - 2),
                           (uint64_t)LD(t->limit_bytes), (uint64_t)LD(t->slack),
                           (uint64_t)nd_cfg.limit_large, LD(t->admitted), LD(t->bytes),
                           LD(t->over_max), LD(t->past_slack), LD(t->unplaced)};
    rec(ctx, ND_REC_ADMITTED, &r, sizeof r);
  }
  for (unsigned i = 0; i < ADMIT_SITES; i++) {
    entry_t *e = &sites[i];
    uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
    if (!k || !__atomic_load_n(&e->dirty, __ATOMIC_ACQUIRE)) continue;
    nd_site_t *site = __atomic_load_n(&e->site, __ATOMIC_ACQUIRE);
    if (site && !site->written) continue;
    __atomic_store_n(&e->dirty, 0, __ATOMIC_RELEASE);
    int s = (int)(k >> 56) - 1;
    nd_rec_admit_site_t r = {(uint16_t)(s < 2 ? s : ND_LIMIT_DEVICE), site ? ND_ADMIT_STACK : 0,
                             (uint32_t)(s < 2 ? 0 : s - 2), site ? site->id : 0, e->kind, 0,
                             k & ((1ull << 56) - 1), LD(e->admitted), LD(e->bytes),
                             LD(e->over_max), LD(e->first_ns), LD(e->last_ns)};
    rec(ctx, ND_REC_ADMIT_SITE, &r, sizeof r);
  }
}

ND_MODULE(nd_admit_module) = {.name = "admit", .rank = 16, .order = 11,
                              .write_records = write_records};
