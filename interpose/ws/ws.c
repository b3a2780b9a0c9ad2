// SPDX-License-Identifier: MIT
// ws.c: workspaces for unmodified programs (ND4J's MemoryWorkspaces, learned and planned).
//
// Each thread has workspaces ("spaces"): the automatic one, whose cycles are found in the
// thread's stream of routed allocations (size >= NDMEM_WS_MIN; symbol = call site and size), and
// named ones opened by ndmem_cycle_begin / ndmem_workspace_enter (policy.c). A space goes DETECT
// (auto only: find the period and the low-water phase) -> RECORD (note each allocation of a cycle
// and when it is freed, NDMEM_WS_CYCLES cycles with over_time) -> PLANNED (workspace/ws_plan.c
// gives every allocation a fixed offset; an arena of about the cycle's peak live bytes is mapped
// once and stays resident): the engine's machine (workspace/ws_learn.c), shared with the device
// workspaces. In PLANNED, the k-th routed allocation of a cycle is served at its offset when it
// matches the plan (same symbol, no larger) and every allocation that shares its range is free
// — the safety invariant, never traded: no two live blocks overlap. Anything else is a deviation,
// served per the spill policy; a cycle of mostly deviations drops the plan and learning restarts.
// A block still live when its cycle has ended is kept valid and its entry is no longer routed.
// Where the program declared the cycle (marks, named workspaces) that is ND4J's leaked workspace
// pointer, an *escape*: logged once and written to the trace. Under automatic cycles the program
// declared nothing: the block *outlived* the cycle ndmem detected (an array kept across
// iterations, a result handed to another thread, a boundary in the wrong place), ndmem's
// misprediction; it is counted, never reported as the program's error (stats.c). Guard mode
// (guard.c) alternates two arenas and makes the one of the finished cycle inaccessible (blocks
// that escaped or outlived it excepted), so a stale pointer faults and is named.
//
// This file: the spaces and thread states, the engine's callbacks for the host, the serve and
// free paths. The arenas and relief are arena.c's, the learning trims trim.c's.
#include "ws/space.h"

#include "account/track.h"

#include "common/fmt.h"
#include "common/os.h"

#include <string.h>

size_t nd_ws_min = SIZE_MAX;
uintptr_t nd_ws_lo = UINTPTR_MAX, nd_ws_hi = 0;
int nd_ws_recording;
int nd_ws_lock;
space_t *nd_ws_spaces;
int nd_ws_auto_spaces;

static ws_thread_t *pool; // thread states to reuse (under nd_ws_lock)
// learning: heap blocks recorded by a RECORD cycle, address -> space and entry
static ws_rtab_t recorded;

// The engine's tables from ndmem's own pages.
static const ws_mem_t pages = {nd_os_map_ctx, nd_os_unmap_ctx, NULL};

// ---------------------------------------------------------------- the engine's callbacks

static void lock(void *ctx) {
  (void)ctx;
  nd_spin_lock(&nd_ws_lock);
}
static void unlock(void *ctx) {
  (void)ctx;
  nd_spin_unlock(&nd_ws_lock);
}

static void event(void *ctx, ws_learn_t *l, int ev) {
  space_t *s = ctx;
  switch (ev) {
  case WS_EV_CYCLE_CLOSED:
    nd_cycle_closed(l->st.cycles);
    break;
  case WS_EV_RECORD_BEGIN:
    __atomic_fetch_add(&nd_ws_recording, 1, __ATOMIC_RELAXED);
    break;
  case WS_EV_RECORD_STOP:
    __atomic_fetch_sub(&nd_ws_recording, 1, __ATOMIC_RELAXED);
    break;
  case WS_EV_RECORD_DONE:
    __atomic_fetch_sub(&nd_ws_recording, 1, __ATOMIC_RELAXED);
    // Forget every recorded block of s (its recording ended: later frees are outside the cycle).
    nd_spin_lock(&nd_ws_lock);
    ws_rtab_forget(&recorded, s); // tombstone-free: the slot stays until the block is freed
    nd_spin_unlock(&nd_ws_lock);
    break;
  case WS_EV_PLANNED:
    // The learning cycles ran through the heap, which may keep their memory; the arena replaces
    // it, so give it back before the arena is touched (peak RSS stays near the plan's peak).
    nd_ws_trim(s, 1);
    break;
  case WS_EV_LEARN_CYCLE_END:
    nd_ws_learn_cycle_end(s);
    break;
  case WS_EV_CYCLE_END:
    if (nd_ws_guard && l->mode == WS_MODE_PLANNED) nd_ws_guard_cycle(s);
    break;
  }
}

// Arenas are mmap'd (arena.c; guard mode: two); nothing to wait for before a range is reused; a
// dropped plan keeps its instance (its arenas stay registered: escaped blocks may still live
// there, and their frees must find them).
static const ws_learn_ops_t host_ops = {
    .mem = &pages, .align = ND_WS_ALIGN, .granule = 4096, .realloc_waits = 0,
    .arena = nd_ws_arena_new, .fit = nd_ws_fit, .outlived = nd_ws_outlived, .event = event,
    .lock = lock, .unlock = unlock};

