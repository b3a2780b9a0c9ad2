// SPDX-License-Identifier: MIT
// test_growth: the growth detector (interpose/account/growth.c) on window sequences with a known answer:
// a steady leak is named once, exactly when its rise spans NDMEM_GROWTH_CYCLES cycles, with the
// record's figures; a warm-up ramp that stops, a floor that swings, a fall that resets, a job
// without cycles (windows count) and a stalled cycle clock; a start-up that grows into the first
// cycles; a rise that begins at a close the site held nothing at, with closes it took no part in
// since; the line it says, exactly; a rise under the growth floor, named once past it.
#include "../check.h"
#include "account/growth.h"
#include "stacks/names.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1ull << 20)

static int py_code(uint64_t id, const char **q, size_t *ql, const char **f, size_t *fl) {
  if (id) return -1;
  *q = "step", *ql = 4;
  *f = "/job/train.py", *fl = 13;
  return 0;
}

static nd_site_t *site(void) {
  nd_site_t *s = calloc(1, sizeof *s);
  s->id = 7;
  return s;
}

// Feeds windows (floor, count, cycle) and returns the index of the window that was named, or -1.
static int feed(nd_site_t *s, uint64_t (*w)[3], int n, uint64_t every, nd_rec_growth_t *g) {
  int named = -1;
  for (int i = 0; i < n; i++) {
    nd_rec_growth_t r;
    uint64_t ns = 1000 + (uint64_t)i * 10;
    uint32_t win = nd_growth_close(w[i][2], ns);
    if (nd_growth_window(s, win, w[i][0], w[i][1], w[i][2], ns, every, -1, &r)) {
      CHECK(named < 0); // once per site
      named = i;
      *g = r;
    }
  }
  return named;
}

