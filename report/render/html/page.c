// SPDX-License-Identifier: MIT
// page.c: ndmemreport's HTML report (nd_rep_html_report, render.h): one self-contained
// page, readable offline with no network or font, and with scripts off: the first screen
// (glance.c), the flame graphs (flamegraphs.c), memory over time
// (timeline.c), then the details: the text summary's facts as a table, the top sites
// with their stacks, the top Python lines, growth and what was live at exit, the workspaces,
// device memory, and the limits with each snapshot's sites. The inline script
// (assets.c) only adds zoom, search, the stack panel and the timeline's cursor to
// what the server-rendered SVG and tables already show. Every string from the trace is
// HTML-escaped to strict UTF-8 (nd_html_esc).
#include "render/html/html.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- units

// "28.23 MiB" with the exact bytes as its title; `est` prefixes '~'.
void nd_html_bytes(FILE *o, uint64_t v, bool est) {
  char h[48];
  nd_rep_human(h, sizeof h, v);
  fprintf(o, "<span title=\"%llu B\">%s%s</span>", (unsigned long long)v, est ? "~" : "", h);
}

// An estimate capped at a bound the exact counters prove (lifetime.h): "at most", no "~".
void nd_html_amount(FILE *o, uint64_t v, bool est, bool most) {
  if (est && most) fputs("at most ", o);
  nd_html_bytes(o, v, est && !most);
}

// ---------------------------------------------------------------- summary

// The text summary, rendered by text.c into memory and laid out as a table: its lines are
// "  KEY<pad>  VALUE", a line with an empty key continues the row above. One source of facts for
// both formats.
static int html_summary(FILE *o, report_t *r) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return -1;
  nd_rep_text_summary(m, r);
  if (fclose(m)) {
    free(buf);
    return -1;
  }
  fputs("<h2 id=\"summary\">Summary</h2>\n<table class=\"kv\">\n", o);
  bool open = false;
  for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (strncmp(line, "  ", 2)) continue; // the "== summary" heading
    size_t klen = strlen(line) > 12 ? 10 : 0;
    char key[16] = "";
    if (klen) {
      memcpy(key, line + 2, 10);
      key[10] = 0;
      for (int i = 9; i >= 0 && key[i] == ' '; i--) key[i] = 0;
    }
    const char *val = line + (klen ? 12 : 2);
    while (*val == ' ') val++;
    if (!key[0] && open) {
      fputs("<br>", o);
    } else {
      if (open) fputs("</td></tr>\n", o);
      fputs("<tr><th>", o);
      nd_html_esc(o, key);
      fputs("</th><td>", o);
      open = true;
    }
    nd_html_esc(o, val);
  }
  if (open) fputs("</td></tr>\n", o);
  fputs("</table>\n", o);
  free(buf);
  return 0;
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

