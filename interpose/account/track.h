// SPDX-License-Identifier: MIT
// track.h: which blocks are tracked, and tracking them (account/track.c).
#ifndef ND_TRACK_H
#define ND_TRACK_H

#include <stddef.h>
#include <stdint.h>

struct nd_tls;
struct nd_site;
struct nd_block;

// Blocks of at least nd_track_min requested bytes are tracked exactly; SIZE_MAX when tracing
// is off, so the hook's test `req >= nd_track_min` never fires.
extern size_t nd_track_min;

// The cycle clock: the most cycles any thread's workspace has closed (automatic or marked), and
// when the first one closed (the steady state begins there; 0: not yet). Both atomic. A block
// records the clock at its allocation.
extern uint64_t nd_cycle_clock, nd_steady_ns;
void nd_cycle_closed(uint64_t cycles); // a workspace closed its cycles-th cycle

// Tracking starts (the trace is set up): the sampler's mean, the exact threshold, and the trace
// writer, started by the first tracked block while *started is 0.
void nd_track_setup(double sample_mean, size_t track_min, int *started, void (*start)(void));
void nd_track_fork(uint64_t start_ns);      // a fork child: its trace starts at start_ns, its cycles at 0
void nd_track_alloc(struct nd_tls *t, void *p, size_t req, int kind);
void nd_track_free(void *p);
// The bytes and blocks a tracked block stands for: its size and 1, or a sampled block's weights.
void nd_track_weigh(const struct nd_block *b, uint64_t *count, uint64_t *weight);
void nd_track_untrack(const struct nd_block *b); // its site's totals lose it (a realloc moved it)
// In a fork child, whether a block or mapping born at born_ns (monotonic) is one it inherited:
// its parent's, which the child's sites never count (sites.h, nd_sites_atfork_rebase).
int nd_track_inherited(uint64_t born_ns);
int nd_track_take(void *p, void *out_block); // for realloc: untrack, keeping the record
void nd_track_restore(const void *block);   // realloc failed: the old block is live again
struct nd_site *nd_track_site_here(int kind); // exact site for an mmap, NULL when tracing is off

#endif
