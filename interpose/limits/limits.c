// SPDX-License-Identifier: MIT
// limits.c: maxBytes, maxPhysicalBytes, NDMEM_ON_LIMIT and the watermark (see limits.h).
//
// Nothing here takes a lock on the allocation path: the reservation is one CAS on a counter, the
// exact total a walk over the counter shards, a physical reading one pread of a statm file kept
// open. Records for the trace (logged breaches, a pending snapshot) wait under a leaf spinlock
// for the writer, which asks for them at each flush.
#include "limits/limits.h"
#include "limits/admit.h"
#include "limits/callers.h"
#include "runtime/module.h"

#include "runtime/allocstat.h"
#include "common/fmt.h"
#include "stacks/names.h"
#include "ndmem.h"
#include "common/os.h"
#include "runtime/shim.h"
#include "account/sites.h"
#include "runtime/sysmem.h"
#include "common/trace_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nd_limits_on;

#define SMALL ND_LIM_SMALL     // blocks up to this size are checked without a reservation
#define MAX_PENDING 64          // breach records waiting for a flush
#define SNAP_SITES 256          // sites per snapshot
#define TOP_SITES 5             // sites named in a breach message
#define MAX_WM_SNAPSHOTS 64     // watermark snapshots per run

static struct {
  int64_t max_physical;        // atomic (ndmem_limit_set); maxBytes is nd_lim.max_bytes
  int64_t warn_at;             // atomic
  int action;                  // atomic
  int statm_fd;
  const char *statm_once; // the statm file, opened for each reading where its descriptor would lie
                          // in the program's range (no room above its limit: common/os.h)
  // physical readings (atomic)
  int64_t phys;                // the last reading, -1 before the first
  uint64_t phys_reads;
  uint64_t warn_next;          // the reading at which the next watermark snapshot is taken
  // totals (atomic)
  uint64_t breaches[ND_LIMIT_COUNT], failed, reliefs, relief_bytes, snapshots, wm_snapshots;
  uint32_t flags;
  // waiting for the trace writer, under rec_lock (a leaf)
  int rec_lock;
  nd_rec_breach_t pending[MAX_PENDING];
  unsigned npending;
  int snap_waiting;
  nd_rec_snapshot_t snap;
  int poller; // atomic: the reading thread was started
  uint64_t retrying_ns; // atomic: when a thread in a long run of refusals was last refused
  // The last refused request (REFUSAL), under rec_lock: written at the next flush (dirty) and
  // named by the exit line when the process ends soon after it (exit_note).
  nd_rec_refusal_t refusal;
  const nd_site_t *refusal_site;
  int refusal_dirty;
} limits = {.statm_fd = -1, .phys = -1};

int64_t nd_ws_arena_total, nd_ws_live_total;
static int64_t (*untouched_read)(void); // heap/mmap.c's (nd_limits_untouched_reader)
void nd_limits_untouched_reader(int64_t (*read)(void)) { untouched_read = read; }

