// SPDX-License-Identifier: MIT
// ws_learn.c: one workspace's learning machine and its serving (workspace.h, "ws_learn.c"), the
// same for the host's workspaces (interpose/ws/) and the device's (interpose/device/dws.c). What
// differs comes through ws_learn_ops_t: how an arena is made, what to wait for before a range is
// reused, what becomes of a block that outlives its cycle. The safety invariant, never traded: no
// two live blocks overlap. A range is handed out only when every allocation that shares it is
// free (planned) or no live block overlaps it (bump), and the owner's settle agrees.
#include "workspace.h"

#include <string.h>

#define RECORD_MAX 65536 // allocations recorded in one cycle at most

static uint64_t round_up(uint64_t x, uint64_t to) { return (x + to - 1) & ~(to - 1); }

static void *mem_get(const ws_learn_t *l, size_t bytes) {
  return l->ops->mem->alloc(l->ops->mem->ctx, bytes);
}
static void mem_put(const ws_mem_t *mem, void *p, size_t bytes) {
  if (p) mem->free(mem->ctx, p, bytes);
}

static void event(ws_learn_t *l, void *ctx, int ev) {
  if (l->ops->event) l->ops->event(ctx, l, ev);
}
static void lock(ws_learn_t *l, void *ctx) {
  if (l->ops->lock) l->ops->lock(ctx);
}
static void unlock(ws_learn_t *l, void *ctx) {
  if (l->ops->unlock) l->ops->unlock(ctx);
}

static int bump_policy(const ws_config_t *c) {
  return c->learning == WS_LEARN_NONE || c->reset == WS_RESET_ENDOFBUFFER_REACHED;
}

int ws_learn_init(ws_learn_t *l, const ws_learn_ops_t *ops, const ws_config_t *cfg, int automatic,
                  uint32_t arenas) {
  l->ops = ops;
  l->cfg = *cfg;
  l->automatic = automatic;
  l->arenas = arenas == 2 ? 2 : 1;
  // ND4J's unplanned modes: the reference model places allocations; each range is checked
  // against the blocks still live before it is served.
  l->bump = bump_policy(cfg);
  if (l->bump) ws_nd4j_init(&l->nd, cfg);
  if (!automatic) {
    l->mode = l->bump ? WS_MODE_BUMP : WS_MODE_RECORD;
    return 0;
  }
  l->det = mem_get(l, sizeof *l->det);
  if (!l->det || ws_detect_init(l->det, ops->mem) != 0) {
    l->mode = WS_MODE_OFF;
    return -1;
  }
  l->mode = WS_MODE_DETECT;
  return 0;
}

uint64_t ws_symbol(uint64_t site, uint64_t size_class) {
  uint64_t h = site * 0x9e3779b97f4a7c15ull;
  h ^= size_class;
  h *= 0xff51afd7ed558ccdull;
  return (h ^ (h >> 29)) | 1;
}

void ws_learn_restart(ws_learn_t *l) {
  if (l->det) ws_detect_reset(l->det);
  l->follow = (ws_follow_t){0};
  l->period = l->phase = l->in_cycle = 0;
}

// ---------------------------------------------------------------- instances

static ws_inst_t *inst_new(ws_learn_t *l, uint32_t n) {
  ws_inst_t *pi = mem_get(l, sizeof *pi);
  if (!pi) return NULL;
  pi->learn = l;
  pi->preqs = mem_get(l, n * sizeof *pi->preqs);
  pi->by_off = mem_get(l, n * sizeof *pi->by_off);
  pi->live = mem_get(l, n);
  pi->escaped = mem_get(l, n);
  pi->which = mem_get(l, n);
  pi->born = mem_get(l, 2 * n * sizeof *pi->born);
  pi->plan.n = n; // the tables' size until the plan is installed
  if (pi->preqs && pi->by_off && pi->live && pi->escaped && pi->which && pi->born) return pi;
  ws_inst_free(pi, l->ops->mem);
  return NULL;
}

