// SPDX-License-Identifier: MIT
// dws.c: device workspaces (dws.h). One workspace per device, shared by the program's threads
// (device memory belongs to the device, not to a thread), under one lock per device: device
// calls cost microseconds in the driver, the work here well under one.
//
// The stream of routed allocations (symbol: call site and size) goes DETECT -> RECORD ->
// PLANNED as the host's automatic workspaces do, by the same machine (workspace/ws_learn.c):
// ws_detect finds the period and the low-water phase, the recorded cycle is planned by ws_plan
// (every allocation a fixed offset, the arena about the cycle's peak live bytes) and sized by
// ND4J's rules (ws_nd4j_size_for); learning none or reset=endofbuffer give ND4J's bump arena
// (ws_nd4j). What is the device's own is here: the arena is one cuMemAlloc, made through the
// driver's own function; a plan that changes gets a new arena, and the old one is freed when its
// last block is; and before a range is handed out again, the waits below.
//
// The invariant, never traded for speed: no range is handed out while work that may still use
// its previous owner can be in flight. The host side is the host workspaces' check (every plan
// entry sharing the range is free). The device side, because a free here makes no driver call:
//  - sync=free (the default): a cuMemFree of an arena block waits for the device as the driver's
//    cuMemFree does (cuCtxSynchronize): the program sees the driver's semantics, host ordering
//    included, and nothing that used the block can still run.
//  - sync=ordered: the free does not wait. While the program has one stream (no stream made, no
//    per-thread default streams), all its work runs in one order: the next owner's work is queued
//    after the previous owner's, so reuse needs nothing. Once it has several, a synchronous free
//    records an event on the legacy default stream, which completes only after all earlier work
//    of every blocking stream (per-thread default streams included); with non-blocking streams on
//    the device, which that event does not cover, the free waits as sync=free does. A
//    stream-ordered free (cuMemFreeAsync on stream S) is a point on S. Each such free is kept as a
//    pending range; before a range is handed out, every pending range it overlaps is settled for
//    its new owner: a synchronous allocation waits on the host for the event (cuEventSynchronize,
//    only when cuEventQuery says it has not completed), a stream-ordered one on stream T makes T
//    wait on the device (cuStreamWaitEvent; nothing when T is S itself: stream order). A free on S
//    that a later owner on another stream needs is marked by an event recorded on S then (later
//    than the free: it covers more work, never less); a free on a per-thread default stream is
//    marked at once, by the freeing thread, whose stream it is. The ranges freed while the program
//    had one stream wait behind an event recorded when it first shows several.
//  - Another context on the device, or a stream being captured into a graph: left to the driver.
//    An arena block freed while another context is current cannot be marked in the arena's
//    context: the next range handed out waits for that context's device (cuCtxSynchronize).
#include "device/dws.h"

#include "device/dws.h"

#include "device/cuda_hooks.h"
#include "device/driver.h"
#include "common/fmt.h"
#include "common/os.h"
#include "runtime/shim.h"
#include "common/trace_format.h"
#include "workspace.h"
#include "ws/ws.h"

#include <string.h>

#define ALIGN 512          // what cuMemAlloc aligns to, at least
#define PENDING 64         // pending freed ranges per device

enum { SYNC_FREE = 0, SYNC_ORDERED = 1 };

typedef struct pend { // a freed range that work may still use
  uint64_t lo, hi;
  nd_cu_stream stream; // freed in order on this stream (ev NULL), or
  nd_cu_event ev;      // the point this event marks
} pend_t;

