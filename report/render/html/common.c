// SPDX-License-Identifier: MIT
// common.c: what the HTML report's sections share (html.h): sizes with their exact bytes as a
// title, a site named by its place, a stack as a list of frames, each site's
// lifetime class. Every string from the trace goes through nd_html_esc (render/escape.c).
#include "render/html/html.h"

#include "analyse/flame.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- units

// "28.23 MiB" with the exact bytes as its title; `est` prefixes '~'.
const char *nd_html_size(char *out, uint64_t v, bool est) {
  char h[48];
  nd_rep_human(h, sizeof h, v);
  snprintf(out, ND_HTML_SIZE, "<span title=\"%llu B\">%s%s</span>", (unsigned long long)v,
           est ? "~" : "", h);
  return out;
}

void nd_html_bytes(FILE *o, uint64_t v, bool est) {
  char b[ND_HTML_SIZE];
  fputs(nd_html_size(b, v, est), o);
}

// An estimate capped at a bound the exact counters prove (lifetime.h): "at most", no "~".
void nd_html_amount(FILE *o, uint64_t v, bool est, bool most) {
  if (est && most) fputs("at most ", o);
  nd_html_bytes(o, v, est && !most);
}

// ---------------------------------------------------------------- sites by name

// As esc, for at most `max` bytes of s (cut at a character, '...' after a cut).
void nd_html_esc_max(FILE *o, const char *s, size_t max) {
  size_t n = strlen(s);
  if (n <= max) {
    nd_html_esc(o, s);
    return;
  }
  char b[ND_HTML_LEGEND_NAME + 1];
  if (max > ND_HTML_LEGEND_NAME) max = ND_HTML_LEGEND_NAME;
  while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80) max--; // not inside a character
  memcpy(b, s, max);
  b[max] = 0;
  nd_html_esc(o, b);
  fputs("...", o);
}

// A site named by its place (analyse/place.h): the program's own innermost frame first, the
// library frame beside it, cut at ND_HTML_LEGEND_NAME bytes. -1 when out of memory.
int nd_html_site_label(FILE *o, report_t *r, uint32_t stack) {
  nd_rep_place_t p;
  if (nd_rep_place(r, stack, &p)) return -1;
  sbuf_t b = {0};
  if (nd_rep_place_text(&b, &p)) return -1;
  nd_html_esc_max(o, b.p, ND_HTML_LEGEND_NAME);
  free(b.p);
  return 0;
}

