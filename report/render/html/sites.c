// SPDX-License-Identifier: MIT
// sites.c: the HTML report's sites (html.h): the top sites by peak and by total with their
// stacks, the top Python lines, and growth: the sites found growing while the job ran and what
// was live at exit by class, as the text report lists them.
#include "render/html/html.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- sites

// One site list: by peak (stacks shown) or by total (a site already listed by peak links there).
// Each row names its site by its place first (the program's line, the library frame beside it),
// told apart from another row of the same place by what differs, then its stack.
int nd_html_sites(FILE *o, report_t *r, const uint32_t *order, size_t n, const char *title,
                      const char *id, const uint32_t *peak_rank) {
  const nd_trace_t *t = r->t;
  fprintf(o, "<h2 id=\"%s\">%s</h2>\n", id, title);
  if (!n) {
    fputs("<p>No sites.</p>\n", o);
    return 0;
  }
  uint32_t *stacks = malloc(n * sizeof *stacks);
  if (!stacks) return -1;
  for (size_t i = 0; i < n; i++) stacks[i] = t->sites[order[i]].stack;
  char **labels;
  if (nd_html_labels(r, stacks, n, &labels)) {
    free(stacks);
    return -1;
  }
  fputs("<table>\n<tr><th>#</th><th>kind</th><th>peak live</th><th>total</th>"
        "<th>allocations</th><th>freed</th><th>live</th><th>site</th></tr>\n",
        o);
  for (size_t i = 0; i < n; i++) {
    const nd_site_t *s = &t->sites[order[i]];
    const nd_rec_site_t *x = &s->rec;
    bool est = x->flags & ND_SITE_SAMPLED;
    if (peak_rank) fputs("<tr>", o);
    else fprintf(o, "<tr id=\"peak-%zu\">", i + 1);
    fprintf(o, "<td>%zu</td><td>%s</td><td class=\"n\">", i + 1, nd_rep_kind_names[x->kind]);
    nd_html_bytes(o, x->peak_live_bytes, est);
    fputs("</td><td class=\"n\">", o);
    nd_html_bytes(o, x->alloc_bytes, est);
    fprintf(o, "</td><td class=\"n\">%s%llu</td><td class=\"n\">%s%llu</td><td class=\"n\">",
            est ? "~" : "", (unsigned long long)x->allocs, est ? "~" : "",
            (unsigned long long)x->frees);
    nd_html_bytes(o, nd_rep_site_live(x), est);
    fputs("</td><td class=\"site\"><b>", o);
    if (nd_html_site_label_apart(o, r, stacks, labels, n, i)) {
      nd_html_labels_free(labels, n);
      free(stacks);
      return -1;
    }
    fprintf(o, "</b><br>stack %u ", x->stack_id);
    if (peak_rank && peak_rank[order[i]]) {
      fprintf(o, "(as in <a href=\"#peak-%u\">#%u by peak</a>)", peak_rank[order[i]],
              peak_rank[order[i]]);
    } else if (nd_html_stack(o, r, s->stack)) {
      nd_html_labels_free(labels, n);
      free(stacks);
      return -1;
    }
    fputs("</td></tr>\n", o);
  }
  nd_html_labels_free(labels, n);
  free(stacks);
  fputs("</table>\n", o);
  return 0;
}

// ---------------------------------------------------------------- Python lines

