// SPDX-License-Identifier: MIT
// test_ws_nd4j: the ND4J reference model gives the numbers ND4J computes (shared/ND4J_NOTES.md),
// each worked out by hand below: learning FIRST_LOOP, OVER_TIME(N) and its default-0 quirk, NONE;
// STRICT and OVERALLOCATE at several limits; min/max clamps; spills EXTERNAL, REALLOCATE (growth
// at close) and FAIL; circular slots, laps, pinned blocks and trimmed mode; generations, nesting.
#include "../check.h"
#include "workspace.h"

#define NO UINT64_MAX // the offset of anything but WS_OK

// One allocation with its expected result and offset, checked at the caller's line.
#define ALLOC(w, bytes, res, off)                                                                \
  do {                                                                                           \
    uint64_t o_;                                                                                 \
    CHECK_EQ(ws_nd4j_alloc((w), (bytes), &o_), (res));                                           \
    CHECK_EQ(o_, (off));                                                                         \
  } while (0)

static ws_config_t config(ws_learning_t l, ws_allocation_t a, double limit, ws_spill_t s, ws_reset_t r) {
  ws_config_t c;
  ws_config_default(&c);
  c.learning = l, c.allocation = a, c.overallocation_limit = limit, c.spill = s, c.reset = r;
  return c;
}

// 100, 1000 and 33 bytes round up to 128 + 1024 + 64 = 1216.
static void cycle_1216(ws_nd4j_t *w, ws_result_t res, uint64_t base) {
  ws_nd4j_enter(w);
  ALLOC(w, 100, res, res == WS_OK ? base : NO);
  ALLOC(w, 1000, res, res == WS_OK ? base + 128 : NO);
  ALLOC(w, 33, res, res == WS_OK ? base + 1152 : NO);
  ws_nd4j_close(w);
}

static void test_defaults(void) {
  ws_config_t c;
  ws_config_default(&c);
  CHECK_EQ(c.learning, WS_LEARN_FIRST_LOOP);
  CHECK_EQ(c.cycles_before_init, 0);
  CHECK_EQ(c.allocation, WS_ALLOC_OVERALLOCATE);
  CHECK(c.overallocation_limit == 0.3);
  CHECK_EQ(c.spill, WS_SPILL_EXTERNAL);
  CHECK_EQ(c.reset, WS_RESET_BLOCK_LEFT);
  CHECK_EQ(c.location, WS_LOC_RAM);
  CHECK(c.initial_size == 0 && c.min_size == 0 && c.max_size == 0);
}