// A site named by its first useful frame: its stack's innermost Python frame where it has one,
// else its innermost frame outside the runtimes (runtime_module) with a function name, else with
// a module, else outside every module, else frame #0; a function, else module+0xOFF (the
// module's base name), else the address. -1 when out of memory.
int nd_html_site_label(FILE *o, report_t *r, uint32_t stack) {
  const nd_trace_t *t = r->t;
  const nd_stack_t *s = &t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(t, s);
  if (!s->depth) {
    fputs("(no frames)", o);
    return 0;
  }
  long py = nd_rep_py_innermost(t, s);
  size_t at = py >= 0 ? (size_t)py : 0;
  const nd_frame_t *f = NULL;
  int best = 0; // of `at`: 3 a function, 2 a module's offset, 1 an address outside every module
  for (size_t i = 0; i < s->depth && py < 0 && best < 3; i++) {
    f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    if (f->module && nd_flame_runtime_module(f->module)) continue;
    int rank = !f->module ? 1 : f->at.function ? 3 : 2;
    if (rank > best) at = i, best = rank;
  }
  f = nd_sym_frame(r->sym, ips[at]);
  if (!f) return -1;
  char b[ND_HTML_LEGEND_NAME + 64];
  if (f->python) {
    nd_html_esc_max(o, f->at.function && *f->at.function ? f->at.function : "?",
                    ND_HTML_LEGEND_NAME);
    fputs(" (", o);
    nd_html_esc_max(o, f->at.file && *f->at.file ? nd_rep_base_name(f->at.file) : "?",
                    ND_HTML_LEGEND_NAME / 2);
    if (f->at.line) fprintf(o, ":%d", f->at.line);
    fputc(')', o);
  } else if (!f->module) {
    fprintf(o, "0x%llx", (unsigned long long)f->ip);
  } else if (f->at.function) {
    nd_html_esc_max(o, f->at.function, ND_HTML_LEGEND_NAME);
  } else {
    nd_html_esc_max(o, nd_rep_base_name(f->module), ND_HTML_LEGEND_NAME / 2);
    snprintf(b, sizeof b, "+0x%llx", (unsigned long long)f->offset);
    fputs(b, o);
  }
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
  bool py_only = nd_rep_python_only(r, s);
  size_t n = 0;
  for (size_t i = 0; i < s->depth; i++) n += !py_only || nd_trace_is_pyframe(r->t, ips[i]);
  size_t show = r->o->frames && r->o->frames < n ? r->o->frames : n;
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

// One site list: by peak (stacks shown) or by total (a site already listed by peak links there).
static int html_sites(FILE *o, report_t *r, const uint32_t *order, size_t n, const char *title,
                      const char *id, const uint32_t *peak_rank) {
  const nd_trace_t *t = r->t;
  fprintf(o, "<h2 id=\"%s\">%s</h2>\n", id, title);
  if (!n) {
    fputs("<p>No sites.</p>\n", o);
    return 0;
  }
  fputs("<table>\n<tr><th>#</th><th>kind</th><th>peak live</th><th>total</th>"
        "<th>allocations</th><th>freed</th><th>live</th><th>stack</th></tr>\n",
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
    fprintf(o, "</td><td>stack %u ", x->stack_id);
    if (peak_rank && peak_rank[order[i]]) {
      fprintf(o, "(as in <a href=\"#peak-%u\">#%u by peak</a>)", peak_rank[order[i]],
              peak_rank[order[i]]);
    } else if (nd_html_stack(o, r, s->stack)) {
      return -1;
    }
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  return 0;
}

// ---------------------------------------------------------------- Python lines

// The sites grouped by their innermost Python frame (version 7), by bytes allocated: the text
// report's view of them.
static void html_py_lines(FILE *o, const report_t *r) {
  if (!r->npy_lines) return;
  size_t n = nd_rep_list_len(r, r->npy_lines);
  fprintf(o, "<h2 id=\"python\">Top %zu Python lines by total bytes (of %zu)</h2>\n<table>\n"
             "<tr><th>#</th><th>total</th><th>sites</th><th>allocations</th><th>live</th>"
             "<th>line</th></tr>\n",
          n, r->npy_lines);
  for (size_t i = 0; i < n; i++) {
    const py_line_t *l = &r->py_lines[i];
    fprintf(o, "<tr><td>%zu</td><td class=\"n\">", i + 1);
    nd_html_bytes(o, l->alloc_bytes, l->est);
    fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">%s%llu</td><td class=\"n\">",
            (unsigned long long)l->sites, l->est ? "~" : "", (unsigned long long)l->allocs);
    nd_html_bytes(o, l->live_bytes, l->est);
    fputs("</td><td><b>", o);
    nd_html_esc(o, l->code->qualname && *l->code->qualname ? l->code->qualname : "?");
    fputs("</b> <span class=\"at\">", o);
    nd_html_esc(o, l->code->filename && *l->code->filename ? l->code->filename : "?");
    if (l->line) fprintf(o, ":%u", l->line);
    fputs("</span></td></tr>\n", o);
  }
  fputs("</table>\n", o);
}

// ---------------------------------------------------------------- growth and leaks

static int html_growth(FILE *o, report_t *r) {
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
      bool est = g->flags & ND_SITE_SAMPLED, most_base, most_floor;
      uint64_t base = nd_rep_peak_cap(t, g->kind, g->base_bytes, est, &most_base);
      uint64_t lowest = nd_rep_peak_cap(t, g->kind, g->floor_bytes, est, &most_floor);
      fprintf(o, "<tr><td>%zu</td><td>%s</td><td class=\"n\">", i + 1, nd_rep_kind_names[g->kind]);
      nd_html_amount(o, base, est, most_base);
      fputs("</td><td class=\"n\">", o);
      nd_html_amount(o, lowest, est, most_floor);
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
    fputs("<p>No normal exit: what was live at exit is unknown (the summary gives what the "
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
  if (l->untracked_blocks)
    fprintf(o, "<p>Untracked: %llu small %s live at exit in no entry above (sampled).</p>\n",
            (unsigned long long)l->untracked_blocks, l->untracked_blocks == 1 ? "block" : "blocks");
  if (l->unrecorded_blocks) { // the blocks --fail-on-leak cannot check (load.c)
    fprintf(o, "<p>Unrecorded: %llu heap %s live at exit, at most ",
            (unsigned long long)l->unrecorded_blocks,
            l->unrecorded_blocks == 1 ? "block" : "blocks");
    nd_html_bytes(o, l->unrecorded_bytes, false);
    fputs(", had no record: --fail-on-leak cannot check them (exit status 3).</p>\n", o);
  }
  return 0;
}

// ---------------------------------------------------------------- workspaces

static int html_workspaces(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!t->nws && !nd_rep_esc_records(t)) return 0;
  fputs("<h2 id=\"workspaces\">Workspaces</h2>\n", o);
  if (t->nws) {
    fputs("<table>\n<tr><th>workspace</th><th>thread</th><th>cycles</th><th>learned</th>"
          "<th>re-learns</th><th>deviations</th><th>arena</th><th>plan peak</th>"
          "<th>plan sum</th><th>sum/peak</th><th>hits</th><th>spills</th><th>spilled</th>"
          "<th>escapes</th><th>pinned</th><th>outlived</th>", o);
    bool served = t->has.ws_served; // what it served, and what its learning trims gave back
    if (served) fputs("<th>served</th><th>learning trims</th><th>gave back</th><th>at most</th>", o);
    fputs("</tr>\n", o);
    for (size_t i = 0; i < t->nws; i++) {
      const nd_rec_workspace_t *w = &t->ws[r->ws[i]];
      char ratio[64];
      nd_rep_format_ratio(ratio, sizeof ratio, w->plan_sum_bytes, w->plan_peak_bytes);
      fputs("<tr><td>", o);
      nd_html_esc(o, w->name); // NUL-terminated (check_name)
      fprintf(o, "</td><td class=\"n\">%u</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
                 "<td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">",
              w->tid, (unsigned long long)w->cycles, (unsigned long long)w->learned_cycles,
              (unsigned long long)w->relearns, (unsigned long long)w->deviations);
      nd_html_bytes(o, w->arena_bytes, false);
      fputs("</td><td class=\"n\">", o);
      nd_html_bytes(o, w->plan_peak_bytes, false);
      fputs("</td><td class=\"n\">", o);
      nd_html_bytes(o, w->plan_sum_bytes, false);
      fprintf(o, "</td><td class=\"n\">%s</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
                 "<td class=\"n\">",
              ratio, (unsigned long long)w->hits, (unsigned long long)w->spills);
      nd_html_bytes(o, w->spill_bytes, false);
      fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">", (unsigned long long)w->escapes);
      nd_html_bytes(o, w->pinned_bytes, false);
      fprintf(o, "</td><td class=\"n\">%llu</td>", (unsigned long long)w->outlived);
      if (served) {
        fputs("<td class=\"n\">", o);
        nd_html_bytes(o, w->hit_bytes, false);
        fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">",
                (unsigned long long)w->learn_trims);
        nd_html_bytes(o, w->learn_trim_bytes, false);
        fputs("</td><td class=\"n\">", o);
        nd_html_bytes(o, w->learn_trim_max_bytes, false);
        fputs("</td>", o);
      }
      fputs("</tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  if (!r->ngroups) return 0;
  size_t n = nd_rep_list_len(r, r->ngroups);
  fprintf(o, "<h3>Leaked workspace pointers: %zu %s from %zu (workspace, stack) %s</h3>\n"
             "<table>\n<tr><th>#</th><th>workspace</th><th>thread</th><th>escapes</th>"
             "<th>bytes</th><th>born in cycle</th><th>seen in cycle</th><th>stack</th></tr>\n",
          t->nescapes, t->nescapes == 1 ? "block" : "blocks", r->ngroups,
          r->ngroups == 1 ? "pair" : "pairs");
  for (size_t i = 0; i < n; i++) {
    const esc_group_t *g = &r->groups[r->group_order[i]];
    const nd_ws_escape_t *e = &t->escapes[g->first];
    fprintf(o, "<tr><td>%zu</td><td>", i + 1);
    nd_html_esc(o, e->rec.name); // NUL-terminated (check_name)
    fprintf(o, "</td><td class=\"n\">%u</td><td class=\"n\">%llu</td><td class=\"n\">", e->rec.tid,
            (unsigned long long)g->count);
    nd_html_bytes(o, g->bytes, false);
    fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td>",
            (unsigned long long)g->born, (unsigned long long)g->seen);
    if (e->rec.stack_id == UINT32_MAX) {
      fputs("unknown (not tracked)", o);
    } else if (e->stack == UINT32_MAX) {
      fprintf(o, "stack %u (not in the trace)", e->rec.stack_id);
    } else {
      fprintf(o, "stack %u ", e->rec.stack_id);
      if (nd_html_stack(o, r, e->stack)) return -1;
    }
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  return 0;
}

// ---------------------------------------------------------------- device memory

static void sbytes(FILE *o, int64_t v) {
  if (v < 0) fputc('-', o);
  nd_html_bytes(o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, false);
}

static void dev_class_row(FILE *o, const char *name, const nd_rec_dev_class_t *c) {
  fprintf(o, "<tr><td>%s</td><td class=\"n\">%llu</td><td class=\"n\">", name,
          (unsigned long long)c->allocs);
  nd_html_bytes(o, c->alloc_bytes, false);
  fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">", (unsigned long long)c->frees);
  nd_html_bytes(o, c->free_bytes, false);
  fputs("</td></tr>\n", o);
}

// A device's workspace and the device memory it got from host memory (version 11), with the sites
// that spilled: the text report's rows.
static int html_device11(FILE *o, report_t *r, int d) {
  const nd_trace_t *t = r->t;
  if (t->have_device_ws >> d & 1) {
    const nd_rec_device_ws_t *w = &t->device_ws[d];
    fprintf(o, "<table class=\"kv\">\n<tr><th>workspace</th><td>%s (sync=%s, %s): served %llu "
               "allocations (",
            nd_rep_dws_modes[w->mode], nd_rep_dws_syncs[w->sync], nd_rep_dws_streams[w->streams],
            (unsigned long long)w->hits);
    nd_html_bytes(o, w->hit_bytes, false);
    fputs(") from an arena of ", o);
    nd_html_bytes(o, w->arena_bytes, false);
    fputs(" with no driver call; plan peak ", o);
    nd_html_bytes(o, w->plan_peak_bytes, false);
    fputs(", sum ", o);
    nd_html_bytes(o, w->plan_sum_bytes, false);
    fprintf(o, "</td></tr>\n<tr><th>cycles</th><td>%llu (%llu learning, %llu relearned); %llu to "
               "the driver (%llu off the plan)</td></tr>\n<tr><th>reuse waits</th><td>%llu at "
               "frees (cuCtxSynchronize), %llu on the host, %llu on streams; %llu events; %llu "
               "outlived their cycle; %llu fallbacks</td></tr>\n</table>\n",
            (unsigned long long)w->cycles, (unsigned long long)w->learned_cycles,
            (unsigned long long)w->relearns, (unsigned long long)w->spills,
            (unsigned long long)w->deviations, (unsigned long long)w->ctx_syncs,
            (unsigned long long)w->host_waits, (unsigned long long)w->stream_waits,
            (unsigned long long)w->fences, (unsigned long long)w->outlived,
            (unsigned long long)w->fallbacks);
  }
  if (!(t->have_spill >> d & 1)) return 0;
  const nd_rec_device_spill_t *s = &t->spill_total[d];
  fprintf(o, "<p>From host memory (page-locked, NDMEM_ON_DEVICE_LIMIT=host): %llu allocations of ",
          (unsigned long long)s->allocs);
  nd_html_bytes(o, s->alloc_bytes, false);
  fprintf(o, ", %llu over the limit, %llu on a full device; peak ", (unsigned long long)s->over_limit,
          (unsigned long long)s->device_full);
  sbytes(o, s->peak_bytes);
  fputs(", live ", o);
  sbytes(o, s->live_bytes);
  fputs(".</p>\n<table>\n<tr><th>#</th><th>bytes</th><th>allocations</th><th>peak</th><th>stack"
        "</th></tr>\n", o);
  size_t n = 0;
  for (size_t i = 0; i < t->nspills; i++) {
    const nd_spill_site_t *x = &t->spills[r->spill_order[i]];
    if (x->rec.device != (uint32_t)d) continue;
    fprintf(o, "<tr><td>%zu</td><td class=\"n\">", ++n);
    nd_html_bytes(o, x->rec.alloc_bytes, false);
    fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">", (unsigned long long)x->rec.allocs);
    sbytes(o, x->rec.peak_bytes);
    fputs("</td><td>", o);
    if (nd_html_stack(o, r, (uint32_t)x->stack)) return -1;
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  return 0;
}

// Each device the hooks saw (exact, requested bytes), CUPTI's view beside it when it was
// recorded, and the hooks' own totals and fallbacks: the text report's device view.
static int html_devices(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!nd_rep_has_devices(t)) return 0;
  fputs("<h2 id=\"devices\">Device memory (CUDA driver API)</h2>\n", o);
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1)) continue;
    const nd_rec_device_t *v = &t->devices[d];
    fprintf(o, "<h3>Device %d</h3>\n<table class=\"kv\">\n<tr><th>size</th><td>", d);
    if (v->total_bytes) nd_html_bytes(o, v->total_bytes, false);
    else fputs("not asked", o);
    fputs("</td></tr>\n<tr><th>maxDeviceBytes</th><td>", o);
    if (v->limit_bytes) nd_html_bytes(o, v->limit_bytes, false);
    else fputs("none", o);
    fputs("</td></tr>\n<tr><th>peak</th><td>", o);
    sbytes(o, v->peak_bytes);
    fprintf(o, "</td></tr>\n<tr><th>%s</th><td>",
            t->ended ? "live at exit" : "live at the last flush");
    sbytes(o, v->live_bytes);
    fputs("</td></tr>\n", o);
    if (v->getinfo_calls || v->limit_bytes)
      fprintf(o, "<tr><th>cuMemGetInfo</th><td>%llu %s, %llu lowered to the limit</td></tr>\n",
              (unsigned long long)v->getinfo_calls, v->getinfo_calls == 1 ? "answer" : "answers",
              (unsigned long long)v->getinfo_clamped);
    if (v->limit_bytes || v->breaches)
      fprintf(o, "<tr><th>breaches</th><td>%llu, %llu failed</td></tr>\n",
              (unsigned long long)v->breaches, (unsigned long long)v->failed);
    if (v->flags & ND_DEV_CUPTI) {
      char why[256];
      bool differs = nd_rep_cupti_differs(v, why, sizeof why);
      fprintf(o, "<tr><th>CUPTI</th><td>%s", differs ? "<b>DIFFERS</b> from the hooks: "
                                                      : "agrees with the hooks");
      if (differs) nd_html_esc(o, why);
      fputs("</td></tr>\n", o);
      if (v->cupti_pool_reserved_peak) {
        fputs("<tr><th>pools reserve</th><td>", o);
        nd_html_bytes(o, v->cupti_pool_reserved, false);
        fputs(" now, peak ", o);
        nd_html_bytes(o, v->cupti_pool_reserved_peak, false);
        fputs("</td></tr>\n", o);
      }
      if (v->cupti_dropped)
        fprintf(o, "<tr><th>CUPTI dropped</th><td>%llu records: its totals are short</td></tr>\n",
                (unsigned long long)v->cupti_dropped);
    }
    fputs("</table>\n", o);
    bool any = v->flags & ND_DEV_CUPTI;
    for (int k = 0; k < ND_DEV_CLASSES; k++) any |= v->cls[k].allocs || v->cls[k].frees;
    if (any) {
      fputs("<table>\n<tr><th>allocated by</th><th>allocations</th><th>bytes</th><th>frees</th>"
            "<th>bytes</th></tr>\n",
            o);
      for (int k = 0; k < ND_DEV_CLASSES; k++)
        if (v->cls[k].allocs || v->cls[k].frees)
          dev_class_row(o, nd_rep_dev_class_names[k], &v->cls[k]);
      if (v->flags & ND_DEV_CUPTI) {
        dev_class_row(o, "CUPTI device", &v->cupti);
        if (v->cupti_pool.allocs) dev_class_row(o, "CUPTI pools", &v->cupti_pool);
      }
      fputs("</table>\n", o);
    }
    if (v->cls[ND_DEV_ASYNC].allocs)
      fputs("<p class=\"note\">Stream-ordered: bytes handed out; a pool may hold more from the "
            "device.</p>\n",
            o);
    if (html_device11(o, r, d)) return -1;
  }
  if (!t->have_cuda) return 0;
  const nd_rec_cuda_t *c = &t->cuda;
  const char *torch = nd_rep_torch_text(t);
  if (torch) {
    fputs("<p>", o);
    nd_html_esc(o, torch);
    fputs(".</p>\n", o);
  }
  fputs("<h3>Hooks</h3>\n<table class=\"kv\">\n<tr><th>calls</th><td>", o);
  int n = 0;
  for (int f = 0; f < ND_CUDA_FN_USED; f++)
    if (c->calls[f])
      fprintf(o, "%s%s=%llu", n++ ? " " : "", nd_rep_cuda_fn_names[f],
              (unsigned long long)c->calls[f]);
  if (!n) fputs("none", o);
  fprintf(o, "</td></tr>\n<tr><th>lookups</th><td>answered with a hook: %llu by dlsym, %llu by "
             "cuGetProcAddress</td></tr>\n<tr><th>fallbacks</th><td>%llu lookups not hooked, "
             "%llu releases of memory not seen allocated, %llu allocations without a stack"
             "</td></tr>\n</table>\n",
          (unsigned long long)c->answered_dlsym, (unsigned long long)c->answered_proc,
          (unsigned long long)c->unhooked, (unsigned long long)c->unknown_frees,
          (unsigned long long)c->untracked);
  return 0;
}