void ws_inst_free(ws_inst_t *pi, const ws_mem_t *mem) {
  if (pi->bump) {
    mem_put(mem, pi->blo, pi->capb * sizeof *pi->blo);
    mem_put(mem, pi->bsize, pi->capb * sizeof *pi->bsize);
    mem_put(mem, pi->bborn, pi->capb * sizeof *pi->bborn);
    mem_put(mem, pi->bescaped, pi->capb);
  } else {
    uint32_t n = pi->plan.n;
    mem_put(mem, pi->preqs, n * sizeof *pi->preqs);
    mem_put(mem, pi->by_off, n * sizeof *pi->by_off);
    mem_put(mem, pi->live, n);
    mem_put(mem, pi->escaped, n);
    mem_put(mem, pi->which, n);
    mem_put(mem, pi->born, 2 * n * sizeof *pi->born);
    if (pi->plan.offset) ws_plan_free(&pi->plan, mem);
  }
  mem->free(mem->ctx, pi, sizeof *pi);
}

// pi is in force from now on; the one it replaces goes to the owner.
static void install(ws_learn_t *l, void *ctx, ws_inst_t *pi) {
  if (l->cur && l->ops->retire) l->ops->retire(ctx, l, l->cur);
  l->cur = pi;
}

int64_t ws_inst_find(const ws_inst_t *pi, uint64_t addr, int which) {
  if (pi->bump) {
    for (uint32_t i = 0; i < pi->nb; i++)
      if (pi->blo[i] == addr) return i;
    return -1;
  }
  uint64_t off = addr - pi->arena[which];
  uint32_t lo = 0, hi = pi->plan.n;
  while (lo < hi) { // first entry (in offset order) with offset >= off
    uint32_t mid = lo + (hi - lo) / 2;
    if (pi->plan.offset[pi->by_off[mid]] < off) lo = mid + 1;
    else hi = mid;
  }
  for (uint32_t i = lo; i < pi->plan.n && pi->plan.offset[pi->by_off[i]] == off; i++) {
    uint32_t e = pi->by_off[i];
    if (__atomic_load_n(&pi->live[e], __ATOMIC_ACQUIRE) && pi->which[e] == which) return e;
  }
  return -1;
}

uint64_t ws_inst_size(const ws_inst_t *pi, int64_t i) {
  return pi->bump ? pi->bsize[i] : pi->preqs[i].size;
}

uint64_t ws_inst_release(ws_inst_t *pi, int64_t i, int *escaped) {
  uint64_t size = ws_inst_size(pi, i);
  if (pi->bump) {
    *escaped = pi->bescaped[i];
    uint32_t last = --pi->nb; // swap-remove
    pi->blo[i] = pi->blo[last];
    pi->bsize[i] = pi->bsize[last];
    pi->bborn[i] = pi->bborn[last];
    pi->bescaped[i] = pi->bescaped[last];
  } else {
    *escaped = pi->escaped[i];
    __atomic_store_n(&pi->live[i], 0, __ATOMIC_RELEASE);
  }
  __atomic_fetch_sub(&pi->nlive, 1, __ATOMIC_RELAXED);
  return size;
}

// ---------------------------------------------------------------- learning

static void rec_on(ws_learn_t *l, void *ctx) {
  if (!l->recording) event(l, ctx, WS_EV_RECORD_BEGIN);
  l->recording = 1;
}
static void rec_off(ws_learn_t *l, void *ctx, int ev) {
  if (!l->recording) return;
  l->recording = 0;
  event(l, ctx, ev);
}

static void start_recording(ws_learn_t *l, void *ctx) {
  l->mode = WS_MODE_RECORD;
  l->nreq = l->tick = l->rec_cycles = l->rec_start = 0;
  rec_on(l, ctx);
}

// The plan is dropped: learning starts over (automatic: from finding the cycle). The instance
// goes to the owner's retire; without one it stays l->cur (host: its arenas stay mapped and
// registered, since escaped blocks may still live there and their frees must find them).
static void drop_plan(ws_learn_t *l, void *ctx) {
  if (l->cur && l->ops->retire) {
    l->ops->retire(ctx, l, l->cur);
    l->cur = NULL;
  }
  l->mode = l->automatic ? WS_MODE_DETECT : WS_MODE_RECORD;
  l->st.relearns++;
  l->pos = 0;
  l->nreq = l->rec_cycles = l->rec_start = l->tick = 0;
  rec_off(l, ctx, WS_EV_RECORD_STOP);
  if (l->det) ws_detect_reset(l->det);
}

