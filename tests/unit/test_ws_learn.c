// SPDX-License-Identifier: MIT
// test_ws_learn: one workspace's learning machine (ws_learn.c) against an owner double that hands
// out arenas at known addresses and logs every callback. Declared cycles are recorded, planned and
// served at the offsets worked out by hand; blocks that outlive their cycle are reported once and
// keep their range; deviations, spills and a changed stream drop the plan; over_time plans each
// position's largest size; a fit callback and max_size spill what ends past the arena; guard
// mode's two arenas alternate; settle and a taken range never give out a live block's memory;
// the automatic path finds the period, records and plans, and REALLOCATE re-records at once or
// (realloc_waits) one boundary later; ND4J's bump mode; the recorded blocks' table.
#include "../check.h"
#include "workspace.h"

// The engine's memory, every block listed so that each test gives back what its workspaces kept
// (instances an owner without retire holds, the recording, the detector): mem_release_all.
static void *blocks[1024];
static int nblocks;
static void *mem_alloc(void *ctx, size_t bytes) {
  (void)ctx;
  if (nblocks == 1024) return NULL;
  return blocks[nblocks++] = calloc(1, bytes ? bytes : 1);
}
static void mem_free(void *ctx, void *p, size_t bytes) {
  (void)ctx, (void)bytes;
  for (int i = 0; i < nblocks; i++)
    if (blocks[i] == p) {
      blocks[i] = blocks[--nblocks];
      break;
    }
  free(p);
}
static void mem_release_all(void) {
  while (nblocks) free(blocks[--nblocks]);
}
static const ws_mem_t mem = {mem_alloc, mem_free, NULL};

// ---------------------------------------------------------------- the owner double

typedef struct owner {
  uint64_t next_arena;  // the address the next arena gets (then + 1 MiB)
  int arenas, refuse;   // arenas made; refuse: the next `refuse` arena calls fail
  uint64_t fit_to;      // fit: cut the plan's arena to this (0: keep what was wanted)
  uint64_t fit_want;    // what fit was asked for
  int retired;          // retire calls
  uint64_t refuse_lo;   // settle refuses a range starting here
  int settles;
  int outlived;
  uint64_t out_addr[8], out_size[8], out_born[8];
  int ev[64], nev;
  int locked, locks;
} owner_t;

static uint64_t o_arena(void *ctx, ws_learn_t *l, ws_inst_t *pi, int which, uint64_t size) {
  owner_t *o = ctx;
  (void)l, (void)pi, (void)which, (void)size;
  if (o->refuse) {
    o->refuse--;
    return 0;
  }
  o->arenas++;
  uint64_t a = o->next_arena;
  o->next_arena += 1 << 20;
  return a;
}
static uint64_t o_fit(void *ctx, ws_learn_t *l, const ws_req_t *reqs, ws_plan_t *plan, uint64_t want) {
  owner_t *o = ctx;
  (void)l;
  o->fit_want = want;
  if (!o->fit_to) return want;
  ws_plan_spill_past(plan, reqs, o->fit_to);
  return o->fit_to;
}
static void o_retire(void *ctx, ws_learn_t *l, ws_inst_t *pi) {
  owner_t *o = ctx;
  (void)l;
  o->retired++;
  ws_inst_free(pi, &mem);
}
static int o_settle(void *ctx, uint64_t lo, uint64_t hi) {
  owner_t *o = ctx;
  (void)hi;
  o->settles++;
  return lo == o->refuse_lo ? -1 : 0;
}
static void o_outlived(void *ctx, ws_learn_t *l, uint64_t addr, uint64_t size, uint64_t born) {
  owner_t *o = ctx;
  (void)l;
  CHECK(!o->locked); // reported outside the lock
  if (o->outlived < 8) {
    o->out_addr[o->outlived] = addr;
    o->out_size[o->outlived] = size;
    o->out_born[o->outlived] = born;
  }
  o->outlived++;
}
static void o_event(void *ctx, ws_learn_t *l, int ev) {
  owner_t *o = ctx;
  (void)l;
  if (o->nev < 64) o->ev[o->nev++] = ev;
}
static void o_lock(void *ctx) {
  owner_t *o = ctx;
  CHECK(!o->locked);
  o->locked = 1;
  o->locks++;
}
static void o_unlock(void *ctx) {
  owner_t *o = ctx;
  CHECK(o->locked);
  o->locked = 0;
}

