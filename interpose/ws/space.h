// SPDX-License-Identifier: MIT
// space.h: what the files of ws/ share (private to the room; ws.h is its interface). A thread's
// workspaces are spaces: the engine's ws_learn_t (workspace/ws_learn.c learns and serves) plus
// what the host keeps beside it (its name, escapes, trims, the limit's notes). Prototypes are
// grouped under the file that defines them.
#ifndef ND_WS_SPACE_H
#define ND_WS_SPACE_H

#include "ws/ws.h"

#include "common/fmt.h"
#include "ndmem.h"
#include "runtime/shim.h"
#include "workspace.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ND_WS_ALIGN 64 // of every arena block (a routed allocation asking for more is not routed)

typedef struct space {
  ws_learn_t learn;     // first: the engine's workspace; its callbacks get the space as ctx
  char name[sizeof ((ndmem_ws_stats_t *)0)->name];
  uint64_t escapes;     // blocks that outlived a declared cycle (leaked workspace pointers)
  uint64_t pinned_bytes; // escaped and outlived blocks kept valid, while they live
  uint64_t outlived;    // automatic: blocks that outlived a detected cycle (not in ndmem.h)
  // The resident-memory effect (the trace's WORKSPACE record, version 10; not in ndmem.h):
  // ndmem's trims while this space learned (trim.c): how many were measured, by how much
  // resident memory fell across them, the largest fall. (The bytes of the blocks the arena
  // served are the engine's learn.st.hit_bytes.)
  uint64_t trims, trim_bytes, trim_max;
  // Version 15, what the job's allocator would keep without workspaces (docs/resident-memory.md):
  // the most freed memory below the heap's top it held at the end of a cycle it learned (read
  // before any trim at that point: trims leave free chunks free), how many such ends were read;
  // the trims made just before a plan's arena was first used, and the fall across them.
  uint64_t held_max, held_reads, plan_trims, plan_trim_bytes;
  pid_t tid;
  struct space *all;    // registry of every space (the trace writes their statistics)
  uint32_t limited;     // arenas refused or shrunk by NDMEM_MAX_BYTES (said once)
  int heap_trims;       // its cycles run on the heap under maxBytes: trimmed as while learning
  struct space *next;   // the thread's named spaces
} space_t;

static inline space_t *nd_ws_space_of(ws_learn_t *l) { return (space_t *)(void *)l; }

typedef struct ws_thread {
  struct ws_thread *pool_next; // in the pool: left by a thread that ended (nd_ws_thread_exit)
  int64_t routed_live;  // bytes of routed-size blocks this thread holds (flows)
  space_t *auto_space;
  space_t *named;       // list
  space_t *stack[16];   // open marked cycles
  int depth;
  int marked;           // this thread uses explicit marks: no automatic detection
} ws_thread_t;

// ---- ws.c: spaces, threads, the serve path
// The one lock of the host workspaces, a leaf (nothing else is taken while it is held): the
// arena registry, the recorded blocks' table, bump arenas' live lists, the escapes pending for
// the trace, the pool of thread states.
extern int nd_ws_lock;
extern space_t *nd_ws_spaces; // every space ever made (append-only, atomic head; never freed)
extern int nd_ws_auto_spaces; // automatic spaces made (atomic; reused ones not counted again)
ws_thread_t *nd_ws_thread(nd_tls_t *t); // the thread's state, made (or reused) at first use
space_t *nd_ws_space_new(const char *name, int automatic);
// Begins a line about s in b: `before`, its name, `after` (the caller says the rest).
void nd_ws_say(nd_buf_t *b, const char *before, const space_t *s, const char *after);

// ---- arena.c: arenas (ws_learn_ops_t's arena and fit), the registry by address, relief
uint64_t nd_ws_arena_new(void *ctx, ws_learn_t *l, ws_inst_t *pi, int which, uint64_t size);
uint64_t nd_ws_fit(void *ctx, ws_learn_t *l, const ws_req_t *reqs, ws_plan_t *plan, uint64_t want);
// The arena holding p: 0 with its instance, which arena of it, and where it starts; -1 if none.
int nd_ws_arena_find(uintptr_t p, ws_inst_t **pi, int *which, uintptr_t *lo);

// ---- trim.c: ndmem's malloc_trim while workspaces learn
void nd_ws_trim_setup(void);
void nd_ws_trim(space_t *s, int plan); // bounded in time (but a plan's); measured, counted for s
void nd_ws_learn_cycle_end(space_t *s); // reads what the allocator holds freed (held_max)

// ---- guard.c: guard mode (NDMEM_WS_GUARD)
extern int nd_ws_guard; // set once at setup: plans get two arenas that alternate per cycle
void nd_ws_guard_setup(void);
void nd_ws_guard_cycle(space_t *s); // a planned cycle ended: the finished arena made inaccessible

// ---- stats.c: statistics, summary, trace records, escapes
// A block still live after its cycle ended: counted (escape or outlived) and, for a declared
// cycle, said and queued for the trace. Takes nd_ws_lock: call without it.
void nd_ws_outlived(void *ctx, ws_learn_t *l, uint64_t addr, uint64_t size, uint64_t born);

#endif
