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

int nd_rep_frame_names(report_t *r, uint32_t stack, char ***names, size_t *n) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only = nd_rep_python_only(r, s);
  size_t cap = 0, k = 0;
  for (size_t i = 0; i < s->depth; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    cap += 1 + (f->module && !f->python ? f->ninlined : 0);
  }
  char **v = calloc(cap ? cap : 1, sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < s->depth; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) goto oom;
    size_t parts = 1 + (f->module && !f->python ? f->ninlined : 0);
    for (size_t j = 0; j < parts; j++) {
      sbuf_t b = {0};
      if (f->python) {
        sb_name(&b, f->at.function && *f->at.function ? f->at.function : "?");
        sb_put(&b, " (", 2);
        sb_name(&b, f->at.file && *f->at.file ? f->at.file : "?");
        if (f->at.line) sb_fmt(&b, ":%d", f->at.line);
        sb_put(&b, ")", 1);
      } else if (!f->module) {
        sb_fmt(&b, "0x%llx", (unsigned long long)f->ip);
      } else {
        sb_loc(&b, j ? &f->inlined_into[j - 1] : &f->at, f);
      }
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

// A site's line before its weight: the frames outermost first, or "[no frames]".
static char *collapsed_stack(report_t *r, uint32_t stack) {
  char **names;
  size_t n;
  if (nd_rep_frame_names(r, stack, &names, &n)) return NULL;
  sbuf_t b = {0};
  if (!n) sb_put(&b, "[no frames]", 11);
  for (size_t i = n; i-- > 0;) {
    sb_put(&b, names[i], strlen(names[i]));
    if (i) sb_put(&b, ";", 1);
  }
  nd_rep_free_names(names, n);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

typedef struct line {
  char *stack;
  uint64_t weight;
} line_t;

static int by_stack(const void *a, const void *b) {
  return strcmp(((const line_t *)a)->stack, ((const line_t *)b)->stack);
}

// Every site of weight > 0, its line; lines with the same frames (the same stack under two kinds,
// or, with --python-only, two stacks with the same Python frames) are one line, their weights
// summed. Sorted by the frames, as the stackcollapse scripts print them.
int nd_rep_collapsed_report(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  line_t *v = malloc((t->nsites ? t->nsites : 1) * sizeof *v);
  if (!v) return -1;
  size_t n = 0;
  int rc = 0;
  for (size_t i = 0; i < t->nsites; i++) {
    uint64_t w = nd_rep_site_weight(&t->sites[i].rec, r->o->collapsed_by);
    if (!w) continue;
    if (!(v[n].stack = collapsed_stack(r, t->sites[i].stack))) {
      rc = -1;
      break;
    }
    v[n++].weight = w;
  }
  if (!rc) {
    qsort(v, n, sizeof *v, by_stack);
    for (size_t i = 0; i < n;) {
      uint64_t w = 0;
      size_t j = i;
      for (; j < n && !strcmp(v[j].stack, v[i].stack); j++) w = nd_rep_sat_add(w, v[j].weight);
      fprintf(o, "%s %llu\n", v[i].stack, (unsigned long long)w);
      i = j;
    }
  }
  for (size_t i = 0; i < n; i++) free(v[i].stack);
  free(v);
  return rc;
}