// Room for one more recorded allocation. Without memory nothing changes (nreq stays >= capreq).
static void reqs_reserve(ws_learn_t *l) {
  if (l->nreq < l->capreq) return;
  uint32_t c = l->capreq ? l->capreq * 2 : 256;
  ws_req_t *v = mem_get(l, c * sizeof *v);
  if (!v) return;
  if (l->reqs) {
    memcpy(v, l->reqs, l->nreq * sizeof *v);
    mem_put(l->ops->mem, l->reqs, l->capreq * sizeof *v);
  }
  l->reqs = v;
  l->capreq = c;
}

// A recorded cycle ended. Over_time records cycles_before_init cycles back to back; then the plan.
static void finish_recording(ws_learn_t *l, void *ctx) {
  const ws_learn_ops_t *o = l->ops;
  l->st.learned_cycles++;
  uint32_t need = l->cfg.learning == WS_LEARN_OVER_TIME ? l->cfg.cycles_before_init : 1;
  if (++l->rec_cycles < need) {
    l->rec_start = l->nreq;
    return;
  }
  rec_off(l, ctx, WS_EV_RECORD_DONE);
  // over_time: the cycles recorded back to back; plan the last one with every size the largest
  // any cycle had at that position (when the cycles have the same shape).
  uint32_t n = l->nreq - l->rec_start, cycles = l->rec_cycles;
  ws_req_t *last = l->reqs + l->rec_start;
  if (cycles > 1 && l->nreq == n * cycles)
    for (uint32_t c = 0; c + 1 < cycles; c++)
      for (uint32_t i = 0; i < n; i++)
        if (l->reqs[c * n + i].key == last[i].key && l->reqs[c * n + i].size > last[i].size)
          last[i].size = l->reqs[c * n + i].size;
  ws_plan_t plan;
  if (!n || ws_plan_build(last, n, o->align, o->mem, &plan) != 0) {
    drop_plan(l, ctx);
    return;
  }
  // ND4J's sizing rule (overallocation, min/max clamps) applied to the planned size; what does
  // not fit under max_size is not planned: it goes external.
  uint64_t want = round_up(ws_nd4j_size_for(&l->cfg, plan.arena_size), o->granule);
  ws_plan_spill_past(&plan, last, want);
  if (o->fit) want = o->fit(ctx, l, last, &plan, want);
  ws_inst_t *pi = want ? inst_new(l, n) : NULL;
  uint32_t made = 0;
  if (pi) pi->size = want;
  while (pi && made < l->arenas && (pi->arena[made] = o->arena(ctx, l, pi, (int)made, want)))
    made++;
  if (!pi || made < l->arenas) {
    // No memory for it: the heap (the driver) serves this workspace from now on. An instance
    // with an arena stays, registered with it by its owner, and holds no entry.
    if (pi && !made) ws_inst_free(pi, o->mem);
    else if (pi) pi->plan.n = 0;
    ws_plan_free(&plan, o->mem);
    l->mode = WS_MODE_OFF;
    return;
  }
  memcpy(pi->preqs, last, n * sizeof *last);
  for (uint32_t i = 0; i < n; i++) pi->by_off[i] = i;
  for (uint32_t i = 1; i < n; i++) { // insertion sort by offset (n is small)
    uint32_t e = pi->by_off[i], j = i;
    while (j > 0 && plan.offset[pi->by_off[j - 1]] > plan.offset[e]) pi->by_off[j] = pi->by_off[j - 1], j--;
    pi->by_off[j] = e;
  }
  pi->plan = plan;
  install(l, ctx, pi);
  l->st.arena_bytes = want * l->arenas;
  l->st.plan_peak_bytes = plan.peak_live;
  l->st.plan_sum_bytes = plan.sum;
  event(l, ctx, WS_EV_PLANNED);
  l->pos = 0;
  l->gen = 0;
  l->cur_which = 0;
  l->mode = WS_MODE_PLANNED;
}

