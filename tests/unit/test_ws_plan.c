// SPDX-License-Identifier: MIT
// test_ws_plan: greedy-by-size planning gives the offsets, arena size, peak, sum and conflict lists
// worked out by hand for small cycles (chain, nested, half-open lifetimes, a case where greedy
// needs more than the peak, blocks that are not cyclic); ws_plan_verify rejects plans corrupted
// in each way it checks; and over 2000 generated cycles every plan verifies, the arena is at
// least the peak, and it equals the peak for shapes where greedy is optimal.
#include "../check.h"
#include "workspace.h"

#define NF UINT32_MAX // never freed within the cycle

static void *mem_alloc(void *ctx, size_t bytes) {
  (void)ctx;
  return calloc(1, bytes);
}
static void mem_free(void *ctx, void *p, size_t bytes) {
  (void)ctx, (void)bytes;
  free(p);
}
static const ws_mem_t mem = {mem_alloc, mem_free, NULL};

// Checks conflict list i against the expected indices (count entries).
static void check_list(const ws_plan_t *p, uint32_t i, const uint32_t *want, uint32_t count, int line) {
  uint32_t got = p->conflict_off[i + 1] - p->conflict_off[i];
  if (got != count) {
    fprintf(stderr, "line %d: block %u has %u conflicts, want %u\n", line, i, got, count);
    check_failures++;
    return;
  }
  for (uint32_t k = 0; k < count; k++)
    if (p->conflicts[p->conflict_off[i] + k] != want[k]) {
      fprintf(stderr, "line %d: block %u conflict %u is %u, want %u\n", line, i, k,
              p->conflicts[p->conflict_off[i] + k], want[k]);
      check_failures++;
    }
}
#define LIST(p, i, ...)                                                                          \
  do {                                                                                           \
    const uint32_t want_[] = {__VA_ARGS__};                                                      \
    check_list((p), (i), want_, sizeof want_ / sizeof *want_, __LINE__);                         \
  } while (0)
#define NO_LIST(p, i) check_list((p), (i), NULL, 0, __LINE__)

// Ticks count events: a chain allocates and frees one block after the other, so all three share
// offset 0; the arena is the largest (300), the peak too, the sum 600; every pair shares memory.
static void test_chain(void) {
  ws_req_t r[] = {{1, 100, 0, 1}, {2, 200, 2, 3}, {3, 300, 4, 5}};
  ws_plan_t p;
  CHECK_EQ(ws_plan_build(r, 3, 64, &mem, &p), 0);
  CHECK_EQ(p.n, 3);
  CHECK(p.offset[0] == 0 && p.offset[1] == 0 && p.offset[2] == 0);
  CHECK_EQ(p.arena_size, 300);
  CHECK_EQ(p.peak_live, 300);
  CHECK_EQ(p.sum, 600);
  CHECK_EQ(p.nconflicts, 6);
  LIST(&p, 0, 1, 2);
  LIST(&p, 1, 0, 2);
  LIST(&p, 2, 0, 1);
  CHECK_EQ(ws_plan_verify(r, &p, 64), 0);

  // Corrupt copies of the offsets and lists, one rule at a time. A shorter list 0 ({1}) is
  // checked before list 1 gets the stray entry: 8, a missing conflict.
  uint32_t off_save[4], list_save[6];
  memcpy(off_save, p.conflict_off, sizeof off_save);
  memcpy(list_save, p.conflicts, sizeof list_save);
  p.conflict_off[1] = 1;
  CHECK_EQ(ws_plan_verify(r, &p, 64), 8);
  memcpy(p.conflict_off, off_save, sizeof off_save);
  p.conflicts[0] = 2, p.conflicts[1] = 1; // list 0 unsorted
  CHECK_EQ(ws_plan_verify(r, &p, 64), 7);
  p.conflicts[0] = 1, p.conflicts[1] = 1; // repeated
  CHECK_EQ(ws_plan_verify(r, &p, 64), 7);
  p.conflicts[0] = 0; // itself
  CHECK_EQ(ws_plan_verify(r, &p, 64), 7);
  p.conflicts[0] = 7; // no such block
  CHECK_EQ(ws_plan_verify(r, &p, 64), 7);
  memcpy(p.conflicts, list_save, sizeof list_save);
  p.conflict_off[3] = 5; // does not end at nconflicts
  CHECK_EQ(ws_plan_verify(r, &p, 64), 6);
  memcpy(p.conflict_off, off_save, sizeof off_save);
  // Block 0 moved to 320 no longer shares memory with 1 and 2: their lists claim it does.
  p.offset[0] = 320, p.arena_size = 420;
  CHECK_EQ(ws_plan_verify(r, &p, 64), 7);
  p.offset[0] = 0, p.arena_size = 300;
  CHECK_EQ(ws_plan_verify(r, &p, 64), 0);
  ws_plan_free(&p, &mem);
  CHECK(p.offset == NULL && p.conflicts == NULL && p.n == 0);
}