// ---------------------------------------------------------------- limits

static void limit_row(FILE *o, const char *name, uint64_t limit, const char *what, uint64_t peak,
                      bool read) {
  fprintf(o, "<tr><td>%s</td><td class=\"n\">", name);
  if (limit) nd_html_bytes(o, limit, false);
  else fputs("none", o);
  fprintf(o, "</td><td>%s</td><td class=\"n\">", what);
  if (read) nd_html_bytes(o, peak, false);
  else fputs("not read", o);
  fputs("</td><td class=\"n\">", o);
  if (limit && read) {
    char pct[32];
    nd_rep_format_pct(pct, sizeof pct, peak, limit);
    fputs(pct, o);
  }
  fputs("</td></tr>\n", o);
}

// A snapshot's sites (--top of those kept), each with its stack, folded: the text --limits
// view's snapshot.
static int html_snapshot(FILE *o, report_t *r, const nd_snapshot_t *s) {
  const nd_rec_snapshot_t *x = &s->rec;
  bool est;
  uint64_t live = nd_rep_snap_live(s, &est);
  size_t n = nd_rep_list_len(r, s->nsites);
  fprintf(o, "<details id=\"snap-%llu\"><summary>S%llu: ", (unsigned long long)s->seq,
          (unsigned long long)s->seq);
  if (s->read < x->sites)
    fprintf(o, "%u of %u %s (the trace ends inside the snapshot)", s->read, x->sites,
            x->sites == 1 ? "site" : "sites");
  else
    fprintf(o, "%u %s", x->sites, x->sites == 1 ? "site" : "sites");
  fputs(", live ", o);
  nd_html_bytes(o, live, est);
  if (s->nsites < s->read)
    fprintf(o, " in the %zu kept; %llu more not kept (over %u)", s->nsites,
            (unsigned long long)(s->read - s->nsites), (unsigned)ND_TRACE_MAX_SNAP_SITES);
  if (n < s->nsites) fprintf(o, "; top %zu", n);
  fputs("</summary>\n", o);
  if (n) {
    fputs("<table>\n<tr><th>#</th><th>kind</th><th>live</th><th>blocks</th><th>stack</th></tr>\n",
          o);
    for (size_t i = 0; i < n; i++) {
      const nd_snap_site_t *e = &s->sites[i];
      bool sampled = e->rec.flags & ND_SITE_SAMPLED;
      fprintf(o, "<tr><td>%zu</td><td>%s</td><td class=\"n\">", i + 1,
              nd_rep_kind_names[e->rec.kind]);
      nd_html_bytes(o, e->rec.live_bytes, sampled);
      fprintf(o, "</td><td class=\"n\">%s%llu %s</td><td>stack %u ", sampled ? "~" : "",
              (unsigned long long)e->rec.live_count,
              e->rec.kind == 1 ? (e->rec.live_count == 1 ? "mapping" : "mappings")
                               : (e->rec.live_count == 1 ? "block" : "blocks"),
              e->rec.stack_id);
      if (nd_html_stack(o, r, e->stack)) return -1;
      fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  fputs("</details>\n", o);
  return 0;
}

static int html_limits(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  // As the link to it at the top (a device with breaches and no limit left set has one too).
  if (!nd_rep_has_limits(t) && !nd_rep_device_limited(t)) return 0;
  fputs("<h2 id=\"limits\">Limits</h2>\n", o);
  fputs("<table>\n<tr><th>limit</th><th>value</th><th>measures</th><th>peak</th>"
        "<th>of the limit</th></tr>\n",
        o);
  if (t->have_limits) {
    const nd_rec_limits_t *l = &t->limits;
    limit_row(o, "maxBytes", l->max_bytes, "tracked", l->peak_tracked, true);
    limit_row(o, "maxPhysicalBytes", l->max_physical_bytes, "physical", l->peak_physical,
              l->physical_reads > 0);
    limit_row(o, "warn at (watermark)", l->warn_at, "physical", l->peak_physical,
              l->physical_reads > 0);
  }
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1) || !t->devices[d].limit_bytes) continue;
    char name[48];
    snprintf(name, sizeof name, "maxDeviceBytes (device %d)", d);
    const nd_rec_device_t *v = &t->devices[d];
    limit_row(o, name, v->limit_bytes, "device memory",
              v->peak_bytes > 0 ? (uint64_t)v->peak_bytes : 0, true);
  }
  fputs("</table>\n", o);
  if (t->have_limits) {
    const nd_rec_limits_t *l = &t->limits;
    fprintf(o, "<p>On limit: %s. Breaches: maxBytes %llu, maxPhysicalBytes %llu; %llu "
               "%s failed%s. Relief: %llu %s released ",
            nd_rep_action_names[l->action < 3 ? l->action : 0],
            (unsigned long long)l->breaches[ND_LIMIT_BYTES],
            (unsigned long long)l->breaches[ND_LIMIT_PHYSICAL], (unsigned long long)l->failed,
            l->failed == 1 ? "allocation" : "allocations",
            l->flags & ND_LIMITS_ABORTED ? l->flags & ND_LIMITS_RETRY_LOOP ? "; stopped on a retry loop"
                                                                         : "; aborted on a breach"
                                       : "",
            (unsigned long long)l->reliefs, l->reliefs == 1 ? "run" : "runs");
    nd_html_bytes(o, l->relief_bytes, false);
    fputs(" of workspace arenas.</p>\n", o);
  }
  size_t n = nd_rep_list_len(r, t->nbreaches);
  if (n) {
    fprintf(o, "<h3>Logged breaches: %llu</h3>\n<table>\n<tr><th>#</th><th>limit</th>"
               "<th>count</th><th>at</th><th>thread</th><th>call</th><th>requested</th>"
               "<th>before the call</th><th>limit</th><th>done</th></tr>\n",
            (unsigned long long)nd_rep_sat_add(t->nbreaches, t->breaches_dropped));
    static const char *const done[4] = {"failed", "allowed (warn)", "aborted the process",
                                        "served from host memory"};
    for (size_t i = 0; i < n; i++) {
      const nd_rec_breach_t *b = &t->breaches[i].rec;
      fprintf(o, "<tr><td>%zu</td><td>%s</td><td class=\"n\">%llu</td><td class=\"n\">", i + 1,
              nd_rep_limit_names[b->limit], (unsigned long long)b->count);
      nd_rep_print_secs(o, nd_rep_since_start(t, b->mono_ns));
      fprintf(o, "</td><td class=\"n\">%u</td><td>%s", b->tid, nd_rep_breach_fn(b));
      if (b->limit == ND_LIMIT_DEVICE) fprintf(o, " (device %u)", b->device);
      fputs("</td><td class=\"n\">", o);
      nd_html_bytes(o, b->requested, false);
      fputs("</td><td class=\"n\">", o);
      nd_html_bytes(o, b->value, false);
      fputs("</td><td class=\"n\">", o);
      nd_html_bytes(o, b->limit_bytes, false);
      fprintf(o, "</td><td>%s", done[b->action < 4 ? b->action : 0]);
      if (b->flags & ND_BREACH_RETRY_LOOP) { // version 10: why it stopped the process
        fprintf(o, ": refused %llu times in a row over ", (unsigned long long)b->retries);
        nd_rep_print_secs(o, b->retry_ns);
        fputs(", a retry loop", o);
      }
      fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  if (t->nsnaps) {
    fprintf(o, "<h3>Snapshots: %llu in the trace, %zu kept</h3>\n<table>\n<tr><th>#</th>"
               "<th>at</th><th>reason</th><th>tracked</th><th>physical</th><th>threshold</th>"
               "<th>sites</th><th>largest site</th></tr>\n",
            (unsigned long long)t->snap_records, t->nsnaps);
    for (size_t i = 0; i < t->nsnaps; i++) {
      const nd_snapshot_t *s = t->snaps[i];
      int lim = nd_rep_snap_limit(t, &s->rec);
      fprintf(o, "<tr><td>S%llu</td><td class=\"n\">", (unsigned long long)s->seq);
      nd_rep_print_secs(o, nd_rep_since_start(t, s->rec.mono_ns));
      fprintf(o, "</td><td>%s%s</td><td class=\"n\">",
              s->rec.reason == ND_SNAP_WATERMARK ? "watermark" : "first breach of ",
              s->rec.reason == ND_SNAP_WATERMARK ? "" : lim < 0 ? "a limit"
                                                                : nd_rep_limit_names[lim]);
      nd_html_bytes(o, s->rec.tracked, false);
      fputs("</td><td class=\"n\">", o);
      if (s->rec.physical) nd_html_bytes(o, s->rec.physical, false);
      else fputs("not read", o);
      fputs("</td><td class=\"n\">", o);
      nd_html_bytes(o, s->rec.threshold, false);
      fprintf(o, "</td><td class=\"n\"><a href=\"#snap-%llu\">%u</a></td><td>",
              (unsigned long long)s->seq, s->read);
      if (s->nsites) {
        const nd_snap_site_t *e = &s->sites[0];
        fprintf(o, "%s ", nd_rep_kind_names[e->rec.kind]);
        nd_html_bytes(o, e->rec.live_bytes, e->rec.flags & ND_SITE_SAMPLED);
        fprintf(o, ", stack %u", e->rec.stack_id);
      }
      fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
    for (size_t i = 0; i < t->nsnaps; i++)
      if (html_snapshot(o, r, t->snaps[i])) return -1;
  }
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

// ---------------------------------------------------------------- the page

int nd_rep_html_report(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>ndmem: ",
        o);
  nd_html_esc(o, t->exe[0] ? t->exe : "?");
  fprintf(o, " (pid %llu)</title>\n<style>\n", (unsigned long long)t->hdr.pid);
  for (size_t i = 0; nd_html_css[i]; i++) fputs(nd_html_css[i], o);
  fputs("</style>\n</head>\n<body>\n<h1>ndmem report: ", o);
  nd_html_esc(o, t->exe[0] ? t->exe : "?");
  fputs("</h1>\n<nav class=\"note\"><a href=\"#glance\">at a glance</a> · <a href=\"#flame\">"
        "flame graph</a> · <a href=\"#over-time\">over time</a> · <a href=\"#summary\">summary"
        "</a> · <a href=\"#timeline\">timeline</a> · <a href=\"#sites\">sites</a> · "
        "<a href=\"#growth\">growth</a>",
        o);
  if (r->npy_lines) fputs(" · <a href=\"#python\">Python lines</a>", o);
  if (t->nws || nd_rep_esc_records(t)) fputs(" · <a href=\"#workspaces\">workspaces</a>", o);
  if (nd_rep_has_devices(t)) fputs(" · <a href=\"#devices\">devices</a>", o);
  if (nd_rep_has_limits(t) || nd_rep_device_limited(t)) fputs(" · <a href=\"#limits\">limits</a>", o);
  fputs("</nav>\n", o);
  // The answers first, then the pictures, then the details they come from.
  if (nd_html_glance(o, r) || nd_html_flame(o, r)) return -1;
  nd_html_series_t s;
  if (nd_html_series_read(r, &s)) return -1;
  int rc = nd_html_stacked(o, r, &s);
  fputs("<h2 class=\"details\">Details</h2>\n", o);
  if (!rc) rc = html_summary(o, r);
  nd_html_plot_t p = {0, 0, 0}; // set by nd_html_timeline when there are points (the only use)
  if (!rc) nd_html_timeline(o, r, &p);
  if (!rc && t->npoints) rc = nd_html_site_timeline(o, r, &s, &p);
  nd_html_series_free(&s);
  if (rc) return -1;
  size_t n = nd_rep_list_len(r, t->nsites);
  char title[96];
  snprintf(title, sizeof title, "Top %zu allocation sites by peak live bytes (of %zu)", n,
           t->nsites);
  if (html_sites(o, r, r->by_peak, n, title, "sites", NULL)) return -1;
  uint32_t *peak_rank = calloc(t->nsites ? t->nsites : 1, sizeof *peak_rank);
  if (!peak_rank) return -1;
  for (size_t i = 0; i < n; i++) peak_rank[r->by_peak[i]] = (uint32_t)i + 1;
  snprintf(title, sizeof title, "Top %zu allocation sites by total bytes (of %zu)", n, t->nsites);
  rc = html_sites(o, r, r->by_total, n, title, "sites-total", peak_rank);
  free(peak_rank);
  if (rc) return -1;
  html_py_lines(o, r);
  if (html_growth(o, r) || html_workspaces(o, r) || html_devices(o, r)) return -1;
  if (html_limits(o, r)) return -1;
  // The script last: the page is whole before it runs, and whole without it.
  fputs("<script>\n", o);
  for (size_t i = 0; nd_html_js[i]; i++) fputs(nd_html_js[i], o);
  fputs("</script>\n</body>\n</html>\n", o);
  return 0;
}
