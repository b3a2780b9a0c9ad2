// SPDX-License-Identifier: MIT
// glance.c: the HTML report's first screen, four answers side by side, each with
// the few sites behind it and a link to its details: what used the memory (each kind's exact
// peak, the largest sites by peak, mappings apart), what grew (the growth classes by how much
// each grew, or what the shim flagged while the job ran), what was live at exit (by lifetime
// class; released at teardown was not), and what hit a limit. Each row names its site by its
// place (analyse/place.h). Plain HTML: it reads the same with scripts off.
#include "analyse/frames.h"
#include "render/html/html.h"

#include <string.h>

enum { GLANCE_SITES = 3, GLANCE_MAPPINGS = 2 }; // sites a card lists; mappings besides

// A bar as wide as v's share of max (CSS), then the site's name and v; `shown`, `labels`: the
// stacks and labels of the list's rows (n), this one the i-th (nd_html_site_label_apart), or
// NULL: the name alone.
static int glance_row(FILE *o, report_t *r, uint32_t stack, uint64_t v, uint64_t max, bool est,
                      const char *tag, const char *sign, const uint32_t *shown, char **labels,
                      size_t n, size_t i) {
  int pct = max ? (int)((double)v / (double)max * 100 + 0.5) : 0;
  fprintf(o, "<li><span class=\"bar\" style=\"width:%d%%\"></span><span class=\"v\">%s", pct,
          sign);
  nd_html_bytes(o, v, est);
  fputs("</span> ", o);
  if (tag) fprintf(o, "<span class=\"tag\">%s</span> ", tag);
  fputs("<span class=\"nm\">", o); // over the bar: an element, positioned
  if (labels ? nd_html_site_label_apart(o, r, shown, labels, n, i)
             : nd_html_site_label(o, r, stack))
    return -1;
  fputs("</span></li>\n", o);
  return 0;
}

// The first `max` sites by peak, mappings (kind mmap) or the others, under `title`.
static int site_rows(FILE *o, report_t *r, bool mappings, size_t max, const char *title) {
  const nd_trace_t *t = r->t;
  size_t shown = 0;
  uint64_t top = 0;
  uint32_t rows[GLANCE_SITES > GLANCE_MAPPINGS ? GLANCE_SITES : GLANCE_MAPPINGS], nrows = 0;
  for (size_t i = 0; i < t->nsites && nrows < max && nrows < sizeof rows / sizeof *rows; i++)
    if ((t->sites[r->by_peak[i]].rec.kind == ND_REP_KIND_MMAP) == mappings)
      rows[nrows++] = r->by_peak[i];
  uint32_t stacks[sizeof rows / sizeof *rows];
  for (size_t i = 0; i < nrows; i++) stacks[i] = t->sites[rows[i]].stack;
  char **labels;
  if (nd_html_labels(r, stacks, nrows, &labels)) return -1;
  for (size_t i = 0; i < nrows; i++) {
    const nd_site_t *s = &t->sites[rows[i]];
    // a mapping's pages touched where the trace says them (version 18), else its bytes mapped
    uint64_t v = mappings && t->has.rss ? nd_rep_site_peak_touched(s) : s->rec.peak_live_bytes;
    if (!shown++) {
      top = v;
      fprintf(o, "<p>%s</p><ol class=\"glance\">\n", title);
    }
    const char *kind = nd_rep_kind_names[s->rec.kind < ND_TRACE_KINDS ? s->rec.kind : 0];
    if (glance_row(o, r, s->stack, v, top, s->rec.flags & ND_SITE_SAMPLED,
                   mappings ? (t->has.rss ? "touched" : "mapped") : kind, "", stacks, labels,
                   nrows, i)) {
      nd_html_labels_free(labels, nrows);
      return -1;
    }
  }
  nd_html_labels_free(labels, nrows);
  if (shown) fputs("</ol>\n", o);
  return 0;
}

static int card_used(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("<section class=\"card\"><h2>What used the memory</h2>\n", o);
  nd_html_peak(o, t); // the kernel's peak and its parts (version 18)
  fputs("<p class=\"big\">", o);
  int n = 0;
  for (int k = 0; t->have_counters && k < ND_TRACE_KINDS; k++) {
    int64_t p = t->counters.kind[k].peak_bytes;
    if (p <= 0) continue;
    fprintf(o, "%s%s peak <b>", n++ ? "<br>" : "", nd_rep_kind_names[k]);
    nd_html_bytes(o, (uint64_t)p, false);
    fputs("</b>", o);
  }
  if (!n) fputs("no memory counted", o);
  if (t->have_resident) {
    fputs("<br><small>anonymous resident, highest of the flushes' readings ", o);
    nd_html_bytes(o, t->resident_peak, false);
    fputs("</small>", o);
  }
  fputs("</p>\n", o);
  // Anonymous mappings apart: a mapping's bytes are address space mapped, of which the trace
  // does not record how much was touched (OpenBLAS maps 256 MiB of buffers and touches a few), so
  // they are never ranked with memory the program allocated by that size alone.
  if (site_rows(o, r, false, GLANCE_SITES, "Largest sites by peak live bytes:") ||
      site_rows(o, r, true, GLANCE_MAPPINGS,
                r->t->has.rss ? "Largest mappings by pages touched (reserved and never touched: "
                                "in no figure):"
                              : "Largest mappings by peak bytes mapped (pages touched: not "
                                "recorded):"))
    return -1;
  fputs("<p class=\"more\"><a href=\"#flame\">flame graph</a> · <a href=\"#sites\">all sites</a>"
        "</p></section>\n", o);
  return 0;
}