// Nested (LIFO) lifetimes, all live at tick 2. Biggest first: 300 at 0, 200 at align_up(300, 64)
// = 320, 100 above both at align_up(520, 64) = 576. Arena 676 for a peak of 600: the alignment
// padding. With align 1 it packs to 0, 300, 500: arena = peak = sum = 600.
static void test_nested(void) {
  ws_req_t r[] = {{1, 100, 0, 5}, {2, 200, 1, 4}, {3, 300, 2, 3}};
  ws_plan_t p;
  CHECK_EQ(ws_plan_build(r, 3, 64, &mem, &p), 0);
  CHECK_EQ(p.offset[2], 0);
  CHECK_EQ(p.offset[1], 320);
  CHECK_EQ(p.offset[0], 576);
  CHECK_EQ(p.arena_size, 676);
  CHECK_EQ(p.peak_live, 600);
  CHECK_EQ(p.sum, 600);
  CHECK_EQ(p.nconflicts, 0);
  NO_LIST(&p, 0);
  CHECK_EQ(ws_plan_verify(r, &p, 64), 0);
  CHECK_EQ(ws_plan_verify(r, &p, 128), 2); // 320 is not a multiple of 128

  p.offset[0] = 577;
  CHECK_EQ(ws_plan_verify(r, &p, 64), 2); // misaligned
  p.offset[0] = 576, p.offset[1] = 0;     // span still 676, but 200 on top of 300, both live
  CHECK_EQ(ws_plan_verify(r, &p, 64), 4);
  p.offset[1] = 320, p.arena_size = 600;  // 576 + 100 outside the arena
  CHECK_EQ(ws_plan_verify(r, &p, 64), 3);
  p.arena_size = 700;                     // larger than the span
  CHECK_EQ(ws_plan_verify(r, &p, 64), 3);
  p.arena_size = 676, p.offset[0] = UINT64_MAX; // a cyclic block left unplanned
  CHECK_EQ(ws_plan_verify(r, &p, 64), 1);
  p.offset[0] = 576, p.peak_live = 599;
  CHECK_EQ(ws_plan_verify(r, &p, 64), 5);
  p.peak_live = 600, p.sum = 601;
  CHECK_EQ(ws_plan_verify(r, &p, 64), 5);
  p.sum = 600;
  CHECK_EQ(ws_plan_verify(r, &p, 64), 0);
  ws_plan_free(&p, &mem);

  CHECK_EQ(ws_plan_build(r, 3, 1, &mem, &p), 0);
  CHECK(p.offset[2] == 0 && p.offset[1] == 300 && p.offset[0] == 500);
  CHECK_EQ(p.arena_size, 600);
  CHECK_EQ(p.peak_live, 600);
  CHECK_EQ(ws_plan_verify(r, &p, 1), 0);
  ws_plan_free(&p, &mem);
}

// Greedy is not optimal. Order: 2 (size 2, tick 1), 3 (size 2, tick 5), 1, 0. 2 -> 0; 3 lives
// apart from 2 -> 0; 1 [0,4) meets 2 -> 2; 0 [3,6) meets 3 (at 0..2) and 1 (at 2) -> 3. Arena 4,
// while the peak is 3 (ticks 1-2: 1 + 2; tick 5: 0 + 3) and 3 is reachable (2 at 0, 1 at 2,
// 0 at 0, 3 at 1). Only 2 and 3 share memory.
static void test_greedy_above_peak(void) {
  ws_req_t r[] = {{0, 1, 3, 6}, {0, 1, 0, 4}, {0, 2, 1, 3}, {0, 2, 5, 6}};
  ws_plan_t p;
  CHECK_EQ(ws_plan_build(r, 4, 1, &mem, &p), 0);
  CHECK(p.offset[0] == 3 && p.offset[1] == 2 && p.offset[2] == 0 && p.offset[3] == 0);
  CHECK_EQ(p.arena_size, 4);
  CHECK_EQ(p.peak_live, 3);
  CHECK_EQ(p.sum, 6);
  CHECK_EQ(p.nconflicts, 2);
  NO_LIST(&p, 0);
  NO_LIST(&p, 1);
  LIST(&p, 2, 3);
  LIST(&p, 3, 2);
  CHECK_EQ(ws_plan_verify(r, &p, 1), 0);
  // The optimal layout is a valid plan too, for the verifier, once its lists are right.
  p.offset[0] = 0, p.offset[1] = 2, p.offset[2] = 0, p.offset[3] = 1, p.arena_size = 3;
  CHECK_EQ(ws_plan_verify(r, &p, 1), 8); // 0 now shares memory with 2: the lists are stale
  ws_plan_free(&p, &mem);
}