// The host's shape: 64-byte offsets, page-sized arenas, a dropped plan's instance kept.
static const ws_learn_ops_t host_ops = {&mem, 64, 4096, 0, o_arena, o_fit, NULL, NULL,
                                        o_outlived, o_event, o_lock, o_unlock};
// The device's: 512-byte offsets and arenas, instances retired, ranges settled, REALLOCATE waits.
static const ws_learn_ops_t dev_ops = {&mem, 512, 512, 1, o_arena, NULL, o_retire, o_settle,
                                       o_outlived, o_event, NULL, NULL};

static ws_config_t strict(void) {
  ws_config_t c;
  ws_config_default(&c);
  c.allocation = WS_ALLOC_STRICT; // the arena is the plan's size, rounded to the granule
  return c;
}

// A workspace with the policies c, set up (as the owners do) in zeroed memory.
static void start(ws_learn_t *l, const ws_learn_ops_t *ops, ws_config_t c, int automatic,
                  uint32_t arenas) {
  memset(l, 0, sizeof *l);
  CHECK_EQ(ws_learn_init(l, ops, &c, automatic, arenas), 0);
}

static int go(ws_learn_t *l, owner_t *o, uint64_t sym, uint64_t bytes, ws_learn_out_t *out) {
  memset(out, 0, sizeof *out);
  return ws_learn_alloc(l, o, sym, bytes, 0, out);
}

static void release(ws_inst_t *pi, uint64_t addr, int which, uint64_t want_size, int want_escaped) {
  int64_t i = ws_inst_find(pi, addr, which);
  CHECK(i >= 0);
  if (i < 0) return;
  CHECK_EQ(ws_inst_size(pi, i), want_size);
  int esc = -1;
  CHECK_EQ(ws_inst_release(pi, i, &esc), want_size);
  CHECK_EQ(esc, want_escaped);
  CHECK_EQ(ws_inst_find(pi, addr, which), -1); // freed: no longer found
}

// One declared learning cycle: A (100 B), B (200 B), A freed, C (50 B), B and C freed. Ticks:
// A [0, 2), B [1, 4), C [3, 5); sizes rounded to 64: 128, 256, 64. Greedy by size: B at 0, A
// beside it at 256 (both live at tick 1), C at 256 (it meets B, never A). Arena 384 B (the peak,
// A + B), a page once rounded; the sum 448.
#define A 0xa1
#define B 0xb2
#define C 0xc3
static void learn_abc(ws_learn_t *l, owner_t *o) {
  ws_learn_out_t out;
  ws_learn_begin(l, o);
  CHECK_EQ(l->mode, WS_MODE_RECORD);
  CHECK_EQ(l->recording, 1);
  CHECK_EQ(go(l, o, A, 100, &out), WS_GO_RECORDED);
  CHECK_EQ(out.idx, 0);
  CHECK_EQ(go(l, o, B, 200, &out), WS_GO_RECORDED);
  CHECK_EQ(out.idx, 1);
  ws_learn_freed(l, 0);
  CHECK_EQ(go(l, o, C, 50, &out), WS_GO_RECORDED);
  CHECK_EQ(out.idx, 2);
  ws_learn_freed(l, 1);
  ws_learn_freed(l, 2);
  CHECK_EQ(l->reqs[0].t_alloc, 0);
  CHECK_EQ(l->reqs[0].t_free, 2);
  CHECK_EQ(l->reqs[1].t_free, 4);
  CHECK_EQ(l->reqs[2].t_alloc, 3);
  CHECK_EQ(l->reqs[2].size, l->ops->align); // 50 rounded up
  ws_learn_end(l, o);
}

// A declared workspace with strict policies that learned learn_abc's cycle: its plan's instance.
static ws_inst_t *planned_abc(ws_learn_t *l, owner_t *o, const ws_learn_ops_t *ops,
                              uint32_t arenas) {
  start(l, ops, strict(), 0, arenas);
  learn_abc(l, o);
  return l->cur;
}

// ---------------------------------------------------------------- declared cycles