typedef struct dws {
  int lock;
  int on;   // configured on (atomic: read without the lock)
  int sync;
  uint64_t min;
  ws_config_t cfg;
  nd_cu_context ctx; // the context the arenas are in
  int several;       // the program's second stream was seen here (barrier() ran)
  int64_t live; // routed bytes live
  ws_rtab_t recorded; // driver blocks the recording noted
  ws_learn_t learn;   // the machine; learn.cur: the instance in force
  ws_inst_t *old;     // instances replaced while they still held blocks (freed with the last)
  pend_t pend[PENDING];
  uint32_t npend;
  int limited; // an arena refused by the device limit (said once)
  int started; // the first allocation set it up
  int foreign;  // an arena block was freed in another context: the next serve waits for the device
  ndmem_device_ws_stats_t st; // the device's own counters; the learning ones are learn.st
} dws_t;

static dws_t W[NDMEM_MAX_DEVICES];
// The recorded allocation the calling thread's next nd_dws_external reports (UINT32_MAX: none):
// per thread, since other threads' allocations come between an allocation and its report.
static __thread uint32_t pending_idx = UINT32_MAX;
static __thread int pending_dev = -1;
// The engine's tables from ndmem's own pages.
static const ws_mem_t pages = {nd_os_map_ctx, nd_os_unmap_ctx, NULL};

static void say(int d, const char *a, const char *b, const char *c) {
  if (nd_quiet()) return;
  nd_buf_t o;
  nd_buf_reset(&o);
  nd_buf_str(&o, "ndmem: device workspace ");
  nd_buf_u64(&o, (uint64_t)d);
  nd_buf_str(&o, ": ");
  nd_buf_str(&o, a);
  if (b) nd_buf_str(&o, b);
  if (c) nd_buf_str(&o, c);
  nd_buf_line(&o, 2);
}

// ---------------------------------------------------------------- settings

// "off", "on", or a policy list: the host workspaces' keys (workspace.h) less location, plus
// sync=free|ordered and min=SIZE (the smallest allocation routed). Bad items: one line each.
static void configure(int d, const char *spec, const char *var, int quiet) {
  dws_t *w = &W[d];
  ws_config_default(&w->cfg);
  w->cfg.learning = WS_LEARN_FIRST_LOOP;
  w->sync = SYNC_FREE;
  w->min = 0;
  w->on = 0;
  int64_t b;
  if (nd_parse_bool(spec, &b) == 0) {
    w->on = (int)b;
    return;
  }
  int good = 0, bad = 0;
  nd_buf_t o;
  for (const char *p = spec; *p;) {
    char item[128];
    nd_ws_next_item(&p, item, sizeof item);
    char *eq = strchr(item, '=');
    if (!item[0]) continue;
    int ok = 0; // a word that is neither on/off nor key=value is not
    size_t k = eq ? (size_t)(eq - item) : 0;
    if (eq && !(k == 8 && strncmp(item, "location", 8) == 0))
      ok = nd_ws_option(&w->cfg, item, k, eq + 1) == 1;
    if (!ok && k == 4 && strncmp(item, "sync", 4) == 0) {
      int64_t v;
      ok = nd_parse_choice(eq + 1, "free|ordered", &v) == 0;
      if (ok) w->sync = (int)v;
    }
    if (!ok && k == 3 && strncmp(item, "min", 3) == 0) {
      int64_t v;
      ok = nd_parse_size(eq + 1, 0, &v) == 0;
      if (ok) w->min = (uint64_t)v;
    }
    good += ok;
    bad += !ok;
    if (ok || quiet || nd_quiet()) continue;
    nd_buf_reset(&o);
    nd_buf_str(&o, "ndmem: ");
    nd_buf_str(&o, var);
    nd_buf_str(&o, ": '");
    nd_buf_strn(&o, item, 100);
    nd_buf_str(&o, "' is not a known policy with a valid value (off, on, or key=value items: "
                   "learning, cycles, allocation, overallocate, spill, reset, initial_size, "
                   "min_size, max_size, min, sync=free|ordered); ignored");
    nd_buf_line(&o, 2);
  }
  // A list turns the workspace on with what it sets; a list of nothing usable leaves it off.
  w->on = good > 0 || !bad;
  if (!w->on && !quiet && !nd_quiet()) {
    nd_buf_reset(&o);
    nd_buf_str(&o, "ndmem: ");
    nd_buf_str(&o, var);
    nd_buf_str(&o, ": nothing usable in it; device workspaces stay off");
    nd_buf_line(&o, 2);
  }
}

