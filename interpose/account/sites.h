// SPDX-License-Identifier: MIT
// sites.h: allocation sites (a call stack, a memory kind, exact or sampled) and the table of
// live tracked blocks, the in-process half of ndmem's trace.
//
// Stacks are captured with libunwind and interned: a site is created once and written to the
// trace once, then only its totals are re-written when they change. A block is *tracked* (its
// site, requested size and time kept until it is freed) when it is at least NDMEM_TRACK_MIN bytes,
// or when the per-thread geometric byte sampler picks it (jemalloc/tcmalloc-style sampling: one
// sample per NDMEM_SAMPLE bytes on average; a sampled block of size s stands for
// s / (1 - exp(-s/R)) bytes, an unbiased estimate).
#ifndef ND_SITES_H
#define ND_SITES_H

#include "runtime/config.h"
#include "stacks/replay.h"
#include "stacks/unwind.h"
#include <stddef.h>
#include <stdint.h>

// The growth detector's state of one site (growth.c; the trace writer's thread only): the
// previous window's close, made the first time the site holds memory at a close (until then the
// site keeps only which close it last held nothing at), and a rise's state, made at the site's
// first rise. Most sites do neither: an import of torch with every block tracked makes 685 000
// sites, most of whose memory is freed before any close.
typedef struct nd_growth_rise {
  uint64_t base_floor, base_cycle, base_ns, base_count; // where the current rise began
  uint64_t last_rise_cycle;
  uint32_t rises, windows;      // windows since the rise began, and how many of them rose
  uint32_t last_rise_window;    // the window (counted from the rise's start) that last rose
  uint32_t warned;              // said once
} nd_growth_rise_t;
typedef struct nd_growth {
  uint64_t last_floor;          // the floor of the previous closed window
  uint64_t close_cycle, close_ns, close_count; // the previous window's close (count: live blocks)
  nd_growth_rise_t *rise;       // NULL until the floor first rose (growth.c's own pages)
} nd_growth_t;

// The outer frames of a stack past its ND_SITE_INLINE innermost ones, interned once and shared
// by every site whose stack ends the same way. An import of torch makes 685 000 distinct stacks
// of 33 frames on average that differ in their innermost frames: 41 000 distinct outer parts
// hold their remaining 22 M frames' worth in 1.2 M (sites.c). Never freed.
typedef struct nd_outer {
  uint64_t n;                                      // frames (its hash is in its table's slot)
  uintptr_t ips[];
} nd_outer_t;
#define ND_SITE_INLINE 6 // frames kept in the site itself, innermost first

// The totals, written by every tracked allocation and free of the site (from any thread), fill
// its first cache line with what only the trace writer touches; the identity, read by every
// thread that looks the site up (nd_site_frames compares the whole stack) and never written
// after creation, fills the second. Sharing a line with the totals made each lookup on one
// thread miss whenever another thread had just counted a block of the site. A site takes 128
// bytes (192 with 8 frames inline and its growth state in it: 44 MB more for an exact import of
// torch; its stack's hash lives in the intern table's slot).
typedef struct nd_site {
  uint64_t allocs, frees, alloc_bytes, free_bytes; // atomic
  int64_t peak;                                    // atomic: high-water of live bytes
  int64_t floor; // atomic: lowest live bytes since the current window began (the trace writer
                 // closes windows at flushes: nd_site_window)
  nd_growth_t *g;     // NULL until the site holds memory at a window's close (growth.c)
  uint32_t close_win; // before that: the last close it held nothing at (0: none yet)
  uint8_t dirty;      // atomic: changed since the last flush
  uint8_t written;    // its STACK record is in the trace
  uint16_t pk_epoch;  // atomic: the peak epoch of its group (counters.h) it last changed in
  uint32_t id;        // identity: constant once created
  uint16_t kind;
  uint8_t sampled;
  uint8_t depth;
  const nd_outer_t *outer; // frames ND_SITE_INLINE.. (NULL when depth <= ND_SITE_INLINE)
  uintptr_t ips[];         // the innermost min(depth, ND_SITE_INLINE) frames
} nd_site_t;
_Static_assert(__builtin_offsetof(nd_site_t, id) == 64, "a site's totals fill its first line");
_Static_assert(sizeof(nd_site_t) + ND_SITE_INLINE * sizeof(uintptr_t) == 128, "two lines");

#define ND_CAPTURE_MAX 136 // NDMEM_DEPTH (at most 128) plus ndmem's own frames
// A site's stack: at most NDMEM_DEPTH native frames, the cut marker (ND_FRAME_CUT) and
// NDMEM_PY_DEPTH Python frames (config.h), within the uint8_t depth
#define ND_STACK_MAX (128 + 1 + ND_PY_DEPTH_MAX)
_Static_assert(ND_STACK_MAX <= 255, "a site's depth is a uint8_t");