// A cycle of a PLANNED workspace ended: blocks still live from it escaped or outlived it.
static void end_cycle(ws_learn_t *l, void *ctx) {
  if (l->mode != WS_MODE_PLANNED) return;
  const ws_learn_ops_t *o = l->ops;
  ws_inst_t *pi = l->cur;
  for (uint32_t e = 0; e < pi->plan.n; e++) {
    if (!__atomic_load_n(&pi->live[e], __ATOMIC_ACQUIRE) || pi->escaped[e]) continue;
    pi->escaped[e] = 1; // kept valid; never routed again; its range stays taken while it lives
    int w = pi->which[e];
    if (o->outlived)
      o->outlived(ctx, l, pi->arena[w] + pi->plan.offset[e], pi->preqs[e].size, pi->born[2 * e + w]);
  }
  if (l->cycle_spills && l->cfg.spill == WS_SPILL_REALLOCATE) {
    // REALLOCATE: an arena that could not hold the cycle is re-planned (same period).
    drop_plan(l, ctx);
    l->st.relearns--; // a planned growth, not a change of stream
    if (l->automatic) {
      l->mode = WS_MODE_RECORD;
      if (!o->realloc_waits) rec_on(l, ctx); // record the cycle that begins now
    }
  } else if (pi->plan.n && l->cycle_devs * 2 > pi->plan.n) {
    drop_plan(l, ctx); // the stream changed: learn it again
  }
  l->gen++;
  l->cur_which = l->arenas == 2 ? (int)(l->gen & 1) : 0;
  event(l, ctx, WS_EV_CYCLE_END);
  l->pos = 0;
  l->cycle_devs = l->cycle_spills = 0;
  l->in_cycle = 0;
}

// ---------------------------------------------------------------- ND4J mode

static ws_inst_t *bump_inst(ws_learn_t *l, void *ctx, uint64_t size) {
  ws_inst_t *pi = mem_get(l, sizeof *pi);
  if (!pi) return NULL;
  pi->learn = l;
  pi->bump = 1;
  pi->capb = 4096;
  pi->size = size;
  pi->blo = mem_get(l, pi->capb * sizeof *pi->blo);
  pi->bsize = mem_get(l, pi->capb * sizeof *pi->bsize);
  pi->bborn = mem_get(l, pi->capb * sizeof *pi->bborn);
  pi->bescaped = mem_get(l, pi->capb);
  if (pi->blo && pi->bsize && pi->bborn && pi->bescaped) pi->arena[0] = l->ops->arena(ctx, l, pi, 0, size);
  if (pi->arena[0]) return pi;
  ws_inst_free(pi, l->ops->mem);
  return NULL;
}

// A cycle of an ND4J-mode workspace begins: the previous one closes (learning, REALLOCATE
// growth), blocks still live from it escaped or outlived it.
static void bump_cycle(ws_learn_t *l, void *ctx) {
  if (l->nd.open) ws_nd4j_close(&l->nd);
  ws_inst_t *pi = l->cur;
  // The live list is guarded by ops->lock (host: a leaf lock): take the new escapes out in small
  // batches, then report each without it (the host looks up the block's stack).
  for (uint32_t found = pi ? 1 : 0; found;) {
    struct { uint64_t addr, size, born; } batch[32];
    found = 0;
    lock(l, ctx);
    for (uint32_t i = 0; i < pi->nb && found < 32; i++) {
      if (pi->bescaped[i]) continue;
      pi->bescaped[i] = 1;
      batch[found].addr = pi->blo[i];
      batch[found].size = pi->bsize[i];
      batch[found].born = pi->bborn[i];
      found++;
    }
    unlock(l, ctx);
    for (uint32_t i = 0; i < found && l->ops->outlived; i++)
      l->ops->outlived(ctx, l, batch[i].addr, batch[i].size, batch[i].born);
  }
  ws_nd4j_enter(&l->nd);
}

// ---------------------------------------------------------------- serving

// An allocation the workspace cannot serve: a spill, counted (WS_WHY_DEVIATION also as a
// deviation, which drops the plan when most of a cycle is).
static int spill(ws_learn_t *l, uint64_t bytes, int why, ws_learn_out_t *out) {
  l->st.spills++;
  l->st.spill_bytes += bytes;
  l->cycle_spills++;
  if (why == WS_WHY_DEVIATION) {
    l->st.deviations++;
    l->cycle_devs++;
  }
  out->why = why;
  return WS_GO_SPILL;
}