static void test_declared(void) {
  owner_t o = {.next_arena = 0x10000};
  ws_learn_t l;
  start(&l, &host_ops, strict(), 0, 1);
  CHECK_EQ(l.mode, WS_MODE_RECORD);
  CHECK_EQ(l.recording, 0);
  learn_abc(&l, &o);
  CHECK_EQ(l.mode, WS_MODE_PLANNED);
  CHECK_EQ(l.st.cycles, 1);
  CHECK_EQ(l.st.learned_cycles, 1);
  CHECK_EQ(l.st.plan_peak_bytes, 384);
  CHECK_EQ(l.st.plan_sum_bytes, 448);
  CHECK_EQ(l.st.arena_bytes, 4096);
  CHECK_EQ(o.fit_want, 4096);
  CHECK_EQ(o.arenas, 1);
  ws_inst_t *pi = l.cur;
  CHECK(pi != NULL);
  CHECK_EQ(pi->arena[0], 0x10000);
  CHECK_EQ(pi->plan.offset[0], 256);
  CHECK_EQ(pi->plan.offset[1], 0);
  CHECK_EQ(pi->plan.offset[2], 256);
  CHECK_EQ(pi->by_off[0], 1); // B, then A and C at 256 (insertion sort keeps their order)
  CHECK_EQ(pi->by_off[1], 0);
  CHECK_EQ(pi->by_off[2], 2);
  // events: recording began (at begin), cycle closed, a learned cycle's end (its blocks freed:
  // the host reads its allocator there, before the plan's trim), recording done, plan in force
  int want_ev[] = {WS_EV_RECORD_BEGIN, WS_EV_CYCLE_CLOSED, WS_EV_LEARN_CYCLE_END,
                   WS_EV_RECORD_DONE, WS_EV_PLANNED};
  CHECK_EQ(o.nev, 5);
  for (int i = 0; i < 5 && i < o.nev; i++) CHECK_EQ(o.ev[i], want_ev[i]);

  // Cycle 2, as learned: every allocation served at its offset.
  ws_learn_out_t out;
  ws_learn_begin(&l, &o);
  CHECK_EQ(go(&l, &o, A, 100, &out), WS_GO_SERVED);
  CHECK_EQ(out.addr, 0x10000 + 256);
  CHECK_EQ(out.size, 128);
  CHECK_EQ(go(&l, &o, B, 200, &out), WS_GO_SERVED);
  CHECK_EQ(out.addr, 0x10000);
  CHECK_EQ(out.size, 256);
  CHECK_EQ(pi->nlive, 2);
  release(pi, 0x10000 + 256, 0, 128, 0);
  CHECK_EQ(go(&l, &o, C, 50, &out), WS_GO_SERVED); // A, which shares its range, is free
  CHECK_EQ(out.addr, 0x10000 + 256);
  CHECK_EQ(out.size, 64);
  CHECK_EQ(pi->born[2 * 2 + 0], 2); // served in cycle 2
  release(pi, 0x10000, 0, 256, 0);
  CHECK_EQ(ws_inst_find(pi, 0x10000 + 64, 0), -1); // not the start of a block
  ws_learn_end(&l, &o);                              // C stays live past its cycle
  CHECK_EQ(l.closed, 1);
  CHECK_EQ(l.st.hits, 3);
  CHECK_EQ(l.st.hit_bytes, 448);
  CHECK_EQ(o.outlived, 0); // not before the next begin: the cycle's blocks have until then

  // Cycle 3: C outlived cycle 2 (reported once, born in 2); its range and A's (which shares it)
  // stay taken; an allocation past the plan deviates.
  ws_learn_begin(&l, &o);
  CHECK_EQ(o.outlived, 1);
  CHECK_EQ(o.out_addr[0], 0x10000 + 256);
  CHECK_EQ(o.out_size[0], 64);
  CHECK_EQ(o.out_born[0], 2);
  CHECK_EQ(l.gen, 1);
  CHECK_EQ(go(&l, &o, A, 100, &out), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_TAKEN);
  CHECK_EQ(go(&l, &o, B, 200, &out), WS_GO_SERVED);
  CHECK_EQ(go(&l, &o, C, 50, &out), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_TAKEN);
  CHECK_EQ(go(&l, &o, 0xdd, 50, &out), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_DEVIATION);
  CHECK_EQ(l.st.spills, 3);
  CHECK_EQ(l.st.spill_bytes, 200);
  CHECK_EQ(l.st.deviations, 1);
  release(pi, 0x10000 + 256, 0, 64, 1); // the outlived block, freed at last
  release(pi, 0x10000, 0, 256, 0);
  CHECK_EQ(pi->nlive, 0);
  ws_learn_end(&l, &o);
  // Cycle 4: 1 deviation of 3 entries keeps the plan; C's entry is never routed again.
  ws_learn_begin(&l, &o);
  CHECK_EQ(o.outlived, 1);
  CHECK_EQ(l.mode, WS_MODE_PLANNED);
  CHECK_EQ(go(&l, &o, A, 100, &out), WS_GO_SERVED);
  CHECK_EQ(go(&l, &o, B, 200, &out), WS_GO_SERVED);
  CHECK_EQ(go(&l, &o, C, 50, &out), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_TAKEN);
  CHECK_EQ(l.st.hits, 6);
  CHECK_EQ(l.st.relearns, 0);
}