void nd_dws_setup(void) {
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    int own = (nd_cfg.device_ws_given >> d) & 1;
    char var[32];
    nd_buf_t n;
    nd_buf_reset(&n);
    nd_buf_str(&n, "NDMEM_DEVICE_WS");
    if (own) {
      nd_buf_char(&n, '_');
      nd_buf_u64(&n, (uint64_t)d);
    }
    memcpy(var, nd_buf_cstr(&n), n.len + 1);
    // the setting for every device is said once (at device 0), a device's own each time
    configure(d, nd_cfg.device_ws[own ? d : NDMEM_MAX_DEVICES], var, !own && d > 0);
    W[d].st.enabled = (uint32_t)W[d].on;
    W[d].st.sync = (uint32_t)W[d].sync;
    W[d].learn.mode = WS_MODE_OFF;
  }
}

int nd_dws_on(int d) { return __atomic_load_n(&W[d].on, __ATOMIC_RELAXED); }

// ---------------------------------------------------------------- arenas

// What the engine's callbacks get: the device, and how the allocation at hand is ordered.
typedef struct call {
  int d;
  int async;         // stream-ordered on stream s, else synchronous
  nd_cu_stream s;
} call_t;

// An arena of `size` bytes from the driver, under the device limit (it is device memory ndmem
// holds); 0 when refused or out of memory (the allocations then go to the driver).
static uint64_t arena_new(void *ctx, ws_learn_t *l, ws_inst_t *pi, int which, uint64_t size) {
  int d = ((call_t *)ctx)->d;
  dws_t *w = &W[d];
  (void)l, (void)pi, (void)which;
  if (nd_cuda_arena_reserve(d, size) != 0) {
    if (!w->limited++) say(d, "an arena would exceed maxDeviceBytes (NDMEM_MAX_DEVICE_BYTES); its "
                              "allocations go to the driver", NULL, NULL);
    return 0;
  }
  nd_cu_deviceptr p = 0;
  if (nd_drv.mem_alloc(&p, size) != ND_CUDA_SUCCESS || !p) {
    nd_cuda_arena_release(d, size, 0);
    return 0;
  }
  nd_cuda_arena_made(d, size);
  w->st.arena_allocs++;
  w->st.arena_bytes += size;
  return p;
}

static void inst_free(int d, ws_inst_t *pi) {
  dws_t *w = &W[d];
  uint64_t arena = pi->arena[0];
  if (arena) {
    nd_drv.mem_free(arena); // the driver's cuMemFree: it waits for the device first
    nd_cuda_arena_release(d, pi->size, 1);
    w->st.arena_frees++;
    w->st.arena_bytes -= pi->size;
  }
  // pending ranges inside it are settled: the driver's cuMemFree waited for the device
  for (uint32_t i = 0; i < w->npend;) {
    pend_t *p = &w->pend[i];
    if (p->lo >= arena && p->hi <= arena + pi->size) {
      nd_drv_event_put(d, p->ev);
      *p = w->pend[--w->npend];
    } else {
      i++;
    }
  }
  ws_inst_free(pi, &pages);
}

// The instance in force is replaced: kept on the old list while it has live blocks.
static void retire(void *ctx, ws_learn_t *l, ws_inst_t *pi) {
  int d = ((call_t *)ctx)->d;
  dws_t *w = &W[d];
  (void)l;
  if (!pi->nlive) {
    inst_free(d, pi);
    return;
  }
  pi->next = w->old;
  w->old = pi;
}

// ---------------------------------------------------------------- pending ranges

static void pend_drop(int d, uint32_t i) {
  dws_t *w = &W[d];
  nd_drv_event_put(d, w->pend[i].ev);
  w->pend[i] = w->pend[--w->npend];
}