static int bump_alloc(ws_learn_t *l, void *ctx, uint64_t bytes, ws_learn_out_t *out) {
  uint64_t off;
  ws_result_t r = ws_nd4j_alloc(&l->nd, bytes, &off);
  if (r == WS_FULL) return spill(l, bytes, WS_WHY_FULL, out);
  if (r != WS_OK) return spill(l, bytes, WS_WHY_TAKEN, out); // spilled or pinned: by ND4J's rule
  uint64_t size = (bytes + 31) & ~(uint64_t)31;
  if (!l->cur || l->cur->size < l->nd.current_size) { // the model grew the arena
    ws_inst_t *pi = bump_inst(l, ctx, round_up(l->nd.current_size, l->ops->granule));
    if (!pi) return spill(l, bytes, WS_WHY_TAKEN, out);
    l->st.arena_bytes = pi->size;
    install(l, ctx, pi); // the old arena stays with the owner for its live blocks
  }
  ws_inst_t *pi = l->cur;
  uint64_t lo = pi->arena[0] + off, hi = lo + size;
  lock(l, ctx);
  int clash = pi->nb >= pi->capb || off + size > pi->size;
  for (uint32_t i = 0; i < pi->nb && !clash; i++) clash = lo < pi->blo[i] + pi->bsize[i] && pi->blo[i] < hi;
  if (!clash && l->ops->settle) clash = l->ops->settle(ctx, lo, hi) != 0;
  if (!clash) {
    uint32_t i = pi->nb++;
    pi->blo[i] = lo;
    pi->bsize[i] = size;
    pi->bborn[i] = l->st.cycles + 1;
    pi->bescaped[i] = 0;
    __atomic_fetch_add(&pi->nlive, 1, __ATOMIC_RELAXED);
  }
  unlock(l, ctx);
  if (clash) return spill(l, bytes, WS_WHY_TAKEN, out); // the range is still taken: never overlap
  l->st.hits++;
  l->st.hit_bytes += size;
  out->addr = lo;
  out->size = size;
  return WS_GO_SERVED;
}

static int entry_free_to_use(const ws_learn_t *l, const ws_inst_t *pi, uint32_t k) {
  if (__atomic_load_n(&pi->live[k], __ATOMIC_ACQUIRE) || pi->escaped[k]) return 0;
  for (uint32_t i = pi->plan.conflict_off[k]; i < pi->plan.conflict_off[k + 1]; i++) {
    uint32_t c = pi->plan.conflicts[i];
    // a conflicting block in the other arena (guard mode) does not share memory with k
    if (__atomic_load_n(&pi->live[c], __ATOMIC_ACQUIRE) && pi->which[c] == l->cur_which) return 0;
  }
  return 1;
}

static int planned_alloc(ws_learn_t *l, void *ctx, uint64_t sym, uint64_t bytes,
                         ws_learn_out_t *out) {
  ws_inst_t *pi = l->cur;
  // The k-th routed allocation of the cycle is expected to be plan entry k; one missing
  // allocation is tolerated (entry k+1 matches: resynchronise).
  uint32_t k = l->pos, n = pi->plan.n;
  if (!(k < n && pi->preqs[k].key == sym) && k + 1 < n && pi->preqs[k + 1].key == sym) {
    l->st.deviations++;
    l->cycle_devs++;
    k++;
  }
  if (!(k < n && pi->preqs[k].key == sym)) return spill(l, bytes, WS_WHY_DEVIATION, out);
  l->pos = k + 1;
  uint64_t off = pi->plan.offset[k], size = pi->preqs[k].size;
  if (off == WS_PLAN_NONE) return WS_GO_HEAP; // outlives its cycle: the heap, by plan
  if (off == WS_PLAN_TOO_BIG) return spill(l, bytes, WS_WHY_TOO_BIG, out);
  if (bytes > size) return spill(l, bytes, WS_WHY_DEVIATION, out); // it grew
  if (!entry_free_to_use(l, pi, k)) return spill(l, bytes, WS_WHY_TAKEN, out);
  int w = l->cur_which;
  if (!pi->arena[w]) { // released by its owner (host: relief): made again
    pi->arena[w] = l->ops->arena(ctx, l, pi, w, pi->size);
    if (!pi->arena[w]) return spill(l, bytes, WS_WHY_TAKEN, out);
    l->st.arena_bytes += pi->size;
  }
  uint64_t lo = pi->arena[w] + off;
  if (l->ops->settle && l->ops->settle(ctx, lo, lo + size) != 0)
    return spill(l, bytes, WS_WHY_TAKEN, out);
  pi->which[k] = (uint8_t)w;
  pi->born[2 * k + w] = l->st.cycles + 1; // the cycle, from 1 (learning cycles count too)
  __atomic_store_n(&pi->live[k], 1, __ATOMIC_RELEASE);
  __atomic_fetch_add(&pi->nlive, 1, __ATOMIC_RELAXED);
  l->st.hits++;
  l->st.hit_bytes += size;
  out->addr = lo;
  out->size = size;
  return WS_GO_SERVED;
}