// The sites grouped by Python line (version 7), the program's lines first: the text report's view
// of them, its two groups in one table ("whose").
void nd_html_py_lines(FILE *o, const report_t *r) {
  if (!r->npy_lines) return;
  size_t own, n = nd_rep_py_lines_shown(r, &own);
  fprintf(o, "<h2 id=\"python\">Top %zu Python lines by total bytes (of %zu)</h2>\n"
             "<p>The program's lines first, each with what the library code it called "
             "allocated; then the libraries' lines that allocated.</p>\n<table>\n"
             "<tr><th>#</th><th>total</th><th>sites</th><th>allocations</th><th>live</th>"
             "<th>whose</th><th>line</th></tr>\n",
          n, r->npy_lines);
  for (size_t i = 0; i < n; i++) {
    const py_line_t *l = &r->py_lines[i < own ? i : r->npy_program + i - own];
    fprintf(o, "<tr><td>%zu</td><td class=\"n\">", i < own ? i + 1 : i - own + 1);
    nd_html_bytes(o, l->alloc_bytes, l->est);
    fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">%s%llu</td><td class=\"n\">",
            (unsigned long long)l->sites, l->est ? "~" : "", (unsigned long long)l->allocs);
    nd_html_bytes(o, l->live_bytes, l->est);
    fputs(l->program ? "</td><td>program</td><td><b>" : "</td><td>library</td><td><b>", o);
    nd_html_esc(o, l->code->qualname && *l->code->qualname ? l->code->qualname : "?");
    fputs("</b> <span class=\"at\">", o);
    nd_html_esc(o, l->code->filename && *l->code->filename ? l->code->filename : "?");
    if (l->line) fprintf(o, ":%u", l->line);
    fputs("</span></td></tr>\n", o);
  }
  fputs("</table>\n", o);
}

// ---------------------------------------------------------------- growth and leaks