// Everything the device was asked to do so far has completed (a cuCtxSynchronize returned).
static void pend_clear(int d) {
  while (W[d].npend) pend_drop(d, W[d].npend - 1);
}

static nd_cu_event record_on(int d, nd_cu_stream s) {
  nd_cu_event e = nd_drv_event_get(d);
  if (e && nd_drv.event_record(e, s) != ND_CUDA_SUCCESS) {
    nd_drv_event_put(d, e);
    e = NULL;
  }
  if (e) W[d].st.fences++;
  return e;
}

// Keeps [lo, hi) from being handed out before the work that may use it now: `ev` marks that
// point, or (ev NULL) the range was freed in order on stream s. The oldest is settled on the
// host when the list is full. Without an event to record, the device is synchronised instead.
static void pend_add(int d, uint64_t lo, uint64_t hi, nd_cu_stream s, nd_cu_event ev) {
  dws_t *w = &W[d];
  if (w->npend == PENDING) {
    pend_t *p = &w->pend[0];
    if (!p->ev) p->ev = record_on(d, p->stream);
    if (p->ev) nd_drv.event_sync(p->ev);
    else nd_drv.ctx_sync();
    w->st.host_waits++;
    pend_drop(d, 0);
  }
  w->pend[w->npend++] = (pend_t){lo, hi, s, ev};
}

// Settles the pending ranges that overlap [lo, hi) for a new owner: synchronous (host waits) or
// stream-ordered on stream s (s waits on the device). 0, or -1 when a wait could not be set up
// (then the range is not handed out).
static int settle(void *ctx, uint64_t lo, uint64_t hi) {
  const call_t *c = ctx;
  int d = c->d, async = c->async;
  nd_cu_stream s = c->s;
  dws_t *w = &W[d];
  if (nd_cfg.test_dws_unfenced) return 0; // test only: the broken ndmem the tests must catch
  for (uint32_t i = 0; i < w->npend;) {
    pend_t *p = &w->pend[i];
    if (p->hi <= lo || p->lo >= hi) {
      i++;
      continue;
    }
    int covered = p->lo >= lo && p->hi <= hi;
    if (!p->ev && async && s == p->stream && s != ND_CU_STREAM_PER_THREAD) { // stream order
      if (covered) pend_drop(d, i);
      else i++;
      continue;
    }
    if (!p->ev) p->ev = record_on(d, p->stream);
    if (!p->ev) return -1;
    nd_cu_result q = nd_drv.event_query(p->ev);
    if (q == ND_CUDA_SUCCESS) {
      pend_drop(d, i);
      continue;
    }
    if (async) {
      if (nd_drv.stream_wait(s, p->ev, 0) != ND_CUDA_SUCCESS) return -1;
      w->st.stream_waits++;
      if (covered) pend_drop(d, i);
      else i++;
    } else {
      if (nd_drv.event_sync(p->ev) != ND_CUDA_SUCCESS) return -1;
      w->st.host_waits++;
      pend_drop(d, i);
    }
  }
  return 0;
}

// The program showed a second stream since the ranges freed before were reused in stream order:
// they now wait behind one event on the legacy stream (recorded now, so it covers all of them).
static void barrier(int d) {
  dws_t *w = &W[d];
  if (w->several) return;
  w->several = 1;
  w->st.streams = w->st.streams ? w->st.streams : 1;
  if (!w->learn.cur && !w->old) return;
  nd_cu_event ev = record_on(d, ND_CU_STREAM_LEGACY);
  if (ev) pend_add(d, 0, UINT64_MAX, ND_CU_STREAM_LEGACY, ev);
  else nd_drv.ctx_sync();
}

// ---------------------------------------------------------------- the engine's callbacks

static void outlived(void *ctx, ws_learn_t *l, uint64_t addr, uint64_t size, uint64_t born) {
  (void)l, (void)addr, (void)size, (void)born;
  W[((call_t *)ctx)->d].st.outlived++; // kept valid, never routed again
}

