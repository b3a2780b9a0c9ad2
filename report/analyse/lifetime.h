// SPDX-License-Identifier: MIT
// lifetime.h: what was live at exit, classified by the evidence the trace carries (block birth
// times and cycles, the steady state's start, the history of every site's floor):
//
//   growing               live bytes rose across the run: blocks born in the steady state, their
//                         births spread over it, and the site either never freed a block or its
//                         floor (lowest live bytes per flush window) rose and never fell
//   released at teardown  a site whose floor rose through the run and that freed it only at exit
//                         (interpreter shutdown, static destructors): growth all the same; one
//                         that freed nothing until then is counted in the blocks it kept
//   definitely lost       (version 14, the reachability scan at exit) nothing of the program
//                         pointed to it: no root, no block but those it leads to
//   indirectly lost       reached only from definitely lost blocks
//   live at exit          the rest, where no reachability scan classed it: not proven lost
//   possibly lost         reached, but only through pointers into blocks' middles
//   still reachable       a chain of pointers from the roots leads to it (not a leak)
//   bounded cache         a site that grew in the steady state, then held its bytes flat to the
//                         end, for the last third of it at least and long against how it rose
//                         (cache(), lifetime.c): a cache that filled, then held; no finding
//   held since start-up   every block born before the steady state began (the first closed
//                         cycle): tables, pools and buffers a program keeps for its lifetime
//   suppressed            matched a suppression rule (built-in or the user's)
//   inherited at fork     in a fork child (a worker), blocks born in its parent before the fork:
//                         the parent's memory, which the child neither made nor had to free
//
// Sampled entries are estimates; they are capped by what the exact counters show live, and
// what the counters show live beyond every entry is reported as untracked. A figure the cap set
// to a bound the counters prove is "at most" that; a growth figure never exceeds the bytes it is
// part of, nor the heap's peak. Heap blocks live at exit with no BLOCK record (unsampled blocks
// under NDMEM_TRACK_MIN) are what no verdict could check: unrecorded.
#ifndef ND_LIFETIME_H
#define ND_LIFETIME_H

#include "read/trace_read.h"

#include <stdbool.h>
#include <stdint.h>

enum nd_life_class {
  ND_LIFE_LOST = 0,
  ND_LIFE_INDIRECT,
  ND_LIFE_GROWING,
  ND_LIFE_TEARDOWN,
  ND_LIFE_LIVE,
  ND_LIFE_CACHE,
  ND_LIFE_POSSIBLE,
  ND_LIFE_REACHABLE,
  ND_LIFE_STARTUP,
  ND_LIFE_SUPPRESSED,
  ND_LIFE_INHERITED,
  ND_LIFE_CLASSES
};
// The classes that are no finding of this process, shown as totals (possibly lost, still
// reachable, start-up, suppressed, inherited at fork); the others are listed entry by entry.
static inline bool nd_life_folded(int cls) {
  return cls == ND_LIFE_STARTUP || cls == ND_LIFE_SUPPRESSED || cls == ND_LIFE_INHERITED ||
         cls == ND_LIFE_POSSIBLE || cls == ND_LIFE_REACHABLE;
}
// The classes --fail-on-leak fails on: lost memory, growth, and memory live at exit that no scan
// classed. --fail-on-reachable adds what was kept and not lost: possibly lost, still reachable,
// a bounded cache, held since start-up.
static inline bool nd_life_fails(int cls, bool reachable_too) {
  return cls == ND_LIFE_LOST || cls == ND_LIFE_INDIRECT || cls == ND_LIFE_GROWING ||
         cls == ND_LIFE_TEARDOWN || cls == ND_LIFE_LIVE ||
         (reachable_too && (cls == ND_LIFE_POSSIBLE || cls == ND_LIFE_REACHABLE ||
                            cls == ND_LIFE_CACHE || cls == ND_LIFE_STARTUP));
}
extern const char *const nd_life_names[ND_LIFE_CLASSES]; // "growing", "released at teardown", ...
extern const char *const nd_life_keys[ND_LIFE_CLASSES];  // JSON: "growing", "released_at_teardown"