// A stream that changed: more than half a cycle's entries deviate, the plan is dropped at the
// next begin, and learning starts over (the instance kept by an owner without retire).
static void test_changed_stream(void) {
  owner_t o = {.next_arena = 0x10000};
  ws_learn_t l;
  ws_inst_t *pi = planned_abc(&l, &o, &host_ops, 1);
  ws_learn_out_t out;
  ws_learn_begin(&l, &o);
  // one missing allocation is tolerated: B matches entry 1, counted as a deviation, served
  CHECK_EQ(go(&l, &o, B, 200, &out), WS_GO_SERVED);
  CHECK_EQ(out.addr, 0x10000);
  CHECK_EQ(l.st.deviations, 1);
  CHECK_EQ(go(&l, &o, A, 300, &out), WS_GO_SPILL); // entry 2 is C: a deviation
  CHECK_EQ(out.why, WS_WHY_DEVIATION);
  CHECK_EQ(l.st.deviations, 2);
  release(pi, 0x10000, 0, 256, 0);
  ws_learn_end(&l, &o);
  o.nev = 0;
  ws_learn_begin(&l, &o);
  CHECK_EQ(l.st.relearns, 1);
  CHECK_EQ(l.mode, WS_MODE_RECORD); // declared: records again from this cycle
  CHECK_EQ(l.recording, 1);
  CHECK(l.cur == pi); // no retire: kept
  CHECK_EQ(o.nev, 2);
  CHECK_EQ(o.ev[0], WS_EV_CYCLE_END);
  CHECK_EQ(o.ev[1], WS_EV_RECORD_BEGIN);
  CHECK_EQ(l.nreq, 0);
}

// over_time: 2 cycles recorded back to back, each position planned at its largest size.
static void test_over_time(void) {
  owner_t o = {.next_arena = 0x10000};
  ws_learn_t l;
  ws_config_t c = strict();
  c.learning = WS_LEARN_OVER_TIME;
  c.cycles_before_init = 2;
  start(&l, &host_ops, c, 0, 1);
  ws_learn_out_t out;
  ws_learn_begin(&l, &o);
  go(&l, &o, A, 100, &out); // 128
  go(&l, &o, B, 300, &out); // 320
  ws_learn_freed(&l, 0);
  ws_learn_freed(&l, 1);
  ws_learn_end(&l, &o);
  CHECK_EQ(l.mode, WS_MODE_RECORD);
  CHECK_EQ(l.rec_start, 2);
  ws_learn_begin(&l, &o);
  go(&l, &o, A, 200, &out); // 256
  CHECK_EQ(out.idx, 2);
  go(&l, &o, B, 100, &out); // 128
  ws_learn_freed(&l, 2);
  ws_learn_freed(&l, 3);
  ws_learn_end(&l, &o);
  CHECK_EQ(l.mode, WS_MODE_PLANNED);
  CHECK_EQ(l.st.learned_cycles, 2);
  CHECK_EQ(l.cur->preqs[0].size, 256);
  CHECK_EQ(l.cur->preqs[1].size, 320);
  CHECK_EQ(l.st.plan_peak_bytes, 576); // live together
  ws_learn_begin(&l, &o);
  CHECK_EQ(go(&l, &o, A, 250, &out), WS_GO_SERVED);
  CHECK_EQ(out.size, 256);
}