// Half-open lifetimes: freed at tick 2 and allocated at tick 2 share. Not-cyclic blocks (never
// freed) get no offset, no conflicts, and count in the sum only. Zero-byte blocks take offset 0 and
// overlap nothing. Equal sizes go by start time: A [0,3) at 0, B [1,2) at 64, C [2,4) meets A
// only, first fit at 64: arena 128 = peak.
static void test_edges(void) {
  ws_req_t r[] = {{0, 64, 0, 2}, {0, 64, 2, 4}, {0, 1000, 1, NF}, {0, 0, 0, 4}};
  ws_plan_t p;
  CHECK_EQ(ws_plan_build(r, 4, 64, &mem, &p), 0);
  CHECK(p.offset[0] == 0 && p.offset[1] == 0 && p.offset[3] == 0);
  CHECK(p.offset[2] == UINT64_MAX);
  CHECK_EQ(p.arena_size, 64);
  CHECK_EQ(p.peak_live, 64);
  CHECK_EQ(p.sum, 1128);
  LIST(&p, 0, 1);
  LIST(&p, 1, 0);
  NO_LIST(&p, 2);
  NO_LIST(&p, 3);
  CHECK_EQ(ws_plan_verify(r, &p, 64), 0);
  p.offset[2] = 64; // a block that is not cyclic must not be placed
  CHECK_EQ(ws_plan_verify(r, &p, 64), 1);
  p.offset[2] = UINT64_MAX;
  ws_plan_free(&p, &mem);

  ws_req_t eq[] = {{0, 64, 0, 3}, {0, 64, 1, 2}, {0, 64, 2, 4}};
  CHECK_EQ(ws_plan_build(eq, 3, 64, &mem, &p), 0);
  CHECK(p.offset[0] == 0 && p.offset[1] == 64 && p.offset[2] == 64);
  CHECK_EQ(p.arena_size, 128);
  CHECK_EQ(p.peak_live, 128);
  LIST(&p, 1, 2);
  CHECK_EQ(ws_plan_verify(eq, &p, 64), 0);
  ws_plan_free(&p, &mem);

  CHECK_EQ(ws_plan_build(NULL, 0, 64, &mem, &p), 0); // an empty cycle
  CHECK(p.n == 0 && p.arena_size == 0 && p.peak_live == 0 && p.sum == 0 && p.nconflicts == 0);
  CHECK_EQ(p.conflict_off[0], 0);
  CHECK_EQ(ws_plan_verify(NULL, &p, 64), 0);
  ws_plan_free(&p, &mem);
}

// Memory that runs out: every allocation after the first `budget` fails, and build cleans up.
static int budget;
static void *tight_alloc(void *ctx, size_t bytes) { return budget-- > 0 ? mem_alloc(ctx, bytes) : NULL; }
static void test_out_of_memory(void) {
  ws_mem_t tight = {tight_alloc, mem_free, NULL};
  ws_req_t r[] = {{1, 100, 0, 1}, {2, 200, 2, 3}}; // 4 allocations: scratch, index, offsets, lists
  ws_plan_t p;
  for (int b = 0; b < 4; b++) {
    budget = b;
    CHECK_EQ(ws_plan_build(r, 2, 64, &tight, &p), -1);
    CHECK(p.offset == NULL && p.conflict_off == NULL && p.conflicts == NULL);
  }
  budget = 4;
  CHECK_EQ(ws_plan_build(r, 2, 64, &tight, &p), 0);
  ws_plan_free(&p, &mem);
  ws_req_t huge[] = {{0, UINT64_MAX / 2, 0, 1}, {0, UINT64_MAX / 2, 0, 1}, {0, 2, 0, 1}};
  CHECK_EQ(ws_plan_build(huge, 3, 1, &mem, &p), -1); // offsets would not fit in 64 bits
}