// The lifetime entries of the classes in `classes` (1 << class), largest first within each
// class, GLANCE_SITES in all: by how much each grew (`growth`, "+" before it) or by its bytes.
static int life_rows(FILE *o, report_t *r, unsigned classes, bool growth) {
  const nd_lifetimes_t *l = &r->life;
  size_t at = 0, shown = 0;
  uint64_t max = 0;
  for (size_t i = 0; i < l->n; i++) {
    uint64_t v = growth ? l->v[i].grew : l->v[i].bytes;
    if (classes >> l->v[i].cls & 1 && v > max) max = v;
  }
  fputs("<ol class=\"glance\">\n", o);
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    for (size_t i = 0; i < l->entries[c]; i++) {
      const nd_life_t *e = &l->v[at + i];
      if (!(classes >> c & 1) || shown == GLANCE_SITES) continue;
      shown++;
      if (glance_row(o, r, e->stack, growth ? e->grew : e->bytes, max, e->samples > 0,
                     nd_life_names[c], growth ? "+" : "", NULL, NULL, 0, 0))
        return -1;
    }
    at += l->entries[c];
  }
  fputs("</ol>\n", o);
  return 0;
}

static int card_grew(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  const nd_lifetimes_t *l = &r->life;
  fputs("<section class=\"card\"><h2>What grew</h2>\n", o);
  if (nd_rep_leaks_known(t)) {
    size_t n = l->entries[ND_LIFE_GROWING] + l->entries[ND_LIFE_TEARDOWN];
    fputs("<p class=\"big\">", o);
    if (!n) {
      fputs("<b>nothing</b> grew", o);
    } else {
      // Two figures, each with its name: how much the stacks grew during the run (the rows
      // below, "+") and what they held before exit (the bytes "What was live at exit" lists
      // for growing stacks). A sum is a bound only when each estimate in it is one.
      uint64_t grew = 0;
      bool est = false, most = true;
      for (size_t i = 0; i < l->n; i++) {
        const nd_life_t *e = &l->v[i];
        if (e->cls != ND_LIFE_GROWING && e->cls != ND_LIFE_TEARDOWN) continue;
        grew = nd_rep_sat_add(grew, e->grew);
        est |= e->samples > 0;
        most &= !e->samples || e->most_grew;
      }
      fprintf(o, "<b class=\"bad\">%zu %s</b> grew by +", n, n == 1 ? "stack" : "stacks");
      nd_html_amount(o, grew, est, most);
      fputs(" during the run, holding ", o);
      most = (!l->entries[ND_LIFE_GROWING] || l->most_bytes[ND_LIFE_GROWING]) &&
             (!l->entries[ND_LIFE_TEARDOWN] || l->most_bytes[ND_LIFE_TEARDOWN]);
      nd_html_amount(o, nd_rep_sat_add(l->bytes[ND_LIFE_GROWING], l->bytes[ND_LIFE_TEARDOWN]),
                     l->est[ND_LIFE_GROWING] || l->est[ND_LIFE_TEARDOWN], most);
      fputs(" before exit", o);
    }
    fputs("</p>\n", o);
    if (l->judged.known && !l->judged.judged)
      fprintf(o, "<p class=\"note\">Judged %s: too few flush windows (%llu) to tell growth from "
                 "a cycle's temporaries.</p>\n",
              nd_life_judged_key(l), (unsigned long long)l->judged.windows);
    if (n) fputs("<p>By how much each grew during the run:</p>\n", o);
    if (n && life_rows(o, r, 1u << ND_LIFE_GROWING | 1u << ND_LIFE_TEARDOWN, true)) return -1;
  } else {
    fputs("<p class=\"big\">", o);
    if (t->ngrowth)
      fprintf(o, "<b class=\"bad\">%zu %s</b> found growing while the job ran", t->ngrowth,
              t->ngrowth == 1 ? "site" : "sites");
    else
      fputs("no site found growing while the job ran", o);
    fputs("</p>\n", o);
    size_t m = t->ngrowth < GLANCE_SITES ? t->ngrowth : GLANCE_SITES;
    if (m) fputs("<p>By how much each one's lowest live bytes rose:</p><ol class=\"glance\">\n", o);
    for (size_t i = 0; i < m; i++) {
      const nd_rec_growth_t *g = &t->growth[i].rec;
      uint64_t v = g->floor_bytes > g->base_bytes ? g->floor_bytes - g->base_bytes : 0;
      if (glance_row(o, r, t->growth[i].stack, v, v, g->flags & ND_SITE_SAMPLED, "rose", "+", NULL,
                     NULL, 0, 0))
        return -1;
    }
    if (m) fputs("</ol>\n", o);
  }
  fputs("<p class=\"more\"><a href=\"#growth\">growth and live at exit</a> · "
        "<a href=\"#over-time\">over time</a></p></section>\n", o);
  return 0;
}