typedef struct nd_life {
  int cls;             // enum nd_life_class
  uint32_t stack;      // index into nd_trace_t.stacks
  uint16_t kind;
  long leak, site;     // indices into t->leaks / t->sites, or -1
  uint64_t bytes, blocks; // live at exit; released at teardown: its highest floor
  uint64_t samples;    // sampled blocks among them (their figures are estimates)
  bool capped;         // an estimate lowered to what the exact counters show live
  // ... to the bound the counters prove for it (bytes, blocks; growth bytes with bytes): the
  // figure is an upper bound, said "at most", not an estimate
  bool most_bytes, most_blocks;
  bool most_grew; // `grew` is that bound too (all of the bytes grew); else an estimate of it
  // Growth (growing, released at teardown): `grew` bytes over `cycles` cycles (0: the job had no
  // cycles; then over `secs`), one retained block per `per_cycles` cycles on average.
  uint64_t grew, grew_blocks, cycles, per_cycles;
  double secs;
  double born_first, born_last; // births, as fractions of the run (growing, live, start-up)
  // A bounded cache's plateau: `flat_bytes` held from cycle `flat_from` to the last, for
  // `flat_cycles` cycles; seen flat in `flat_windows` flush windows (0: judged by its births, a
  // site that never freed).
  uint64_t flat_bytes, flat_from, flat_cycles, flat_windows;
  bool flagged;        // the shim found it growing while the job ran (a GROWTH record)
  uint8_t reach;       // enum nd_block_reach of its blocks (a growing entry's too)
  const char *suppressed_by;
} nd_life_t;

// Whether the trace held the evidence to judge growth. A site's floor (its lowest live bytes in a
// flush window) is what tells retained memory from a cycle's temporaries; the rules need its
// first window and ND_LIFE_MIN_WINDOWS - 1 rises after it, so a span with fewer windows cannot
// show growth at a site that also frees, nor at one that freed its memory at exit, whatever
// happened. The span is the steady state's (its start to the last flush that closed windows),
// or the last quarter of the run in a job without cycles (growth must span a quarter of it).
// Blocks live at exit at a site that never freed one are judged by their births all the same
// (with cycles enough), so there the judgment is in part. Traces before version 5 have no
// floors: not known.
#define ND_LIFE_MIN_WINDOWS 3
typedef struct nd_life_judged {
  bool known;        // a version 5 trace with a normal exit: the fields below are set
  bool judged;       // windows >= ND_LIFE_MIN_WINDOWS
  bool by_births;    // blocks live at exit were judged by their births (cycles enough)
  uint64_t windows;  // flush windows in the span
  uint64_t span_ns;  // its length
  uint64_t cycles;   // cycles the job ran (0: no cycles found; the span is the run's last quarter)
  // Not judged: an NDMEM_FLUSH_MS that gives the span twice the windows needed (1-2-5 steps,
  // 10 ms at least), or 0 where none can: fewer cycles than windows needed (windows close where
  // the clock moves) and no window closed by a clock that stood still, or a span too short for
  // them at 10 ms.
  uint64_t flush_ms;
  bool few_cycles;   // flush_ms is 0 for the first reason
} nd_life_judged_t;

typedef struct nd_lifetimes {
  nd_life_t *v; // by class, then by bytes
  size_t n;
  uint64_t bytes[ND_LIFE_CLASSES], blocks[ND_LIFE_CLASSES], entries[ND_LIFE_CLASSES];
  bool est[ND_LIFE_CLASSES];
  bool steady;             // the job had cycles (steady_ns below)
  uint64_t steady_ns;      // when the first cycle closed, relative to the start
  uint64_t cycles;         // the cycle clock at the end
  // Every estimate of the class that is one is an upper bound ("at most"; est[] set).
  bool most_bytes[ND_LIFE_CLASSES], most_blocks[ND_LIFE_CLASSES];
  // Live at exit by the exact counters but in no entry: small blocks the sampler did not pick.
  uint64_t untracked_blocks;
  // Heap blocks live at exit by the exact counters without a BLOCK record (exact or sampled):
  // nothing tells whose they are, so --fail-on-leak cannot pass them (load.c). Bytes are
  // an upper bound: the counters' usable sizes less the records' requested sizes. An estimate
  // may claim some of them; that is a guess, not a check.
  uint64_t unrecorded_blocks, unrecorded_bytes;
  nd_life_judged_t judged; // whether growth could be judged
} nd_lifetimes_t;

