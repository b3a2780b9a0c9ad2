// SPDX-License-Identifier: MIT
// test_ws_detect: the detector reports exactly the periods of synthetic streams, at the symbol
// worked out by hand: a period-14 tensor loop, tiny periods (more evidence), loops with repeated
// symbols (a palindrome, an inner loop reported until the outer one recurs), noise before the
// loop, a stream that changes loop, a one-off variation, periods at and past the window; and the
// phase of the low-water mark, ties to the earliest.
#include "../check.h"
#include "workspace.h"

static void *mem_alloc(void *ctx, size_t bytes) {
  (void)ctx;
  return calloc(1, bytes);
}
static void mem_free(void *ctx, void *p, size_t bytes) {
  (void)ctx, (void)bytes;
  free(p);
}
static void *no_alloc(void *ctx, size_t bytes) {
  (void)ctx, (void)bytes;
  return NULL;
}
static const ws_mem_t mem = {mem_alloc, mem_free, NULL};

static ws_detect_t d; // 64 KiB of rings: not on the stack

// Loop symbols 1.., noise 1000.., a second loop 2000..: distinct, so no context crosses them.
#define L(j) (1 + (uint64_t)(j))
#define NOISE(j) (1000 + (uint64_t)(j))
#define M(j) (2000 + (uint64_t)(j))

// Feeds `sym` and checks the result `want`; on a mismatch says at which count (1-based).
static void feed(uint64_t sym, int64_t live, uint32_t want, int line) {
  uint32_t got = ws_detect_feed(&d, sym, live);
  if (got != want) {
    fprintf(stderr, "line %d: symbol %llu (count %llu): period %u, want %u\n", line,
            (unsigned long long)sym, (unsigned long long)d.count, got, want);
    check_failures++;
  }
}
#define FEED(sym, live, want) feed((sym), (live), (want), __LINE__)

// The low-water mark of a loop: live bytes rise through it and are 0 after its last symbol.
static int64_t loop_live(uint32_t j, uint32_t p) { return j == p - 1 ? 0 : 100 * (int64_t)(j + 1); }

// A period-14 loop of distinct symbols from position 0. Position 3 ends the first context
// (L0..L3); it recurs at 17, proposing 14 with its 4 symbols matched; 18..27 add one each, so the
// 14th match (the last 2P = 28 symbols are two repetitions) is the 28th symbol.
static void test_loop14(void) {
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 70; i++) FEED(L(i % 14), loop_live(i % 14, 14), i + 1 >= 28 ? 14 : 0);
  CHECK_EQ(d.period, 14);
  CHECK_EQ(d.matched, 56); // 14 at the 28th symbol, then 42 more
  CHECK_EQ(ws_detect_phase(&d, 14), 13); // live 0 after L13, at positions 13 (mod 14)
  CHECK_EQ(ws_detect_phase(&d, 0), 0);
  CHECK_EQ(ws_detect_phase(&d, 71), 0); // longer than the stream

  // reset forgets everything: the same loop is found at the same symbol again
  ws_detect_reset(&d);
  CHECK(d.count == 0 && d.period == 0 && d.matched == 0);
  for (uint32_t i = 0; i < 28; i++) FEED(L(i % 14), 0, i + 1 == 28 ? 14 : 0);
}

// Tiny periods need WS_MIN_MATCH = 8 matches. One symbol: the first context (positions 0..3)
// recurs at 4 with 4 matches; 8 matches at position 8, the 9th symbol. Period 3: proposed at
// position 6 (3 + 3) with 4, 8 at position 10, the 11th symbol.
static void test_tiny(void) {
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 20; i++) FEED(7, 0, i + 1 >= 9 ? 1 : 0);
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 20; i++) FEED(L(i % 3), 0, i + 1 >= 11 ? 3 : 0);
}

// Repeated symbols. A B B A: the symbol A last occurred 1 or 3 back at every A, never 4; the
// contexts ABBA, BBAA, BAAB, AABB are distinct, so ABBA at position 7 proposes 4, and 8 matches
// (the minimum) come at position 11, the 12th symbol.
static void test_palindrome(void) {
  static const uint64_t loop[] = {10, 20, 20, 10};
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 40; i++) FEED(loop[i % 4], 0, i + 1 >= 12 ? 4 : 0);
}

// S (A B)x6 T, period 14. The context A B A B recurs at position 6 (last at 4): period 2, with 8
// matches at position 10, so 2 is reported for the 11th to 13th symbols, and T (position 13)
// breaks it. Positions 14..16 end new contexts (A B T S, B T S A, T S A B); S A B A at 17 was last
// at 3: period 14 with 4 matches, 14 at position 27. The outer loop then holds through the inner.
static void test_inner_loop(void) {
  uint64_t loop[14] = {5};
  for (int k = 0; k < 6; k++) loop[1 + 2 * k] = 10, loop[2 + 2 * k] = 20;
  loop[13] = 6;
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 70; i++) {
    uint32_t c = i + 1;
    FEED(loop[i % 14], 0, c >= 11 && c <= 13 ? 2 : c >= 28 ? 14 : 0);
  }
}