// ---------------------------------------------------------------- generated cycles

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { // xorshift64*
  rs ^= rs >> 12, rs ^= rs << 25, rs ^= rs >> 27;
  return rs * 0x2545f4914f6cdd1dull;
}

enum shape { RANDOM, NESTED, QUEUE, CHAIN, ALL_LIVE, EQUAL, SHAPES };

// n allocations interleaved with frees, one event per tick. RANDOM frees any live block, NESTED
// the newest (LIFO), QUEUE the oldest; CHAIN frees each before the next; ALL_LIVE frees nothing
// before the last allocation; EQUAL is RANDOM with one size. Roughly 1 in 16 frees is dropped:
// the block is never freed (not cyclic). Sizes 1 B - 64 MiB, log-uniform.
static void generate(ws_req_t *r, uint32_t n, enum shape s, uint64_t equal_size) {
  uint32_t live[256], nlive = 0, made = 0, t = 0;
  while (made < n || nlive) {
    int alloc = made < n && (nlive == 0 || (s == CHAIN ? 0 : s == ALL_LIVE ? 1 : rnd() % 100 < 55));
    if (alloc) {
      uint64_t size = s == EQUAL ? equal_size : 1 + rnd() % ((uint64_t)1 << (rnd() % 27));
      r[made] = (ws_req_t){rnd(), size, t, NF};
      live[nlive++] = made++;
    } else {
      uint32_t k = s == NESTED ? nlive - 1 : s == QUEUE ? 0 : (uint32_t)(rnd() % nlive);
      uint32_t i = live[k];
      if (s == CHAIN || s == ALL_LIVE || rnd() % 16) r[i].t_free = t;
      for (; k + 1 < nlive; k++) live[k] = live[k + 1];
      nlive--;
    }
    t++;
  }
}

static void test_generated(void) {
  static ws_req_t r[200];
  static const uint64_t aligns[] = {1, 8, 64, 4096};
  int exact = 0;
  for (int cycle = 0; cycle < 2000 && !check_failures; cycle++) {
    enum shape s = (enum shape)(cycle % SHAPES);
    uint32_t n = (uint32_t)(rnd() % 201);
    uint64_t align = aligns[rnd() % 4];
    if (s == ALL_LIVE) align = 1; // contiguous packing: arena = sum
    generate(r, n, s, align * (1 + rnd() % 64));
    ws_plan_t p;
    CHECK_EQ(ws_plan_build(r, n, align, &mem, &p), 0);
    CHECK_EQ(ws_plan_verify(r, &p, align), 0);
    CHECK(p.arena_size >= p.peak_live);
    uint64_t planned_sum = 0, max_size = 0;
    for (uint32_t i = 0; i < n; i++)
      if (r[i].t_free != NF) {
        planned_sum += r[i].size;
        if (r[i].size > max_size) max_size = r[i].size;
      }
    CHECK(p.peak_live <= planned_sum);
    if (s == CHAIN) CHECK(p.arena_size == max_size && p.peak_live == max_size);
    if (s == ALL_LIVE) CHECK(p.arena_size == planned_sum && p.peak_live == planned_sum);
    if (s == EQUAL) CHECK_EQ(p.arena_size, p.peak_live);
    exact += s == CHAIN || s == ALL_LIVE || s == EQUAL;
    if (check_failures) fprintf(stderr, "cycle %d: shape %d, %u blocks, align %llu\n", cycle, s, n,
                                (unsigned long long)align);
    ws_plan_free(&p, &mem);
  }
  CHECK_EQ(exact, 999); // shapes 3..5 of every 6 cycles: 333 * 3, none in the last two
}

// ws_plan_fit on test_greedy_above_peak's plan (arena 4, peak 3): block 0 [3,6) size 1 at 3,
// 1 [0,4) size 1 at 2, 2 [1,3) size 2 at 0, 3 [5,6) size 2 at 0. A budget of 4 keeps the arena
// whole; 3 cannot have it (4 > 3), nor a cut at 3 (blocks 0 spilled: 3 + 1), nor at 2 (0 and 1
// spilled, live together over [3,4): 2 + 2), so none: the heap's peak alone, 3.
static void test_fit_small(void) {
  ws_req_t r[] = {{0, 1, 3, 6}, {0, 1, 0, 4}, {0, 2, 1, 3}, {0, 2, 5, 6}};
  ws_plan_t p;
  uint64_t total;
  CHECK_EQ(ws_plan_build(r, 4, 1, &mem, &p), 0);
  CHECK_EQ(ws_plan_fit(r, &p, 1, 4, &mem, &total), 4);
  CHECK_EQ(total, 4);
  CHECK_EQ(ws_plan_fit(r, &p, 1, 3, &mem, &total), 0);
  CHECK_EQ(total, 3);
  CHECK_EQ(ws_plan_fit(r, &p, 1, 2, &mem, &total), 0); // not even the heap fits: said by total
  CHECK_EQ(total, 3);
  // pages of 4: the only cut is the whole arena (4), then none
  CHECK_EQ(ws_plan_fit(r, &p, 4, 4, &mem, &total), 4);
  ws_plan_free(&p, &mem);
}