// Defaults: the first cycle spills everything, its sum sizes the arena at close, 1216 + (long)
// (1216 * 0.3 = 364.8) = 1580; later cycles bump from 0 and spill what does not fit.
static void test_first_loop(void) {
  ws_config_t c;
  ws_config_default(&c);
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  CHECK_EQ(w.current_size, 0);
  CHECK_EQ(w.slots, 1);
  ws_nd4j_enter(&w);
  CHECK_EQ(w.generation, 1);
  CHECK_EQ(w.open, 1);
  ALLOC(&w, 100, WS_SPILLED, NO);
  ALLOC(&w, 1000, WS_SPILLED, NO);
  ALLOC(&w, 33, WS_SPILLED, NO);
  CHECK_EQ(w.spilled_count, 3);
  CHECK_EQ(w.spilled_bytes, 1216);
  CHECK_EQ(w.cycle_allocations, 1216);
  ws_nd4j_close(&w);
  CHECK_EQ(w.open, 0);
  CHECK_EQ(w.cycles, 1);
  CHECK_EQ(w.steps, 0); // a lap is counted from the second close on
  CHECK_EQ(w.max_cycle, 1216);
  CHECK_EQ(w.last_cycle, 1216);
  CHECK_EQ(w.cycle_allocations, 0);
  CHECK_EQ(w.current_size, 1580);
  CHECK_EQ(w.spilled_count, 3); // per cycle: kept until the next enter

  ws_nd4j_enter(&w);
  CHECK_EQ(w.generation, 2);
  CHECK_EQ(w.spilled_count, 0);
  CHECK_EQ(w.spilled_bytes, 0);
  ALLOC(&w, 100, WS_OK, 0);
  ALLOC(&w, 1000, WS_OK, 128);
  ALLOC(&w, 33, WS_OK, 1152);
  ALLOC(&w, 400, WS_SPILLED, NO); // 1216 + 416 > 1580
  ALLOC(&w, 1, WS_OK, 1216);      // a spill does not stop the bump: 1216 + 32 <= 1580
  ALLOC(&w, 0, WS_OK, 1248);      // 0 stays 0 and takes no room
  CHECK_EQ(w.host_offset, 1248);
  CHECK_EQ(w.cycle_allocations, 1664); // 1216 + 416 + 32, spilled bytes included
  CHECK_EQ(w.spilled_bytes, 416);
  ws_nd4j_close(&w);
  CHECK_EQ(w.cycles, 2);
  CHECK_EQ(w.steps, 1);
  CHECK_EQ(w.max_cycle, 1664);
  CHECK_EQ(w.last_cycle, 1664);
  CHECK_EQ(w.current_size, 1580); // FIRST_LOOP sized it once; EXTERNAL never grows it
  CHECK_EQ(w.host_offset, 0);     // BLOCK_LEFT
  cycle_1216(&w, WS_OK, 0);
  CHECK_EQ(w.generation, 3);
  CHECK_EQ(w.last_cycle, 1216);
  CHECK_EQ(w.max_cycle, 1664); // never shrinks
}

// STRICT: the arena is exactly the first cycle's sum.
static void test_strict(void) {
  ws_config_t c = config(WS_LEARN_FIRST_LOOP, WS_ALLOC_STRICT, 0.3, WS_SPILL_EXTERNAL, WS_RESET_BLOCK_LEFT);
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  cycle_1216(&w, WS_SPILLED, 0);
  CHECK_EQ(w.current_size, 1216);
  cycle_1216(&w, WS_OK, 0);
  ws_nd4j_enter(&w);
  ALLOC(&w, 1216, WS_OK, 0);
  ALLOC(&w, 1, WS_SPILLED, NO); // not one byte more
  ws_nd4j_close(&w);
  CHECK_EQ(w.current_size, 1216);
}

// size_for = min(need, max) + (long)(that * limit), then up to min, then (init()) down to max.
static void test_size_for(void) {
  ws_config_t c;
  ws_config_default(&c);
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 1580);          // + (long)364.8
  c.overallocation_limit = 1.0;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 2432);          // + 1216
  c.overallocation_limit = 0.5;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 1824);          // + 608
  c.overallocation_limit = 0.1;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 1337);          // + (long)121.6
  c.overallocation_limit = 2.5;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 4256);          // + 3040
  c.overallocation_limit = 0;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 1216);          // a zero limit adds nothing
  c.overallocation_limit = 0.3;
  c.allocation = WS_ALLOC_STRICT;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 1216);          // STRICT ignores the limit
  c.allocation = WS_ALLOC_OVERALLOCATE;

  c.max_size = 1000;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 1000);          // 1000 + 300, then init() clamps to max
  c.max_size = 3000;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 1580);          // under max: untouched
  c.max_size = 0, c.min_size = 2000;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 2000);          // 1580 up to min
  c.min_size = 1000;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 1580);          // min below: untouched
  c.min_size = 2000, c.max_size = 1500;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 1500);          // 1580 -> min 2000 -> max 1500: max wins
  c.allocation = WS_ALLOC_STRICT, c.max_size = 0;
  CHECK_EQ(ws_nd4j_size_for(&c, 1216), 2000);          // STRICT still takes min
  c.allocation = WS_ALLOC_OVERALLOCATE, c.min_size = 0;
  CHECK_EQ(ws_nd4j_size_for(&c, 0), 0);
  c.min_size = 4096;
  CHECK_EQ(ws_nd4j_size_for(&c, 0), 5324);             // 0 -> min 4096 -> init() adds 1228
  c.min_size = 0;

  // Circular: slot (long)(3072 * 1.3 = 3993.6) = 3993, + (8 - 3993 % 8) = 4000; two extra slots.
  c.reset = WS_RESET_ENDOFBUFFER_REACHED, c.overallocation_limit = 2;
  CHECK_EQ(ws_nd4j_size_for(&c, 3072), 12000);
  // 1280 * 1.3 = 1664, already a multiple of 8, still gains 8: slot 1672, arena 3 * 1672.
  CHECK_EQ(ws_nd4j_size_for(&c, 1280), 5016);
  c.overallocation_limit = 0.3; // ND4J rejects this for circular; the formulas give 4000 + 1200
  CHECK_EQ(ws_nd4j_size_for(&c, 3072), 5200);
  c.allocation = WS_ALLOC_STRICT;
  CHECK_EQ(ws_nd4j_size_for(&c, 3072), 4000); // one slot
}