// The recording ended: the driver blocks it noted are no longer its (the device has one table).
static void event(void *ctx, ws_learn_t *l, int ev) {
  (void)l;
  if (ev == WS_EV_RECORD_DONE || ev == WS_EV_RECORD_STOP) ws_rtab_clear(&W[((call_t *)ctx)->d].recorded);
}

// One cuMemAlloc per plan; ranges settled before reuse; a replaced instance retired; everything
// under the device's lock (no lock of the engine's own).
static const ws_learn_ops_t device_ops = {
    .mem = &pages, .align = ALIGN, .granule = ALIGN, .realloc_waits = 1,
    .arena = arena_new, .retire = retire, .settle = settle, .outlived = outlived, .event = event};

// ---------------------------------------------------------------- serving

// A spill (counted by the engine) goes to the driver. Spill policy fail makes the allocation fail
// where the stream is not the plan's or ND4J's arena is full, which the device also counts as a
// deviation; a range still taken, or an entry past the arena, goes to the driver.
static int spilled(dws_t *w, int why) {
  if (why == WS_WHY_FULL) {
    w->learn.st.deviations++;
    w->learn.cycle_devs++;
  }
  return w->cfg.spill == WS_SPILL_FAIL && (why == WS_WHY_DEVIATION || why == WS_WHY_FULL)
             ? ND_DWS_FAIL
             : ND_DWS_DRIVER;
}

// The context the device's arenas live in, fixed by its first allocation; another one is left
// to the driver (its streams are not ordered with this one's).
static int same_context(int d) {
  dws_t *w = &W[d];
  nd_cu_context c = NULL;
  if (nd_drv.ctx_current(&c) != ND_CUDA_SUCCESS || !c) return 0;
  if (!w->ctx) w->ctx = c;
  return w->ctx == c;
}

int nd_dws_alloc(int d, const void *real, size_t n, int async, nd_cu_stream s, uint64_t site,
                 nd_cu_deviceptr *dptr) {
  dws_t *w = &W[d];
  pending_idx = UINT32_MAX;
  pending_dev = d;
  if (!nd_dws_on(d) || n < w->min) return ND_DWS_UNROUTED;
  nd_spin_lock(&w->lock);
  if (!w->started) { // first use: the driver functions, the detector, the policies' mode
    w->started = 1;
    if (nd_drv_resolve(real) != 0) {
      say(d, "the driver lacks functions device workspaces need (events, cuCtxSynchronize); off",
          NULL, NULL);
      __atomic_store_n(&w->on, 0, __ATOMIC_RELAXED);
      nd_spin_unlock(&w->lock);
      return ND_DWS_UNROUTED;
    }
    if (ws_learn_init(&w->learn, &device_ops, &w->cfg, 1, 1) != 0) {
      __atomic_store_n(&w->on, 0, __ATOMIC_RELAXED);
      nd_spin_unlock(&w->lock);
      return ND_DWS_UNROUTED;
    }
  }
  int rc = ND_DWS_UNROUTED;
  if (w->learn.mode == WS_MODE_OFF) goto out;
  if (!same_context(d)) {
    w->st.fallbacks++;
    goto out;
  }
  if (w->foreign) { // a free in another context left nothing to wait on here: wait for all
    nd_drv.ctx_sync();
    w->st.ctx_syncs++;
    pend_clear(d);
    w->foreign = 0;
  }
  if (async && s != ND_CU_STREAM_LEGACY && s != ND_CU_STREAM_PER_THREAD && nd_drv.capturing) {
    int status = 0;
    if (nd_drv.capturing(s, &status) != ND_CUDA_SUCCESS || status != 0) {
      w->st.fallbacks++; // a graph being captured owns its allocations' addresses
      goto out;
    }
  }
  rc = ND_DWS_DRIVER;
  if (nd_drv_several()) barrier(d);
  if (nd_drv_nonblocking(d)) w->st.streams = 2;
  uint64_t sym = ws_symbol(site, ((uint64_t)n + ALIGN - 1) / ALIGN * 2 + (uint64_t)async);
  int64_t live_before = w->live;
  w->live += (int64_t)n;
  call_t call = {d, async, s};
  ws_learn_out_t got;
  switch (ws_learn_alloc(&w->learn, &call, sym, n, live_before, &got)) {
  case WS_GO_SERVED:
    *dptr = got.addr;
    rc = ND_DWS_SERVED;
    break;
  case WS_GO_RECORDED: // the driver's, and its free is noted (nd_dws_external)
    pending_idx = got.idx;
    break;
  case WS_GO_SPILL:
    rc = spilled(w, got.why);
    break;
  default:
    break;
  }
  if (rc != ND_DWS_SERVED && rc != ND_DWS_DRIVER) w->live -= (int64_t)n; // failed
out:
  w->st.mode = (uint32_t)w->learn.mode;
  nd_spin_unlock(&w->lock);
  return rc;
}

