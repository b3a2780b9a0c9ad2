// SPDX-License-Identifier: MIT
// flame.c: the flame tree (flame.h). The sites are sorted by their names from the outermost, so
// that every node of the merged tree is a run of consecutive sites (those that share its names),
// and the tree is walked off that order without ever being held whole: a node's weight is a
// difference of prefix sums, its children the runs where the common prefix with the site before
// drops to its depth. Only nodes at least `min` wide are visited, so the work and memory follow
// the picture, not the trace (a 1 GB trace's 100,000 sites have ~3,000,000 frames, nearly all
// distinct: a node per frame would cost more than the rest of the report).
#include "analyse/flame.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- the order

// Name by name from the outermost (nd_rep_names_cmp, by whole names): the sites that share a
// name at a depth stay together. Unlike the collapsed lines' order (a byte order of the joined
// text), "a;b" and "a;b;c" are never split by "a;b+0x10".
static int by_names(const void *pa, const void *pb, void *arg) {
  nd_rep_names_t *names = arg;
  uint32_t i = *(const uint32_t *)pa, m = *(const uint32_t *)pb;
  const nd_site_t *x = &names->r->t->sites[i], *y = &names->r->t->sites[m];
  int c = nd_rep_names_cmp(names, x->stack, y->stack, false);
  if (c) return c;
  // The same names: a fixed order (qsort is not stable), by index.
  return i < m ? -1 : i > m;
}

void nd_flame_order_free(nd_flame_order_t *o) {
  free(o->site);
  free(o->lcp);
  free(o->len);
  *o = (nd_flame_order_t){0};
}

int nd_flame_order(report_t *r, nd_flame_order_t *o) {
  const nd_trace_t *t = r->t;
  *o = (nd_flame_order_t){0};
  size_t cap = t->nsites ? t->nsites : 1;
  o->site = malloc(cap * sizeof *o->site);
  o->lcp = malloc(cap * sizeof *o->lcp);
  o->len = malloc(cap * sizeof *o->len);
  if (!o->site || !o->lcp || !o->len || t->nsites > UINT32_MAX) return -1;
  for (size_t i = 0; i < t->nsites; i++) {
    const nd_rec_site_t *s = &t->sites[i].rec;
    if (s->alloc_bytes || s->peak_live_bytes || nd_rep_site_live(s)) o->site[o->n++] = (uint32_t)i;
  }
  // Every frame symbolized and room for the longest name first: comparing never allocates.
  nd_rep_names_t names;
  nd_rep_names_init(&names, r);
  int rc = 0;
  for (size_t i = 0; !rc && i < o->n; i++)
    rc = nd_rep_names_fit(&names, t->sites[o->site[i]].stack);
  if (!rc) qsort_r(o->site, o->n, sizeof *o->site, by_names, &names);
  for (size_t i = 0; !rc && i < o->n; i++) {
    // Its names, and those it shares with the one before.
    nd_rep_walk_t u, v;
    nd_rep_walk_init(&u, r, t->sites[o->site[i]].stack);
    if (i) nd_rep_walk_init(&v, r, t->sites[o->site[i - 1]].stack);
    uint32_t len = 0, lcp = 0;
    bool same = i > 0;
    const nd_frame_t *f, *g;
    size_t j, k;
    while (nd_rep_walk_next(&u, &f, &j)) {
      if (same && (!nd_rep_walk_next(&v, &g, &k) || nd_rep_names_differ(&names, f, j, g, k)))
        same = false;
      if (same) lcp++;
      len++;
    }
    o->len[i] = len;
    o->lcp[i] = lcp;
  }
  nd_rep_names_free(&names);
  return rc;
}

// ---------------------------------------------------------------- the tree

typedef struct build {
  report_t *r;
  const nd_flame_order_t *o;
  enum nd_weight by;
  u128 *pre; // pre[i]: the weights of sorted sites 0 .. i)
  nd_flame_cap_t cap;
  nd_flame_t *out;
} build_t;

static uint64_t sat64(u128 v) { return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v; }