// The clamps in the full model, and an initial size (ND4J's constructor runs init() on it).
static void test_clamps_and_initial(void) {
  ws_config_t c;
  ws_config_default(&c);
  c.max_size = 1000;
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  cycle_1216(&w, WS_SPILLED, 0);
  CHECK_EQ(w.current_size, 1000);
  CHECK_EQ(w.max_cycle, 1216);

  ws_config_default(&c);
  c.min_size = 2000;
  ws_nd4j_init(&w, &c);
  cycle_1216(&w, WS_SPILLED, 0);
  CHECK_EQ(w.current_size, 2000);

  // NONE with an initial size: 1000 + 300 = 1300 at once, fixed for ever.
  ws_config_default(&c);
  c.learning = WS_LEARN_NONE, c.initial_size = 1000, c.spill = WS_SPILL_REALLOCATE;
  ws_nd4j_init(&w, &c);
  CHECK_EQ(w.current_size, 1300);
  CHECK_EQ(w.over, 1);
  ws_nd4j_enter(&w);
  ALLOC(&w, 1000, WS_OK, 0);
  ALLOC(&w, 300, WS_SPILLED, NO); // 1024 + 320 > 1300
  ws_nd4j_close(&w);
  CHECK_EQ(w.max_cycle, 1344);
  CHECK_EQ(w.current_size, 1300); // NONE never learns, not even REALLOCATE grows it

  c.max_size = 1200;
  ws_nd4j_init(&w, &c);
  CHECK_EQ(w.current_size, 1200); // 1300 clamped
  c.max_size = 0, c.allocation = WS_ALLOC_STRICT;
  ws_nd4j_init(&w, &c);
  CHECK_EQ(w.current_size, 1000);
  c.allocation = WS_ALLOC_OVERALLOCATE, c.location = WS_LOC_MMAP, c.max_size = 500;
  ws_nd4j_init(&w, &c);
  CHECK_EQ(w.current_size, 1000); // a file-backed arena is neither overallocated nor clamped

  // NONE without an initial size: no arena, every allocation spills.
  ws_config_default(&c);
  c.learning = WS_LEARN_NONE;
  ws_nd4j_init(&w, &c);
  for (int i = 0; i < 3; i++) cycle_1216(&w, WS_SPILLED, 0);
  CHECK_EQ(w.current_size, 0);
  CHECK_EQ(w.max_cycle, 1216);

  // FIRST_LOOP with an initial size: currentSize is not 0 after the first cycle, so it never
  // learns, however large the cycles.
  ws_config_default(&c);
  c.initial_size = 1000;
  ws_nd4j_init(&w, &c);
  ws_nd4j_enter(&w);
  ALLOC(&w, 2048, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.current_size, 1300);
}