static int record(ws_learn_t *l, uint64_t sym, uint64_t bytes, ws_learn_out_t *out) {
  if (!l->recording || l->nreq - l->rec_start >= RECORD_MAX) return WS_GO_HEAP;
  reqs_reserve(l);
  if (l->nreq >= l->capreq) return WS_GO_HEAP;
  ws_req_t *r = &l->reqs[l->nreq];
  r->key = sym;
  r->size = round_up(bytes, l->ops->align);
  r->t_alloc = l->tick++;
  r->t_free = UINT32_MAX;
  out->idx = l->nreq++;
  return WS_GO_RECORDED;
}

int ws_learn_alloc(ws_learn_t *l, void *ctx, uint64_t sym, uint64_t bytes, int64_t live_before,
                   ws_learn_out_t *out) {
  if (l->mode == WS_MODE_OFF) return WS_GO_HEAP;
  if (l->mode == WS_MODE_DETECT) {
    // The detector gets the live bytes *before* each allocation (ws_follow_feed says why).
    uint32_t p = ws_follow_feed(l->det, &l->follow, sym, live_before, &l->phase, &l->in_cycle);
    if (p) {
      l->period = p;
      l->mode = l->bump ? WS_MODE_BUMP : WS_MODE_RECORD;
      l->nreq = l->tick = l->rec_cycles = l->rec_start = 0;
      l->recording = 0;
    }
    return WS_GO_HEAP;
  }
  if (l->automatic && l->in_cycle >= l->period) { // this allocation begins a cycle
    if (l->mode == WS_MODE_RECORD) event(l, ctx, WS_EV_LEARN_CYCLE_END);
    if (l->mode == WS_MODE_RECORD && !l->recording) {
      start_recording(l, ctx);
    } else if (l->mode == WS_MODE_RECORD) {
      l->st.cycles++;
      event(l, ctx, WS_EV_CYCLE_CLOSED);
      finish_recording(l, ctx);
    } else if (l->mode == WS_MODE_PLANNED) {
      l->st.cycles++;
      event(l, ctx, WS_EV_CYCLE_CLOSED);
      end_cycle(l, ctx);
    } else if (l->mode == WS_MODE_BUMP) {
      if (l->nd.open) {
        l->st.cycles++;
        event(l, ctx, WS_EV_CYCLE_CLOSED);
      }
      bump_cycle(l, ctx);
    }
    l->in_cycle = 0;
  }
  l->in_cycle++;
  if (l->mode == WS_MODE_BUMP) return l->nd.open ? bump_alloc(l, ctx, bytes, out) : WS_GO_HEAP;
  if (l->mode == WS_MODE_RECORD) return record(l, sym, bytes, out); // the heap, noted
  if (l->mode == WS_MODE_PLANNED) return planned_alloc(l, ctx, sym, bytes, out);
  return WS_GO_HEAP;
}

void ws_learn_freed(ws_learn_t *l, uint32_t idx) {
  if (l->mode == WS_MODE_RECORD && idx < l->nreq) l->reqs[idx].t_free = l->tick++;
}

// ---------------------------------------------------------------- declared cycles