// sites.c: stacks and interning
extern int nd_sites_depth;                        // NDMEM_DEPTH
extern int nd_sites_want; // frames asked of the unwinder: NDMEM_DEPTH + ndmem's own frames seen
int nd_sites_init(int depth);                     // libunwind setup, our own text range
int nd_stack_capture(uintptr_t *ips, int max);    // frames outside libndmem, innermost first
nd_site_t *nd_site_intern(int kind, int sampled, const uintptr_t *ips, int depth);
// The site of a capture of `want` frames that returned n: ndmem's own frames skipped (captured
// again when they left the program less than NDMEM_DEPTH), then the thread's cache of recent
// sites (the whole stack compared: exact), then the intern table. NULL when out of memory.
// at: the stack and frame pointers of the function that captured frames (frames[0] is in it),
// for the replay (stacks/replay.h), and the replay's entry whose native frames these are (or 0:
// unwound); at[0] 0: none. (Six arguments: a seventh would be passed on the stack, and the
// capturing function's stack pointer at the call would not be at[0].)
nd_site_t *nd_site_frames(int kind, int sampled, uintptr_t *frames, int n, int want,
                          const uintptr_t *at);

// Capture + intern; NULL when out of memory. Inlined into its caller, so that the unwinder starts
// in the function that tracks the block: every frame costs the unwinder ~100 instructions, and
// ndmem's own frames are thrown away. A stack seen before at this stack pointer, whose saved
// return addresses (and Python frames) are still those recorded, is replayed instead
// (stacks/replay.h): its site without an unwind.
static inline __attribute__((always_inline)) nd_site_t *nd_site_here(int kind, int sampled) {
  uintptr_t sp = 0, rbp = 0;
  nd_replay_t *native = NULL;
#if ND_REPLAY
  __asm__ volatile("mov %%rsp, %0\n\tmov %%rbp, %1" : "=r"(sp), "=r"(rbp));
  nd_site_t *s = (nd_site_t *)nd_replay_find(sp, rbp, (uint32_t)(kind * 2 + sampled) + 1, &native);
  if (s) return s;
#endif
  uintptr_t frames[ND_CAPTURE_MAX];
  int want = __atomic_load_n(&nd_sites_want, __ATOMIC_RELAXED);
  int n = native ? nd_replay_frames(native, frames) : nd_backtrace((void **)frames, want);
  const uintptr_t at[3] = {sp, rbp, (uintptr_t)native};
  return nd_site_frames(kind, sampled, frames, n, want, at);
}
// Its live bytes at its group's peak moment, when it changed since (pk_epoch is the moment's
// epoch); otherwise it holds what it held then. In ndmem's own pages beside the sites (a site's
// first line is full): written once per site per moment, read by the trace writer.
int64_t nd_site_at_peak(const nd_site_t *s);
void nd_site_add(nd_site_t *s, uint64_t count, uint64_t bytes);
void nd_site_sub(nd_site_t *s, uint64_t count, uint64_t bytes);
// Closes the site's window and returns its floor (lowest live bytes since the window began); the
// next window begins at the live bytes now.
uint64_t nd_site_window(nd_site_t *s);
// The site's whole stack, innermost first, into out (ND_STACK_MAX frames); its depth.
static inline int nd_site_stack(const nd_site_t *s, uintptr_t *out) {
  int in = s->depth < ND_SITE_INLINE ? s->depth : ND_SITE_INLINE;
  for (int i = 0; i < in; i++) out[i] = s->ips[i];
  for (int i = ND_SITE_INLINE; i < s->depth; i++) out[i] = s->outer->ips[i - ND_SITE_INLINE];
  return s->depth;
}
uint32_t nd_sites_count(void);
nd_site_t *nd_site_by_id(uint32_t id);
// A fork child's sites count from the fork: what the child allocates, and frees of its own
// blocks (nd_track_inherited: the parent's blocks stay the parent's, in the parent's trace, and
// are never taken from a site here); windows and growth start again. Every STACK is written to
// the child's trace again; a SITE record only once the child changed the site.
void nd_sites_atfork_rebase(void);

// blocks.c: live tracked blocks, by address
// 40 bytes: the bytes and blocks a sampled block stands for follow from its size (trace.c,
// nd_track_weigh), so they are not kept; an import of torch with every block tracked holds
// several hundred thousand of these at once.
typedef struct nd_block {
  uintptr_t addr;
  nd_site_t *site;
  uint64_t size;   // requested bytes
  uint64_t mono_ns;
  uint64_t cycle;  // the cycle clock at its allocation (nd_cycle_clock)
} nd_block_t;

void nd_blocks_insert(const nd_block_t *b);
// Starts loading the slot an insert of addr will write (a hint, nothing changes): the table is
// large and hashed by address, so that slot is seldom in cache; the tracking work between the
// hint and the insert (unwinding, the site lookup) then hides the miss.
void nd_blocks_prefetch(uintptr_t addr);
int nd_blocks_maybe(uintptr_t addr); // cheap filter: 0 means certainly not tracked
int nd_blocks_maybe_sampled(uintptr_t addr); // the same for the sampled blocks only
int nd_blocks_take(uintptr_t addr, nd_block_t *out);
int nd_blocks_find(uintptr_t addr, nd_block_t *out); // like take, but the block stays
typedef void (*nd_blocks_fn)(void *ctx, const nd_block_t *b);
void nd_blocks_each(nd_blocks_fn fn, void *ctx); // locks each stripe in turn
// The same with every other thread stopped (reach.c): no lock is taken; -1 (and no call) when a
// stopped thread was changing a stripe, whose entries are then not to be trusted.
int nd_blocks_each_stopped(nd_blocks_fn fn, void *ctx);
void nd_blocks_atfork_prepare(void);
void nd_blocks_atfork_parent(void);
void nd_blocks_atfork_child(void);

#endif