// OVER_TIME(3): three cycles spill everything; the close of cycle 3 sizes the arena for the
// largest, 2048 + (long)614.4 = 2662.
static void test_over_time(void) {
  ws_config_t c;
  ws_config_default(&c);
  c.learning = WS_LEARN_OVER_TIME, c.cycles_before_init = 3;
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  cycle_1216(&w, WS_SPILLED, 0);
  CHECK_EQ(w.current_size, 0);
  ws_nd4j_enter(&w);
  ALLOC(&w, 2048, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.current_size, 0);
  ws_nd4j_enter(&w);
  ALLOC(&w, 512, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.max_cycle, 2048);
  CHECK_EQ(w.current_size, 2662);
  ws_nd4j_enter(&w);
  ALLOC(&w, 2048, WS_OK, 0);
  ALLOC(&w, 1000, WS_SPILLED, NO); // 2048 + 1024 > 2662
  ws_nd4j_close(&w);
  CHECK_EQ(w.current_size, 2662); // only at cycle 3

  // The default N = 0: cyclesCount is at least 1 at every close, so it never initialises.
  c.cycles_before_init = 0;
  ws_nd4j_init(&w, &c);
  for (int i = 0; i < 10; i++) cycle_1216(&w, WS_SPILLED, 0);
  CHECK_EQ(w.cycles, 10);
  CHECK_EQ(w.current_size, 0);
  CHECK_EQ(w.spilled_count, 3);

  // N = 1 with an empty first cycle: maxCycle is 0 at that close, and the chance is gone.
  c.cycles_before_init = 1;
  ws_nd4j_init(&w, &c);
  ws_nd4j_enter(&w);
  ws_nd4j_close(&w);
  cycle_1216(&w, WS_SPILLED, 0);
  cycle_1216(&w, WS_SPILLED, 0);
  CHECK_EQ(w.current_size, 0);
}

// REALLOCATE: a cycle larger than the arena spills like EXTERNAL, then the close regrows the
// arena to max_cycle exactly (the one overallocation was spent at the first sizing).
static void test_reallocate(void) {
  ws_config_t c;
  ws_config_default(&c);
  c.spill = WS_SPILL_REALLOCATE;
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  cycle_1216(&w, WS_SPILLED, 0);
  CHECK_EQ(w.current_size, 1580);
  ws_nd4j_enter(&w);
  ALLOC(&w, 2048, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.current_size, 2048);
  ws_nd4j_enter(&w);
  ALLOC(&w, 2048, WS_OK, 0);
  ALLOC(&w, 1, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.current_size, 2080); // 2048 + 32
  cycle_1216(&w, WS_OK, 0);
  CHECK_EQ(w.current_size, 2080); // never shrinks

  // No regrowth once the largest cycle reaches max_size: 1216 -> 1580 <= 1800, then 2048 >= 1800.
  c.max_size = 1800;
  ws_nd4j_init(&w, &c);
  cycle_1216(&w, WS_SPILLED, 0);
  CHECK_EQ(w.current_size, 1580);
  ws_nd4j_enter(&w);
  ALLOC(&w, 2048, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.current_size, 1580);
  // Below max_size it regrows, capped by it: max 3000, cycle 2048 -> 2048.
  c.max_size = 3000;
  ws_nd4j_init(&w, &c);
  cycle_1216(&w, WS_SPILLED, 0);
  ws_nd4j_enter(&w);
  ALLOC(&w, 2048, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.current_size, 2048);

  // EXTERNAL never regrows.
  c.spill = WS_SPILL_EXTERNAL, c.max_size = 0;
  ws_nd4j_init(&w, &c);
  cycle_1216(&w, WS_SPILLED, 0);
  ws_nd4j_enter(&w);
  ALLOC(&w, 2048, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.current_size, 1580);
}

// FAIL: "Workspace is full" instead of a spill, and nothing is counted for it.
static void test_fail(void) {
  ws_config_t c;
  ws_config_default(&c);
  c.spill = WS_SPILL_FAIL;
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  // FIRST_LOOP without an initial size: the first cycle fails everything, counts nothing, so the
  // workspace never learns (ND4J throws before cycleAllocations grows).
  for (int i = 0; i < 3; i++) cycle_1216(&w, WS_FULL, 0);
  CHECK_EQ(w.max_cycle, 0);
  CHECK_EQ(w.current_size, 0);
  CHECK_EQ(w.spilled_count, 0);

  c.learning = WS_LEARN_NONE, c.allocation = WS_ALLOC_STRICT, c.initial_size = 1024;
  ws_nd4j_init(&w, &c);
  ws_nd4j_enter(&w);
  ALLOC(&w, 1000, WS_OK, 0);
  ALLOC(&w, 1, WS_FULL, NO);
  CHECK_EQ(w.cycle_allocations, 1024);
  ws_nd4j_close(&w);
  CHECK_EQ(w.last_cycle, 1024);
}

