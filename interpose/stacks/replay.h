// SPDX-License-Identifier: MIT
// replay.h: repeated stacks replayed after their saved return addresses are checked
// (stacks/replay.c). A capture records, for the stack pointer it starts at, where each frame's
// return address is saved and what it holds; a later capture at the same stack pointer whose
// recorded slots still hold those return addresses (and whose thread still runs the same Python
// frames) has the same stack, and takes the site made for it without unwinding. See
// docs/accounting.md (stacks) for why the check is a proof and where it falls back.
#ifndef ND_REPLAY_H
#define ND_REPLAY_H

#include <stdint.h>

#if defined(__x86_64__)
#define ND_REPLAY 1
#else
#define ND_REPLAY 0 // the slots' layout (return address at the caller's stack pointer - 8) is x86-64's
#endif

#define ND_REPLAY_FRAMES 64 // native frames a replayed stack may have (above the capture's own)
#define ND_REPLAY_PY 64     // Python frames (interpreter frame records) it may have
#define ND_REPLAY_SETS 256
#define ND_REPLAY_WAYS 4

// The Python frame records one reading of the thread's frames visited (python.c fills it, the
// replay checks them): each record's address and the words read from it.
typedef struct nd_py_node {
  uintptr_t f, code, instr, owner;
} nd_py_node_t;
typedef struct nd_py_trail {
  uintptr_t ts;   // the thread state read (0: the thread runs no Python)
  int n;          // records visited; -1: more than ND_REPLAY_PY (not replayable)
  uintptr_t end;  // where the reading stopped (the next record, or 0)
  uint16_t frames, dropped; // the Python frames the stack kept, and those past NDMEM_PY_DEPTH
  nd_py_node_t node[ND_REPLAY_PY];
} nd_py_trail_t;

// One replayable stack: what the site is for, the slots (offsets above the capture's stack
// pointer) with the return addresses they held, and the frame pointers the frames above found
// their callers by: saved in slots, or (rbp_reg) still in the register at the capture.
typedef struct nd_replay {
  uint32_t what;  // (kind * 2 + sampled) + 1; 0: empty
  uint16_t n;     // return-address slots
  uint8_t nb;     // frame-pointer slots
  uint8_t rbp_reg; // the frame pointer at the capture must be rbp
  int16_t npy;    // Python records to check (-1: none: no interpreter; -2: too many to keep)
  uint16_t pad;
  uint16_t pyn, pydrop; // the site's Python frames, and those it left out (for the counts)
  uint32_t pad2;
  uintptr_t rbp;
  uintptr_t ip0;  // the capture's own frame (frames[0]): the native frames are ip0, ra[0..n)
  void *site;     // the site of these native frames with the Python frames py[0..npy)
  uintptr_t py_ts, py_end;
  uint32_t off[ND_REPLAY_FRAMES];
  uintptr_t ra[ND_REPLAY_FRAMES];
  uint32_t boff[ND_REPLAY_FRAMES];
  uintptr_t bval[ND_REPLAY_FRAMES];
  nd_py_node_t py[ND_REPLAY_PY];
} nd_replay_t;

// Native frames seen at a stack pointer (their hash), and how often: seen ND_REPLAY_AFTER times
// (while its slot was not taken by others), they are recorded. Two a set, so that two stacks
// taking turns at one stack pointer are both recorded.
typedef struct nd_replay_seen {
  uintptr_t sp;
  uint32_t what;
  uint32_t times;
  uint64_t native;
} nd_replay_seen_t;
#define ND_REPLAY_AFTER 8
#define ND_REPLAY_SEEN 2

typedef struct nd_replay_tab {
  uint32_t gen;                                  // nd_replay_gen it was filled under
  uint32_t pad;
  uint64_t hits;                                 // stacks replayed (this thread's; plain)
  uint64_t native_hits;                          // native frames replayed, Python read again
  // What the Python reading of the replayed stacks counted (python.c adds them to its own):
  // stacks of a process with an interpreter, those with Python frames, frames, frames left out
  uint64_t py_stacks, py_with, py_frames, py_dropped;
  struct nd_replay_tab *next_free, *next_all;    // the free tables, every table
  uintptr_t stk_lo, stk_hi;                      // the owning thread's stack (0, 0: unknown)
  uintptr_t key[ND_REPLAY_SETS][ND_REPLAY_WAYS]; // sp of each way (0: empty)
  uint8_t next[ND_REPLAY_SETS];                  // the way the next record replaces
  nd_replay_seen_t seen[ND_REPLAY_SETS][ND_REPLAY_SEEN]; // [0]: the one seen last
  nd_replay_t e[ND_REPLAY_SETS][ND_REPLAY_WAYS];
} nd_replay_tab_t;

