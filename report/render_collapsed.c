// SPDX-License-Identifier: MIT
// render_collapsed.c: --format collapsed, the "collapsed stacks" that flamegraph.pl, speedscope
// and inferno read: one line per stack, its frames outermost first joined by ';', a space, an
// integer weight (--collapsed-by: peak live bytes, bytes allocated, or live at the end). Also the
// frame names it shares with diff (nd_rep_frame_names): the text report's names on one line each.
#include "report.h"
#include "sbuf.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const nd_rep_weight_names[ND_WEIGHTS] = {"peak", "total", "live"};

int nd_rep_parse_weight(const char *word) {
  for (int i = 0; word && i < ND_WEIGHTS; i++)
    if (!strcmp(word, nd_rep_weight_names[i])) return i;
  return -1;
}

uint64_t nd_rep_site_weight(const nd_rec_site_t *s, enum nd_weight w) {
  return w == ND_BY_TOTAL ? s->alloc_bytes : w == ND_BY_LIVE ? nd_rep_site_live(s)
                                                             : s->peak_live_bytes;
}

// A name as collapsed stacks can hold it: ';' (the frame separator) becomes ':', and control
// characters (a newline ends the line) a space.
static void sb_name(sbuf_t *b, const char *s) {
  size_t at = b->len;
  sb_put(b, s, strlen(s));
  if (b->oom) return;
  for (char *c = b->p + at; *c; c++) {
    if (*c == ';') *c = ':';
    else if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
  }
}

// A native position: its function, or module+0xOFF.
static void sb_loc(sbuf_t *b, const nd_loc_t *l, const nd_frame_t *f) {
  if (l->function) {
    sb_name(b, l->function);
  } else {
    sb_name(b, f->module);
    sb_fmt(b, "+0x%llx", (unsigned long long)f->offset);
  }
}

void nd_rep_free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

void nd_rep_frame_name(sbuf_t *b, const nd_frame_t *f, size_t j) {
  b->len = 0;
  sb_put(b, "", 0);
  if (!f) {
    sb_put(b, "[no frames]", 11);
  } else if (f->python) {
    sb_name(b, f->at.function && *f->at.function ? f->at.function : "?");
    sb_put(b, " (", 2);
    sb_name(b, f->at.file && *f->at.file ? f->at.file : "?");
    if (f->at.line) sb_fmt(b, ":%d", f->at.line);
    sb_put(b, ")", 1);
  } else if (!f->module) {
    sb_fmt(b, "0x%llx", (unsigned long long)f->ip);
  } else {
    sb_loc(b, j ? &f->inlined_into[j - 1] : &f->at, f);
  }
}

size_t nd_rep_frame_parts(const nd_frame_t *f) {
  return 1 + (f->module && !f->python ? f->ninlined : 0);
}

int nd_rep_frame_names(report_t *r, uint32_t stack, char ***names, size_t *n) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only = nd_rep_python_only(r, s);
  size_t cap = 0, k = 0;
  for (size_t i = 0; i < s->depth; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    cap += nd_rep_frame_parts(f);
  }
  char **v = calloc(cap ? cap : 1, sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < s->depth; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) goto oom;
    for (size_t j = 0, parts = nd_rep_frame_parts(f); j < parts; j++) {
      sbuf_t b = {0};
      nd_rep_frame_name(&b, f, j);
      if (b.oom) {
        free(b.p);
        goto oom;
      }
      v[k++] = b.p;
    }
  }
  *names = v;
  *n = k;
  return 0;
oom:
  nd_rep_free_names(v, k);
  return -1;
}

// ---------------------------------------------------------------- the collapsed report

// The names of a line are never stored: each is made again from the symbolizer's frame (cached
// per address) when two lines are compared and when the line is printed. A 1 GB trace's 100,000
// sites have ~3,000,000 frames whose names are nearly all distinct (a synthetic trace's random
// addresses), so holding them, joined per line or interned once each, cost 125 MB and more on
// top of the frames the symbolizer keeps anyway. A line is its site's stack and its weight.
typedef struct line {
  uint32_t stack;
  uint64_t weight;
} line_t;

typedef nd_rep_walk_t walk_t; // report.h: a walk over a stack's names, outermost first

void nd_rep_walk_init(walk_t *w, report_t *r, uint32_t stack) {
  const nd_stack_t *s = &r->t->stacks[stack];
  *w = (walk_t){.r = r, .ips = nd_stack_frames(r->t, s), .i = s->depth,
                .py_only = nd_rep_python_only(r, s), .none = !s->depth};
}

bool nd_rep_walk_next(walk_t *w, const nd_frame_t **f, size_t *j) {
  if (w->none) {
    w->none = false;
    *f = NULL, *j = 0;
    return true;
  }
  while (!w->j) {
    if (!w->i) return false;
    uint64_t ip = w->ips[--w->i];
    if (w->py_only && !nd_trace_is_pyframe(w->r->t, ip)) continue;
    if (!(w->f = nd_sym_frame(w->r->sym, ip))) return false;
    w->j = nd_rep_frame_parts(w->f);
  }
  *f = w->f, *j = --w->j;
  return true;
}