static int card_leaked(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  const nd_lifetimes_t *l = &r->life;
  bool exec = nd_rep_exec_end(t);
  fprintf(o, "<section class=\"card\"><h2>What was live at %s, by class</h2>\n",
          t->ended ? "exit" : exec ? "the exec" : "the last flush");
  if (!nd_rep_leaks_known(t)) {
    fputs(exec ? "<p class=\"big\">not judged: the process exec'd another program</p>\n<p>Sites held "
               : "<p class=\"big\">unknown: no normal exit</p>\n<p>Sites held ", o);
    nd_html_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " at the end in %zu %s.</p>\n", r->nlive, r->nlive == 1 ? "site" : "sites");
  } else {
    fputs("<table class=\"classes\">\n", o);
    static const int order[ND_LIFE_CLASSES] = {
        ND_LIFE_LOST,     ND_LIFE_INDIRECT,  ND_LIFE_GROWING,   ND_LIFE_TEARDOWN,
        ND_LIFE_LIVE,     ND_LIFE_CACHE,     ND_LIFE_POSSIBLE,  ND_LIFE_REACHABLE,
        ND_LIFE_STARTUP,  ND_LIFE_SUPPRESSED, ND_LIFE_INHERITED};
    for (int i = 0; i < ND_LIFE_CLASSES; i++) {
      int c = order[i];
      if (!l->entries[c] || c == ND_LIFE_TEARDOWN) continue; // freed before exit: below
      fprintf(o, "<tr class=\"c%d\"><th>%s</th><td class=\"n\">", c, nd_life_names[c]);
      nd_html_amount(o, l->bytes[c], l->est[c], l->most_bytes[c]);
      fprintf(o, "</td><td class=\"n\">%llu %s</td></tr>\n",
              (unsigned long long)l->entries[c], l->entries[c] == 1 ? "stack" : "stacks");
    }
    if (l->n == l->entries[ND_LIFE_TEARDOWN])
      fputs("<tr><th>nothing</th><td class=\"n\">0 B</td><td></td></tr>\n", o);
    fputs("</table>\n", o);
    // Released at teardown is a class of growth, not of what was live: its memory was freed at
    // shutdown, before the exit (What grew lists it).
    if (l->entries[ND_LIFE_TEARDOWN]) {
      fputs("<p class=\"note\">Not live at exit: ", o);
      nd_html_amount(o, l->bytes[ND_LIFE_TEARDOWN], l->est[ND_LIFE_TEARDOWN],
                     l->most_bytes[ND_LIFE_TEARDOWN]);
      fprintf(o, " in %llu %s released at teardown (grew, then freed at shutdown).</p>\n",
              (unsigned long long)l->entries[ND_LIFE_TEARDOWN],
              l->entries[ND_LIFE_TEARDOWN] == 1 ? "stack" : "stacks");
    }
    unsigned listed = 1u << ND_LIFE_LOST | 1u << ND_LIFE_INDIRECT | 1u << ND_LIFE_GROWING |
                      1u << ND_LIFE_LIVE;
    if (l->entries[ND_LIFE_LOST] + l->entries[ND_LIFE_INDIRECT] + l->entries[ND_LIFE_GROWING] +
        l->entries[ND_LIFE_LIVE]) {
      fputs("<p>Largest findings by bytes live at exit:</p>\n", o);
      if (life_rows(o, r, listed, false)) return -1;
    }
  }
  fputs("<p class=\"more\"><a href=\"#growth\">every entry with its stack</a></p></section>\n", o);
  return 0;
}

static void limit_line(FILE *o, const char *name, uint64_t limit, uint64_t peak, bool read) {
  char pct[32];
  fprintf(o, "<li>%s ", name);
  nd_html_bytes(o, limit, false);
  if (read) {
    nd_rep_format_pct(pct, sizeof pct, peak, limit);
    fputs(": peak ", o);
    nd_html_bytes(o, peak, false);
    fprintf(o, " (%s)", pct);
  }
  fputs("</li>\n", o);
}