void nd_dws_external(int d, nd_cu_deviceptr p, uint64_t n) {
  dws_t *w = &W[d];
  (void)n;
  nd_spin_lock(&w->lock);
  if (pending_dev == d && pending_idx != UINT32_MAX && pending_idx < w->learn.nreq &&
      w->learn.mode == WS_MODE_RECORD && w->learn.recording)
    ws_rtab_put(&w->recorded, &pages, p, w, pending_idx);
  pending_idx = UINT32_MAX;
  nd_spin_unlock(&w->lock);
}

void nd_dws_external_free(int d, nd_cu_deviceptr p, uint64_t n) {
  dws_t *w = &W[d];
  if (!nd_dws_on(d)) return;
  nd_spin_lock(&w->lock);
  w->live -= (int64_t)n;
  void *owner;
  uint32_t idx;
  if (ws_rtab_take(&w->recorded, p, &owner, &idx)) ws_learn_freed(&w->learn, idx);
  nd_spin_unlock(&w->lock);
}

// ---------------------------------------------------------------- frees

// The instance holding p and its block there (entry or bump index).
static ws_inst_t *find(dws_t *w, nd_cu_deviceptr p, int64_t *i) {
  ws_inst_t *cur = w->learn.cur;
  for (ws_inst_t *pi = cur ? cur : w->old; pi; pi = pi == cur ? w->old : pi->next) {
    if (p < pi->arena[0] || p >= pi->arena[0] + pi->size) continue;
    *i = ws_inst_find(pi, p, 0);
    return *i >= 0 ? pi : NULL;
  }
  return NULL;
}

void nd_dws_free(int d, nd_cu_deviceptr p, uint64_t n, int async, nd_cu_stream s) {
  dws_t *w = &W[d];
  nd_spin_lock(&w->lock);
  int64_t i = 0;
  ws_inst_t *pi = find(w, p, &i);
  if (!pi) { // the table said it was an arena block: nothing else can be (kept, said)
    nd_spin_unlock(&w->lock);
    say(d, "a free of an arena block that is not live (double free?); ignored", NULL, NULL);
    return;
  }
  int escaped;
  uint64_t size = ws_inst_release(pi, i, &escaped);
  w->live -= (int64_t)n;
  w->st.frees++;
  // what keeps the range from reuse while the previous owner's work may run (the file's header)
  nd_cu_context c = NULL;
  if (!nd_cfg.test_dws_unfenced && (nd_drv.ctx_current(&c) != ND_CUDA_SUCCESS || c != w->ctx)) {
    w->foreign = 1;
    if (w->sync == SYNC_FREE && !async && c) { // the wait cuMemFree gives the caller's context
      nd_drv.ctx_sync();
      w->st.ctx_syncs++;
    }
  } else if (!nd_cfg.test_dws_unfenced) {
    if (async) {
      if (nd_drv_several() || s != ND_CU_STREAM_LEGACY) {
        nd_cu_event ev = s == ND_CU_STREAM_PER_THREAD ? record_on(d, s) : NULL;
        if (s == ND_CU_STREAM_PER_THREAD && !ev) {
          nd_drv.ctx_sync();
          w->st.ctx_syncs++;
          pend_clear(d);
        } else {
          pend_add(d, p, p + size, s, ev);
        }
      }
    } else if (w->sync == SYNC_FREE || nd_drv_nonblocking(d)) {
      nd_drv.ctx_sync();
      w->st.ctx_syncs++;
      pend_clear(d);
    } else if (nd_drv_several()) {
      nd_cu_event ev = record_on(d, ND_CU_STREAM_LEGACY);
      if (ev) {
        pend_add(d, p, p + size, ND_CU_STREAM_LEGACY, ev);
      } else {
        nd_drv.ctx_sync();
        w->st.ctx_syncs++;
        pend_clear(d);
      }
    }
  }
  if (pi != w->learn.cur && !pi->nlive) { // an old arena's last block
    for (ws_inst_t **pp = &w->old; *pp; pp = &(*pp)->next)
      if (*pp == pi) {
        *pp = pi->next;
        break;
      }
    inst_free(d, pi);
  }
  nd_spin_unlock(&w->lock);
}