// Per thread, made at its first record (ndmem's own pages; kept for the next thread).
extern __thread nd_replay_tab_t *nd_replay_tab __attribute__((tls_model("initial-exec")));
extern int nd_replay_on; // NDMEM_REPLAY (default on)
// Moves when what a stack's site depends on changes beyond its slots (the interpreter found: its
// frames join the sites); tables filled under another are emptied.
extern uint32_t nd_replay_gen;
void nd_replay_invalidate(void);

// The thread's Python frames still those recorded (python.c): a call, and the records compared.
int nd_py_trail_same(const nd_replay_t *e);

static inline uint32_t nd_replay_set(uintptr_t sp) {
  return (uint32_t)((sp >> 4) * 0x9E3779B97F4A7C15ull >> 56) & (ND_REPLAY_SETS - 1);
}

// The site replayed for a capture at stack pointer sp with frame pointer rbp (the registers where
// the capture starts), or NULL. Where the native frames are a recorded stack's but the thread's
// Python frames are not, *native is that entry: its native frames need no unwinding
// (nd_replay_frames), only the Python frames are read again. Inlined where the capture starts.
static inline __attribute__((always_inline)) void *nd_replay_find(uintptr_t sp, uintptr_t rbp,
                                                                  uint32_t what,
                                                                  nd_replay_t **native) {
#if ND_REPLAY
  nd_replay_tab_t *tab = nd_replay_tab;
  if (__builtin_expect(!tab, 0) ||
      __builtin_expect(tab->gen != __atomic_load_n(&nd_replay_gen, __ATOMIC_RELAXED), 0))
    return (void *)0;
  uint32_t set = nd_replay_set(sp);
  for (int w = 0; w < ND_REPLAY_WAYS; w++) {
    if (tab->key[set][w] != sp) continue;
    const nd_replay_t *e = &tab->e[set][w];
    if (e->what != what) continue;
    int i = 0;
    for (; i < e->n; i++)
      if (*(const uintptr_t *)(sp + e->off[i]) != e->ra[i]) break;
    if (i < e->n || (e->rbp_reg && rbp != e->rbp)) continue;
    for (i = 0; i < e->nb; i++)
      if (*(const uintptr_t *)(sp + e->boff[i]) != e->bval[i]) break;
    if (i < e->nb) continue;
    if (e->npy == -2 || (e->npy >= 0 && !nd_py_trail_same(e))) {
      *native = (nd_replay_t *)e;
      continue;
    }
    tab->hits++;
    if (e->npy >= 0) {
      tab->py_stacks++;
      tab->py_with += e->pyn != 0;
      tab->py_frames += e->pyn;
      tab->py_dropped += e->pydrop;
    }
    return e->site;
  }
#else
  (void)sp, (void)rbp, (void)what, (void)native;
#endif
  return (void *)0;
}

// The native frames of entry e into frames (as the unwinder gave them); their count.
static inline int nd_replay_frames(const nd_replay_t *e, uintptr_t *frames) {
  frames[0] = e->ip0;
  for (int i = 0; i < e->n; i++) frames[i + 1] = e->ra[i];
  return e->n + 1;
}

// A capture at sp missed and made site from frames[0..n) (frames[0] in the capturing function,
// whose stack pointer is sp and frame pointer rbp; the rest its callers' return addresses) and
// the Python frames of trail: remembered, and recorded for replay the ND_REPLAY_AFTER-th time
// its native frames are seen there (a walk of the stack for the slots: libunwind's cursor, a few
// times an unwind's cost). native: the entry whose native frames it replayed (nd_replay_find),
// which now stands for the Python frames of trail and site.
void nd_replay_note(uintptr_t sp, uintptr_t rbp, uint32_t what, void *site,
                    const uintptr_t *frames, int n, const nd_py_trail_t *trail,
                    nd_replay_t *native);

typedef struct nd_replay_stats {
  uint64_t hits, native_hits, misses, recorded, refused; // refused: could not be recorded
} nd_replay_stats_t;
void nd_replay_stats(nd_replay_stats_t *out);
// The replayed stacks' Python counts, summed over the threads: stacks, with Python frames,
// frames, frames left out (python.c's PYTHON record adds them).
void nd_replay_py_counts(uint64_t out[4]);

#endif