// The last refused request (version 16), first: what and the program's line that asked, and
// how soon the process ended after it where its end is named with it.
static int last_refusal(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!t->have_refusal) return 0;
  fputs("<p class=\"big\"><b class=\"bad\">refused</b> ", o);
  nd_rep_refusal_words(o, t, nd_html_bytes);
  fputs("</p>\n<p>at <b>", o);
  if (t->refusal_stack < 0) fputs("(its stack was not recorded)", o);
  else if (nd_html_site_label(o, r, (uint32_t)t->refusal_stack)) return -1;
  fputs("</b>", o);
  uint64_t since;
  if (nd_rep_end_after_refusal(t, &since)) {
    fputs("; the process ended ", o);
    nd_rep_end_words(o, t);
    fputc(' ', o);
    nd_rep_print_secs(o, since);
    fputs(" after it", o);
  }
  fputs("</p>\n", o);
  return 0;
}

static int card_limits(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("<section class=\"card\"><h2>What hit a limit</h2>\n", o);
  if (!nd_rep_has_limits(t) && !nd_rep_device_limited(t)) {
    fputs("<p class=\"big\">no limit set</p>\n<p class=\"note\">NDMEM_MAX_BYTES, "
          "NDMEM_MAX_PHYSICAL_BYTES and NDMEM_MAX_DEVICE_BYTES cap a job's memory.</p>"
          "</section>\n", o);
    return 0;
  }
  if (last_refusal(o, r)) return -1;
  uint64_t breaches = t->breaches_dropped + t->nbreaches, failed = 0;
  if (t->have_limits) {
    breaches = 0;
    for (int i = 0; i < ND_LIMIT_COUNT; i++) breaches += t->limits.breaches[i];
    failed = t->limits.failed;
  }
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++)
    if (t->have_device >> d & 1) breaches += t->devices[d].breaches, failed += t->devices[d].failed;
  fputs("<p class=\"big\">", o);
  if (breaches)
    fprintf(o, "<b class=\"bad\">%llu %s</b>, %llu %s failed", (unsigned long long)breaches,
            breaches == 1 ? "breach" : "breaches", (unsigned long long)failed,
            failed == 1 ? "allocation" : "allocations");
  else
    fputs("<b>no breach</b>", o);
  if (t->have_limits && (t->limits.flags & ND_LIMITS_ABORTED))
    fputs("; the process was stopped", o);
  fputs("</p>\n<ul class=\"limits\">\n", o);
  if (t->have_limits) {
    const nd_rec_limits_t *l = &t->limits;
    if (l->max_bytes) limit_line(o, "maxBytes", l->max_bytes, l->peak_tracked, true);
    if (l->max_physical_bytes)
      limit_line(o, "maxPhysicalBytes", l->max_physical_bytes, t->resident_peak,
                 t->have_resident_peak);
    if (l->warn_at) limit_line(o, "watermark", l->warn_at, t->resident_peak, t->have_resident_peak);
  }
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1) || !t->devices[d].limit_bytes) continue;
    char name[40];
    snprintf(name, sizeof name, "device %d", d);
    int64_t p = t->devices[d].peak_bytes;
    limit_line(o, name, t->devices[d].limit_bytes, p > 0 ? (uint64_t)p : 0, true);
  }
  fputs("</ul>\n", o);
  uint64_t adm = nd_rep_admitted_total(t);
  if (adm) { // version 16: let through from code that cannot take a refusal
    uint64_t bytes = 0;
    for (int s = 0; s < ND_TRACE_ADMIT_SLOTS; s++)
      if (t->have_admitted >> s & 1) bytes = nd_rep_sat_add(bytes, t->admitted[s].bytes);
    fprintf(o, "<p>%llu %s admitted over the limits (", (unsigned long long)adm,
            adm == 1 ? "request" : "requests");
    nd_html_bytes(o, bytes, false);
    fputs(") from code that cannot take a refusal.</p>\n", o);
  }
  if (t->nsnaps)
    fprintf(o, "<p>%zu %s of live memory by site.</p>\n", t->nsnaps,
            t->nsnaps == 1 ? "snapshot" : "snapshots");
  fputs("<p class=\"more\"><a href=\"#limits\">limits, breaches and snapshots</a></p></section>\n",
        o);
  return 0;
}

int nd_html_glance(FILE *o, report_t *r) {
  fputs("<div id=\"glance\" class=\"glance\">\n", o);
  if (card_used(o, r) || card_grew(o, r) || card_leaked(o, r) || card_limits(o, r)) return -1;
  fputs("</div>\n", o);
  return 0;
}