// Entering an open workspace nests: one generation, one cycle, counted at the outer close.
static void test_nesting(void) {
  ws_config_t c;
  ws_config_default(&c);
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  ws_nd4j_close(&w); // nothing open: no cycle
  CHECK_EQ(w.cycles, 0);
  ws_nd4j_enter(&w);
  ws_nd4j_enter(&w);
  CHECK_EQ(w.generation, 1);
  CHECK_EQ(w.open, 2);
  ALLOC(&w, 64, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.open, 1);
  CHECK_EQ(w.cycles, 0);
  ALLOC(&w, 64, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.open, 0);
  CHECK_EQ(w.cycles, 1);
  CHECK_EQ(w.current_size, 166); // 128 + (long)38.4
}

// An allocation needs no open cycle (ND4J checks none) and bumps as usual; enter still starts a
// BLOCK_LEFT cycle at offset 0.
static void test_outside_cycle(void) {
  ws_config_t c = config(WS_LEARN_NONE, WS_ALLOC_STRICT, 0, WS_SPILL_EXTERNAL, WS_RESET_BLOCK_LEFT);
  c.initial_size = 1024;
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  ALLOC(&w, 100, WS_OK, 0);
  ALLOC(&w, 100, WS_OK, 128);
  ws_nd4j_enter(&w);
  CHECK_EQ(w.host_offset, 0);
  CHECK_EQ(w.cycle_allocations, 0);
  ALLOC(&w, 100, WS_OK, 0);
  ws_nd4j_close(&w);
  CHECK_EQ(w.last_cycle, 128);
}

// Three allocations of 1024 at base, base + 1024, base + 2048 (or wrapped to 0 first).
static void cycle_3x1024(ws_nd4j_t *w, uint64_t base, ws_result_t res) {
  ws_nd4j_enter(w);
  for (uint64_t k = 0; k < 3; k++) ALLOC(w, 1024, res, res == WS_OK ? base + 1024 * k : NO);
  ws_nd4j_close(w);
}

static ws_config_t circular(ws_spill_t spill) {
  return config(WS_LEARN_FIRST_LOOP, WS_ALLOC_OVERALLOCATE, 2, spill, WS_RESET_ENDOFBUFFER_REACHED);
}