void nd_flame_weigh(const nd_trace_t *t, nd_flame_cap_t *c) {
  u128 exact[ND_TRACE_KINDS] = {0}, sampled[ND_TRACE_KINDS] = {0};
  u128 pexact[ND_TRACE_PEAK_GROUPS] = {0}, psampled[ND_TRACE_PEAK_GROUPS] = {0};
  *c = (nd_flame_cap_t){.capped = false};
  for (int k = 0; k < ND_TRACE_KINDS; k++) c->scale[k] = 1;
  for (int g = 0; g < ND_TRACE_PEAK_GROUPS; g++) c->peak_scale[g] = 1;
  if (!t->have_counters) return;
  for (size_t i = 0; i < t->nsites; i++) {
    const nd_site_t *s = &t->sites[i];
    unsigned k = s->rec.kind;
    if (k >= ND_TRACE_KINDS) continue;
    bool smp = s->rec.flags & ND_SITE_SAMPLED;
    uint64_t v = nd_rep_site_weight(t, s, ND_BY_LIVE);
    *(smp ? &sampled[k] : &exact[k]) += v;
    if (nd_rep_peak_known(t, k)) *(smp ? &psampled : &pexact)[ND_PEAK_GROUP(k)] += nd_rep_site_at_peak(t, s);
  }
  for (int k = 0; k < ND_TRACE_KINDS; k++) {
    int64_t live = t->counters.kind[k].live_bytes;
    c->scale[k] = nd_flame_scale(sat64(exact[k]), sat64(sampled[k]), live > 0 ? (uint64_t)live : 0);
    c->capped |= c->scale[k] < 1;
  }
  // At the moment: within the group's exact total then.
  for (int g = 0; g < ND_TRACE_PEAK_GROUPS; g++) {
    if (!t->peak[g].epoch) continue;
    c->peak_scale[g] = nd_flame_scale(sat64(pexact[g]), sat64(psampled[g]), t->peak[g].bytes);
    c->peak_capped |= c->peak_scale[g] < 1;
  }
}

double nd_flame_scale(uint64_t exact, uint64_t sampled, uint64_t total) {
  if (!sampled || nd_rep_sat_add(exact, sampled) <= total) return 1;
  return total > exact ? (double)(total - exact) / (double)sampled : 0;
}

uint64_t nd_flame_weight(const nd_trace_t *t, const nd_flame_cap_t *c, size_t site,
                         enum nd_weight by) {
  const nd_rec_site_t *s = &t->sites[site].rec;
  uint64_t v = nd_rep_site_weight(t, &t->sites[site], by);
  if (!(s->flags & ND_SITE_SAMPLED) || s->kind >= ND_TRACE_KINDS) return v;
  // A moment's estimates are lowered to the group's total then; where the trace has none for
  // the group, the measure is live at the end, lowered as that is.
  double f = by == ND_BY_LIVE ? c->scale[s->kind]
             : by != ND_BY_PEAK ? 1
             : nd_rep_peak_known(t, s->kind) ? c->peak_scale[ND_PEAK_GROUP(s->kind)]
                                            : c->scale[s->kind];
  return f >= 1 ? v : (uint64_t)((double)v * f);
}

static uint64_t weight(const build_t *b, size_t a, size_t e) {
  u128 w = b->pre[e] - b->pre[a];
  return w > UINT64_MAX ? UINT64_MAX : (uint64_t)w;
}

// The (frame, part) at depth d (from 1) of sorted site i.
static void name_at(const build_t *b, size_t i, uint32_t d, const nd_frame_t **f, uint32_t *part) {
  nd_rep_walk_t w;
  nd_rep_walk_init(&w, b->r, b->r->t->sites[b->o->site[i]].stack);
  size_t j = 0;
  *f = NULL;
  for (uint32_t k = 0; k < d && nd_rep_walk_next(&w, f, &j); k++) {}
  *part = (uint32_t)j;
}

