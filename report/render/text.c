// SPDX-License-Identifier: MIT
// text.c: ndmemreport's text report (nd_rep_text_report_80, render.h) through the 80-column
// stream (textwrap.h): the report's order (the summary, the site lists, growth while running,
// what was live at exit, then the workspaces, devices and limits views, each in its own file
// beside this one: text.h), and what they all print with: sizes, counts, stacks.
#include "render/text.h"
#include "analyse/frames.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- formatting helpers

const char *nd_text_size(char *out, uint64_t v, bool est) {
  char h[24]; // "1023.99 EiB" at the most
  nd_rep_human(h, sizeof h, v);
  const char *t = est ? "~" : "";
  if (v < 1024) snprintf(out, ND_TEXT_SIZE, "%s%s", t, h);
  else snprintf(out, ND_TEXT_SIZE, "%s%s (%s%llu B)", t, h, t, (unsigned long long)v);
  return out;
}

void nd_text_bytes(FILE *o, uint64_t v, bool est) {
  char b[ND_TEXT_SIZE];
  fputs(nd_text_size(b, v, est), o);
}

void nd_text_sbytes(FILE *o, int64_t v) {
  if (v < 0) {
    fputc('-', o);
    nd_text_bytes(o, (uint64_t)0 - (uint64_t)v, false);
  } else {
    nd_text_bytes(o, (uint64_t)v, false);
  }
}

const char *nd_text_plural(uint64_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

void nd_text_amount(FILE *o, uint64_t v, bool est, bool most) {
  if (most) fputs("at most ", o);
  nd_text_bytes(o, v, est && !most);
}

// ---------------------------------------------------------------- stacks

void nd_text_pyloc(FILE *o, const char *function, const char *file, uint32_t line) {
  nd_rep_print_text(o, function && *function ? function : "?");
  fputs(" (", o);
  nd_rep_print_text(o, file && *file ? file : "?");
  if (line) fprintf(o, ":%u", line);
  fputc(')', o);
}

// A frame as nd_rep_frame_text names it (merge names frames by the same rule), then one line per
// function the call was inlined into; `b` is scratch. -1 when out of memory.
static int text_frame(FILE *o, const nd_frame_t *f, sbuf_t *b) {
  b->len = 0;
  nd_rep_frame_text(b, f, 0);
  if (b->oom) return -1;
  nd_rep_print_text(o, b->p);
  for (size_t i = 0; !f->python && f->module && i < f->ninlined; i++) {
    b->len = 0;
    nd_rep_loc_text(b, f, &f->inlined_into[i], 0);
    if (b->oom) return -1;
    fputs("\n          inlined into ", o);
    nd_rep_print_text(o, b->p);
  }
  return 0;
}

int nd_text_place(FILE *o, report_t *r, uint32_t stack, bool always) {
  nd_rep_place_t p;
  if (nd_rep_place(r, stack, &p)) return -1;
  const nd_stack_t *s = &r->t->stacks[stack];
  long first = nd_rep_python_only(r, s) ? nd_rep_py_innermost(r->t, s) : 0;
  if (!p.own || (!always && p.own_at == first)) return 0; // the stack's first line names it
  sbuf_t b = {0};
  if (nd_rep_place_text(&b, &p)) return -1;
  fputs("      at ", o); // wrapped at 80 columns, unlike the frames: it names two of them
  nd_rep_print_text(o, b.p);
  fputc('\n', o);
  free(b.p);
  return 0;
}

int nd_text_stack(FILE *o, report_t *r, uint32_t stack) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only;
  size_t show, n = nd_rep_frames_shown(r, s, &py_only, &show);
  if (!n) fputs("      (no frames)\n", o);
  nd_wrap_raw(o, r->wrap, true); // frames whole
  sbuf_t b = {0};
  for (size_t i = 0, k = 0; k < show; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    fprintf(o, "      #%-2zu ", k++);
    if (!f || text_frame(o, f, &b)) {
      free(b.p);
      return -1;
    }
    fputc('\n', o);
  }
  free(b.p);
  nd_wrap_raw(o, r->wrap, false);
  if (show < n) fprintf(o, "      (%zu more frames)\n", n - show);
  return 0;
}

int nd_text_placed_stack(FILE *o, report_t *r, uint32_t stack) {
  return nd_text_place(o, r, stack, false) ? -1 : nd_text_stack(o, r, stack);
}

// ---------------------------------------------------------------- the report's order

// What a site list ranks by: its first line shows that figure, the second the others.
enum rank_by { BY_PEAK, BY_TOTAL, BY_LIVE };

static void text_allocs(FILE *o, const nd_rec_site_t *x, const char *e) {
  fprintf(o, "%s%llu %s, %s%llu freed", e, (unsigned long long)x->allocs,
          nd_text_plural(x->allocs, "allocation", "allocations"), e, (unsigned long long)x->frees);
}

