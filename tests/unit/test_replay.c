// SPDX-License-Identifier: MIT
// test_replay: the replay's check (stacks/replay.h, nd_replay_find) on a stack made by hand: an
// entry recorded at a stack pointer is replayed only while every recorded slot still holds its
// return address, for the same kind, at the same stack pointer, with the thread's Python frames
// unchanged, and in the generation it was filled under; each slot rewritten in turn (the
// innermost, the outermost, one between), a slot holding another stack's address, a stack pointer
// a word off, another kind and a stale generation all miss. (The recording itself, with the real
// unwinder, is tests/preload/stacks/t_replay.)
#include "../check.h"
#include "stacks/replay.h"

#include <stdint.h>

__thread nd_replay_tab_t *nd_replay_tab;
uint32_t nd_replay_gen;
static int py_same = 1, py_asked;
int nd_py_trail_same(const nd_replay_t *e) {
  (void)e;
  py_asked++;
  return py_same;
}

static nd_replay_tab_t tab;
static uintptr_t stack[512]; // a thread's stack, grown down from its end
static char site_a, site_b;

// Records a stack of n frames at sp = &stack[base]: frame i's return address at sp + 24 + 40 * i.
static nd_replay_t *put(int way, size_t base, int n, uintptr_t ra0, void *site, uint32_t what) {
  uintptr_t sp = (uintptr_t)&stack[base];
  uint32_t set = nd_replay_set(sp);
  nd_replay_t *e = &tab.e[set][way];
  e->n = (uint16_t)n;
  e->what = what;
  e->site = site;
  e->npy = -1;
  for (int i = 0; i < n; i++) {
    e->off[i] = (uint32_t)(24 + 40 * i);
    e->ra[i] = ra0 + (uintptr_t)i * 0x10;
    *(uintptr_t *)(sp + e->off[i]) = e->ra[i];
  }
  tab.key[set][way] = sp;
  return e;
}

int main(void) {
  size_t base = 100;
  uintptr_t sp = (uintptr_t)&stack[base];
  CHECK(nd_replay_find(sp, 0, 3) == NULL); // no table on this thread yet
  nd_replay_tab = &tab;
  CHECK(nd_replay_find(sp, 0, 3) == NULL); // an empty one
  nd_replay_t *e = put(0, base, 6, 0x401000, &site_a, 3);
  CHECK(nd_replay_find(sp, 0, 3) == &site_a);
  CHECK_EQ(tab.hits, 1);
  CHECK(nd_replay_find(sp, 0, 5) == NULL);      // another kind at the same stack pointer
  CHECK(nd_replay_find(sp + 8, 0, 3) == NULL);  // a word off
  CHECK(nd_replay_find(sp - 16, 0, 3) == NULL);

  // Each slot rewritten in turn: the stack under sp is no longer the one recorded.
  for (int i = 0; i < e->n; i++) {
    uintptr_t *slot = (uintptr_t *)(sp + e->off[i]), was = *slot;
    *slot = was + 1;
    CHECK(nd_replay_find(sp, 0, 3) == NULL);
    *slot = 0;
    CHECK(nd_replay_find(sp, 0, 3) == NULL);
    *slot = was;
    CHECK(nd_replay_find(sp, 0, 3) == &site_a);
  }

  // Two stacks at one stack pointer (two ways): each is found while its slots hold, the other
  // not; the words between the slots are free to change.
  nd_replay_t *f = put(1, base, 3, 0x402000, &site_b, 3);
  for (int i = 0; i < f->n; i++) *(uintptr_t *)(sp + f->off[i]) = f->ra[i];
  CHECK(nd_replay_find(sp, 0, 3) == &site_b); // a's slots 0-2 now hold b's addresses
  for (int i = 0; i < e->n; i++) *(uintptr_t *)(sp + e->off[i]) = e->ra[i];
  CHECK(nd_replay_find(sp, 0, 3) == &site_a);
  stack[base + 1] = 0xdead; // not a slot
  CHECK(nd_replay_find(sp, 0, 3) == &site_a);

  // Python frames: asked only where the entry has them, and a changed frame misses.
  e->npy = 2;
  py_asked = 0;
  CHECK(nd_replay_find(sp, 0, 3) == &site_a);
  CHECK_EQ(py_asked, 1);
  py_same = 0;
  CHECK(nd_replay_find(sp, 0, 3) == NULL);
  py_same = 1;
  e->npy = -1;

  // Filled under an older generation (the interpreter found since): nothing is replayed.
  nd_replay_gen++;
  CHECK(nd_replay_find(sp, 0, 3) == NULL);
  tab.gen = nd_replay_gen;
  CHECK(nd_replay_find(sp, 0, 3) == &site_a);

  // The way's key cleared (an entry being written): not found.
  tab.key[nd_replay_set(sp)][0] = 0;
  CHECK(nd_replay_find(sp, 0, 3) == NULL);

  if (!check_failures) printf("ok: replay check\n");
  return check_failures != 0;
}