// The arena is cut to 256 B (fit, as the host's under maxBytes): A and C end past it and spill
// every cycle, B is served. max_size cuts the same way without fit.
static void test_fit_and_max_size(void) {
  owner_t o = {.next_arena = 0x10000, .fit_to = 256};
  ws_learn_t l;
  planned_abc(&l, &o, &host_ops, 1);
  CHECK_EQ(l.st.arena_bytes, 256);
  CHECK_EQ(l.cur->size, 256);
  CHECK(l.cur->plan.offset[0] == WS_PLAN_TOO_BIG && l.cur->plan.offset[2] == WS_PLAN_TOO_BIG);
  ws_learn_out_t out;
  ws_learn_begin(&l, &o);
  CHECK_EQ(go(&l, &o, A, 100, &out), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_TOO_BIG);
  CHECK_EQ(go(&l, &o, B, 200, &out), WS_GO_SERVED);
  CHECK_EQ(go(&l, &o, C, 50, &out), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_TOO_BIG);
  CHECK_EQ(l.st.deviations, 0);
  CHECK_EQ(l.st.spills, 2);

  // max_size 500 with the device's 512-byte rounding (A at 0, B at 512, C at 0): ND4J's size
  // min(1024, 500) makes an arena of 512, and B spills every cycle
  owner_t o2 = {.next_arena = 0x10000};
  ws_learn_t l2;
  ws_config_t c = strict();
  c.max_size = 500;
  start(&l2, &dev_ops, c, 0, 1);
  learn_abc(&l2, &o2);
  CHECK_EQ(l2.mode, WS_MODE_PLANNED);
  CHECK_EQ(l2.st.arena_bytes, 512);
  CHECK_EQ(l2.cur->plan.offset[0], 0);
  CHECK(l2.cur->plan.offset[1] == WS_PLAN_TOO_BIG);
  CHECK_EQ(l2.cur->plan.offset[2], 0);
  ws_learn_begin(&l2, &o2);
  CHECK_EQ(go(&l2, &o2, A, 100, &out), WS_GO_SERVED);
  CHECK_EQ(go(&l2, &o2, B, 200, &out), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_TOO_BIG);

  // no arena to be had: off, the heap serves from now on
  owner_t o3 = {.next_arena = 0x10000, .refuse = 1};
  ws_learn_t l3;
  start(&l3, &host_ops, strict(), 0, 1);
  learn_abc(&l3, &o3);
  CHECK_EQ(l3.mode, WS_MODE_OFF);
  CHECK(l3.cur == NULL);
}

// Guard mode's two arenas: a plan gets both; cycles alternate between them; a block live in one
// does not keep its entry's partner from being served in the other.
static void test_two_arenas(void) {
  owner_t o = {.next_arena = 0x100000};
  ws_learn_t l;
  ws_inst_t *pi = planned_abc(&l, &o, &host_ops, 2);
  CHECK_EQ(o.arenas, 2);
  CHECK_EQ(l.st.arena_bytes, 8192);
  CHECK_EQ(pi->arena[0], 0x100000);
  CHECK_EQ(pi->arena[1], 0x200000);
  ws_learn_out_t out;
  ws_learn_begin(&l, &o);
  CHECK_EQ(l.cur_which, 0);
  go(&l, &o, A, 100, &out);
  CHECK_EQ(out.addr, 0x100000 + 256); // A stays live into the next cycle
  ws_learn_end(&l, &o);
  o.nev = 0;
  ws_learn_begin(&l, &o);
  CHECK_EQ(l.cur_which, 1);
  CHECK_EQ(o.ev[0], WS_EV_CYCLE_END);
  CHECK_EQ(o.outlived, 1);
  CHECK_EQ(go(&l, &o, A, 100, &out), WS_GO_SPILL); // A's entry escaped: never routed again
  CHECK_EQ(go(&l, &o, B, 200, &out), WS_GO_SERVED);
  CHECK_EQ(out.addr, 0x200000);
  CHECK_EQ(go(&l, &o, C, 50, &out), WS_GO_SERVED); // A is live, but in the other arena
  CHECK_EQ(out.addr, 0x200000 + 256);
  CHECK_EQ(pi->which[2], 1);
  CHECK_EQ(pi->born[2 * 2 + 1], 3);
  CHECK_EQ(ws_inst_find(pi, 0x200000 + 256, 0), -1); // C lives in arena 1 only
  release(pi, 0x200000 + 256, 1, 64, 0);
  release(pi, 0x100000 + 256, 0, 128, 1);
}