// Ranges freed in order on a stream the program now destroys: marked by an event recorded on it
// first (work queued on a destroyed stream still runs; the handle does not stay valid).
void nd_dws_stream_gone(nd_cu_stream s) {
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    dws_t *w = &W[d];
    if (!nd_dws_on(d) || !w->npend) continue;
    nd_spin_lock(&w->lock);
    for (uint32_t i = 0; i < w->npend;) {
      pend_t *p = &w->pend[i];
      if (p->ev || p->stream != s) {
        i++;
        continue;
      }
      p->ev = record_on(d, s); // each entry its own event: each goes back to the pool alone
      if (p->ev) {
        p->stream = NULL;
        i++;
      } else { // cannot mark it: wait for the stream instead
        nd_drv.stream_sync(s);
        w->st.host_waits++;
        pend_drop(d, i);
      }
    }
    nd_spin_unlock(&w->lock);
  }
}

// ---------------------------------------------------------------- views

int nd_dws_stats(int d, ndmem_device_ws_stats_t *out) {
  if (d < 0 || d >= NDMEM_MAX_DEVICES) return -1;
  dws_t *w = &W[d];
  nd_spin_lock(&w->lock);
  const ws_learn_stats_t *l = &w->learn.st;
  *out = w->st;
  out->cycles = l->cycles;
  out->learned_cycles = l->learned_cycles;
  out->relearns = l->relearns;
  out->plan_peak_bytes = l->plan_peak_bytes;
  out->plan_sum_bytes = l->plan_sum_bytes;
  out->hits = l->hits;
  out->hit_bytes = l->hit_bytes;
  out->spills = l->spills;
  out->spill_bytes = l->spill_bytes;
  out->deviations = l->deviations;
  nd_spin_unlock(&w->lock);
  out->size = sizeof *out;
  out->device = d;
  return 0;
}

int64_t nd_dws_arena_bytes(int d) { return (int64_t)__atomic_load_n(&W[d].st.arena_bytes, __ATOMIC_RELAXED); }