// ---------------------------------------------------------------- spaces

// Threads come and go (thread pools, mimalloc's test-stress creates threads every round). A
// thread whose automatic workspace was still looking for its cycle leaves its state (about 230
// KiB, mostly the detector's rings and table) to the next new thread: no fresh pages to fault in
// (each first write into a zero page is a TLB shootdown of every CPU running the program), no
// memory kept per dead thread, and one workspace record in the trace instead of one per thread.
// A workspace that got further (a plan, a recording, named ones, marks) keeps its state: its
// statistics are reported and its blocks may still be live.
void nd_ws_thread_exit(nd_tls_t *t) {
  ws_thread_t *w = t->ws;
  space_t *s = w ? w->auto_space : NULL;
  if (!s || w->named || w->depth || w->marked || s->learn.mode != WS_MODE_DETECT || s->learn.cur)
    return;
  t->ws = NULL;
  nd_spin_lock(&nd_ws_lock);
  w->pool_next = pool;
  pool = w;
  nd_spin_unlock(&nd_ws_lock);
}

ws_thread_t *nd_ws_thread(nd_tls_t *t) {
  if (t->ws) return t->ws;
  nd_spin_lock(&nd_ws_lock);
  ws_thread_t *w = pool;
  if (w) pool = w->pool_next;
  nd_spin_unlock(&nd_ws_lock);
  if (w) { // what an ended thread left: its automatic workspace starts over for this one
    space_t *s = w->auto_space;
    ws_learn_restart(&s->learn);
    s->tid = nd_os_gettid();
    w->pool_next = NULL;
    w->routed_live = 0;
  } else {
    w = nd_os_map(sizeof(ws_thread_t));
  }
  t->ws = w;
  return w;
}

space_t *nd_ws_space_new(const char *name, int automatic) {
  space_t *s = nd_os_map(sizeof *s);
  if (!s) return NULL;
  s->tid = nd_os_gettid();
  s->all = __atomic_load_n(&nd_ws_spaces, __ATOMIC_ACQUIRE);
  while (!__atomic_compare_exchange_n(&nd_ws_spaces, &s->all, s, 1, __ATOMIC_RELEASE,
                                      __ATOMIC_ACQUIRE)) {
  }
  size_t n = 0;
  while (name[n] && n + 1 < sizeof s->name) s->name[n] = name[n], n++;
  ws_config_t c;
  ws_config_default(&c);
  c.learning = (ws_learning_t)nd_cfg.ws_learning;
  c.cycles_before_init = (uint32_t)nd_cfg.ws_cycles;
  c.allocation = (ws_allocation_t)nd_cfg.ws_allocation;
  c.overallocation_limit = (double)nd_cfg.ws_overallocate / 1e6;
  c.spill = (ws_spill_t)nd_cfg.ws_spill;
  c.reset = (ws_reset_t)nd_cfg.ws_reset;
  c.location = (ws_location_t)nd_cfg.ws_location;
  c.initial_size = (uint64_t)nd_cfg.ws_initial_size;
  c.min_size = (uint64_t)nd_cfg.ws_min_size;
  c.max_size = (uint64_t)nd_cfg.ws_max_size;
  if (automatic) __atomic_fetch_add(&nd_ws_auto_spaces, 1, __ATOMIC_RELAXED);
  ws_learn_init(&s->learn, &host_ops, &c, automatic, nd_ws_guard ? 2 : 1); // OFF without memory
  return s;
}

void nd_ws_say(nd_buf_t *b, const char *before, const space_t *s, const char *after) {
  nd_buf_reset(b);
  nd_buf_str(b, before);
  nd_buf_str(b, s->name);
  nd_buf_str(b, after);
}

static space_t *current_space(ws_thread_t *w) {
  if (w->depth) return w->stack[w->depth - 1];
  if (w->marked) return NULL; // a marked thread routes only inside its cycles
  if (!w->auto_space) w->auto_space = nd_ws_space_new("auto", 1);
  return w->auto_space;
}

// ---------------------------------------------------------------- serving

// An allocation the plan cannot serve, a spill (counted by the engine). WS_WHY_TAKEN, its range
// is still taken by an escaped block, or no arena: always the heap (the program did nothing wrong
// this cycle). Otherwise the stream is not the plan's, or its entry did not fit under
// NDMEM_WS_MAX_SIZE, or ND4J's arena is full: the spill policy decides.
static void *spilled(space_t *s, size_t req, int why) {
  if (why == WS_WHY_TAKEN || s->learn.cfg.spill != WS_SPILL_FAIL) return NULL;
  if (s->learn.st.spills == 1) {
    nd_buf_t b;
    nd_ws_say(&b, "ndmem: Can't allocate memory: Workspace [", s, "] is full: ");
    nd_buf_u64(&b, req);
    nd_buf_str(&b, " B requested in cycle ");
    nd_buf_u64(&b, s->learn.st.cycles + 1);
    nd_buf_str(&b, " do not fit its plan (NDMEM_WS_SPILL=fail)");
    nd_buf_line(&b, 2);
  }
  return ND_WS_FAIL;
}