// The device's shape: settle may refuse a range (spilled, never handed out), a dropped plan's
// instance is retired, and REALLOCATE records the grown cycle from the next boundary.
static void test_settle_and_retire(void) {
  owner_t o = {.next_arena = 0x10000};
  ws_learn_t l;
  planned_abc(&l, &o, &dev_ops, 1);
  // 512-byte rounding: A, B, C all 512, placed in order of allocation: A at 0, B beside it at
  // 512, C at 0 (it meets B only)
  CHECK_EQ(l.cur->plan.offset[0], 0);
  CHECK_EQ(l.cur->plan.offset[1], 512);
  CHECK_EQ(l.cur->plan.offset[2], 0);
  CHECK_EQ(l.st.arena_bytes, 1024);
  ws_learn_out_t out;
  o.refuse_lo = 0x10000; // A's range: work on it is still in flight
  ws_learn_begin(&l, &o);
  CHECK_EQ(go(&l, &o, A, 100, &out), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_TAKEN);
  CHECK_EQ(go(&l, &o, B, 200, &out), WS_GO_SERVED);
  CHECK_EQ(out.addr, 0x10000 + 512);
  CHECK_EQ(o.settles, 2);
  CHECK_EQ(l.cur->nlive, 1);
  release(l.cur, 0x10000 + 512, 0, 512, 0);
  CHECK_EQ(go(&l, &o, 0xee, 1, &out), WS_GO_SPILL);
  CHECK_EQ(go(&l, &o, 0xef, 1, &out), WS_GO_SPILL);
  ws_learn_end(&l, &o);
  ws_learn_begin(&l, &o); // 2 deviations of 3: dropped, retired
  CHECK_EQ(o.retired, 1);
  CHECK(l.cur == NULL);
  CHECK_EQ(l.mode, WS_MODE_RECORD);
}

// ---------------------------------------------------------------- automatic cycles

// A loop of 4 allocations, each freed before the next. The detector reports the period after 8
// matches (12 symbols), the follower acts once it was reported 4 times in a row (3 more), and the
// next symbol begins a cycle.
#define P 4
static const uint64_t loop_sym[P] = {0x11, 0x22, 0x33, 0x44};
static const uint64_t loop_size[P] = {1000, 2000, 3000, 4000};

// Feeds symbol i of the loop (live bytes are 0 before each: every block is freed right away).
static int feed(ws_learn_t *l, owner_t *o, uint64_t i, ws_learn_out_t *out, uint64_t bytes) {
  memset(out, 0, sizeof *out);
  int r = ws_learn_alloc(l, o, loop_sym[i % P], bytes ? bytes : loop_size[i % P], 0, out);
  if (r == WS_GO_RECORDED) ws_learn_freed(l, out->idx);
  if (r == WS_GO_SERVED) release(l->cur, out->addr, l->cur_which, out->size, 0);
  return r;
}

static void test_automatic(int realloc_waits) {
  owner_t o = {.next_arena = 0x10000};
  ws_learn_ops_t ops = host_ops;
  ops.realloc_waits = realloc_waits;
  ws_learn_t l;
  ws_config_t c = strict();
  c.spill = WS_SPILL_REALLOCATE;
  start(&l, &ops, c, 1, 1);
  CHECK_EQ(l.mode, WS_MODE_DETECT);
  ws_learn_out_t out;
  uint64_t i = 0;
  while (l.mode == WS_MODE_DETECT && i < 100) feed(&l, &o, i++, &out, 0);
  CHECK_EQ(i, 15);
  CHECK_EQ(l.period, P);
  CHECK_EQ(l.mode, WS_MODE_RECORD);
  CHECK_EQ(l.recording, 0);
  CHECK_EQ(l.in_cycle, 4);         // the next symbol begins a cycle
  CHECK_EQ(feed(&l, &o, i++, &out, 0), WS_GO_RECORDED); // the boundary: recording begins
  CHECK_EQ(l.st.cycles, 0);
  for (int k = 1; k < P; k++) CHECK_EQ(feed(&l, &o, i++, &out, 0), WS_GO_RECORDED);
  CHECK_EQ(feed(&l, &o, i++, &out, 0), WS_GO_SERVED); // the next boundary: planned, served
  CHECK_EQ(l.st.cycles, 1);
  CHECK_EQ(l.st.learned_cycles, 1);
  CHECK_EQ(l.st.plan_peak_bytes, 4032); // one block at a time: the largest, 4000 -> 4032
  CHECK_EQ(out.addr, 0x10000);
  for (int k = 1; k < P; k++) CHECK_EQ(feed(&l, &o, i++, &out, 0), WS_GO_SERVED);
  // the loop's last allocation grows past its entry: a spill (a deviation), and at the boundary
  // REALLOCATE re-plans (not counted as a relearn)
  CHECK_EQ(feed(&l, &o, i++, &out, 0), WS_GO_SERVED);
  for (int k = 1; k < P - 1; k++) feed(&l, &o, i++, &out, 0);
  CHECK_EQ(feed(&l, &o, i++, &out, 5000), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_DEVIATION);
  CHECK_EQ(l.st.hits, 7);
  int r = feed(&l, &o, i++, &out, 0); // boundary
  CHECK_EQ(l.mode, WS_MODE_RECORD);
  CHECK_EQ(l.st.relearns, 0);
  CHECK_EQ(l.st.cycles, 3);
  if (!realloc_waits) { // the host's rule: this cycle is recorded
    CHECK_EQ(r, WS_GO_RECORDED);
    CHECK_EQ(l.recording, 1);
    for (int k = 1; k < P - 1; k++) feed(&l, &o, i++, &out, 0);
    feed(&l, &o, i++, &out, 5000);
    CHECK_EQ(feed(&l, &o, i++, &out, 0), WS_GO_SERVED); // re-planned: 5000 -> 5056
    CHECK_EQ(l.st.plan_peak_bytes, 5056);
    CHECK_EQ(l.st.learned_cycles, 2);
  } else { // the device's: recording begins at the next boundary
    CHECK_EQ(r, WS_GO_HEAP);
    CHECK_EQ(l.recording, 0);
    for (int k = 1; k < P; k++) CHECK_EQ(feed(&l, &o, i++, &out, 0), WS_GO_HEAP);
    CHECK_EQ(feed(&l, &o, i++, &out, 0), WS_GO_RECORDED);
    CHECK_EQ(l.recording, 1);
    CHECK_EQ(l.st.learned_cycles, 1);
  }
}