// 37 noise symbols, then the loop: everything shifts by 37, reported at the 65th symbol. The
// low-water mark after L13 is at positions 37 + 13 + 14k: phase (37 + 13) % 14 = 8.
static void test_noise_then_loop(void) {
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 37; i++) FEED(NOISE(i), 50, 0);
  for (uint32_t i = 0; i < 56; i++) FEED(L(i % 14), loop_live(i % 14, 14), 37 + i + 1 >= 65 ? 14 : 0);
  CHECK_EQ(ws_detect_phase(&d, 14), 8);
}

// Five rounds of the period-14 loop, then a period-9 loop of new symbols from position 70: the
// first new symbol breaks 14; the new loop's first context (70..73) recurs at 82 with 4 matches,
// 9 at position 87: 9 is reported from the 88th symbol.
static void test_changed_stream(void) {
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 70; i++) FEED(L(i % 14), 0, i + 1 >= 28 ? 14 : 0);
  for (uint32_t i = 0; i < 45; i++) FEED(M(i % 9), 0, 70 + i + 1 >= 88 ? 9 : 0);
}

// One symbol of the period-14 loop replaced at position 70: 14 breaks there. The contexts with
// the stray symbol are new; L1..L4 at 74 proposes 14 (last at 60), which breaks at 84 (L0 against
// the stray one). There L11 L12 L13 L0 was last seen at 56, not 70: it proposes 28, which breaks at
// 98 (against the stray again), where the same context was last at 84: 14 again with 4 matches,
// 14 at position 108. Reported again from the 109th symbol.
static void test_variation(void) {
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 70; i++) FEED(L(i % 14), 0, i + 1 >= 28 ? 14 : 0);
  FEED(999, 0, 0);
  for (uint32_t i = 71; i < 84; i++) FEED(L(i % 14), 0, 0);
  CHECK_EQ(d.period, 14);
  CHECK_EQ(d.matched, 13);
  FEED(L(0), 0, 0);
  CHECK_EQ(d.period, 28);
  for (uint32_t i = 85; i < 140; i++) FEED(L(i % 14), 0, i + 1 >= 109 ? 14 : 0);
}

// The window bounds the period. P = 4096 = W: proposed at position P + 3, but only the symbol
// itself can be compared a whole window back (1 match), so 4096 matches come at position 8194,
// the 8195th symbol. P = 4095: 2 matches at first, reported at the 8192nd. P = 4097: never.
static void test_window(void) {
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 3 * 4096; i++) FEED(L(i % 4096), 0, i + 1 >= 8195 ? 4096 : 0);
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 3 * 4095; i++) FEED(L(i % 4095), 0, i + 1 >= 8192 ? 4095 : 0);
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 3 * 4097; i++) FEED(L(i % 4097), 0, 0);
  CHECK_EQ(d.period, 0);
}

// The table holds exactly the window's contexts: after 100000 distinct symbols (enough for probe
// chains that wrap past the table's end), 4096 entries; a deletion that broke a chain would leave
// entries it cannot find again. A loop after them is found at its usual symbol, the 28th.
static void test_table_exact(void) {
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 100000; i++) FEED(NOISE(i), 0, 0);
  size_t used = 0;
  for (size_t s = 0; s < ((size_t)1 << d.table_bits); s++) used += d.last_pos[s] != 0;
  CHECK_EQ(used, 4096);
  for (uint32_t i = 0; i < 56; i++) FEED(L(i % 14), 0, i + 1 >= 28 ? 14 : 0);
}

// Phase ties go to the earliest position of the last period. Live bytes of period 10 with the
// minimum 1 at offsets 3 and 5: after 20 symbols (window 10..19) the earliest is 13, phase 3;
// after 24 (window 14..23) it is 15, phase 5.
static void test_phase_ties(void) {
  static const int64_t live[] = {5, 3, 9, 1, 7, 1, 8, 2, 6, 4};
  ws_detect_reset(&d);
  for (uint32_t i = 0; i < 20; i++) ws_detect_feed(&d, L(i % 10), live[i % 10]);
  CHECK_EQ(ws_detect_phase(&d, 10), 3);
  for (uint32_t i = 20; i < 23; i++) ws_detect_feed(&d, L(i % 10), live[i % 10]);
  CHECK_EQ(ws_detect_phase(&d, 10), 3); // window 13..22: still 13
  ws_detect_feed(&d, L(3), live[3]);
  CHECK_EQ(ws_detect_phase(&d, 10), 5);
}

int main(void) {
  ws_mem_t none = {no_alloc, mem_free, NULL};
  CHECK_EQ(ws_detect_init(&d, &none), -1);
  CHECK_EQ(ws_detect_init(&d, &mem), 0);
  test_loop14();
  test_tiny();
  test_palindrome();
  test_inner_loop();
  test_noise_then_loop();
  test_changed_stream();
  test_variation();
  test_window();
  test_table_exact();
  test_phase_ties();
  ws_detect_free(&d, &mem);
  CHECK(d.last_key == NULL);
  return CHECK_DONE();
}
