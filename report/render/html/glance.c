// SPDX-License-Identifier: MIT
// glance.c: the HTML report's first screen, four answers side by side, each with
// the few sites behind it and a link to its details: what used the memory (each kind's exact
// peak, the largest sites by peak), what grew (the growth classes, or what the shim flagged while
// the job ran), what was live at exit (by lifetime class), and what hit a limit. Plain HTML: it
// reads the same with scripts off.
#include "render/html/html.h"

#include <string.h>

enum { GLANCE_SITES = 3 }; // sites a card lists

// A bar as wide as v's share of max (CSS), then the site's name and v.
static int glance_row(FILE *o, report_t *r, uint32_t stack, uint64_t v, uint64_t max, bool est,
                      const char *tag) {
  int pct = max ? (int)((double)v / (double)max * 100 + 0.5) : 0;
  fprintf(o, "<li><span class=\"bar\" style=\"width:%d%%\"></span><span class=\"v\">", pct);
  nd_html_bytes(o, v, est);
  fputs("</span> ", o);
  if (tag) fprintf(o, "<span class=\"tag\">%s</span> ", tag);
  fputs("<span class=\"nm\">", o); // over the bar: an element, positioned
  if (nd_html_site_label(o, r, stack)) return -1;
  fputs("</span></li>\n", o);
  return 0;
}

static int card_used(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("<section class=\"card\"><h2>What used the memory</h2>\n<p class=\"big\">", o);
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
    fputs("<br><small>resident (anonymous) peak ", o);
    nd_html_bytes(o, t->resident_peak, false);
    fputs("</small>", o);
  }
  fputs("</p>\n", o);
  size_t m = t->nsites < GLANCE_SITES ? t->nsites : GLANCE_SITES;
  if (m) fputs("<p>Largest sites by peak live bytes:</p><ol class=\"glance\">\n", o);
  for (size_t i = 0; i < m; i++) {
    const nd_rec_site_t *x = &t->sites[r->by_peak[i]].rec;
    if (glance_row(o, r, t->sites[r->by_peak[i]].stack, x->peak_live_bytes,
                   t->sites[r->by_peak[0]].rec.peak_live_bytes, x->flags & ND_SITE_SAMPLED,
                   nd_rep_kind_names[x->kind < ND_TRACE_KINDS ? x->kind : 0]))
      return -1;
  }
  if (m) fputs("</ol>\n", o);
  fputs("<p class=\"more\"><a href=\"#flame\">flame graph</a> · <a href=\"#sites\">all sites</a>"
        "</p></section>\n", o);
  return 0;
}

