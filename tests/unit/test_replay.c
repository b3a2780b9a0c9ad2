// SPDX-License-Identifier: MIT
// test_replay: the replay's check (stacks/replay.h, nd_replay_find) on a stack made by hand: an
// entry recorded at a stack pointer is replayed only while every recorded slot still holds its
// return address, for the same kind, at the same stack pointer, with the thread's Python frames
// unchanged, and in the generation it was filled under; each slot rewritten in turn (the
// innermost, the outermost, one between), a slot holding another stack's address, a frame
// pointer moved, a stack pointer a word off, another kind and a stale generation all miss; a
// stack whose Python frames alone changed hands its native frames back for the Python frames to
// be read again. (The recording itself, with the real
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
static nd_replay_t *native; // the last find's native-only entry
static void *find(uintptr_t sp, uint32_t what) {
  native = NULL;
  return nd_replay_find(sp, 0, what, &native);
}
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
  CHECK(find(sp, 3) == NULL); // no table on this thread yet
  nd_replay_tab = &tab;
  CHECK(find(sp, 3) == NULL); // an empty one
  nd_replay_t *e = put(0, base, 6, 0x401000, &site_a, 3);
  CHECK(find(sp, 3) == &site_a);
  CHECK_EQ(tab.hits, 1);
  CHECK(find(sp, 5) == NULL);      // another kind at the same stack pointer
  CHECK(find(sp + 8, 3) == NULL);  // a word off
  CHECK(find(sp - 16, 3) == NULL);

  // Each slot rewritten in turn: the stack under sp is no longer the one recorded.
  for (int i = 0; i < e->n; i++) {
    uintptr_t *slot = (uintptr_t *)(sp + e->off[i]), was = *slot;
    *slot = was + 1;
    CHECK(find(sp, 3) == NULL);
    CHECK(native == NULL);
    *slot = 0;
    CHECK(find(sp, 3) == NULL);
    *slot = was;
    CHECK(find(sp, 3) == &site_a);
  }

  // A frame pointer saved in a slot, and one still in the register: each checked.
  e->nb = 1;
  e->boff[0] = 8;
  e->bval[0] = (uintptr_t)&stack[base + 40];
  stack[base + 1] = e->bval[0];
  CHECK(find(sp, 3) == &site_a);
  stack[base + 1] += 16; // the frame above moved: its return address slot alone cannot tell
  CHECK(find(sp, 3) == NULL);
  CHECK(native == NULL);
  stack[base + 1] -= 16;
  e->rbp_reg = 1;
  e->rbp = 0x1234;
  CHECK(find(sp, 3) == NULL); // find() passes rbp 0
  CHECK(nd_replay_find(sp, 0x1234, 3, &native) == &site_a);
  e->rbp_reg = 0;
  e->nb = 0;

  // Two stacks at one stack pointer (two ways): each is found while its slots hold, the other
  // not; the words between the slots are free to change.
  nd_replay_t *f = put(1, base, 3, 0x402000, &site_b, 3);
  for (int i = 0; i < f->n; i++) *(uintptr_t *)(sp + f->off[i]) = f->ra[i];
  CHECK(find(sp, 3) == &site_b); // a's slots 0-2 now hold b's addresses
  for (int i = 0; i < e->n; i++) *(uintptr_t *)(sp + e->off[i]) = e->ra[i];
  CHECK(find(sp, 3) == &site_a);
  stack[base + 2] = 0xdead; // not a slot
  CHECK(find(sp, 3) == &site_a);

  // Python frames: asked only where the entry has them, and a changed frame misses.
  e->npy = 2;
  py_asked = 0;
  CHECK(find(sp, 3) == &site_a);
  CHECK_EQ(py_asked, 1);
  py_same = 0;
  CHECK(find(sp, 3) == NULL);
  CHECK(native == e); // its native frames still are the stack's: only Python is read again
  uintptr_t frames[ND_REPLAY_FRAMES + 1];
  CHECK_EQ(nd_replay_frames(e, frames), e->n + 1);
  CHECK(frames[0] == e->ip0 && frames[1] == e->ra[0] && frames[e->n] == e->ra[e->n - 1]);
  e->npy = -2; // more Python frames than an entry keeps: never a whole hit
  CHECK(find(sp, 3) == NULL);
  CHECK(native == e);
  e->npy = 2;
  py_same = 1;
  e->npy = -1;

  // Filled under an older generation (the interpreter found since): nothing is replayed.
  nd_replay_gen++;
  CHECK(find(sp, 3) == NULL);
  tab.gen = nd_replay_gen;
  CHECK(find(sp, 3) == &site_a);

  // The way's key cleared (an entry being written): not found.
  tab.key[nd_replay_set(sp)][0] = 0;
  CHECK(find(sp, 3) == NULL);

  if (!check_failures) printf("ok: replay check\n");
  return check_failures != 0;
}