nd_lim_hot_t nd_lim;

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
static int64_t lim_max(int id) {
  return id == ND_LIMIT_BYTES ? __atomic_load_n(&nd_lim.max_bytes, __ATOMIC_RELAXED)
                              : __atomic_load_n(&limits.max_physical, __ATOMIC_RELAXED);
}
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ADD(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

static void raise_to(int64_t *peak, int64_t v) {
  int64_t p = LD(*peak);
  while (v > p && !__atomic_compare_exchange_n(peak, &p, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

// ---------------------------------------------------------------- tracked bytes

static int64_t tracked_est(nd_tls_t *t) { return nd_limit_tracked_est(t ? t->shard : NULL); }

// Every shard's unpublished part too (reservations not included).
static int64_t tracked_exact(void) {
  return nd_counters_published(NDMEM_KIND_HEAP) + nd_counters_published(NDMEM_KIND_MMAP) +
         nd_counters_pending_sum(NDMEM_KIND_HEAP) + nd_counters_pending_sum(NDMEM_KIND_MMAP) +
         nd_ws_idle_bytes() - LD(nd_lim.untouched);
}

// Large mappings counted by their touched pages: read again (mincore) by the reading thread every
// NDMEM_LIMIT_POLL_MS, and before a breach is declared, so that none is declared on pages
// counted touched that were given back since, and pages touched since the last reading go
// uncounted for one interval at most (limits/limits.h).
static int maps_read(void) { return nd_lim.touched && LD(nd_lim.max_bytes) > 0; }

static int64_t margin(void) { return nd_limit_margin(); }

static int reserve(int64_t base, int64_t bytes, int64_t max, nd_lim_t *c) {
  int64_t r = LD(nd_lim.reserved);
  while (base + r + bytes <= max)
    if (__atomic_compare_exchange_n(&nd_lim.reserved, &r, r + bytes, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      c->reserved += bytes;
      return 1;
    }
  return 0;
}

// ---------------------------------------------------------------- physical memory

static void request_snapshot(int reason, int64_t tracked, int64_t physical, int64_t threshold) {
  nd_spin_lock(&limits.rec_lock);
  limits.snap.mono_ns = nd_os_mono_ns();
  limits.snap.reason = (uint32_t)reason;
  limits.snap.tracked = (uint64_t)(tracked > 0 ? tracked : 0);
  limits.snap.physical = (uint64_t)(physical > 0 ? physical : 0);
  limits.snap.threshold = (uint64_t)threshold;
  limits.snap_waiting = 1;
  nd_spin_unlock(&limits.rec_lock);
}

static void watermark(uint64_t v) {
  int64_t warn = LD(limits.warn_at);
  uint64_t next = LD(limits.warn_next);
  if (!warn || v < next || LD(limits.wm_snapshots) >= MAX_WM_SNAPSHOTS) return;
  // The next snapshot when another 1/16 of the watermark is resident: the last one before an
  // OOM kill is at most that stale.
  if (!__atomic_compare_exchange_n(&limits.warn_next, &next, v + (uint64_t)warn / 16, 0, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED))
    return;
  uint64_t n = ADD(limits.wm_snapshots, 1) + 1;
  int64_t tracked = tracked_est(NULL);
  request_snapshot(ND_SNAP_WATERMARK, tracked, (int64_t)v, warn);
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_fmt(&b, "ndmem: anonymous resident memory %s crossed the watermark %s (NDMEM_WARN_AT; "
                 "tracked %s; snapshot %llu%s",
             ND_BYTES((int64_t)v), ND_BYTES(warn), ND_BYTES(tracked), (unsigned long long)n,
             nd_modules_writing() ? "): live memory by site goes to the trace"
                                : "; NDMEM_TRACE=0, so no sites are recorded)");
  nd_buf_line(&b, 2);
}

// Reads anonymous resident memory; -1 when it cannot. The reader's own batch of allocated bytes
// is added first, so `since` counts from here for every thread.
static int64_t phys_read(nd_tls_t *t) {
  uint64_t v;
  nd_os_fd_enter(); // the descriptor stays where it is for the read (os.h)
  int fd = __atomic_load_n(&limits.statm_fd, __ATOMIC_ACQUIRE), once = fd < 0 && limits.statm_once;
  if (once) fd = open(limits.statm_once, O_RDONLY | O_CLOEXEC);
  int rc = fd < 0 || nd_statm_anon(fd, &v) != 0 ? -1 : 0;
  if (once && fd >= 0) {
    int saved = errno;
    close(fd);
    errno = saved;
  }
  nd_os_fd_leave();
  if (rc) return -1;
  if (t && t->lim_acc) {
    ADD(nd_lim.gross, t->lim_acc);
    t->lim_acc = 0;
  }
  ST(nd_lim.gross_at_read, LD(nd_lim.gross));
  ST(limits.phys, (int64_t)v);
  ST(nd_lim.phys_due, 0);
  int64_t maxp = LD(limits.max_physical);
  if (!maxp || (int64_t)v <= maxp) nd_admit_phys_under(); // admitted again from 0 past it
  ADD(limits.phys_reads, 1);
  nd_statm_seen(v); // one peak with the flushes' readings (sysmem.h)
  watermark(v);
  return (int64_t)v;
}

static uint64_t since_reading(nd_tls_t *t) {
  return LD(nd_lim.gross) + (t ? t->lim_acc : 0) - LD(nd_lim.gross_at_read);
}

static void start_poller(void);

// ---------------------------------------------------------------- checks

// What a request adds to anonymous resident memory: a fresh mapping nothing yet (its pages come
// when touched, and the reading after counts them), anything else its bytes.
static uint64_t phys_need(const nd_lim_t *c) { return c->fresh ? 0 : c->req; }

// maxBytes as this request is checked against it: the limit, or once the request was admitted
// over it (limits/admit.h) the limit plus the slack.
static int64_t bytes_cap(const nd_lim_t *c, int64_t max) {
  return c->admitted & (1 << ND_LIMIT_BYTES) ? max + nd_admit_slack(max) : max;
}

int nd_limit_pre(nd_tls_t *t, nd_lim_t *c, int what) {
  if (c->allow) return ND_LIM_OK;
  int64_t maxp = LD(limits.max_physical);
  if (ND_UNLIKELY(!LD(limits.poller)) && nd_cfg.limit_poll_ms > 0 && (nd_lim.phys_on || maps_read()))
    start_poller();
  // Admitted over maxPhysicalBytes: its slack was checked against the reading then.
  if ((what & ND_LIM_PHYS) && nd_lim.phys_on && !(c->admitted & (1 << ND_LIMIT_PHYSICAL))) {
    if (LD(nd_lim.phys_due) || since_reading(t) >= (uint64_t)nd_lim.step || LD(limits.phys) < 0) {
      int64_t v = phys_read(t);
      if (maxp && v > maxp) {
        c->limit = ND_LIMIT_PHYSICAL;
        c->value = v;
        c->need = phys_need(c);
        return ND_LIM_OVER;
      }
    }
  }
  int64_t max = LD(nd_lim.max_bytes);
  if ((what & ND_LIM_HOST) && max) {
    int64_t req = (int64_t)c->req, cap = bytes_cap(c, max);
    if (tracked_est(t) + LD(nd_lim.reserved) + req + margin() > cap) {
      int64_t ex = tracked_exact() + LD(nd_lim.reserved);
      if (ex + req > cap) { // cannot fit, whatever the allocator's rounding: no need to call it
        c->limit = ND_LIMIT_BYTES;
        c->value = ex;
        c->need = c->req;
        return ND_LIM_OVER;
      }
    }
  }
  return ND_LIM_OK;
}

int nd_limit_post(nd_tls_t *t, nd_lim_t *c, uint64_t bytes) {
  int64_t max = LD(nd_lim.max_bytes);
  if (!max) return ND_LIM_OK;
  int64_t est = tracked_est(t), b = (int64_t)bytes;
  raise_to(&nd_lim.peak_tracked, est + LD(nd_lim.reserved) + b);
  if (c->allow) return ND_LIM_OK;
  // Under the limit, as every request is checked; a request admitted before the call (its size
  // crossed the limit) that fits after all is no admission.
  int adm = c->admitted & (1 << ND_LIMIT_BYTES);
  c->admitted &= ~(1 << ND_LIMIT_BYTES);
  int64_t base = est + margin();
  if (b <= SMALL && base + LD(nd_lim.reserved) + b <= max) return ND_LIM_OK;
  if (reserve(base, b, max, c)) return ND_LIM_OK;
  int64_t ex = tracked_exact(); // near the limit: every shard counted
  if (reserve(ex, b, max, c)) return ND_LIM_OK;
  int64_t before = ex + LD(nd_lim.reserved);
  if (adm) { // admitted: within the limit plus the slack, to the byte; counted once served
    c->admitted |= 1 << ND_LIMIT_BYTES;
    if (reserve(ex, b, bytes_cap(c, max), c)) {
      c->adm_value[ND_LIMIT_BYTES] = before;
      c->adm_need[ND_LIMIT_BYTES] = bytes;
      return ND_LIM_OK;
    }
  }
  c->limit = ND_LIMIT_BYTES;
  c->value = before;
  c->need = bytes;
  return ND_LIM_OVER;
}

// A served request admitted over a limit: counted where it was admitted (limits/admit.h).
static void count_admissions(const nd_lim_t *c) {
  for (int id = 0; id < ND_LIMIT_COUNT; id++) {
    if (!(c->admitted & (1 << id))) continue;
    nd_admit_q_t q = {.limit = id, .kind = c->fn == NDMEM_FN_MMAP || c->fn == NDMEM_FN_MREMAP
                                               ? NDMEM_KIND_MMAP
                                               : NDMEM_KIND_HEAP,
                      .fresh = c->fresh, .size = c->size, .value = c->adm_value[id],
                      .need = c->adm_need[id], .limit_bytes = lim_max(id), .ra = c->ra,
                      .cls = c->cls, .ip = c->ip};
    nd_admit_count(&q);
  }
}

void nd_limit_settle(nd_tls_t *t, nd_lim_t *c, int ok) {
  if (ok && c->admitted) count_admissions(c);
  if (ok) t->retry_n = 0; // granted: whatever was refused before is no loop
  if (c->reserved) {
    // Published before the reservation goes: for a moment the block counts twice, never not at all.
    if (ok && t->shard) {
      nd_shard_publish(t->shard, NDMEM_KIND_HEAP);
      nd_shard_publish(t->shard, NDMEM_KIND_MMAP);
    }
    __atomic_fetch_sub(&nd_lim.reserved, c->reserved, __ATOMIC_RELAXED);
    c->reserved = 0;
  }
  if (ok) nd_limit_fast_done(t, c->req);
}

void nd_limit_flush_acc(nd_tls_t *t) {
  ADD(nd_lim.gross, t->lim_acc);
  t->lim_acc = 0;
}

void nd_limit_peak(int64_t v) { raise_to(&nd_lim.peak_tracked, v); }

uint64_t nd_limit_room_left(void) {
  int64_t max = LD(nd_lim.max_bytes);
  if (!max) return UINT64_MAX;
  int64_t used = tracked_exact() + LD(nd_lim.reserved) + margin();
  return used < max ? (uint64_t)(max - used) : 0;
}

int nd_limit_room(uint64_t bytes) {
  int64_t max = LD(nd_lim.max_bytes);
  return !max || tracked_exact() + LD(nd_lim.reserved) + (int64_t)bytes <= max;
}

// ---------------------------------------------------------------- breaches

static const char *const action_names[] = {"fail", "warn", "abort", "host"};

typedef struct top {
  nd_site_t *site;
  int64_t live;
} top_t;

// The n largest sites (of one kind; -1: all) by live bytes into v (sorted, largest first);
// returns how many.
static int top_sites(top_t *v, int n, uint32_t *nsites, int kind) {
  int k = 0;
  uint32_t count = nd_sites_count(), with_live = 0;
  for (uint32_t i = 0; i < count; i++) {
    nd_site_t *s = nd_site_by_id(i);
    if (!s || (kind >= 0 && s->kind != kind)) continue;
    int64_t live = (int64_t)(LD(s->alloc_bytes) - LD(s->free_bytes));
    if (live <= 0) continue;
    with_live++;
    if (k == n && live <= v[k - 1].live) continue;
    int j = k < n ? k++ : k - 1; // insertion into the sorted list (n is small)
    while (j > 0 && v[j - 1].live < live) v[j] = v[j - 1], j--;
    v[j].site = s;
    v[j].live = live;
  }
  if (nsites) *nsites = with_live;
  return k;
}

static void say_top_sites(int kind) {
  nd_buf_t b;
  if (!nd_modules_writing()) {
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem:   (NDMEM_TRACE=0: allocation sites are not recorded)");
    nd_buf_line(&b, 2);
    return;
  }
  top_t v[TOP_SITES];
  uint32_t nsites = 0;
  int k = top_sites(v, TOP_SITES, &nsites, kind);
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem:   top live allocation sites (");
  nd_buf_u64(&b, (uint64_t)k);
  nd_buf_str(&b, " of ");
  nd_buf_u64(&b, nsites);
  nd_buf_str(&b, "; ndmemreport shows their file:line):");
  nd_buf_line(&b, 2);
  for (int i = 0; i < k; i++) {
    nd_site_t *s = v[i].site;
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem:   #");
    nd_buf_u64(&b, (uint64_t)i + 1);
    nd_buf_str(&b, s->sampled ? " ~" : " ");
    nd_buf_bytes(&b, v[i].live);
    nd_buf_str(&b, " in ");
    nd_buf_u64(&b, LD(s->allocs) - LD(s->frees));
    nd_buf_str(&b, s->kind == NDMEM_KIND_MMAP ? " mappings [stack " : " blocks [stack ");
    nd_buf_u64(&b, s->id);
    nd_buf_str(&b, "] ");
    uintptr_t ips[ND_STACK_MAX];
    nd_buf_stack(&b, ips, nd_site_stack(s, ips), 2);
    nd_buf_line(&b, 2);
  }
}

void nd_limits_say_breach(int device, int action, uint64_t req, int more, const char *what,
                          int64_t value, int plus, const char *limit_name, int64_t lim, int64_t slack,
                          int64_t admitted, uint64_t n, const nd_lim_t *relief) {
  nd_buf_t b;
  nd_buf_reset(&b);
  int over = action == ND_ON_LIMIT_WARN || action == ND_ON_LIMIT_HOST;
  nd_buf_str(&b, over ? "ndmem: Over the limit [" : "ndmem: Can't allocate [");
  if (device < 0) {
    nd_buf_str(&b, "HOST");
  } else {
    nd_buf_str(&b, "DEVICE ");
    nd_buf_u64(&b, (uint64_t)device);
  }
  nd_buf_str(&b, action == ND_ON_LIMIT_WARN   ? "], allowed: "
                 : action == ND_ON_LIMIT_HOST ? "], served from page-locked host memory: "
                                              : "] memory: ");
  nd_buf_ubytes(&b, req);
  nd_buf_str(&b, more ? " more requested; " : " requested; ");
  nd_buf_str(&b, what);
  nd_buf_char(&b, ' ');
  nd_buf_bytes(&b, value);
  if (plus) {
    nd_buf_str(&b, " + ");
    nd_buf_ubytes(&b, req);
  }
  nd_buf_str(&b, " > ");
  nd_buf_str(&b, limit_name);
  nd_buf_char(&b, ' ');
  nd_buf_bytes(&b, lim);
  if (slack >= 0 && admitted >= 0) { // maxPhysicalBytes: what admissions added past it
    nd_buf_str(&b, "; admitted past it ");
    nd_buf_bytes(&b, admitted);
    nd_buf_str(&b, " + ");
    nd_buf_ubytes(&b, req);
    nd_buf_str(&b, " > slack ");
    nd_buf_bytes(&b, slack);
  } else if (slack >= 0) { // refused only because admitting it would have passed the slack
    nd_buf_str(&b, " + slack ");
    nd_buf_bytes(&b, slack);
  }
  if (relief) { // it ran first: what it gave back, said so that the refusal is seen as earned
    nd_buf_str(&b, " after relief gave back ");
    if (!relief->relief_arenas && !relief->relief_resident) {
      nd_buf_str(&b, "nothing");
    } else {
      if (relief->relief_arenas) {
        nd_buf_ubytes(&b, relief->relief_arenas);
        nd_buf_str(&b, " of idle workspace arenas");
      }
      if (relief->relief_arenas && relief->relief_resident) nd_buf_str(&b, " and ");
      if (relief->relief_resident) {
        nd_buf_ubytes(&b, relief->relief_resident);
        nd_buf_str(&b, " of resident memory (malloc_trim)");
      }
    }
  }
  nd_buf_str(&b, "; thread ");
  nd_buf_u64(&b, (uint64_t)nd_os_gettid());
  nd_buf_str(&b, action == ND_ON_LIMIT_HOST ? " (NDMEM_ON_DEVICE_LIMIT=" : " (NDMEM_ON_LIMIT=");
  nd_buf_str(&b, action_names[action]);
  nd_buf_str(&b, "; breach ");
  nd_buf_u64(&b, n);
  if (action != ND_ON_LIMIT_ABORT) {
    nd_buf_str(&b, ", next logged: ");
    nd_buf_u64(&b, n * 2);
  }
  nd_buf_str(&b, ")");
  nd_buf_line(&b, 2);
}

static void say_breach(nd_lim_t *c, int action, uint64_t n) {
  int bytes = c->limit == ND_LIMIT_BYTES, past = c->why == ND_BREACH_PAST_SLACK;
  int more = c->fn == NDMEM_FN_REALLOC || c->fn == NDMEM_FN_REALLOCARRAY || c->fn == NDMEM_FN_MREMAP;
  int64_t lim = lim_max(c->limit);
  nd_limits_say_breach(-1, action, c->req, more, bytes ? "tracked" : "physical", c->value, bytes,
                       bytes ? "maxBytes" : "maxPhysicalBytes", lim, past ? nd_admit_slack(lim) : -1,
                       past && !bytes ? (int64_t)nd_admit_phys_since() : -1, n,
                       c->relieved ? c : NULL);
}

// A logged breach waits for the trace writer (a device's: limit ND_LIMIT_DEVICE with its device).
// site: the refused request's stack, or NULL; retries and since: of a retry loop (ND_BREACH_*).
static void queue_breach_rec(int limit, int action, int fn, int device, uint64_t req, int64_t value,
                             int64_t lim, uint64_t n, const nd_site_t *site, uint64_t retries,
                             uint64_t since, uint32_t why) {
  nd_spin_lock(&limits.rec_lock);
  if (limits.npending < MAX_PENDING) {
    nd_rec_breach_t *r = &limits.pending[limits.npending++];
    memset(r, 0, sizeof *r);
    r->mono_ns = nd_os_mono_ns();
    r->tid = (uint32_t)nd_os_gettid();
    r->limit = (uint16_t)limit;
    r->action = (uint16_t)action;
    r->fn = (uint32_t)fn;
    r->device = (uint32_t)device;
    r->requested = req;
    r->value = (uint64_t)(value > 0 ? value : 0);
    r->limit_bytes = (uint64_t)lim;
    r->count = n;
    r->flags = why & ND_BREACH_WHY;
    if (site) r->flags |= ND_BREACH_STACK, r->stack_id = site->id;
    if (retries) r->flags |= ND_BREACH_RETRY_LOOP, r->retries = retries, r->retry_ns = since;
  }
  nd_spin_unlock(&limits.rec_lock);
}

// The stack of the request being refused, interned as a site (that holds no block) so that the
// trace can name it; NULL without a trace.
static nd_site_t *refused_site(const nd_lim_t *c) {
  if (!nd_modules_writing()) return NULL;
  int map = c->fn == NDMEM_FN_MMAP || c->fn == NDMEM_FN_MREMAP;
  return nd_site_here(map ? NDMEM_KIND_MMAP : NDMEM_KIND_HEAP, 0);
}

static void queue_breach(nd_lim_t *c, int action, uint64_t n, const nd_site_t *site) {
  queue_breach_rec(c->limit, action, c->fn, 0, c->req, c->value, lim_max(c->limit), n, site, 0, 0,
                   c->why);
}

// A request refused (every one, logged or not): the latest is kept for the trace and for the exit
// line, which ties an end soon after it to it (an OpenBLAS exit(1), a SIGSEGV on the NULL).
static void note_refusal(int limit, int fn, int device, uint64_t req, int64_t lim,
                         const nd_site_t *site) {
  nd_spin_lock(&limits.rec_lock);
  nd_rec_refusal_t *r = &limits.refusal;
  uint64_t n = r->refusals + 1;
  memset(r, 0, sizeof *r);
  r->mono_ns = nd_os_mono_ns();
  r->tid = (uint32_t)nd_os_gettid();
  r->limit = (uint16_t)limit;
  r->fn = (uint32_t)fn;
  r->device = (uint32_t)device;
  r->requested = req;
  r->limit_bytes = (uint64_t)(lim > 0 ? lim : 0);
  r->refusals = n;
  if (site) r->flags = ND_REFUSAL_STACK, r->stack_id = site->id;
  limits.refusal_site = site;
  limits.refusal_dirty = 1;
  nd_spin_unlock(&limits.rec_lock);
}

void nd_limits_device_refused(int device, int fn, uint64_t req, int64_t lim, const nd_site_t *site) {
  note_refusal(ND_LIMIT_DEVICE, fn, device, req, lim, site);
}

static void relieve(nd_lim_t *c) {
  if (maps_read() && untouched_read) untouched_read();
  uint64_t freed = nd_modules_relieve(); // the workspaces' idle arenas
  c->relief_arenas = freed;
  c->relief_resident = 0;
  if (nd_real.trim) nd_allocstat_trim(nd_real.trim, 0, &c->relief_resident);
  ADD(limits.reliefs, 1);
  ADD(limits.relief_bytes, freed);
  if (c->limit == ND_LIMIT_PHYSICAL) ST(nd_lim.phys_due, 1); // the retry reads again
}

// The exit line's words about the last refused request (module.h: exit_note): " 0.02 s after a
// refused request (malloc of 128.00 MiB over maxBytes 64.00 MiB on thread 4242, requested at
// [stack 3] ...)". For an end within ND_REFUSAL_NEAR_NS of it, and for one that is not clean (a
// fatal signal, a non-zero status) however long after; not for a limit's own stop (its line is
// just above). code: the exit status or the signal; -1: a status not known.
static void say_secs(nd_buf_t *b, uint64_t ns);
static int exit_note(nd_buf_t *b, int how, int code) {
  if (how == ND_EXIT_LIMIT_ABORT) return 0;
  nd_spin_lock(&limits.rec_lock);
  nd_rec_refusal_t r = limits.refusal;
  const nd_site_t *site = limits.refusal_site;
  nd_spin_unlock(&limits.rec_lock);
  if (!r.refusals) return 0;
  uint64_t now = nd_end_ns ? nd_end_ns : nd_os_mono_ns(); // the EXIT record's moment
  uint64_t since = now > r.mono_ns ? now - r.mono_ns : 0;
  if (how != ND_EXIT_SIGNAL && code <= 0 && since > ND_REFUSAL_NEAR_NS) return 0;
  static const char *const cuda_fns[ND_CUDA_FNS] = {ND_CUDA_FN_NAMES};
  nd_buf_char(b, ' ');
  say_secs(b, since);
  nd_buf_str(b, " after a refused request (");
  nd_buf_str(b, r.limit == ND_LIMIT_DEVICE ? (r.fn < ND_CUDA_FN_USED ? cuda_fns[r.fn] : "?")
                                           : nd_fn_name((int)r.fn));
  nd_buf_str(b, " of ");
  nd_buf_ubytes(b, r.requested);
  nd_buf_str(b, " over ");
  nd_buf_str(b, r.limit == ND_LIMIT_BYTES      ? "maxBytes "
                : r.limit == ND_LIMIT_PHYSICAL ? "maxPhysicalBytes "
                                               : "maxDeviceBytes ");
  nd_buf_ubytes(b, r.limit_bytes);
  if (r.limit == ND_LIMIT_DEVICE) nd_buf_fmt(b, " of device %u", r.device);
  nd_buf_fmt(b, " on thread %u", r.tid);
  if (site) {
    uintptr_t ips[ND_STACK_MAX];
    nd_buf_fmt(b, ", requested at [stack %u] ", site->id);
    nd_buf_stack(b, ips, nd_site_stack(site, ips), 2);
  }
  nd_buf_char(b, ')');
  return 1;
}

// The end of a process stopped on a limit (NDMEM_ON_LIMIT=abort, or a retry loop).
static ND_NOINLINE __attribute__((noreturn)) void stop(const char *why) {
  __atomic_fetch_or(&limits.flags, ND_LIMITS_ABORTED, __ATOMIC_RELAXED);
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem: stopping the process (");
  nd_buf_str(&b, why);
  nd_buf_str(&b, "): the trace and summary are written, then SIGABRT");
  nd_buf_line(&b, 2);
  nd_finish(ND_EXIT_LIMIT_ABORT, SIGABRT);
  abort();
}

// ---------------------------------------------------------------- retry loops

// A program whose answer to a refused allocation is to ask again (OpenBLAS's buffer allocation
// does, on its own thread, while the exiting main thread waits to join it) never ends under
// NDMEM_ON_LIMIT=fail: the failure it was promised is all it gets, for ever. The same requests
// (function, size, caller, limit; at most ND_RETRY_KEYS of them in turn: OpenBLAS tries mmap,
// then malloc) refused on one thread RETRY_MIN times over NDMEM_LIMIT_RETRY_MS, with no request
// of that thread granted on the checked path in between (nd_limit_settle), are such a loop; the
// process is then stopped as NDMEM_ON_LIMIT=abort stops it, the site named. A program that
// retries a few times and gives up (JavaCPP: 10 tries, 100 ms apart), asks for less each time,
// or waits until another thread frees memory is never taken for one.
#define RETRY_MIN 16

static void say_secs(nd_buf_t *b, uint64_t ns) {
  uint64_t centis = (ns + 5000000) / 10000000;
  nd_buf_u64(b, centis / 100);
  nd_buf_char(b, '.');
  nd_buf_u64_pad(b, centis / 10 % 10, 0);
  nd_buf_u64_pad(b, centis % 10, 0);
  nd_buf_str(b, " s");
}

static __attribute__((noreturn)) void retry_stop(nd_tls_t *t, nd_lim_t *c, uint64_t n, uint64_t now) {
  __atomic_fetch_or(&limits.flags, ND_LIMITS_RETRY_LOOP, __ATOMIC_RELAXED);
  nd_site_t *site = refused_site(c);
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem: thread ");
  nd_buf_u64(&b, (uint64_t)nd_os_gettid());
  nd_buf_str(&b, " was refused the same requests ");
  nd_buf_u64(&b, t->retry_n);
  nd_buf_str(&b, " times in a row over ");
  say_secs(&b, now - t->retry_t0);
  nd_buf_str(&b, " (the last: ");
  nd_buf_str(&b, nd_fn_name(c->fn));
  nd_buf_str(&b, " of ");
  nd_buf_ubytes(&b, c->req);
  nd_buf_str(&b, "; ");
  nd_buf_str(&b, c->limit == ND_LIMIT_BYTES ? "maxBytes " : "maxPhysicalBytes ");
  nd_buf_bytes(&b, lim_max(c->limit));
  nd_buf_str(&b, "): the program cannot take the failure NDMEM_ON_LIMIT=fail gives it "
                 "(NDMEM_LIMIT_RETRY_MS=");
  nd_buf_u64(&b, (uint64_t)nd_cfg.limit_retry_ms);
  nd_buf_char(&b, ')');
  nd_buf_line(&b, 2);
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem:   requested at ");
  if (site) {
    nd_buf_str(&b, "[stack ");
    nd_buf_u64(&b, site->id);
    nd_buf_str(&b, "] ");
    uintptr_t ips[ND_STACK_MAX];
    nd_buf_stack(&b, ips, nd_site_stack(site, ips), 3);
  } else {
    nd_buf_frame(&b, c->ra);
  }
  nd_buf_line(&b, 2);
  queue_breach_rec(c->limit, ND_ON_LIMIT_ABORT, c->fn, 0, c->req, c->value, lim_max(c->limit), n,
                   site, t->retry_n, now - t->retry_t0, c->why);
  stop("a retry loop under NDMEM_ON_LIMIT=fail");
}

static void retry_check(nd_tls_t *t, nd_lim_t *c, uint64_t n) {
  int64_t ms = nd_cfg.limit_retry_ms;
  if (ms <= 0) return;
  uint64_t key = (((uint64_t)c->fn << 56 ^ (uint64_t)c->limit << 48 ^ c->req) * 0x9E3779B97F4A7C15ull ^
                  (uint64_t)c->ra) | 1; // never 0: 0 is an empty slot
  uint64_t now = nd_os_mono_ns();
  int k = 0;
  while (k < ND_RETRY_KEYS && t->retry_n && t->retry_key[k] && t->retry_key[k] != key) k++;
  if (!t->retry_n || k == ND_RETRY_KEYS) { // a first refusal, or one request too many: a new run
    memset(t->retry_key, 0, sizeof t->retry_key);
    k = 0;
    t->retry_t0 = now;
    t->retry_n = 0;
  }
  t->retry_key[k] = key;
  if (++t->retry_n < RETRY_MIN) return;
  ST(limits.retrying_ns, now); // nd_limits_exit_wait
  if (now - t->retry_t0 >= (uint64_t)ms * 1000000) retry_stop(t, c, n, now);
}

// The process is ending (exit) while a thread is in a run of refusals long enough to be a retry
// loop: that thread is what exit will wait for (OpenBLAS's shutdown joins the thread that loops),
// and within NDMEM_LIMIT_RETRY_MS the loop will be stopped, its trace and summary written then.
// Until that, or until the run ends (no refusal for RETRY_QUIET_MS), the final flush waits, so that
// the trace and the summary tell how the process ended rather than a normal exit it never had.
#define RETRY_QUIET_MS 200
static void exit_wait(void) {
  int64_t ms = nd_cfg.limit_retry_ms;
  uint64_t start = nd_os_mono_ns(), last;
  if (ms <= 0) return;
  while ((last = LD(limits.retrying_ns)) && nd_os_mono_ns() - last < RETRY_QUIET_MS * 1000000ull &&
         nd_os_mono_ns() - start < (uint64_t)(ms + RETRY_QUIET_MS) * 1000000)
    nd_os_sleep_ms(10);
}

// Whether the request over c->limit may be refused (limits/admit.h): sets c->why, and finds the
// code asking the first time.
static uint32_t judge(nd_lim_t *c) {
  int map = c->fn == NDMEM_FN_MMAP || c->fn == NDMEM_FN_MREMAP;
  nd_admit_q_t q = {.limit = c->limit, .kind = map ? NDMEM_KIND_MMAP : NDMEM_KIND_HEAP,
                    .fresh = c->fresh, .size = c->size, .value = c->value, .need = c->need,
                    .limit_bytes = lim_max(c->limit), .ra = c->ra, .cls = c->cls, .ip = c->ip,
                    .aligned = c->fn == NDMEM_FN_POSIX_MEMALIGN || c->fn == NDMEM_FN_MEMALIGN ||
                               c->fn == NDMEM_FN_ALIGNED_ALLOC};
  c->why = nd_admit_why(&q);
  c->cls = q.cls;
  c->ip = q.ip;
  return c->why;
}

// A refusal only because admitting the request would have passed the slack: counted as such.
static void past_slack(const nd_lim_t *c) {
  nd_admit_q_t q = {.limit = c->limit, .limit_bytes = lim_max(c->limit)};
  nd_admit_past_slack(&q);
}

int nd_limit_breach(nd_tls_t *t, nd_lim_t *c) {
  int action = LD(limits.action);
  if (!judge(c)) {
    // Admitted, after relief at the 1st, 2nd, 4th, ... admission over this limit (relief costs a
    // malloc_trim; it may make room, and then nothing is admitted). Checked again against the
    // limit plus the slack, counted once served (nd_limit_settle).
    if (!c->relieved) {
      c->relieved = 1;
      uint64_t next = nd_admit_admitted(c->limit, 0) + 1;
      if ((next & (next - 1)) == 0) {
        relieve(c);
        return ND_LIM_RETRY;
      }
    }
    c->admitted |= 1 << c->limit;
    c->adm_value[c->limit] = c->value;
    c->adm_need[c->limit] = c->need;
    return ND_LIM_RETRY;
  }
  if (!c->relieved) {
    c->relieved = 1;
    // Relief costs a malloc_trim: under warn, where the allocation goes on anyway, only before
    // the breaches that are logged.
    uint64_t next = LD(limits.breaches[c->limit]) + 1;
    if (action != ND_ON_LIMIT_WARN || (next & (next - 1)) == 0) {
      relieve(c);
      return ND_LIM_RETRY;
    }
  }
  uint64_t n = ADD(limits.breaches[c->limit], 1) + 1;
  if (c->why == ND_BREACH_PAST_SLACK) past_slack(c);
  int logged = (n & (n - 1)) == 0; // the 1st, 2nd, 4th, 8th, ...
  int refused = action != ND_ON_LIMIT_WARN;
  const nd_site_t *site = logged || refused ? refused_site(c) : NULL;
  if (logged || action == ND_ON_LIMIT_ABORT) {
    say_breach(c, action, n);
    if (n == 1 || action == ND_ON_LIMIT_ABORT) say_top_sites(-1);
    queue_breach(c, action, n, site);
  }
  if (refused) note_refusal(c->limit, c->fn, 0, c->req, lim_max(c->limit), site);
  if (n == 1 || action == ND_ON_LIMIT_ABORT) {
    int64_t tracked = c->limit == ND_LIMIT_BYTES ? c->value : tracked_est(t);
    request_snapshot(ND_SNAP_BREACH, tracked, c->limit == ND_LIMIT_PHYSICAL ? c->value : LD(limits.phys),
                     lim_max(c->limit));
  }
  if (action == ND_ON_LIMIT_WARN) {
    c->allow = 1;
    return ND_LIM_ALLOW;
  }
  if (action == ND_ON_LIMIT_ABORT) nd_limits_abort();
  ADD(limits.failed, 1);
  retry_check(t, c, n);
  return ND_LIM_FAIL;
}

void nd_limits_abort(void) { stop("NDMEM_ON_LIMIT=abort"); }

int nd_limits_action(void) { return LD(limits.action); }

void nd_limits_say_top_sites(int kind) { say_top_sites(kind); }

// A device limit's breach (cuda.c decides and says it): its record, and on the first breach a
// snapshot of live memory by site, kept with the host's.
void nd_limits_device_breach(int device, int action, int fn, uint64_t req, int64_t live, int64_t limit,
                             uint64_t n, uint32_t why) {
  queue_breach_rec(ND_LIMIT_DEVICE, action, fn, device, req, live, limit, n, NULL, 0, 0, why);
  if (n == 1 || action == ND_ON_LIMIT_ABORT)
    request_snapshot(ND_SNAP_BREACH, live, LD(limits.phys), limit);
}

int nd_limits_aborting(void) { return (LD(limits.flags) & ND_LIMITS_ABORTED) != 0; }

// ---------------------------------------------------------------- the reading thread

static void *poll_main(void *arg) {
  (void)arg;
  nd_tls.mode = ND_T_BUSY; // nothing this thread does is the program's
  for (;;) {
    nd_os_sleep_ms(nd_cfg.limit_poll_ms);
    if (__atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) != ND_READY) break;
    nd_exit_if_alone();
    if (maps_read() && untouched_read) untouched_read();
    if (!nd_lim.phys_on) continue;
    int64_t v = phys_read(NULL);
    int64_t maxp = LD(limits.max_physical);
    if (maxp && v > maxp) ST(nd_lim.phys_due, 1); // the next allocation breaches
    if (__atomic_load_n(&limits.snap_waiting, __ATOMIC_ACQUIRE)) nd_modules_flush();
  }
  return NULL;
}

// Without a thread, readings come by allocation alone (the step bound still holds); not tried again.
static void start_poller(void) { nd_os_thread_once(&limits.poller, poll_main); }

// ---------------------------------------------------------------- setup and settings

static void statm_warn(const char *path, int err, const char *then) {
  if (nd_quiet()) return;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem: cannot read resident memory from '");
  nd_buf_strn(&b, path, 200);
  nd_buf_str(&b, "' (");
  nd_buf_str(&b, nd_errno_text(err));
  nd_buf_str(&b, "); ");
  nd_buf_str(&b, then);
  nd_buf_line(&b, 2);
}

// A statm file that cannot be opened is said, never silently a limit that is off: the test-only
// NDMEM_TEST_STATM falls back to /proc/self/statm; without that, the physical limit and the
// watermark cannot be checked.
static void open_statm(void) {
  nd_os_fd_enter();
  if (limits.statm_fd >= 0) close(limits.statm_fd);
  int saved = errno;
  const char *proc = "/proc/self/statm", *path = nd_cfg.test_statm[0] ? nd_cfg.test_statm : proc;
  limits.statm_once = NULL;
  limits.statm_fd = open(path, O_RDONLY | O_CLOEXEC);
  if (limits.statm_fd < 0 && path != proc) {
    statm_warn(path, errno, "using /proc/self/statm (NDMEM_TEST_STATM)");
    limits.statm_fd = open(path = proc, O_RDONLY | O_CLOEXEC);
  }
  if (limits.statm_fd < 0)
    statm_warn(proc, errno, "NDMEM_MAX_PHYSICAL_BYTES and NDMEM_WARN_AT are not checked");
  limits.statm_fd = nd_os_fd_high(limits.statm_fd, __atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) == ND_INITIALIZING);
  if (nd_os_fd_in_range(limits.statm_fd)) { // not kept where the program's scans meet it
    close(limits.statm_fd);
    limits.statm_fd = -1;
    limits.statm_once = path;
  } else if (limits.statm_fd >= 0) {
    nd_os_fd_own(&limits.statm_fd);
  }
  nd_os_fd_leave();
  errno = saved;
}

// Readings every 1/64 of the tighter physical threshold, between 1 MiB and 64 MiB.
static void configure(void) {
  int64_t maxp = LD(limits.max_physical), warn = LD(limits.warn_at);
  nd_lim.phys_on = maxp > 0 || warn > 0;
  int64_t basis = maxp > 0 && (warn <= 0 || maxp < warn) ? maxp : warn;
  int64_t step = nd_cfg.limit_step;
  if (!step) {
    step = basis / 64;
    if (step < (1 << 20)) step = 1 << 20;
    if (step > (64 << 20)) step = 64 << 20;
  }
  nd_lim.step = step;
  if (nd_lim.phys_on && limits.statm_fd < 0 && !limits.statm_once) open_statm();
  if (nd_lim.phys_on && LD(limits.phys) < 0) ST(nd_lim.phys_due, 1); // the first allocation reads (and
                                                                 // starts the reading thread)
  __atomic_store_n(&nd_limits_on, nd_lim.phys_on || LD(nd_lim.max_bytes) > 0, __ATOMIC_RELEASE);
}

static void setup(char *const *envp) {
  (void)envp;
  nd_callers_setup(nd_cfg.limit_refuse);
  nd_lim.touched = nd_cfg.max_bytes_mappings == ND_MAPPINGS_TOUCHED;
  nd_lim.max_bytes = nd_cfg.max_bytes;
  limits.max_physical = nd_cfg.max_physical_bytes;
  limits.warn_at = nd_cfg.warn_at;
  limits.warn_next = (uint64_t)nd_cfg.warn_at;
  limits.action = (int)nd_cfg.on_limit;
  configure();
}

static int unread(void) { return nd_cfg.unread_limits & (ND_UNREAD_BYTES | ND_UNREAD_PHYSICAL); }

static int64_t configured(void) {
  return LD(nd_lim.max_bytes) || LD(limits.max_physical) || LD(limits.warn_at) || unread();
}

int nd_limits_set(const char *name, const char *value) {
  static const struct { const char *key, *var; } keys[] = {
      {"max_bytes", "NDMEM_MAX_BYTES"}, {"max_physical_bytes", "NDMEM_MAX_PHYSICAL_BYTES"},
      {"warn_at", "NDMEM_WARN_AT"}, {"on_limit", "NDMEM_ON_LIMIT"}};
  int which = -1;
  for (int i = 0; name && i < 4; i++)
    if (strcmp(name, keys[i].key) == 0 || strcmp(name, keys[i].var) == 0) which = i;
  nd_buf_t b;
  nd_buf_reset(&b);
  if (which < 0 || !value) {
    nd_buf_str(&b, "ndmem: ndmem_limit_set: '");
    nd_buf_strn(&b, name ? name : "(null)", 64);
    nd_buf_str(&b, which < 0 ? "' is not max_bytes, max_physical_bytes, warn_at or on_limit; nothing changed"
                             : "' needs a value; nothing changed");
    nd_buf_line(&b, 2);
    return -1;
  }
  int64_t v;
  uint64_t base = nd_cfg.cgroup_bytes && nd_cfg.cgroup_bytes < nd_cfg.ram_bytes ? nd_cfg.cgroup_bytes
                                                                                : nd_cfg.ram_bytes;
  int rc = which == 3 ? nd_parse_choice(value, "fail|warn|abort", &v)
                      : nd_parse_limit(value, base, which == 2, &v);
  if (rc != 0) {
    nd_buf_str(&b, "ndmem: ndmem_limit_set: ");
    nd_buf_str(&b, keys[which].key);
    nd_buf_str(&b, "='");
    nd_buf_strn(&b, value, 64);
    nd_buf_str(&b, which == 3 ? "' is not fail, warn or abort; nothing changed"
                              : "' is not a limit (e.g. 8G, 512m, 1.5g, 75%, off); nothing changed");
    nd_buf_line(&b, 2);
    return -1;
  }
  if (which == 2 && v < 0) v = (int64_t)nd_config_auto_warn(nd_cfg.cgroup_bytes);
  switch (which) {
  case 0: ST(nd_lim.max_bytes, v); break;
  case 1:
    ST(limits.max_physical, v);
    ST(nd_lim.phys_due, 1); // a new physical threshold is checked against a fresh reading
    break;
  case 2:
    ST(limits.warn_at, v);
    ST(limits.warn_next, (uint64_t)v);
    ST(nd_lim.phys_due, 1);
    break;
  case 3: ST(limits.action, (int)v); break;
  }
  configure();
  return 0;
}

void nd_limits_breaches(uint64_t *max_bytes, uint64_t *max_physical) {
  *max_bytes = LD(limits.breaches[ND_LIMIT_BYTES]);
  *max_physical = LD(limits.breaches[ND_LIMIT_PHYSICAL]);
}

void nd_limits_get(ndmem_limits_t *out) {
  nd_tls_t *t = &nd_tls;
  out->version = NDMEM_LIMITS_VERSION;
  out->max_bytes = LD(nd_lim.max_bytes);
  out->max_physical_bytes = LD(limits.max_physical);
  out->warn_at = LD(limits.warn_at);
  out->on_limit = LD(limits.action);
  out->reserved = 0;
  out->tracked_bytes = tracked_exact() + LD(nd_lim.reserved);
  out->physical_bytes = LD(limits.phys);
  out->physical_reads = LD(limits.phys_reads);
  out->since_reading = since_reading(t);
  out->breaches_bytes = LD(limits.breaches[ND_LIMIT_BYTES]);
  out->breaches_physical = LD(limits.breaches[ND_LIMIT_PHYSICAL]);
  out->failed = LD(limits.failed);
  out->reliefs = LD(limits.reliefs);
  out->relief_bytes = LD(limits.relief_bytes);
  out->snapshots = LD(limits.snapshots);
  out->ram_bytes = nd_cfg.ram_bytes;
  out->cgroup_bytes = nd_cfg.cgroup_bytes;
}

// ---------------------------------------------------------------- reporting

static void summary(int fd) {
  if (!configured()) return;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem[");
  nd_buf_u64(&b, (uint64_t)nd_os_getpid());
  nd_buf_str(&b, "]: limits: maxBytes ");
  int64_t v = LD(nd_lim.max_bytes), u = LD(nd_lim.untouched);
  if (v) {
    nd_buf_bytes(&b, v);
    nd_buf_str(&b, " (peak tracked ");
    nd_buf_bytes(&b, LD(nd_lim.peak_tracked));
    if (u > 0) { // mappings reserved and never touched
      nd_buf_str(&b, "; untouched mappings not counted ");
      nd_buf_bytes(&b, u);
    }
    nd_buf_str(&b, ")");
  } else {
    // A value that is not a limit left the process without it: said here too, not only at start.
    nd_buf_str(&b, nd_cfg.unread_limits & ND_UNREAD_BYTES ? "none (NDMEM_MAX_BYTES could not be read)"
                                                          : "none");
  }
  nd_buf_str(&b, ", maxPhysicalBytes ");
  v = LD(limits.max_physical);
  if (v) nd_buf_bytes(&b, v);
  else if (nd_cfg.unread_limits & ND_UNREAD_PHYSICAL)
    nd_buf_str(&b, "none (NDMEM_MAX_PHYSICAL_BYTES could not be read)");
  else nd_buf_str(&b, "none");
  nd_buf_str(&b, ", watermark ");
  v = LD(limits.warn_at);
  if (v) nd_buf_bytes(&b, v);
  else nd_buf_str(&b, "none");
  if (nd_lim.phys_on) {
    nd_buf_str(&b, " (peak resident ");
    nd_buf_ubytes(&b, nd_statm_peak());
    nd_buf_str(&b, ")");
  }
  nd_buf_fmt(&b, "; on limit %s; breaches %llu + %llu physical, %llu failed; snapshots %llu",
             action_names[LD(limits.action)], (unsigned long long)LD(limits.breaches[ND_LIMIT_BYTES]),
             (unsigned long long)LD(limits.breaches[ND_LIMIT_PHYSICAL]),
             (unsigned long long)LD(limits.failed), (unsigned long long)LD(limits.snapshots));
  nd_admit_say(&b, ND_LIMIT_BYTES, 0);
  nd_admit_say(&b, ND_LIMIT_PHYSICAL, 0);
  nd_buf_line(&b, fd);
}

static void write_records(nd_record_fn rec, void *ctx) {
  // Device breaches and their snapshot come through here too, without a host limit set.
  int host = configured() || LD(limits.breaches[0]) || LD(limits.breaches[1]) || LD(limits.reliefs);
  if (!host && !__atomic_load_n(&limits.npending, __ATOMIC_ACQUIRE) &&
      !__atomic_load_n(&limits.snap_waiting, __ATOMIC_ACQUIRE) &&
      !__atomic_load_n(&limits.refusal_dirty, __ATOMIC_ACQUIRE))
    return;
  static nd_rec_breach_t copy[MAX_PENDING]; // the writer holds the trace lock: one caller at a time
  static top_t top[SNAP_SITES];
  nd_rec_snapshot_t snap;
  nd_spin_lock(&limits.rec_lock);
  unsigned n = limits.npending;
  memcpy(copy, limits.pending, n * sizeof copy[0]);
  limits.npending = 0;
  int want_snap = limits.snap_waiting;
  snap = limits.snap;
  int refusal = limits.refusal_dirty;
  nd_rec_refusal_t last = limits.refusal;
  // A stack interned after this flush wrote the sites is not in the trace yet: the record goes
  // without it now and again, with it, at the next flush (the latest wins).
  if (refusal && limits.refusal_site && !limits.refusal_site->written)
    last.flags &= (uint16_t)~ND_REFUSAL_STACK, last.stack_id = 0;
  else limits.refusal_dirty = 0;
  nd_spin_unlock(&limits.rec_lock);
  for (unsigned i = 0; i < n; i++) rec(ctx, ND_REC_BREACH, &copy[i], sizeof copy[i]);
  if (refusal) rec(ctx, ND_REC_REFUSAL, &last, sizeof last);
  if (want_snap) {
    int k = top_sites(top, SNAP_SITES, NULL, -1), w = 0;
    // A site interned after this flush wrote the sites (another thread's request since) has no
    // STACK record yet: it is left out of the snapshot, whose records may only name written ones.
    for (int i = 0; i < k; i++)
      if (__atomic_load_n(&top[i].site->written, __ATOMIC_ACQUIRE)) top[w++] = top[i];
    k = w;
    snap.sites = (uint32_t)k;
    rec(ctx, ND_REC_SNAPSHOT, &snap, sizeof snap);
    for (int i = 0; i < k; i++) {
      nd_site_t *s = top[i].site;
      nd_rec_snap_site_t r = {s->id, s->kind, s->sampled ? ND_SITE_SAMPLED : 0, (uint64_t)top[i].live,
                              LD(s->allocs) - LD(s->frees)};
      rec(ctx, ND_REC_SNAP_SITE, &r, sizeof r);
    }
    __atomic_store_n(&limits.snap_waiting, 0, __ATOMIC_RELEASE);
    ADD(limits.snapshots, 1);
  }
  if (!host) return;
  nd_rec_limits_t r;
  memset(&r, 0, sizeof r);
  r.max_bytes = (uint64_t)LD(nd_lim.max_bytes);
  r.max_physical_bytes = (uint64_t)LD(limits.max_physical);
  r.warn_at = (uint64_t)LD(limits.warn_at);
  r.ram_bytes = nd_cfg.ram_bytes;
  r.cgroup_bytes = nd_cfg.cgroup_bytes;
  r.action = (uint32_t)LD(limits.action);
  r.flags = LD(limits.flags) | (nd_lim.touched ? 0 : ND_LIMITS_MAPPINGS_WHOLE) |
            (nd_cfg.unread_limits & ND_UNREAD_BYTES ? ND_LIMITS_UNREAD_BYTES : 0) |
            (nd_cfg.unread_limits & ND_UNREAD_PHYSICAL ? ND_LIMITS_UNREAD_PHYSICAL : 0);
  int64_t u = LD(nd_lim.untouched);
  r.untouched = LD(nd_lim.max_bytes) && u > 0 ? (uint64_t)u : 0;
  r.breaches[ND_LIMIT_BYTES] = LD(limits.breaches[ND_LIMIT_BYTES]);
  r.breaches[ND_LIMIT_PHYSICAL] = LD(limits.breaches[ND_LIMIT_PHYSICAL]);
  r.failed = LD(limits.failed);
  r.reliefs = LD(limits.reliefs);
  r.relief_bytes = LD(limits.relief_bytes);
  int64_t pt = LD(nd_lim.peak_tracked);
  r.peak_tracked = (uint64_t)(pt > 0 ? pt : 0);
  r.peak_physical = nd_statm_peak(); // every reading's, the flushes' too (sysmem.h)
  r.physical_reads = LD(limits.phys_reads);
  r.snapshots = LD(limits.snapshots);
  rec(ctx, ND_REC_LIMITS, &r, sizeof r);
}

// The child reads its own statm, starts its own reading thread, and keeps the parent's totals
// (as it keeps its counters).
static void atfork_child(nd_tls_t *t) {
  (void)t;
  limits.rec_lock = 0;
  nd_callers_atfork_child();
  // The child's end is tied to the requests it was refused itself, not to its parent's.
  memset(&limits.refusal, 0, sizeof limits.refusal);
  limits.refusal_site = NULL;
  limits.refusal_dirty = 0;
  nd_lim.reserved = 0; // reservations of threads that did not survive the fork
  limits.poller = 0;
  if (limits.statm_fd >= 0) open_statm();
}

ND_MODULE(nd_limits_module) = {.name = "limits", .rank = 15, .order = 10, .setup = setup,
                               .atfork_child = atfork_child, .exit_wait = exit_wait,
                               .exit_note = exit_note, .summary = summary,
                               .write_records = write_records};