// The node of sorted sites [a, e), which share their first `d` names, at `x`; then its children
// that are wide enough. -1 when out of memory.
static int node(build_t *b, size_t a, size_t e, uint32_t d, uint32_t parent, uint64_t x) {
  nd_flame_t *out = b->out;
  uint64_t w = weight(b, a, e);
  if (out->n == out->cap) {
    size_t cap = out->cap ? out->cap * 2 : 256;
    nd_flame_node_t *v = realloc(out->v, cap * sizeof *v);
    if (!v) return -1;
    out->v = v, out->cap = cap;
  }
  uint32_t me = (uint32_t)out->n++;
  nd_flame_node_t *n = &out->v[me];
  *n = (nd_flame_node_t){.depth = d, .parent = parent, .w = w, .x = x};
  if (d) name_at(b, a, d, &n->f, &n->part);
  uint64_t best = 0;
  n->site = b->o->site[a];
  for (size_t i = a; i < e; i++) {
    const nd_rec_site_t *s = &b->r->t->sites[b->o->site[i]].rec;
    uint64_t v = nd_flame_weight(b->r->t, &b->cap, b->o->site[i], b->by);
    if (!v) continue;
    if (v > best) best = v, n->site = b->o->site[i];
    n->sites++;
    n->est |= (s->flags & ND_SITE_SAMPLED) != 0;
  }
  if (d > out->depth) out->depth = d;
  size_t i = a;
  while (i < e && b->o->len[i] == d) i++; // the stacks that end here come first
  n->self = weight(b, a, i);
  uint64_t cx0 = x;
  while (i < e) {
    size_t c = i++;
    while (i < e && b->o->lcp[i] > d) i++;
    uint64_t cw = weight(b, c, i);
    if (cw >= out->min && out->n < ND_FLAME_MAX) {
      if (node(b, c, i, d + 1, me, cx0)) return -1;
    } else if (cw) {
      out->cut = nd_rep_sat_add(out->cut, cw);
      out->cut_nodes++;
    }
    cx0 = nd_rep_sat_add(cx0, cw);
  }
  return 0;
}

int nd_flame_build(report_t *r, const nd_flame_order_t *o, enum nd_weight by, uint64_t min_div,
                   nd_flame_t *out) {
  *out = (nd_flame_t){.by = by};
  build_t b = {.r = r, .o = o, .by = by, .out = out};
  nd_flame_weigh(r->t, &b.cap);
  out->most = (by == ND_BY_LIVE && b.cap.capped) || (by == ND_BY_PEAK && b.cap.peak_capped);
  b.pre = malloc((o->n + 1) * sizeof *b.pre);
  if (!b.pre) return -1;
  b.pre[0] = 0;
  for (size_t i = 0; i < o->n; i++) {
    uint64_t v = nd_flame_weight(r->t, &b.cap, o->site[i], by);
    b.pre[i + 1] = b.pre[i] + v;
    out->nsites += v > 0;
    out->est |= v && (r->t->sites[o->site[i]].rec.flags & ND_SITE_SAMPLED);
  }
  out->total = weight(&b, 0, o->n);
  out->min = min_div ? out->total / min_div : 0;
  if (out->min < 1) out->min = 1;
  int rc = node(&b, 0, o->n, 0, UINT32_MAX, 0);
  free(b.pre);
  return rc;
}

void nd_flame_free(nd_flame_t *f) {
  free(f->v);
  *f = (nd_flame_t){0};
}

void nd_flame_name(const nd_flame_node_t *n, sbuf_t *b) {
  if (!n->depth) {
    b->len = 0;
    sb_put(b, "all", 3);
    return;
  }
  nd_rep_frame_name(b, n->f, n->part);
}

bool nd_flame_runtime_module(const char *path) {
  static const char *const prefixes[] = {"libc.so", "libc-", "libstdc++.so", "libc++.so",
                                         "libc++abi.so", "libgcc_s.so", "libndmem"};
  const char *b = nd_rep_base_name(path);
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(b, prefixes[i], strlen(prefixes[i]))) return true;
  return false;
}