static void test_automatic_host(void) { test_automatic(0); }
static void test_automatic_device(void) { test_automatic(1); }

// A stream that stops repeating drops the plan; an automatic workspace looks for its cycle again.
static void test_automatic_relearn(void) {
  owner_t o = {.next_arena = 0x10000};
  ws_learn_t l;
  start(&l, &host_ops, strict(), 1, 1);
  ws_learn_out_t out;
  uint64_t i = 0;
  while (l.mode != WS_MODE_PLANNED && i < 100) feed(&l, &o, i++, &out, 0);
  CHECK_EQ(i, 20); // found at 15, recorded from 15 to 18, planned at 19
  for (int k = 0; k < P - 1; k++) {
    memset(&out, 0, sizeof out);
    CHECK_EQ(ws_learn_alloc(&l, &o, 0x99, 10, 0, &out), WS_GO_SPILL);
  }
  feed(&l, &o, i++, &out, 0);
  CHECK_EQ(l.mode, WS_MODE_DETECT);
  CHECK_EQ(l.st.relearns, 1);
  CHECK_EQ(l.st.deviations, 3);
  CHECK(l.cur != NULL); // no retire: the instance stays with the owner
  ws_learn_restart(&l);
  CHECK_EQ(l.period, 0);
  CHECK_EQ(l.follow.symbols, 0);
}

// ---------------------------------------------------------------- ND4J mode