// Whether stack `s` has a native frame named `fn`.
static bool has_function(report_t *r, uint32_t s, const char *fn) {
  const nd_stack_t *x = &r->t->stacks[s];
  const uint64_t *ips = nd_stack_frames(r->t, x);
  for (size_t i = 0; i < x->depth; i++) {
    if (nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (f && f->at.function && !strcmp(f->at.function, fn)) return true;
  }
  return false;
}

int nd_html_labels(report_t *r, const uint32_t *stacks, size_t n, char ***labels) {
  char **v = calloc(n ? n : 1, sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < n; i++) {
    nd_rep_place_t p;
    sbuf_t b = {0};
    if (nd_rep_place(r, stacks[i], &p) || nd_rep_place_text(&b, &p)) {
      nd_html_labels_free(v, n);
      return -1;
    }
    v[i] = b.p;
  }
  *labels = v;
  return 0;
}

void nd_html_labels_free(char **labels, size_t n) {
  for (size_t i = 0; labels && i < n; i++) free(labels[i]);
  free(labels);
}

// Past this many rows of one label, a row is told apart by its stack id alone: the search for a
// function that none of the others has grows with the square of their number.
#define APART_MAX_TWINS 8

int nd_html_site_label_apart(FILE *o, report_t *r, const uint32_t *stacks, char **labels,
                             size_t n, size_t i) {
  nd_html_esc_max(o, labels[i], ND_HTML_LEGEND_NAME);
  size_t twins = 0;
  for (size_t j = 0; j < n; j++) twins += j != i && stacks[j] != stacks[i] &&
                                          !strcmp(labels[j], labels[i]);
  if (!twins) return 0;
  const nd_stack_t *x = &r->t->stacks[stacks[i]];
  const uint64_t *ips = nd_stack_frames(r->t, x);
  for (size_t k = 0; twins <= APART_MAX_TWINS && k < x->depth; k++) { // innermost first
    if (nd_trace_is_pyframe(r->t, ips[k])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[k]);
    if (!f) return -1;
    if (!f->at.function || nd_flame_runtime_module(f->module ? f->module : "")) continue;
    bool shared = false; // by a row of the same label: then it does not tell this one apart
    for (size_t j = 0; j < n && !shared; j++)
      shared = j != i && stacks[j] != stacks[i] && !strcmp(labels[j], labels[i]) &&
               has_function(r, stacks[j], f->at.function);
    if (shared) continue;
    char fn[49]; // without a C++ function's parameters; 48 bytes at the most (cut at a character)
    size_t len = strcspn(f->at.function, "(");
    if (len > 48) {
      len = 48;
      while (len > 0 && ((unsigned char)f->at.function[len] & 0xc0) == 0x80) len--;
    }
    memcpy(fn, f->at.function, len);
    fn[len] = 0;
    fputs(" <span class=\"at\">· via ", o);
    nd_html_esc(o, fn);
    fputs("</span>", o);
    return 0;
  }
  fprintf(o, " <span class=\"at\">· stack %u</span>", x->id);
  return 0;
}

// ---------------------------------------------------------------- stacks and sites

static void html_loc(FILE *o, const nd_loc_t *l, const nd_frame_t *f) {
  if (l->function) {
    fputs("<b>", o);
    nd_html_esc(o, l->function);
    fputs("</b> ", o);
  }
  fputs("<span class=\"at\">", o);
  if (l->file) {
    nd_html_esc(o, l->file);
    fprintf(o, ":%d", l->line);
  } else {
    nd_html_esc(o, f->module);
    fprintf(o, "+0x%llx", (unsigned long long)f->offset);
  }
  fputs("</span>", o);
}

// One frame as a list item: a Python frame's function and file:line, a native one's location
// and the functions it was inlined into, or its address where no module holds it.
static void html_frame(FILE *o, const nd_frame_t *f) {
  fputs("<li>", o);
  if (f->python) {
    fputs("<b>", o);
    nd_html_esc(o, f->at.function ? f->at.function : "?");
    fputs("</b> <span class=\"at\">", o);
    nd_html_esc(o, f->at.file ? f->at.file : "?");
    if (f->at.line) fprintf(o, ":%d", f->at.line);
    fputs("</span> <i>py</i>", o);
  } else if (!f->module && f->at.function) { // the mark of native frames cut at NDMEM_DEPTH
    fputs("<i>", o);
    nd_html_esc(o, f->at.function);
    fputs("</i>", o);
  } else if (!f->module) {
    fprintf(o, "0x%llx", (unsigned long long)f->ip);
  } else {
    html_loc(o, &f->at, f);
    for (size_t j = 0; j < f->ninlined; j++) {
      fputs("<br>inlined into ", o);
      html_loc(o, &f->inlined_into[j], f);
    }
  }
  fputs("</li>", o);
}

// A stack's frames as a list (--frames of them; --python-only as in text).
int nd_html_stack(FILE *o, report_t *r, uint32_t stack) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only;
  size_t show, n = nd_rep_frames_shown(r, s, &py_only, &show);
  if (!n) {
    fputs("<span class=\"note\">(no frames)</span>", o);
    return 0;
  }
  fputs("<ol class=\"stack\" start=\"0\">", o);
  for (size_t i = 0, k = 0; k < show; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    k++;
    html_frame(o, f);
  }
  fputs("</ol>", o);
  if (show < n) fprintf(o, "<span class=\"note\">(%zu more frames)</span>", n - show);
  return 0;
}

// Every frame, innermost first, for the flame graph's panel: the full stack whatever --frames
// says (--python-only still applies, as in every stack the page shows).
int nd_html_stack_all(FILE *o, report_t *r, uint32_t stack) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only = nd_rep_python_only(r, s);
  if (!s->depth) {
    fputs("<li>(no frames)</li>", o);
    return 0;
  }
  for (size_t i = 0; i < s->depth; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    html_frame(o, f);
  }
  return 0;
}

int *nd_html_site_classes(const report_t *r) {
  const nd_trace_t *t = r->t;
  int *c = malloc((t->nsites ? t->nsites : 1) * sizeof *c);
  if (!c) return NULL;
  for (size_t i = 0; i < t->nsites; i++) c[i] = -1;
  if (!nd_rep_leaks_known(t)) return c;
  for (size_t i = 0; i < r->life.n; i++) {
    const nd_life_t *e = &r->life.v[i];
    if (e->site >= 0 && (size_t)e->site < t->nsites) c[e->site] = e->cls;
  }
  return c;
}