int main(void) {
  nd_rec_growth_t g;
  uint64_t w[200][3];

  // A leak of 1 MiB every 5 cycles, a window per cycle: named once the rise spans 20 cycles.
  nd_site_t *s = site();
  for (int i = 0; i < 60; i++) w[i][0] = (uint64_t)(i / 5) * MIB, w[i][1] = (uint64_t)i / 5, w[i][2] = (uint64_t)i + 1;
  int at = feed(s, w, 60, 20, &g);
  // The first rise is at window 5 (cycle 6), from the close of window 4 (cycle 5): 20 cycles later
  // is cycle 25 (window 24), and the last rise (window 20, cycle 21) is recent enough.
  CHECK_EQ(at, 24);
  CHECK_EQ(g.base_cycle, 5);
  CHECK_EQ(g.cycle, 25);
  CHECK_EQ(g.base_bytes, 0);
  CHECK_EQ(g.floor_bytes, 4 * MIB);
  CHECK_EQ(g.rises, 4);
  CHECK_EQ(g.stack_id, 7);
  free(s);

  // A warm-up ramp over 4 cycles, then flat for 100: never named.
  s = site();
  for (int i = 0; i < 104; i++) w[i][0] = (uint64_t)(i < 4 ? i : 4) * MIB, w[i][1] = 0, w[i][2] = (uint64_t)i + 1;
  CHECK_EQ(feed(s, w, 104, 20, &g), -1);
  free(s);

  // A floor that swings up and down (variable temporaries): never named.
  s = site();
  for (int i = 0; i < 100; i++) w[i][0] = (uint64_t)(i % 3) * MIB, w[i][1] = 0, w[i][2] = (uint64_t)i + 1;
  CHECK_EQ(feed(s, w, 100, 20, &g), -1);
  free(s);

  // Rises interrupted by a fall every 10 windows (a cache that fills and is flushed): never.
  s = site();
  for (int i = 0; i < 100; i++) w[i][0] = (uint64_t)(i % 10) * MIB, w[i][1] = 0, w[i][2] = (uint64_t)i + 1;
  CHECK_EQ(feed(s, w, 100, 20, &g), -1);
  free(s);

  // No cycles (the clock stays 0): counted in windows; named at the 5th window of the rise.
  s = site();
  for (int i = 0; i < 20; i++) w[i][0] = (uint64_t)i * MIB, w[i][1] = (uint64_t)i, w[i][2] = 0;
  CHECK_EQ(feed(s, w, 20, 5, &g), 5);
  CHECK_EQ(g.cycle, 0);
  CHECK_EQ(g.base_cycle, 0);
  CHECK_EQ(g.floor_bytes, 5 * MIB);
  free(s);

  // A stalled clock (one cycle, then the detector lost the stream): windows count.
  s = site();
  for (int i = 0; i < 20; i++) w[i][0] = (uint64_t)i * MIB, w[i][1] = (uint64_t)i, w[i][2] = 1;
  CHECK_EQ(feed(s, w, 20, 5, &g), 5);
  free(s);

  // The line said: the figures, then the stack's frames; here its only frame is a Python one,
  // named from the code table (the shim's; a stand-in here), never as the raw marker.
  s = calloc(1, sizeof *s + 2 * sizeof s->ips[0]);
  s->id = 7;
  s->depth = 1;
  s->ips[0] = (uintptr_t)nd_pyframe(0, 42);
  nd_namers.py_code = py_code;
  for (int i = 0; i < 60; i++) w[i][0] = (uint64_t)(i / 5) * MIB, w[i][1] = (uint64_t)i / 5, w[i][2] = (uint64_t)i + 1;
  int fds[2];
  CHECK(pipe(fds) == 0);
  for (int i = 0; i < 60; i++) {
    uint32_t win = nd_growth_close(w[i][2], 1000 + (uint64_t)i * 10);
    nd_growth_window(s, win, w[i][0], w[i][1], w[i][2], 1000 + (uint64_t)i * 10, 20, fds[1], &g);
  }
  close(fds[1]);
  char line[1024];
  ssize_t n = read(fds[0], line, sizeof line - 1);
  line[n > 0 ? n : 0] = 0;
  close(fds[0]);
  CHECK_STR(line, "ndmem: growing: heap site [stack 7] holds 4.00 MiB at its lowest, +1.00 MiB per 5 "
                  "cycles over 20 cycles: Python: step (train.py:42)\n");
  free(s);

  // A site that held nothing at close 3 and had no change at closes 4-8 (not dirty: not asked),
  // then rises at closes 9, 10 and 11: the rise began at close 3, its cycle and time.
  s = site();
  uint32_t wins[12];
  for (uint64_t c = 1; c <= 11; c++) wins[c] = nd_growth_close(c, 5000 + c);
  CHECK_EQ(nd_growth_window(s, wins[3], 0, 0, 3, 5003, 5, -1, &g), 0);
  CHECK_EQ(nd_growth_window(s, wins[9], 1 * MIB, 1, 9, 5009, 5, -1, &g), 0);
  CHECK_EQ(nd_growth_window(s, wins[10], 2 * MIB, 2, 10, 5010, 5, -1, &g), 0);
  CHECK_EQ(nd_growth_window(s, wins[11], 3 * MIB, 3, 11, 5011, 5, -1, &g), 1);
  CHECK_EQ(g.base_cycle, 3);
  CHECK_EQ(g.base_ns, 5003);
  CHECK_EQ(g.base_bytes, 0);
  CHECK_EQ(g.rises, 3);
  // The same with no close number kept for its empty close (out of room): the first close with
  // memory is its first window, and the rise is judged from there, never from a guess.
  nd_site_t *t = site();
  CHECK_EQ(nd_growth_window(t, 0, 0, 0, 3, 5003, 5, -1, &g), 0);
  CHECK_EQ(nd_growth_window(t, wins[9], 1 * MIB, 1, 9, 5009, 5, -1, &g), 0);
  CHECK(t->g != NULL && t->g->close_cycle == 9 && t->g->rise == NULL);
  free(s);
  free(t);

  // An empty close older than the 65 536 closes kept: the rise is judged from the oldest kept
  // (the site held nothing there too), never from an overwritten slot.
  s = site();
  CHECK_EQ(nd_growth_window(s, nd_growth_close(100000, 100000), 0, 0, 100000, 100000, 5, -1, &g), 0);
  uint32_t first = 0, last = 0;
  for (uint64_t c = 100001; c <= 100000 + 70000; c++) {
    last = nd_growth_close(c, c);
    if (c == 100001) first = last;
  }
  CHECK_EQ(last - first, 69999);
  uint64_t oldest = 100000 + 70000 - 65535; // the cycle of the oldest close kept
  for (uint64_t c = 170001; c <= 170003; c++) {
    uint32_t win = nd_growth_close(c, c);
    int named = nd_growth_window(s, win, (c - 170000) * MIB, c - 170000, c, c, 5, -1, &g);
    CHECK_EQ(named, c == 170003);
  }
  CHECK_EQ(g.base_cycle, oldest + 1); // the ring moved on by the three closes of the rise
  CHECK_EQ(g.base_bytes, 0);
  free(s);

  // A start-up that grows in windows before the first cycle (clock 0) and into the window that
  // closes after it (clock 36, an import that was still loading libraries when the loop began),
  // then holds still: never named (it was, over "cycles 0 to 36", before the rise had to begin in
  // the cycles).
  s = site();
  for (int i = 0; i < 50; i++)
    w[i][0] = (uint64_t)(i < 5 ? i : 5) * MIB, w[i][1] = 0, w[i][2] = i < 5 ? 0 : 36 + (uint64_t)(i - 5);
  CHECK_EQ(feed(s, w, 50, 20, &g), -1);
  free(s);
  // The same start-up, then a leak of 1 MiB a cycle from the first window in the cycles: its rise
  // begins at that window's close (cycle 36), and is named 20 cycles later.
  s = site();
  for (int i = 0; i < 50; i++)
    w[i][0] = (uint64_t)i * MIB, w[i][1] = 0, w[i][2] = i < 5 ? 0 : 36 + (uint64_t)(i - 5);
  CHECK_EQ(feed(s, w, 50, 20, &g), 25);
  CHECK_EQ(g.base_cycle, 36);
  CHECK_EQ(g.base_bytes, 5 * MIB);
  CHECK_EQ(g.cycle, 56);
  CHECK_EQ(g.rises, 20);
  free(s);

  // The growth floor (trace_format.h): +24 B a cycle from 736 B, as numpy's small cache fills,
  // is not named while its rise is under 64 KiB; at the same pace it passes 64 KiB at window 2731
  // (+65544 B over 2731 cycles), and is named there. +2 KiB a cycle is named at 20 cycles, under
  // 64 KiB in all (40 KiB): slow and small both, or it is a finding; +256 KiB a cycle too.
  uint64_t (*v)[3] = calloc(3000, sizeof *v);
  CHECK(v != NULL);
  s = site();
  for (int i = 0; i < 3000; i++)
    v[i][0] = 736 + (uint64_t)i * 24, v[i][1] = (uint64_t)i, v[i][2] = (uint64_t)i + 1;
  CHECK_EQ(feed(s, v, 3000, 20, &g), 2731);
  CHECK_EQ(g.floor_bytes - g.base_bytes, 65544);
  CHECK_EQ(g.cycle - g.base_cycle, 2731);
  free(s);
  s = site();
  for (int i = 0; i < 60; i++)
    w[i][0] = (uint64_t)i * 2048, w[i][1] = (uint64_t)i, w[i][2] = (uint64_t)i + 1;
  CHECK_EQ(feed(s, w, 60, 20, &g), 20);
  CHECK_EQ(g.floor_bytes - g.base_bytes, 40960);
  free(s);
  s = site();
  for (int i = 0; i < 60; i++)
    w[i][0] = (uint64_t)i << 18, w[i][1] = (uint64_t)i, w[i][2] = (uint64_t)i + 1;
  CHECK_EQ(feed(s, w, 60, 20, &g), 20);
  CHECK_EQ(g.floor_bytes, 5 * MIB);
  free(s);
  free(v);

  // NDMEM_GROWTH_CYCLES=0: never.
  s = site();
  for (int i = 0; i < 60; i++) w[i][0] = (uint64_t)i * MIB, w[i][1] = 0, w[i][2] = (uint64_t)i + 1;
  CHECK_EQ(feed(s, w, 60, 0, &g), -1);
  free(s);
  return CHECK_DONE();
}