// Circular, limit 2: a cycle of 3072 gives slot 4000 and an arena of three slots, 12000. Each
// cycle starts on a slot boundary (a short cycle is padded to the slot at close); a lap is 3
// cycles; the fourth cycle after the first wraps to 0.
static void test_circular_slots(void) {
  ws_config_t c = circular(WS_SPILL_EXTERNAL);
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  CHECK_EQ(w.slots, 3);
  cycle_3x1024(&w, 0, WS_SPILLED);
  CHECK_EQ(w.slot_size, 4000);
  CHECK_EQ(w.max_cycle, 4000); // ND4J stores the slot as maxCycle
  CHECK_EQ(w.current_size, 12000);
  CHECK_EQ(w.host_offset, 0);
  cycle_3x1024(&w, 0, WS_OK);
  CHECK_EQ(w.host_offset, 4000); // 3072 + 928
  cycle_3x1024(&w, 4000, WS_OK);
  CHECK_EQ(w.steps, 0);
  cycle_3x1024(&w, 8000, WS_OK);
  CHECK_EQ(w.cycles, 4);
  CHECK_EQ(w.steps, 1); // closes 4, 7, 10, ... end a lap: (cycles - 1) % 3 == 0
  CHECK_EQ(w.host_offset, 12000);

  // Cycle 5 wraps (12000 + 1024 > 12000). EXTERNAL: a cycle outgrowing its slot pins the excess
  // (1024 + 3072 > 4000) but does not trim; it is not padded, so cycle 6 starts at 3072.
  ws_nd4j_enter(&w);
  for (uint64_t k = 0; k < 3; k++) ALLOC(&w, 1024, WS_OK, 1024 * k);
  ALLOC(&w, 1024, WS_PINNED, NO);
  CHECK_EQ(w.trimmed, 0);
  CHECK_EQ(w.pinned_count, 1);
  CHECK_EQ(w.pinned_bytes, 1024);
  ws_nd4j_close(&w); // close 5
  CHECK_EQ(w.max_cycle, 4096);
  CHECK_EQ(w.current_size, 12000);
  CHECK_EQ(w.host_offset, 3072);
  cycle_3x1024(&w, 3072, WS_OK); // close 6: 6144 + 928
  cycle_3x1024(&w, 7072, WS_OK); // close 7: lap 2
  CHECK_EQ(w.steps, 2);
  CHECK_EQ(w.pinned_count, 1);
  cycle_3x1024(&w, 0, WS_OK); // 11072 + 1024 > 12000: wraps
  cycle_3x1024(&w, 4000, WS_OK);
  cycle_3x1024(&w, 8000, WS_OK); // close 10: lap 3
  CHECK_EQ(w.steps, 3);
  CHECK_EQ(w.pinned_count, 1); // made in lap 1: kept while 1 + 2 >= steps
  for (int i = 0; i < 3; i++) cycle_3x1024(&w, 4000 * (uint64_t)i, WS_OK);
  CHECK_EQ(w.steps, 4);
  CHECK_EQ(w.pinned_count, 0); // freed at the close that made steps 4
  CHECK_EQ(w.pinned_bytes, 0);

  // STRICT: one slot, a lap per cycle, every cycle at 0.
  c.allocation = WS_ALLOC_STRICT;
  ws_nd4j_init(&w, &c);
  CHECK_EQ(w.slots, 1);
  cycle_3x1024(&w, 0, WS_SPILLED);
  CHECK_EQ(w.current_size, 4000);
  cycle_3x1024(&w, 0, WS_OK);
  CHECK_EQ(w.steps, 1);
  CHECK_EQ(w.host_offset, 4000);
  cycle_3x1024(&w, 0, WS_OK);
  CHECK_EQ(w.steps, 2);

  // A slot that is a multiple of 8 still gains 8: 1280 -> 1664 -> 1672.
  c.allocation = WS_ALLOC_OVERALLOCATE;
  ws_nd4j_init(&w, &c);
  ws_nd4j_enter(&w);
  ALLOC(&w, 1280, WS_SPILLED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.slot_size, 1672);
  CHECK_EQ(w.current_size, 5016);
}