// The peak live bytes of the planned blocks whose range ends past `cut`, by brute force.
static uint64_t brute_spilled(const ws_req_t *r, const ws_plan_t *p, uint32_t n, uint64_t cut) {
  uint64_t peak = 0;
  for (uint32_t t = 0; t < 4 * n + 4; t++) {
    uint64_t live = 0;
    for (uint32_t i = 0; i < n; i++)
      if (r[i].t_free != NF && p->offset[i] + r[i].size > cut && r[i].t_alloc <= t && t < r[i].t_free)
        live += r[i].size;
    if (live > peak) peak = live;
  }
  return peak;
}

// Generated plans against brute force: the cut is a page multiple no larger than the arena, its
// total is the cut plus the spilled blocks' peak and within the budget (else the cut is 0 and
// nothing fits), and no larger candidate cut (an allocation's end, rounded) fits.
static void test_fit_generated(void) {
  static ws_req_t r[60];
  for (int cycle = 0; cycle < 400 && !check_failures; cycle++) {
    uint32_t n = 1 + (uint32_t)(rnd() % 60);
    uint64_t page = cycle % 2 ? 4096 : 1;
    generate(r, n, (enum shape)(cycle % SHAPES), page * (1 + rnd() % 8));
    ws_plan_t p;
    CHECK_EQ(ws_plan_build(r, n, 1, &mem, &p), 0);
    uint64_t budget = rnd() % (p.arena_size + p.arena_size / 4 + 2), total = 0;
    uint64_t cut = ws_plan_fit(r, &p, page, budget, &mem, &total);
    CHECK(cut % page == 0);
    CHECK(cut <= (p.arena_size + page - 1) / page * page);
    CHECK_EQ(total, cut + brute_spilled(r, &p, n, cut));
    CHECK(total <= budget || cut == 0);
    for (uint32_t i = 0; i < n; i++) {
      if (r[i].t_free == NF) continue;
      uint64_t c = (p.offset[i] + r[i].size + page - 1) / page * page;
      if (c > cut) CHECK(c + brute_spilled(r, &p, n, c) > budget);
    }
    if (check_failures) fprintf(stderr, "fit cycle %d: %u blocks, budget %llu\n", cycle, n,
                                (unsigned long long)budget);
    ws_plan_free(&p, &mem);
  }
}

// ws_plan_spill_past: a chain (all at offset 0) cut at 250 B spills the 300 B block, then at 150
// B the 200 B one too (the 300 B one is not counted again); the non-cyclic block keeps NONE.
static void test_spill_past(void) {
  ws_req_t r[] = {{1, 100, 0, 1}, {2, 200, 2, 3}, {3, 300, 4, 5}, {4, 50, 0, NF}};
  ws_plan_t p;
  CHECK_EQ(ws_plan_build(r, 4, 64, &mem, &p), 0);
  CHECK(p.offset[3] == WS_PLAN_NONE);
  CHECK_EQ(ws_plan_spill_past(&p, r, 300), 0);
  CHECK_EQ(ws_plan_spill_past(&p, r, 250), 1);
  CHECK(p.offset[2] == WS_PLAN_TOO_BIG);
  CHECK_EQ(ws_plan_spill_past(&p, r, 150), 1);
  CHECK(p.offset[1] == WS_PLAN_TOO_BIG);
  CHECK_EQ(p.offset[0], 0);
  CHECK(p.offset[3] == WS_PLAN_NONE);
  ws_plan_free(&p, &mem);
}

int main(void) {
  test_spill_past();
  test_fit_small();
  test_fit_generated();
  test_chain();
  test_nested();
  test_greedy_above_peak();
  test_edges();
  test_out_of_memory();
  test_generated();
  return CHECK_DONE();
}
