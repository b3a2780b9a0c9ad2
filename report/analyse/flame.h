// SPDX-License-Identifier: MIT
// flame.h: the flame tree both flame graphs draw (svg.c, the HTML page's flame graphs): the sites'
// stacks merged from the outermost frame by name (the names --format collapsed prints, Python
// frames among them), each node weighted by a measure (enum nd_weight). Nodes narrower than a
// fraction of the root are left out with everything under them, so the tree and the picture stay
// small however many sites a trace has: memory is the sites' order (three words a site) plus the
// nodes kept, never a node per frame.
#ifndef ND_FLAME_H
#define ND_FLAME_H

#include "analyse/frames.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The sites (weight > 0 in some measure) sorted by their names outermost first, a shorter stack
// before one it starts; lcp[i]: the names sorted[i] shares with sorted[i - 1] from the outermost
// (lcp[0] = 0), len[i]: its names. Measure-independent: one order serves every flame tree.
typedef struct nd_flame_order {
  uint32_t *site, *lcp, *len;
  size_t n;
} nd_flame_order_t;

typedef struct nd_flame_node {
  const nd_frame_t *f; // the node's frame; NULL: the root (depth 0) or a stack without frames
  uint32_t part;       // which of f's names (nd_rep_frame_name)
  uint32_t depth;      // 0: the root
  uint32_t parent;     // its index in nd_flame_t.v (the root: UINT32_MAX)
  uint32_t site;       // the heaviest site under it (index into t->sites): the stack it shows
  uint32_t sites;      // sites under it
  uint64_t w;          // its weight
  uint64_t x;          // the weight left of it under the root (siblings left out count too)
  uint64_t self;       // of w, the sites whose stack ends at it
  bool est;            // a sampled site under it: w is an estimate
} nd_flame_node_t;

typedef struct nd_flame {
  enum nd_weight by;
  nd_flame_node_t *v;  // depth first, the root first, siblings in name order
  size_t n, cap;
  uint64_t total;      // the root's weight: the measure over every site
  uint64_t min;        // the narrowest weight kept
  uint64_t cut;        // weight in subtrees left out (narrower than min, or past ND_FLAME_MAX)
  uint64_t cut_nodes;  // those subtrees
  uint32_t depth;      // the deepest node kept
  size_t nsites;       // sites of weight > 0
  bool est;            // some weight is a sampled estimate
  bool most;           // live at exit: sampled estimates were lowered to the exact counters
} nd_flame_t;

// The flame graphs' weights (nd_flame_weigh, then nd_flame_weight): a site's measure, where live
// at exit of sampled sites is capped per kind, as the lifetime estimates are, so that a kind's
// sites never hold more than the exact counters say was live (the last COUNTERS record). A
// sampled site's estimate can exceed it; a chart that added them up would show more memory than
// the process had.
typedef struct nd_flame_cap {
  double scale[ND_TRACE_KINDS]; // applied to sampled sites' live bytes (1: no cap)
  bool capped;                  // some kind's were lowered
  double peak_scale[ND_TRACE_PEAK_GROUPS]; // the same for live at a group's peak moment, against
  bool peak_capped;                        // the group's exact total then (PEAK record)
} nd_flame_cap_t;
void nd_flame_weigh(const nd_trace_t *t, nd_flame_cap_t *c);
// The factor on sampled bytes that keeps exact + sampled within the exact counters' total (1
// when they fit; the stacked charts use it at each point).
double nd_flame_scale(uint64_t exact, uint64_t sampled, uint64_t total);
uint64_t nd_flame_weight(const nd_trace_t *t, const nd_flame_cap_t *c, size_t site,
                         enum nd_weight by);

#define ND_FLAME_MAX 20000 // nodes kept at most, whatever the fraction lets through

// Sorts the sites; -1 when out of memory. Free with nd_flame_order_free (also after an error).
int nd_flame_order(report_t *r, nd_flame_order_t *o);
void nd_flame_order_free(nd_flame_order_t *o);
// The tree of `by` over the sorted sites, leaving out subtrees narrower than total / min_div
// (at least 1 byte: a node of weight 0 is never kept). -1 when out of memory.
int nd_flame_build(report_t *r, const nd_flame_order_t *o, enum nd_weight by, uint64_t min_div,
                   nd_flame_t *out);
void nd_flame_free(nd_flame_t *f);
// A node's name into `b` (emptied first): the collapsed name, or "all" for the root.
void nd_flame_name(const nd_flame_node_t *n, sbuf_t *b);
// The C and C++ runtimes and ndmem itself (by a module's base name): their frames are allocation
// wrappers (malloc, operator new, strdup), not where a site's memory is wanted.
bool nd_flame_runtime_module(const char *path);

#endif
