// SPDX-License-Identifier: MIT
// flame.c: the flame tree (flame.h). The sites are sorted by their names from the outermost, so
// that every node of the merged tree is a run of consecutive sites (those that share its names),
// and the tree is walked off that order without ever being held whole: a node's weight is a
// difference of prefix sums, its children the runs where the common prefix with the site before
// drops to its depth. Only nodes at least `min` wide are visited, so the work and memory follow
// the picture, not the trace (a 1 GB trace's 100,000 sites have ~3,000,000 frames, nearly all
// distinct: a node per frame would cost more than the rest of the report).
#include "flame.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- the order

// The comparator's context (qsort has none): the report and two buffers with room for the
// longest name, made before sorting, so that comparing never allocates.
static struct {
  report_t *r;
  sbuf_t a, b;
} cx;

// Whether the names (f, j) and (g, k) differ: the same frame and part are the same name; two
// frames may still share a name (two return addresses in one function). <0, 0, >0 as strcmp.
static int name_cmp(const nd_frame_t *f, size_t j, const nd_frame_t *g, size_t k) {
  if (f == g && j == k) return 0;
  nd_rep_frame_name(&cx.a, f, j);
  nd_rep_frame_name(&cx.b, g, k);
  return strcmp(cx.a.p, cx.b.p);
}

// Name by name from the outermost; a stack that another starts first. Unlike the collapsed
// lines' order (a byte order of the joined text), this keeps the sites that share a name at a
// depth together: "a;b" and "a;b;c" are never split by "a;b+0x10".
static int by_names(const void *pa, const void *pb) {
  const nd_site_t *x = &cx.r->t->sites[*(const uint32_t *)pa];
  const nd_site_t *y = &cx.r->t->sites[*(const uint32_t *)pb];
  if (x->stack != y->stack) {
    nd_rep_walk_t u, v;
    nd_rep_walk_init(&u, cx.r, x->stack);
    nd_rep_walk_init(&v, cx.r, y->stack);
    for (;;) {
      const nd_frame_t *f, *g;
      size_t j, k;
      bool more_u = nd_rep_walk_next(&u, &f, &j), more_v = nd_rep_walk_next(&v, &g, &k);
      if (!more_u || !more_v) {
        if (more_u != more_v) return more_u - more_v;
        break;
      }
      int c = name_cmp(f, j, g, k);
      if (c) return c;
    }
  }
  // The same names: a fixed order (qsort is not stable), by index.
  uint32_t i = *(const uint32_t *)pa, m = *(const uint32_t *)pb;
  return i < m ? -1 : i > m;
}

// Symbolizes every frame of the sites (so that the walks after it never allocate) and makes room
// in cx's buffers for the longest name. -1 when out of memory.
static int prepare(report_t *r, const uint32_t *v, size_t n) {
  size_t longest = 11; // "[no frames]"
  for (size_t i = 0; i < n; i++) {
    if (nd_rep_longest_name(r, r->t->sites[v[i]].stack, &cx.a, &longest)) return -1;
  }
  for (int i = 0; i < 2; i++) {
    sbuf_t *b = i ? &cx.b : &cx.a;
    b->len = 0;
    while (b->len <= longest) sb_put(b, "[no frames]", 11); // room, then emptied by each use
    if (b->oom) return -1;
  }
  return 0;
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
  cx.r = r;
  int rc = prepare(r, o->site, o->n);
  if (!rc) qsort(o->site, o->n, sizeof *o->site, by_names);
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
      if (same && (!nd_rep_walk_next(&v, &g, &k) || name_cmp(f, j, g, k))) same = false;
      if (same) lcp++;
      len++;
    }
    o->len[i] = len;
    o->lcp[i] = lcp;
  }
  free(cx.a.p);
  free(cx.b.p);
  cx.a = cx.b = (sbuf_t){0};
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

void nd_flame_weigh(const nd_trace_t *t, nd_flame_cap_t *c) {
  u128 exact[ND_TRACE_KINDS] = {0}, sampled[ND_TRACE_KINDS] = {0};
  c->capped = false;
  for (int k = 0; k < ND_TRACE_KINDS; k++) c->scale[k] = 1;
  if (!t->have_counters) return;
  for (size_t i = 0; i < t->nsites; i++) {
    const nd_rec_site_t *s = &t->sites[i].rec;
    if (s->kind >= ND_TRACE_KINDS) continue;
    uint64_t v = nd_rep_site_weight(s, ND_BY_LIVE);
    if (s->flags & ND_SITE_SAMPLED) sampled[s->kind] += v;
    else exact[s->kind] += v;
  }
  for (int k = 0; k < ND_TRACE_KINDS; k++) {
    int64_t live = t->counters.kind[k].live_bytes;
    uint64_t sat = UINT64_MAX;
    c->scale[k] = nd_flame_scale(exact[k] > sat ? sat : (uint64_t)exact[k],
                                 sampled[k] > sat ? sat : (uint64_t)sampled[k],
                                 live > 0 ? (uint64_t)live : 0);
    c->capped |= c->scale[k] < 1;
  }
}

double nd_flame_scale(uint64_t exact, uint64_t sampled, uint64_t total) {
  if (!sampled || nd_rep_sat_add(exact, sampled) <= total) return 1;
  return total > exact ? (double)(total - exact) / (double)sampled : 0;
}

uint64_t nd_flame_weight(const nd_trace_t *t, const nd_flame_cap_t *c, size_t site,
                         enum nd_weight by) {
  const nd_rec_site_t *s = &t->sites[site].rec;
  uint64_t v = nd_rep_site_weight(s, by);
  if (by != ND_BY_LIVE || !(s->flags & ND_SITE_SAMPLED) || s->kind >= ND_TRACE_KINDS ||
      c->scale[s->kind] >= 1)
    return v;
  return (uint64_t)((double)v * c->scale[s->kind]);
}

void nd_flame_total(uint64_t v, bool est, bool most, char *out, size_t n) {
  char h[48];
  nd_rep_human(h, sizeof h, v);
  snprintf(out, n, "%s%s", most ? "at most " : est ? "~" : "", h);
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
  out->most = by == ND_BY_LIVE && b.cap.capped;
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

void nd_flame_colour(const nd_flame_node_t *n, const char *name, char c[8]) {
  uint32_t h = 2166136261u; // FNV-1a: stable across runs and machines
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 16777619u;
  unsigned v = h % 64, u = (h >> 8) % 64;
  if (!n->depth) snprintf(c, 8, "#%02x%02x%02x", 0xc8, 0xc8, 0xd0);
  else if (n->f && n->f->python) snprintf(c, 8, "#%02x%02x%02x", 0x50 + v, 0xb4 + u / 2, 0x5a + v);
  else if (n->f && n->f->module && nd_flame_runtime_module(n->f->module))
    snprintf(c, 8, "#%02x%02x%02x", 0xb0 + v / 2, 0xb0 + v / 2, 0xb0 + v / 2);
  else snprintf(c, 8, "#%02x%02x%02x", 0xe6 + v / 4, 0x64 + 2 * u, 0x37 + v / 2);
}

const char *nd_flame_measure(const report_t *r, enum nd_weight by) {
  return by == ND_BY_TOTAL ? "bytes allocated"
         : by == ND_BY_LIVE ? r->t->ended ? "live at exit" : "live at the last flush"
                            : "peak live bytes";
}