// learning none with an initial size: ND4J's bump arena from the first cycle. Allocations round
// to 32 and bump; a block live across a cycle is reported and its range stays taken; spill fail
// makes a full arena answer WS_WHY_FULL.
static void test_bump(void) {
  owner_t o = {.next_arena = 0x40000};
  ws_learn_t l;
  ws_config_t c = strict();
  c.learning = WS_LEARN_NONE;
  c.initial_size = 1000;
  c.spill = WS_SPILL_FAIL;
  start(&l, &host_ops, c, 0, 1);
  CHECK_EQ(l.mode, WS_MODE_BUMP);
  ws_learn_out_t out;
  CHECK_EQ(go(&l, &o, A, 10, &out), WS_GO_HEAP); // before the first begin: not open
  ws_learn_begin(&l, &o);
  CHECK_EQ(go(&l, &o, A, 100, &out), WS_GO_SERVED);
  CHECK_EQ(out.addr, 0x40000);
  CHECK_EQ(out.size, 128);
  CHECK_EQ(l.st.arena_bytes, 4096); // 1000 rounded to the granule
  CHECK_EQ(go(&l, &o, B, 200, &out), WS_GO_SERVED);
  CHECK_EQ(out.addr, 0x40000 + 128);
  CHECK_EQ(out.size, 224);
  CHECK_EQ(go(&l, &o, C, 800, &out), WS_GO_SPILL); // 352 + 800 > 1000
  CHECK_EQ(out.why, WS_WHY_FULL);
  CHECK_EQ(l.st.deviations, 0);
  release(l.cur, 0x40000, 0, 128, 0);
  ws_learn_end(&l, &o);
  CHECK_EQ(l.st.cycles, 1);
  int locks = o.locks;
  ws_learn_begin(&l, &o); // B outlived cycle 1
  CHECK_EQ(o.locks, locks + 2); // one batch, then an empty one
  CHECK_EQ(o.outlived, 1);
  CHECK_EQ(o.out_addr[0], 0x40000 + 128);
  CHECK_EQ(o.out_size[0], 224);
  CHECK_EQ(o.out_born[0], 1);
  CHECK_EQ(go(&l, &o, A, 100, &out), WS_GO_SERVED); // offset 0 again: free
  CHECK_EQ(out.addr, 0x40000);
  CHECK_EQ(go(&l, &o, A, 100, &out), WS_GO_SPILL);  // offset 128: B still holds it
  CHECK_EQ(out.why, WS_WHY_TAKEN);
  CHECK_EQ(l.st.hits, 3);
  release(l.cur, 0x40000 + 128, 0, 224, 1);
  release(l.cur, 0x40000, 0, 128, 0);
  CHECK_EQ(l.cur->nlive, 0);

  // The device's shape: the arena rounds to 512, and a range settle refuses is never handed out.
  owner_t d = {.next_arena = 0x80000, .refuse_lo = 0x80000};
  ws_learn_t dl;
  start(&dl, &dev_ops, c, 0, 1);
  ws_learn_begin(&dl, &d);
  CHECK_EQ(go(&dl, &d, A, 100, &out), WS_GO_SPILL);
  CHECK_EQ(out.why, WS_WHY_TAKEN);
  CHECK_EQ(dl.st.arena_bytes, 1024);
  CHECK_EQ(dl.cur->nb, 0);
  CHECK_EQ(go(&dl, &d, B, 100, &out), WS_GO_SERVED); // the model bumped past the refused range
  CHECK_EQ(out.addr, 0x80000 + 128);
  CHECK_EQ(d.settles, 2);
}

// ---------------------------------------------------------------- the table, symbols

static void test_rtab(void) {
  ws_rtab_t t = {0};
  int owner1, owner2;
  void *ow;
  uint32_t idx;
  CHECK_EQ(ws_rtab_take(&t, 0x1000, &ow, &idx), 0);
  for (uint32_t i = 0; i < 300; i++) ws_rtab_put(&t, &mem, 0x10000 + 512 * (uint64_t)i, i % 2 ? &owner2 : &owner1, i);
  CHECK_EQ(t.n, 300);
  CHECK_EQ(t.cap, 1024); // grown at 129 and at 257 entries
  CHECK_EQ(ws_rtab_take(&t, 0x10000 + 512 * 7, &ow, &idx), 1);
  CHECK(ow == &owner2);
  CHECK_EQ(idx, 7);
  CHECK_EQ(ws_rtab_take(&t, 0x10000 + 512 * 7, &ow, &idx), 0);
  ws_rtab_forget(&t, &owner1);
  CHECK_EQ(t.n, 299);
  CHECK_EQ(ws_rtab_take(&t, 0x10000 + 512 * 8, &ow, &idx), 1); // still there, forgotten
  CHECK(ow == NULL);
  CHECK_EQ(idx, 8);
  int found = 0; // every other entry still found after the deletions' shifts
  for (uint32_t i = 9; i < 300; i++) {
    found += ws_rtab_take(&t, 0x10000 + 512 * (uint64_t)i, &ow, &idx) && idx == i;
  }
  CHECK_EQ(found, 291);
  CHECK_EQ(t.n, 7);
  ws_rtab_clear(&t);
  CHECK_EQ(t.n, 0);
  CHECK_EQ(ws_rtab_take(&t, 0x10000, &ow, &idx), 0);
}

static void test_symbol(void) {
  CHECK(ws_symbol(0x401000, 2) == 0x433d530fb592b1f7ull);
  CHECK(ws_symbol(0, 0) == 1);
  CHECK(ws_symbol(0x7f0012345678ull, (1000 + 511) / 512 * 2 + 1) == 0x819f38141bea5779ull);
  CHECK(ws_symbol(0x401000, 3) != ws_symbol(0x401000, 2));
}

int main(void) {
  void (*tests[])(void) = {test_declared, test_changed_stream, test_over_time,
                           test_fit_and_max_size, test_two_arenas, test_settle_and_retire,
                           test_automatic_host, test_automatic_device, test_automatic_relearn,
                           test_bump, test_rtab, test_symbol};
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    tests[i]();
    mem_release_all();
  }
  return CHECK_DONE();
}