void ws_learn_begin(ws_learn_t *l, void *ctx) {
  if (l->closed) { // the previous cycle's blocks had until now to be freed
    l->closed = 0;
    end_cycle(l, ctx);
  }
  if (l->mode == WS_MODE_RECORD && !l->recording) start_recording(l, ctx);
  if (l->mode == WS_MODE_PLANNED) l->pos = 0;
  if (l->mode == WS_MODE_BUMP) bump_cycle(l, ctx);
}

void ws_learn_end(ws_learn_t *l, void *ctx) {
  l->st.cycles++;
  event(l, ctx, WS_EV_CYCLE_CLOSED);
  if (l->mode == WS_MODE_RECORD && l->recording) event(l, ctx, WS_EV_LEARN_CYCLE_END);
  if (l->mode == WS_MODE_RECORD && l->recording) finish_recording(l, ctx);
  else if (l->mode == WS_MODE_PLANNED) l->closed = 1;
  else if (l->mode == WS_MODE_BUMP && l->nd.open) ws_nd4j_close(&l->nd);
}

void ws_learn_configure(ws_learn_t *l, void *ctx, const ws_config_t *cfg) {
  l->cfg = *cfg;
  if (l->mode == WS_MODE_PLANNED) drop_plan(l, ctx);
  rec_off(l, ctx, WS_EV_RECORD_STOP);
  if (l->cur && l->ops->retire) l->ops->retire(ctx, l, l->cur);
  l->cur = NULL; // without retire, its arenas stay with the owner for the blocks they hold
  l->bump = bump_policy(cfg);
  if (l->bump) ws_nd4j_init(&l->nd, cfg);
  l->mode = l->bump ? WS_MODE_BUMP : WS_MODE_RECORD;
}

// ---------------------------------------------------------------- the recorded blocks' table

static size_t rtab_slot(uint64_t a, size_t cap) {
  return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

void ws_rtab_put(ws_rtab_t *t, const ws_mem_t *mem, uint64_t addr, void *owner, uint32_t idx) {
  if ((t->n + 1) * 2 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    ws_rtab_slot_t *v = mem->alloc(mem->ctx, cap * sizeof *v);
    if (!v) return;
    for (size_t i = 0; i < t->cap; i++)
      if (t->slot[i].addr) {
        size_t j = rtab_slot(t->slot[i].addr, cap);
        while (v[j].addr) j = (j + 1) & (cap - 1);
        v[j] = t->slot[i];
      }
    mem_put(mem, t->slot, t->cap * sizeof *v);
    t->slot = v;
    t->cap = cap;
  }
  size_t j = rtab_slot(addr, t->cap);
  while (t->slot[j].addr) j = (j + 1) & (t->cap - 1);
  t->slot[j] = (ws_rtab_slot_t){addr, owner, idx};
  t->n++;
}

int ws_rtab_take(ws_rtab_t *t, uint64_t addr, void **owner, uint32_t *idx) {
  if (!t->cap || !addr) return 0;
  size_t mask = t->cap - 1, j = rtab_slot(addr, t->cap);
  for (; t->slot[j].addr; j = (j + 1) & mask)
    if (t->slot[j].addr == addr) break;
  if (t->slot[j].addr != addr) return 0;
  *owner = t->slot[j].owner;
  *idx = t->slot[j].idx;
  size_t hole = j; // backward-shift deletion
  for (size_t i = (j + 1) & mask; t->slot[i].addr; i = (i + 1) & mask) {
    size_t home = rtab_slot(t->slot[i].addr, t->cap);
    if (((i - home) & mask) >= ((i - hole) & mask)) {
      t->slot[hole] = t->slot[i];
      hole = i;
    }
  }
  t->slot[hole].addr = 0;
  t->n--;
  return 1;
}

void ws_rtab_forget(ws_rtab_t *t, const void *owner) {
  for (size_t i = 0; i < t->cap; i++)
    if (t->slot[i].addr && t->slot[i].owner == owner) t->slot[i].owner = NULL;
}

void ws_rtab_clear(ws_rtab_t *t) {
  if (t->cap) memset(t->slot, 0, t->cap * sizeof *t->slot);
  t->n = 0;
}