// `same`: the rank of this site in the by-peak list shown above (its stack is not repeated), or 0.
// The first line the figure ranked by, the second the site's place (the program's line, where
// the stack's first frame is not it), then the other figures and the stack.
static int text_site(FILE *o, report_t *r, size_t rank, uint32_t si, enum rank_by by,
                     size_t same) {
  const nd_site_t *s = &r->t->sites[si];
  const nd_rec_site_t *x = &s->rec;
  bool est = x->flags & ND_SITE_SAMPLED;
  const char *e = est ? "~" : "";
  uint64_t untouched = nd_rep_site_untouched(s); // version 18: a mapping's pages never touched
  fprintf(o, "#%-3zu %-8s %s ", rank, nd_rep_kind_names[x->kind],
          by == BY_PEAK ? (untouched ? "peak touched" : "peak") : by == BY_TOTAL ? "total" : "live");
  nd_text_bytes(o, by == BY_PEAK    ? nd_rep_site_peak_touched(s)
                   : by == BY_TOTAL ? x->alloc_bytes
                                    : nd_rep_site_live(x),
                est);
  fprintf(o, "  [stack %u]\n", x->stack_id);
  if (nd_text_place(o, r, s->stack, same != 0)) return -1;
  fputs("      ", o);
  if (by == BY_PEAK) {
    fputs("total ", o);
    nd_text_bytes(o, x->alloc_bytes, est);
    fputs(" in ", o);
    text_allocs(o, x, e);
    fputs("; live ", o);
    nd_text_bytes(o, nd_rep_site_live(x), est);
    if (untouched) nd_text_untouched(o, x->peak_live_bytes, untouched);
  } else if (by == BY_TOTAL) {
    text_allocs(o, x, e);
    fputs("; peak ", o);
    nd_text_bytes(o, x->peak_live_bytes, est);
    fputs(", live ", o);
    nd_text_bytes(o, nd_rep_site_live(x), est);
  } else {
    fputs("peak ", o);
    nd_text_bytes(o, x->peak_live_bytes, est);
    fputs(", total ", o);
    nd_text_bytes(o, x->alloc_bytes, est);
    fputs(" in ", o);
    text_allocs(o, x, e);
  }
  fputc('\n', o);
  if (same) {
    fprintf(o, "      (stack as in #%zu by peak live bytes)\n", same);
    return 0;
  }
  return nd_text_stack(o, r, s->stack);
}

// The sites the shim named growing while the job ran (GROWTH records): the evidence that remains
// when the job did not end normally, and a note of growth that was later released.
static int text_growth(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  size_t n = nd_rep_list_len(r, t->ngrowth);
  uint64_t all = t->ngrowth + t->growth_dropped;
  fprintf(o, "\n== found growing while the job ran: %llu %s\n", (unsigned long long)all,
          nd_text_plural(all, "site", "sites"));
  for (size_t i = 0; i < n; i++) {
    const nd_rec_growth_t *g = &t->growth[i].rec;
    nd_rep_growth_t x = nd_rep_growth(t, g);
    fprintf(o, "#%-3zu %-8s ", i + 1, nd_rep_kind_names[g->kind]);
    nd_text_amount(o, x.base, x.est, x.most_base);
    fputs(" -> ", o);
    nd_text_amount(o, x.lowest, x.est, x.most_floor);
    fprintf(o, " at its lowest  [stack %u]\n      ", g->stack_id);
    if (g->cycle > g->base_cycle)
      fprintf(o, "cycles %llu to %llu", (unsigned long long)g->base_cycle,
              (unsigned long long)g->cycle);
    else
      fputs("no cycles", o);
    fputs(", named at ", o);
    nd_rep_print_secs(o, nd_rep_since_start(t, g->mono_ns));
    fprintf(o, "; rose in %llu flush windows\n", (unsigned long long)g->rises);
    if (nd_text_placed_stack(o, r, t->growth[i].stack))
      return -1;
  }
  return 0;
}

// One group of the Python lines, py_lines[from .. from + count): `program` the program's own.
// Each entry's first line under its figures is the place of its largest site (the program's line,
// the library function it went through: autograd's backward reads as called by train.py:35),
// where that names more than the line itself, then the line in full.
static int text_py_group(FILE *o, report_t *r, size_t from, size_t count, bool program) {
  size_t n = nd_rep_list_len(r, count);
  fprintf(o, "\n== top %zu Python lines %s by total bytes (of %zu %s)\n", n,
          program ? "of the program" : "in libraries", count,
          nd_text_plural(count, "line", "lines"));
  if (n)
    fputs(program ? "   (each with what the library code it called allocated; \"at\": its largest site)\n"
                  : "   (the innermost Python frame in an installed package or the standard library;\n"
                    "   \"at\": its largest site, from the program's line)\n",
          o);
  for (size_t i = 0; i < n; i++) {
    const py_line_t *l = &r->py_lines[from + i];
    const char *e = l->est ? "~" : "";
    fprintf(o, "#%-3zu total ", i + 1);
    nd_text_bytes(o, l->alloc_bytes, l->est);
    fprintf(o, "  [%llu %s]\n", (unsigned long long)l->sites,
            nd_text_plural(l->sites, "site", "sites"));
    nd_rep_place_t p;
    if (nd_rep_place(r, r->t->sites[l->top_site].stack, &p)) return -1;
    if (p.own && p.lib) { // the line and the frame beside it (wrapped, as every place line)
      sbuf_t b = {0};
      if (nd_rep_place_text(&b, &p)) return -1;
      fputs("      at ", o);
      nd_rep_print_text(o, b.p);
      fputs(l->others_differ ? " (and elsewhere)\n" : "\n", o);
      free(b.p);
    }
    nd_wrap_raw(o, r->wrap, true); // the line whole, as the frame it is
    fputs("      #0  ", o);
    nd_text_pyloc(o, l->code->qualname, l->code->filename, l->line);
    fputc('\n', o);
    nd_wrap_raw(o, r->wrap, false);
    fprintf(o, "      %s%llu %s; live ", e, (unsigned long long)l->allocs,
            nd_text_plural(l->allocs, "allocation", "allocations"));
    nd_text_bytes(o, l->live_bytes, l->est);
    fputc('\n', o);
  }
  return 0;
}