// A suppression lookup: the rule that matches a stack (index into t->stacks), or NULL.
typedef const char *(*nd_life_supp_fn)(void *ctx, uint32_t stack);

// Classifies what the trace shows live at exit (and the sites released at teardown). The trace
// must have ended normally (leaks known). 0, or -1 out of memory.
int nd_lifetimes(const nd_trace_t *t, nd_life_supp_fn supp, void *ctx, nd_lifetimes_t *out);
void nd_lifetimes_free(nd_lifetimes_t *l);
// What a site held through its run, as `diff --fail-on-growth` compares two runs: its live bytes
// at the end, or, where the process's teardown freed them, what it held before the teardown. A
// teardown is what "released at teardown" reads as one (a normal exit; the site's trailing falls
// of its floor began after the last cycle closed, or are the final flush's), or the final flush's
// fall of its live bytes where the floor could not show it (a site written once, then not again
// until the exit). What it held then: the live bytes of its record before the teardown where it
// held them a whole flush window (no record between: a site is written only where it changed)
// or had freed no block since the steady state began (it kept every block it made); else that
// record's floor, its lowest live bytes in the window (never a cycle's temporaries). Never less
// than its live bytes at the end; *teardown set where it is more. A trace before version 5 (no
// floors) or without a normal end: its live bytes at the end.
uint64_t nd_life_held(const nd_trace_t *t, const nd_site_t *s, bool *teardown);
// What sampling hid from the growth verdict (load.c): blocks under the header's track_min are
// recorded only when the sampler picks them, a Poisson process over their bytes at one sample per
// sample_interval bytes on average (interpose/account/track.c), so a run that kept g bytes in them
// left no record of a kept block with probability exp(-g / sample_interval), exactly, whatever
// their sizes. A sampled site is found growing only by kept samples born across the run (three
// at least, a quarter of the run apart, its floor rising in their windows): `rate` is the
// smallest growth per cycle (per flush window in a job without cycles; per flush in one with
// fewer than 8, since its first cycle)
// at which each quarter of the run kept a sample with probability 1 - 1/ND_LIFE_UNSEEN_MISS
// at least, R ln(4 ND_LIFE_UNSEEN_MISS) / m over the m cycles (windows) of its quarter that has
// fewest. Less may have gone unseen; more would have been sampled (whether then found growing
// is the classes' rules, as for exact blocks). Nothing is unseen where every block was tracked
// (track_min 0 or 1), where growth could not be judged for any block either (the report says
// so), or where rate is no more than what exact tracking names (the growth floor). rate 0:
// growth in small blocks could not show at any rate: none was sampled (sample_interval 0), or the
// run had too few flush windows to judge a sampled site's floor where exact blocks live at exit
// were still judged by their births (judged.by_births).
#define ND_LIFE_UNSEEN_MISS 100
typedef struct nd_life_unseen {
  bool unseen;        // growth in blocks under track_min may have gone unseen
  uint64_t track_min, sample; // the header's track_min and sample_interval
  uint64_t rate;      // bytes per cycle (per_window: per flush window); 0: at any rate
  uint64_t units;     // the run's cycles (flush windows) the rate is over
  bool per_window;
  // per_window: the flushes since the first cycle (fewer than 8 cycles), which close windows
  // only where the clock moved or stood still for a few: per flush, not per window
  bool since_steady;
} nd_life_unseen_t;
// For a trace whose leaks are known (a normal exit); `l` its classes.
void nd_life_unseen(const nd_trace_t *t, const nd_lifetimes_t *l, nd_life_unseen_t *u);
// How much of the growth was judged (l->judged known): "all"; "part" (too few windows, but blocks
// live at exit were judged by their births, or a site was found growing all the same); "none".
const char *nd_life_judged_key(const nd_lifetimes_t *l);

#endif