int nd_html_growth(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("<h2 id=\"growth\">Growth and memory live at exit</h2>\n", o);
  if (t->ngrowth) {
    size_t n = nd_rep_list_len(r, t->ngrowth);
    fprintf(o, "<h3>Found growing while the job ran: %llu %s</h3>\n<table>\n<tr><th>#</th>"
               "<th>kind</th><th>from</th><th>to (lowest)</th><th>cycles</th><th>named at</th>"
               "<th>rose in windows</th><th>stack</th></tr>\n",
            (unsigned long long)(t->ngrowth + t->growth_dropped),
            t->ngrowth + t->growth_dropped == 1 ? "site" : "sites");
    for (size_t i = 0; i < n; i++) {
      const nd_rec_growth_t *g = &t->growth[i].rec;
      nd_rep_growth_t x = nd_rep_growth(t, g);
      fprintf(o, "<tr><td>%zu</td><td>%s</td><td class=\"n\">", i + 1, nd_rep_kind_names[g->kind]);
      nd_html_amount(o, x.base, x.est, x.most_base);
      fputs("</td><td class=\"n\">", o);
      nd_html_amount(o, x.lowest, x.est, x.most_floor);
      if (g->cycle > g->base_cycle)
        fprintf(o, "</td><td>%llu to %llu</td><td>", (unsigned long long)g->base_cycle,
                (unsigned long long)g->cycle);
      else
        fputs("</td><td>none</td><td>", o);
      nd_rep_print_secs(o, nd_rep_since_start(t, g->mono_ns));
      fprintf(o, "</td><td class=\"n\">%llu</td><td>stack %u ", (unsigned long long)g->rises,
              g->stack_id);
      if (nd_html_stack(o, r, t->growth[i].stack)) return -1;
      fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  if (!nd_rep_leaks_known(t)) {
    fputs(nd_rep_exec_end(t)
              ? "<p>The process exec'd another program: what was live then is not judged (the "
                "summary gives what the sites held at the exec).</p>\n"
              : "<p>No normal exit: what was live at exit is unknown (the summary gives what the "
                "sites held at the last flush).</p>\n",
          o);
    return 0;
  }
  const nd_lifetimes_t *l = &r->life;
  if (!l->n) {
    fputs("<p>Nothing was live at exit.</p>\n", o);
    return 0;
  }
  fputs("<table>\n<tr><th>class</th><th>kind</th><th>bytes</th><th>blocks</th>"
        "<th>evidence</th><th>stack</th></tr>\n",
        o);
  size_t at = 0;
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    size_t n = l->entries[c], shown = nd_rep_list_len(r, n);
    if (nd_life_folded(c)) shown = 0; // totals only, as in text
    if (n && !shown) {
      fprintf(o, "<tr><td>%s</td><td></td><td class=\"n\">", nd_life_names[c]);
      nd_html_amount(o, l->bytes[c], l->est[c], l->most_bytes[c]);
      fprintf(o, "</td><td class=\"n\">%s%llu</td><td>%zu %s</td><td></td></tr>\n",
              l->most_blocks[c] ? "at most " : l->est[c] ? "~" : "",
              (unsigned long long)l->blocks[c], n, n == 1 ? "stack" : "stacks");
    }
    for (size_t i = 0; i < shown; i++) {
      const nd_life_t *e = &l->v[at + i];
      bool est = e->samples > 0;
      fprintf(o, "<tr><td>%s</td><td>%s</td><td class=\"n\">", nd_life_names[c],
              nd_rep_kind_names[e->kind]);
      nd_html_amount(o, e->bytes, est, e->most_bytes);
      fprintf(o, "</td><td class=\"n\">%s%llu</td><td>",
              est && e->most_blocks ? "at most " : est ? "~" : "",
              (unsigned long long)e->blocks);
      if (e->cls == ND_LIFE_GROWING || e->cls == ND_LIFE_TEARDOWN) {
        fputs("+", o); // growth is capped with the bytes it is part of
        if (e->cycles) {
          nd_html_amount(o, e->grew / e->cycles, est, e->most_grew);
          fprintf(o, " per cycle over %llu cycles", (unsigned long long)e->cycles);
        } else {
          nd_html_amount(o, e->grew, est, e->most_grew);
          fputs(" during the run", o);
        }
        if (e->cls == ND_LIFE_TEARDOWN) fputs("; freed only at exit", o);
      } else {
        if (e->cls == ND_LIFE_CACHE) { // its plateau (lifetime.c)
          fputs("reached ", o);
          nd_html_bytes(o, e->flat_bytes, false);
          fprintf(o, " by cycle %llu of %llu, flat since: %llu cycles",
                  (unsigned long long)e->flat_from, (unsigned long long)l->cycles,
                  (unsigned long long)e->flat_cycles);
          if (e->flat_windows)
            fprintf(o, ", %llu flush windows", (unsigned long long)e->flat_windows);
          fputs("; ", o);
        }
        fprintf(o, "births %.0f-%.0f %% of the run", e->born_first * 100, e->born_last * 100);
      }
      if (e->flagged) fputs("; flagged while running", o);
      fprintf(o, "</td><td>stack %u ", r->t->stacks[e->stack].id);
      if (nd_html_stack(o, r, e->stack)) return -1;
      fputs("</td></tr>\n", o);
    }
    at += n;
  }
  fputs("</table>\n", o);
  // As the text report says it: the blocks without a record of their own (small blocks are
  // sampled; the entries above scale the sample), of which `untracked` are in no estimate
  if (l->unrecorded_blocks) { // the blocks --fail-on-leak cannot check (load.c)
    fprintf(o, "<p>Small blocks are sampled: only the sampled ones have a record, and the entries "
               "above scale them (~). %llu heap %s live at exit (at most ",
            (unsigned long long)l->unrecorded_blocks,
            l->unrecorded_blocks == 1 ? "block" : "blocks");
    nd_html_bytes(o, l->unrecorded_bytes, false);
    fprintf(o, ") had no record of %s own; %llu of them %s in no entry above. --fail-on-leak "
               "cannot check them (exit status 3).</p>\n",
            l->unrecorded_blocks == 1 ? "its" : "their", (unsigned long long)l->untracked_blocks,
            l->untracked_blocks == 1 ? "is" : "are");
  } else if (l->untracked_blocks) {
    fprintf(o, "<p>Untracked: %llu small %s live at exit in no entry above (sampled).</p>\n",
            (unsigned long long)l->untracked_blocks, l->untracked_blocks == 1 ? "block" : "blocks");
  }
  return 0;
}