// The lifetime entries of classes [c0, c1], largest first within each class, GLANCE_SITES in all.
static int life_rows(FILE *o, report_t *r, int c0, int c1, bool growth) {
  const nd_lifetimes_t *l = &r->life;
  size_t at = 0, shown = 0;
  uint64_t max = 0;
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].cls >= c0 && l->v[i].cls <= c1 && l->v[i].bytes > max) max = l->v[i].bytes;
  fputs("<ol class=\"glance\">\n", o);
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    for (size_t i = 0; i < l->entries[c]; i++) {
      const nd_life_t *e = &l->v[at + i];
      if (c < c0 || c > c1 || shown == GLANCE_SITES) continue;
      shown++;
      uint64_t v = growth ? e->grew : e->bytes;
      if (glance_row(o, r, e->stack, v, growth ? v > max ? v : max : max, e->samples > 0,
                     nd_life_names[c]))
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
      // What the growing stacks hold (each row below says how much it grew). The sum is a bound
      // only when each class in it is one.
      bool most = (!l->entries[ND_LIFE_GROWING] || l->most_bytes[ND_LIFE_GROWING]) &&
                  (!l->entries[ND_LIFE_TEARDOWN] || l->most_bytes[ND_LIFE_TEARDOWN]);
      fprintf(o, "<b class=\"bad\">%zu %s</b> grew, holding ", n, n == 1 ? "stack" : "stacks");
      nd_html_amount(o, nd_rep_sat_add(l->bytes[ND_LIFE_GROWING], l->bytes[ND_LIFE_TEARDOWN]),
                     l->est[ND_LIFE_GROWING] || l->est[ND_LIFE_TEARDOWN], most);
    }
    fputs("</p>\n", o);
    if (l->judged.known && !l->judged.judged)
      fprintf(o, "<p class=\"note\">Judged %s: too few flush windows (%llu) to tell growth from "
                 "a cycle's temporaries.</p>\n",
              nd_life_judged_key(l), (unsigned long long)l->judged.windows);
    if (n && life_rows(o, r, ND_LIFE_GROWING, ND_LIFE_TEARDOWN, true)) return -1;
  } else {
    fputs("<p class=\"big\">", o);
    if (t->ngrowth)
      fprintf(o, "<b class=\"bad\">%zu %s</b> found growing while the job ran", t->ngrowth,
              t->ngrowth == 1 ? "site" : "sites");
    else
      fputs("no site found growing while the job ran", o);
    fputs("</p>\n", o);
    size_t m = t->ngrowth < GLANCE_SITES ? t->ngrowth : GLANCE_SITES;
    if (m) fputs("<ol class=\"glance\">\n", o);
    for (size_t i = 0; i < m; i++) {
      const nd_rec_growth_t *g = &t->growth[i].rec;
      uint64_t v = g->floor_bytes > g->base_bytes ? g->floor_bytes - g->base_bytes : 0;
      if (glance_row(o, r, t->growth[i].stack, v, v, g->flags & ND_SITE_SAMPLED, "rose"))
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
  fprintf(o, "<section class=\"card\"><h2>What was live at %s, by class</h2>\n",
          t->ended ? "exit" : "the last flush");
  if (!nd_rep_leaks_known(t)) {
    fputs("<p class=\"big\">unknown: no normal exit</p>\n<p>Sites held ", o);
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
      if (!l->entries[c]) continue;
      fprintf(o, "<tr class=\"c%d\"><th>%s</th><td class=\"n\">", c, nd_life_names[c]);
      nd_html_amount(o, l->bytes[c], l->est[c], l->most_bytes[c]);
      fprintf(o, "</td><td class=\"n\">%llu %s</td></tr>\n",
              (unsigned long long)l->entries[c], l->entries[c] == 1 ? "stack" : "stacks");
    }
    if (!l->n) fputs("<tr><th>nothing</th><td class=\"n\">0 B</td><td></td></tr>\n", o);
    fputs("</table>\n", o);
    if (l->entries[ND_LIFE_LOST] + l->entries[ND_LIFE_INDIRECT] + l->entries[ND_LIFE_GROWING] +
            l->entries[ND_LIFE_TEARDOWN] + l->entries[ND_LIFE_LIVE] &&
        life_rows(o, r, ND_LIFE_LOST, ND_LIFE_LIVE, false))
      return -1;
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

static void card_limits(FILE *o, const report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("<section class=\"card\"><h2>What hit a limit</h2>\n", o);
  if (!nd_rep_has_limits(t) && !nd_rep_device_limited(t)) {
    fputs("<p class=\"big\">no limit set</p>\n<p class=\"note\">NDMEM_MAX_BYTES, "
          "NDMEM_MAX_PHYSICAL_BYTES and NDMEM_MAX_DEVICE_BYTES cap a job's memory.</p>"
          "</section>\n", o);
    return;
  }
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
  if (t->nsnaps)
    fprintf(o, "<p>%zu %s of live memory by site.</p>\n", t->nsnaps,
            t->nsnaps == 1 ? "snapshot" : "snapshots");
  fputs("<p class=\"more\"><a href=\"#limits\">limits, breaches and snapshots</a></p></section>\n",
        o);
}

int nd_html_glance(FILE *o, report_t *r) {
  fputs("<div id=\"glance\" class=\"glance\">\n", o);
  if (card_used(o, r) || card_grew(o, r) || card_leaked(o, r)) return -1;
  card_limits(o, r);
  fputs("</div>\n", o);
  return 0;
}