// Circular REALLOCATE: the first allocation past the slot enters trimmed mode in lap 1; from then
// on everything is pinned. The close that makes steps 4 (1 + 2 < 4) frees lap 1's pinned blocks
// and rebuilds: slot (long)(5120 * 1.3) = 6656 -> 6664, arena 3 * 6664 = 19992.
static void test_circular_trimmed(void) {
  ws_config_t c = circular(WS_SPILL_REALLOCATE);
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  cycle_3x1024(&w, 0, WS_SPILLED);
  cycle_3x1024(&w, 0, WS_OK);
  cycle_3x1024(&w, 4000, WS_OK);
  cycle_3x1024(&w, 8000, WS_OK);
  CHECK_EQ(w.steps, 1);

  ws_nd4j_enter(&w); // cycle 5, lap 1
  for (uint64_t k = 0; k < 3; k++) ALLOC(&w, 1024, WS_OK, 1024 * k); // wrapped to 0
  ALLOC(&w, 1024, WS_PINNED, NO);
  CHECK_EQ(w.trimmed, 1);
  CHECK_EQ(w.trimmed_step, 1);
  ALLOC(&w, 1024, WS_PINNED, NO);
  ws_nd4j_close(&w);
  CHECK_EQ(w.max_cycle, 5120);
  CHECK_EQ(w.host_offset, 3072); // trimmed: not padded
  CHECK_EQ(w.pinned_count, 2);
  // Cycles 6..13 pin 3 each. Lap 1 is cycles 5..7 (8 blocks), lap 2 cycles 8..10, lap 3 11..13.
  for (int i = 6; i <= 12; i++) cycle_3x1024(&w, 0, WS_PINNED);
  CHECK_EQ(w.steps, 3);
  CHECK_EQ(w.pinned_count, 2 + 7 * 3);
  CHECK_EQ(w.current_size, 12000);
  CHECK_EQ(w.trimmed, 1);
  cycle_3x1024(&w, 0, WS_PINNED); // close 13: steps 4
  CHECK_EQ(w.steps, 4);
  CHECK_EQ(w.pinned_count, 18); // 26 - 8
  CHECK_EQ(w.pinned_bytes, 18 * 1024);
  CHECK_EQ(w.trimmed, 0);
  CHECK_EQ(w.slot_size, 6664);
  CHECK_EQ(w.max_cycle, 6664);
  CHECK_EQ(w.current_size, 19992);
  CHECK_EQ(w.host_offset, 0);

  // The rebuilt arena: cycles of 5 x 1024 = 5120 fit a 6664 slot, padded by 1544.
  for (int cyc = 14; cyc <= 19; cyc++) {
    uint64_t base = 6664 * (uint64_t)((cyc - 14) % 3);
    ws_nd4j_enter(&w);
    for (uint64_t k = 0; k < 5; k++) ALLOC(&w, 1024, WS_OK, base + 1024 * k);
    ws_nd4j_close(&w);
    if (cyc == 16) CHECK_EQ(w.pinned_count, 9); // steps 5 frees lap 2
  }
  CHECK_EQ(w.steps, 6); // steps 6 frees lap 3
  CHECK_EQ(w.pinned_count, 0);
  CHECK_EQ(w.pinned_bytes, 0);
}

// A circular arena from an initial size has no slot: it wraps, even inside a cycle (ND4J hands
// out the cycle's own first bytes again), and never trims. A request larger than the whole arena
// (ND4J recurses for ever) goes to the spill policy and leaves the offset where it was.
static void test_circular_initial(void) {
  ws_config_t c = config(WS_LEARN_NONE, WS_ALLOC_STRICT, 0, WS_SPILL_FAIL, WS_RESET_ENDOFBUFFER_REACHED);
  c.initial_size = 2048;
  ws_nd4j_t w;
  ws_nd4j_init(&w, &c);
  CHECK_EQ(w.current_size, 2048);
  ws_nd4j_enter(&w);
  ALLOC(&w, 1024, WS_OK, 0);
  ALLOC(&w, 1024, WS_OK, 1024);
  ALLOC(&w, 1024, WS_OK, 0);
  ALLOC(&w, 4096, WS_FULL, NO);
  CHECK_EQ(w.host_offset, 1024);
  ws_nd4j_close(&w);
  CHECK_EQ(w.host_offset, 1024); // no slot to pad to
  c.spill = WS_SPILL_EXTERNAL;
  ws_nd4j_init(&w, &c);
  ws_nd4j_enter(&w);
  ALLOC(&w, 1024, WS_OK, 0);
  ALLOC(&w, 4096, WS_SPILLED, NO);
  ALLOC(&w, 1024, WS_OK, 1024);
  ws_nd4j_close(&w);
  CHECK_EQ(w.host_offset, 2048); // not reset: the next cycle wraps
  ws_nd4j_enter(&w);
  ALLOC(&w, 32, WS_OK, 0);
  ws_nd4j_close(&w);
}

int main(void) {
  test_defaults();
  test_first_loop();
  test_strict();
  test_size_for();
  test_clamps_and_initial();
  test_over_time();
  test_reallocate();
  test_fail();
  test_nesting();
  test_outside_cycle();
  test_circular_slots();
  test_circular_trimmed();
  test_circular_initial();
  return CHECK_DONE();
}
