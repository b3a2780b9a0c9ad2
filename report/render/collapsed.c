// SPDX-License-Identifier: MIT
// collapsed.c: --format collapsed, the "collapsed stacks" that flamegraph.pl, speedscope
// and inferno read: one line per stack, its frames outermost first joined by ';', a space, an
// integer weight (--collapsed-by: peak live bytes, bytes allocated, or live at the end). The names
// and their order are frames.c's (frames.h), which diff and the flame graphs share.
#include "render/render.h"

#include <stdlib.h>
#include <string.h>

// The names of a line are never stored: each is made again from the symbolizer's frame (cached
// per address) when two lines are compared and when the line is printed. A 1 GB trace's 100,000
// sites have ~3,000,000 frames whose names are nearly all distinct (a synthetic trace's random
// addresses), so holding them, joined per line or interned once each, cost 125 MB and more on
// top of the frames the symbolizer keeps anyway. A line is its site's stack and its weight.
typedef struct line {
  uint32_t stack;
  uint64_t weight;
} line_t;

// Lines in the order strcmp gives their joined text ("a;b;c"; nd_rep_names_cmp, joined).
static int by_frames(const void *pa, const void *pb, void *arg) {
  const line_t *x = pa, *y = pb;
  return nd_rep_names_cmp(arg, x->stack, y->stack, true);
}

// --top N: the heaviest first, a tie to the line first in frame order (`arg`: the lines).
static int by_weight(const void *a, const void *b, void *arg) {
  const line_t *lines = arg;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  uint64_t x = lines[i].weight, y = lines[j].weight;
  if (x != y) return x > y ? -1 : 1;
  return i < j ? -1 : i > j;
}

// Every site of weight > 0, its line; lines with the same frames (the same stack under two kinds,
// or, with --python-only, two stacks with the same Python frames) are one line, their weights
// summed. Sorted by the frames, as the stackcollapse scripts print them. With an explicit --top N
// (N > 0), only the N heaviest lines, still in that order.
int nd_rep_collapsed_report(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  uint32_t *order = NULL;
  bool *keep = NULL;
  line_t *v = malloc((t->nsites ? t->nsites : 1) * sizeof *v);
  if (!v) return -1;
  size_t n = 0, m = 0;
  nd_flame_cap_t cap; // the flame graphs' weights, sampled estimates lowered as they are there
  nd_flame_weigh(t, &cap);
  for (size_t i = 0; i < t->nsites; i++) {
    uint64_t w = nd_flame_weight(t, &cap, i, r->o->collapsed_by);
    if (w) v[n++] = (line_t){t->sites[i].stack, w};
  }
  // Every frame symbolized and room for the longest name first: comparing never allocates.
  nd_rep_names_t names;
  nd_rep_names_init(&names, r);
  int rc = 0;
  for (size_t i = 0; !rc && i < n; i++) rc = nd_rep_names_fit(&names, v[i].stack);
  if (!rc) {
    qsort_r(v, n, sizeof *v, by_frames, &names);
    for (size_t i = 0; i < n; i++) {
      if (m && !by_frames(&v[m - 1], &v[i], &names))
        v[m - 1].weight = nd_rep_sat_add(v[m - 1].weight, v[i].weight);
      else
        v[m++] = v[i];
    }
  }
  size_t top = r->o->top_set ? r->o->top : 0;
  if (!rc && top && top < m) {
    order = malloc(m * sizeof *order);
    keep = calloc(m, sizeof *keep);
    if (!order || !keep || m > UINT32_MAX) {
      rc = -1;
    } else {
      for (size_t i = 0; i < m; i++) order[i] = (uint32_t)i;
      qsort_r(order, m, sizeof *order, by_weight, v);
      for (size_t i = 0; i < top; i++) keep[order[i]] = true;
    }
  }
  for (size_t i = 0; !rc && i < m; i++) {
    if (keep && !keep[i]) continue;
    nd_rep_walk_t w;
    nd_rep_walk_init(&w, r, v[i].stack);
    const nd_frame_t *f;
    size_t j;
    for (bool first = true; nd_rep_walk_next(&w, &f, &j); first = false) {
      nd_rep_frame_name(&names.a, f, j);
      if (!first) fputc(';', o);
      fputs(names.a.p, o);
    }
    fprintf(o, " %llu\n", (unsigned long long)v[i].weight);
  }
  free(order);
  free(keep);
  free(v);
  nd_rep_names_free(&names);
  return rc;
}