static __thread space_t *pending_space; // set when the caller must report its external block
static __thread uint32_t pending_idx;

void *nd_ws_alloc(nd_tls_t *t, size_t req, size_t align, uintptr_t ra, uint64_t *usable) {
  pending_space = NULL;
  if (align > ND_WS_ALIGN) return NULL;
  ws_thread_t *w = nd_ws_thread(t);
  space_t *s = w ? current_space(w) : NULL;
  if (!s || s->learn.mode == WS_MODE_OFF) return NULL;
  uint64_t sym = ws_symbol(ra, ((uint64_t)req + 63) / 64); // size class: 64-byte granules

  int64_t live_before = w->routed_live;
  w->routed_live += (int64_t)req;
  ws_learn_out_t out;
  switch (ws_learn_alloc(&s->learn, s, sym, req, live_before, &out)) {
  case WS_GO_SERVED:
    *usable = out.size;
    return (void *)(uintptr_t)out.addr;
  case WS_GO_RECORDED: // the heap's, and its free is noted (nd_ws_external)
    pending_space = s;
    pending_idx = out.idx;
    return NULL;
  case WS_GO_SPILL:
    return spilled(s, req, out.why);
  default:
    return NULL;
  }
}

void nd_ws_external(nd_tls_t *t, void *p) {
  (void)t;
  if (pending_space && p) {
    nd_spin_lock(&nd_ws_lock);
    ws_rtab_put(&recorded, &pages, (uintptr_t)p, pending_space, pending_idx);
    nd_spin_unlock(&nd_ws_lock);
  }
  pending_space = NULL;
}

void nd_ws_note_free(uint64_t bytes) {
  ws_thread_t *w = nd_tls.ws;
  if (w) w->routed_live -= (int64_t)bytes;
}

void nd_ws_free_external(void *p) {
  void *owner = NULL;
  uint32_t idx = 0;
  nd_spin_lock(&nd_ws_lock);
  int found = ws_rtab_take(&recorded, (uintptr_t)p, &owner, &idx);
  nd_spin_unlock(&nd_ws_lock);
  if (found && owner) ws_learn_freed(&((space_t *)owner)->learn, idx);
}

uint64_t nd_ws_usable(const void *p) {
  ws_inst_t *pi;
  int which;
  uintptr_t lo;
  if (nd_ws_arena_find((uintptr_t)p, &pi, &which, &lo) < 0) return 0;
  if (pi->bump) nd_spin_lock(&nd_ws_lock); // bump arenas' live lists are under the lock
  int64_t i = ws_inst_find(pi, (uintptr_t)p, which);
  uint64_t u = i < 0 ? 0 : ws_inst_size(pi, i);
  if (pi->bump) nd_spin_unlock(&nd_ws_lock);
  return u;
}

int nd_ws_free(void *p, uint64_t *usable) {
  ws_inst_t *pi;
  int which;
  uintptr_t lo;
  if (nd_ws_arena_find((uintptr_t)p, &pi, &which, &lo) < 0) return -1; // an ordinary heap block
  space_t *s = nd_ws_space_of(pi->learn);
  if (pi->bump) nd_spin_lock(&nd_ws_lock);
  int64_t e = ws_inst_find(pi, (uintptr_t)p, which);
  if (e >= 0) {
    int escaped;
    *usable = ws_inst_release(pi, e, &escaped);
    if (escaped) s->pinned_bytes -= *usable;
  }
  if (pi->bump) nd_spin_unlock(&nd_ws_lock);
  if (e < 0) {
    // Not the start of a live block: a double or invalid free. The allocator would abort on
    // it; ndmem cannot hand arena memory to it, so it says so and drops the call.
    nd_buf_t b;
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem: free(");
    nd_buf_hex(&b, (uint64_t)(uintptr_t)p);
    nd_buf_str(&b, ") is not a live block of workspace [");
    nd_buf_str(&b, s->name);
    nd_buf_str(&b, "] (double free?); ignored");
    nd_buf_line(&b, 2);
    return 0;
  }
  return 1;
}

// ---------------------------------------------------------------- setup, fork

void nd_ws_setup(void) {
  if (!nd_cfg.workspaces) return;
  nd_ws_min = (size_t)nd_cfg.ws_min;
  nd_ws_trim_setup();
  nd_ws_guard_setup();
}

// fork: the table lock is a leaf (nothing else is taken while it is held), so it comes last.
void nd_ws_atfork_prepare(void) { nd_spin_lock(&nd_ws_lock); }
void nd_ws_atfork_parent(void) { nd_spin_unlock(&nd_ws_lock); }
void nd_ws_atfork_child(void) { nd_spin_unlock(&nd_ws_lock); }