// The sites grouped by Python line (version 7), by bytes allocated: the program's own lines, then
// the libraries' (analyse.h, py_line_t).
static int text_py_lines(FILE *o, report_t *r) {
  if (r->npy_program && text_py_group(o, r, 0, r->npy_program, true)) return -1;
  size_t lib = r->npy_lines - r->npy_program;
  return lib ? text_py_group(o, r, r->npy_program, lib, false) : 0;
}

// The summary, the site lists (unless brief), and the leaks or, without a normal exit, the sites
// live at the last flush.
static int text_main(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (nd_rep_text_summary(o, r)) return -1;
  if (!r->o->brief) {
    size_t n = nd_rep_list_len(r, t->nsites);
    fprintf(o, "\n== top %zu allocation sites by peak live bytes (of %zu sites)\n", n, t->nsites);
    for (size_t i = 0; i < n; i++)
      if (text_site(o, r, i + 1, r->by_peak[i], BY_PEAK, 0)) return -1;
    fprintf(o, "\n== top %zu allocation sites by total bytes (of %zu sites)\n", n, t->nsites);
    uint32_t *peak_rank = calloc(t->nsites ? t->nsites : 1, sizeof *peak_rank);
    if (!peak_rank) return -1;
    for (size_t i = 0; i < n; i++) peak_rank[r->by_peak[i]] = (uint32_t)i + 1;
    for (size_t i = 0; i < n; i++) {
      if (text_site(o, r, i + 1, r->by_total[i], BY_TOTAL, peak_rank[r->by_total[i]])) {
        free(peak_rank);
        return -1;
      }
    }
    free(peak_rank);
    if (r->npy_lines && text_py_lines(o, r)) return -1;
  }
  if (t->ngrowth && text_growth(o, r)) return -1;
  if (nd_rep_leaks_known(t)) {
    return nd_text_lifetimes(o, r);
  } else {
    size_t n = nd_rep_list_len(r, r->nlive);
    fputs(nd_rep_exec_end(t) ? "\n== live at the exec (the process went on as another program, so "
                               "leaks are not judged): "
                             : "\n== live at the last flush (no normal exit, so leaks are unknown): ",
          o);
    nd_text_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " in %zu %s", r->nlive, nd_text_plural(r->nlive, "site", "sites"));
    if (n < r->nlive) fprintf(o, "; top %zu", n);
    fputc('\n', o);
    for (size_t i = 0; i < n; i++)
      if (text_site(o, r, i + 1, r->live[i], BY_LIVE, 0)) return -1;
  }
  return 0;
}

static int text_report(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (r->o->workspaces || r->o->limits) {
    fputs("== summary\n", o);
    nd_text_trace_line(o, t);
    if (r->o->workspaces) {
      if (t->nws || nd_rep_esc_records(t)) nd_text_ws_line(o, r);
      else fprintf(o, "  %-10s  none recorded\n", "workspaces");
      nd_text_ws_effect_line(o, r, "resident"); // version 10: what they did to resident memory
      nd_text_ws_retention_line(o, r, true);
      nd_text_ws_saving_line(o, r);
    }
    if (r->o->limits) {
      if (nd_rep_has_limits(t)) nd_text_limits_line(o, t);
      else fprintf(o, "  %-10s  none recorded\n", "limits");
    }
    if (r->o->workspaces && nd_text_workspaces(o, r)) return -1;
    return r->o->limits && nd_rep_has_limits(t) ? nd_text_limits(o, r, true) : 0;
  }
  if (text_main(o, r) || nd_text_workspaces(o, r)) return -1;
  if (nd_rep_has_devices(t) && !r->o->brief && nd_text_devices(o, r)) return -1;
  return nd_rep_has_limits(t) ? nd_text_limits(o, r, !r->o->brief) : 0;
}

// The text report through the 80-column stream (as it is where that cannot be made).
int nd_rep_text_report_80(FILE *out, report_t *r) {
  FILE *o = nd_wrap_open(out, &r->wrap);
  if (!o) return text_report(out, r);
  int rc = text_report(o, r);
  fclose(o); // a write error shows on `out`, which the caller checks
  r->wrap = NULL;
  return rc;
}