// Whether a name follows the one last given.
static bool walk_more(const walk_t *w) {
  if (w->j) return true;
  for (size_t i = w->i; i-- > 0;)
    if (!w->py_only || nd_trace_is_pyframe(w->r->t, w->ips[i])) return true;
  return false;
}

// qsort's context: the report, and two buffers with room for the longest name (made sure
// before sorting), so that comparing never allocates.
static struct {
  report_t *r;
  sbuf_t a, b;
} cmp;

// Orders two lines exactly as strcmp orders their joined text ("a;b;c"): frame by frame, the
// same (frame, part) being the same name; at the first two names that differ their bytes decide,
// a name's end counting as the ';' that follows it in its line (names hold no ';': it became ':'
// and no control character), or as the line's end (0). A line that another starts comes first.
static int by_frames(const void *pa, const void *pb) {
  const line_t *x = pa, *y = pb;
  if (x->stack == y->stack) return 0;
  walk_t u, v;
  nd_rep_walk_init(&u, cmp.r, x->stack);
  nd_rep_walk_init(&v, cmp.r, y->stack);
  for (;;) {
    const nd_frame_t *f, *g;
    size_t j, k;
    bool more_u = nd_rep_walk_next(&u, &f, &j), more_v = nd_rep_walk_next(&v, &g, &k);
    if (!more_u || !more_v) return more_u - more_v;
    if (f == g && j == k) continue;
    nd_rep_frame_name(&cmp.a, f, j);
    nd_rep_frame_name(&cmp.b, g, k);
    const unsigned char *s = (const unsigned char *)cmp.a.p, *t = (const unsigned char *)cmp.b.p;
    size_t p = 0;
    while (s[p] && s[p] == t[p]) p++;
    if (s[p] == t[p]) continue; // the same name from another frame
    unsigned cs = s[p] ? s[p] : walk_more(&u) ? ';' : 0;
    unsigned ct = t[p] ? t[p] : walk_more(&v) ? ';' : 0;
    return cs < ct ? -1 : cs > ct;
  }
}

// --top N: the heaviest first, a tie to the line first in frame order.
static const line_t *top_lines;
static int by_weight(const void *a, const void *b) {
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  uint64_t x = top_lines[i].weight, y = top_lines[j].weight;
  if (x != y) return x > y ? -1 : 1;
  return i < j ? -1 : i > j;
}

int nd_rep_longest_name(report_t *r, uint32_t stack, sbuf_t *b, size_t *longest) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only = nd_rep_python_only(r, s);
  for (size_t k = 0; k < s->depth; k++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[k])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[k]);
    if (!f) return -1;
    for (size_t j = 0, parts = nd_rep_frame_parts(f); j < parts; j++) {
      nd_rep_frame_name(b, f, j);
      if (b->oom) return -1;
      *longest = b->len > *longest ? b->len : *longest;
    }
  }
  return 0;
}

// Symbolizes every frame of the lines (so that the walks after it never allocate) and makes room
// in `cmp`'s buffers for the longest name. -1 when out of memory.
static int prepare(report_t *r, const line_t *v, size_t n) {
  size_t longest = 0;
  for (size_t i = 0; i < n; i++) {
    if (nd_rep_longest_name(r, v[i].stack, &cmp.a, &longest)) return -1;
  }
  for (int i = 0; i < 2; i++) {
    sbuf_t *b = i ? &cmp.b : &cmp.a;
    b->len = 0;
    while (b->len < longest + 11) sb_put(b, "[no frames]", 11); // room, then emptied
    if (b->oom) return -1;
  }
  return 0;
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
  for (size_t i = 0; i < t->nsites; i++) {
    uint64_t w = nd_rep_site_weight(&t->sites[i].rec, r->o->collapsed_by);
    if (w) v[n++] = (line_t){t->sites[i].stack, w};
  }
  cmp.r = r;
  int rc = prepare(r, v, n);
  if (!rc) {
    qsort(v, n, sizeof *v, by_frames);
    for (size_t i = 0; i < n; i++) {
      if (m && !by_frames(&v[m - 1], &v[i]))
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
      top_lines = v;
      qsort(order, m, sizeof *order, by_weight);
      for (size_t i = 0; i < top; i++) keep[order[i]] = true;
    }
  }
  for (size_t i = 0; !rc && i < m; i++) {
    if (keep && !keep[i]) continue;
    walk_t w;
    nd_rep_walk_init(&w, r, v[i].stack);
    const nd_frame_t *f;
    size_t j;
    for (bool first = true; nd_rep_walk_next(&w, &f, &j); first = false) {
      nd_rep_frame_name(&cmp.a, f, j);
      if (!first) fputc(';', o);
      fputs(cmp.a.p, o);
    }
    fprintf(o, " %llu\n", (unsigned long long)v[i].weight);
  }
  free(order);
  free(keep);
  free(v);
  free(cmp.a.p);
  free(cmp.b.p);
  cmp.a = cmp.b = (sbuf_t){0};
  return rc;
}