void nd_dws_write_records(nd_dws_record_fn rec, void *ctx) {
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    dws_t *w = &W[d];
    if (!w->st.enabled || !w->started) continue; // asked for and set up by an allocation
    ndmem_device_ws_stats_t s;
    nd_dws_stats(d, &s);
    nd_rec_device_ws_t r;
    memset(&r, 0, sizeof r);
    r.device = (uint32_t)d;
    r.mode = s.mode;
    r.sync = s.sync;
    r.streams = s.streams;
    r.learning = (uint32_t)w->cfg.learning;
    r.allocation = (uint32_t)w->cfg.allocation;
    r.spill = (uint32_t)w->cfg.spill;
    r.reset = (uint32_t)w->cfg.reset;
    r.cycles = s.cycles;
    r.learned_cycles = s.learned_cycles;
    r.relearns = s.relearns;
    r.arena_bytes = s.arena_bytes;
    r.plan_peak_bytes = s.plan_peak_bytes;
    r.plan_sum_bytes = s.plan_sum_bytes;
    r.hits = s.hits;
    r.hit_bytes = s.hit_bytes;
    r.spills = s.spills;
    r.spill_bytes = s.spill_bytes;
    r.deviations = s.deviations;
    r.outlived = s.outlived;
    r.frees = s.frees;
    r.ctx_syncs = s.ctx_syncs;
    r.fences = s.fences;
    r.host_waits = s.host_waits;
    r.stream_waits = s.stream_waits;
    r.fallbacks = s.fallbacks;
    r.arena_allocs = s.arena_allocs;
    r.arena_frees = s.arena_frees;
    rec(ctx, ND_REC_DEVICE_WS, &r, sizeof r);
  }
}

void nd_dws_summary(int fd) {
  static const char *const modes[5] = {ND_DWS_MODE_NAMES};
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    ndmem_device_ws_stats_t s;
    nd_dws_stats(d, &s);
    if (!s.enabled || (!s.hits && !s.spills && !s.cycles && !s.fallbacks && s.mode == 0)) continue;
    nd_buf_t b;
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem[");
    nd_buf_u64(&b, (uint64_t)nd_os_getpid());
    nd_buf_str(&b, "]: device ");
    nd_buf_u64(&b, (uint64_t)d);
    nd_buf_str(&b, " workspace (");
    nd_buf_str(&b, modes[s.mode < 5 ? s.mode : 0]);
    nd_buf_str(&b, s.sync ? ", sync=ordered" : ", sync=free");
    nd_buf_str(&b, "): served ");
    nd_buf_u64(&b, s.hits);
    nd_buf_str(&b, " allocations (");
    nd_buf_bytes(&b, (int64_t)s.hit_bytes);
    nd_buf_str(&b, ") from an arena of ");
    nd_buf_bytes(&b, (int64_t)s.arena_bytes);
    nd_buf_str(&b, " without a driver call; ");
    nd_buf_u64(&b, s.spills);
    nd_buf_str(&b, " to the driver; waits: ");
    nd_buf_u64(&b, s.ctx_syncs);
    nd_buf_str(&b, " at frees, ");
    nd_buf_u64(&b, s.host_waits);
    nd_buf_str(&b, " on the host, ");
    nd_buf_u64(&b, s.stream_waits);
    nd_buf_str(&b, " on streams; fallbacks ");
    nd_buf_u64(&b, s.fallbacks);
    nd_buf_line(&b, fd);
  }
}

// A fork child has no CUDA context: its arenas, events and pending ranges are the parent's.
// Device workspaces start again in it, as in a new process.
void nd_dws_atfork_child(void) {
  for (int d = 0; d < NDMEM_MAX_DEVICES; d++) {
    dws_t *w = &W[d];
    int on = w->st.enabled;
    ws_learn_t *l = &w->learn;
    w->lock = 0;
    l->cur = w->old = NULL; // the parent's device memory; nothing to free here
    w->npend = 0;
    w->ctx = NULL;
    w->live = 0;
    l->nreq = l->rec_cycles = l->rec_start = l->tick = 0;
    l->recording = 0;
    ws_rtab_clear(&w->recorded);
    ws_learn_restart(l); // the detector, the period, the position in the cycle
    memset(&w->st, 0, sizeof w->st);
    memset(&l->st, 0, sizeof l->st);
    w->st.enabled = (uint32_t)on;
    w->st.sync = (uint32_t)w->sync;
    w->on = on;
    w->several = 0;
    l->mode = w->started && l->det ? WS_MODE_DETECT : WS_MODE_OFF;
    w->limited = 0;
    w->foreign = 0;
  }
}
