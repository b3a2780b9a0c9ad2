// SPDX-License-Identifier: MIT
// timeline.c: memory over time in the HTML report. Per kind, its live bytes stacked
// by the kind's largest sites and "other" (the kind's exact counters less them), with the
// markers of limits, breaches, snapshots and cycles, and the values the script's cursor reads;
// then, among the details, the kinds' lines with the resident memory and the top sites' lines.
// The sites' values come from one second read of the trace (nd_html_series_read), as the first
// keeps only each site's latest totals.
#include "render/html/html.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- timeline

enum { W = 960, H = 380, ML = 84, MR = 150, MT = 36, MB = 44 };
#define PW (W - ML - MR)
#define PH (H - MT - MB)

static const char *const kind_colors[8] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                           "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// A step of 1, 2 or 5 times a power of ten, at least x.
static double nice(double x) {
  double p = 1;
  while (p * 10 <= x) p *= 10;
  while (p > x) p /= 10;
  return x <= p ? p : x <= 2 * p ? 2 * p : x <= 5 * p ? 5 * p : 10 * p;
}

// "1.5" from 1.5, "2" from 2.0: up to 3 decimals, trailing zeros trimmed.
static void trim_num(char *out, size_t n, double v) {
  snprintf(out, n, "%.3f", v);
  char *e = out + strlen(out);
  while (e > out && e[-1] == '0') *--e = 0;
  if (e > out && e[-1] == '.') e[-1] = 0;
}

typedef nd_html_plot_t plot_t;

static double px(const plot_t *p, double s) { return ML + s / p->tmax * PW; }
static double py(const plot_t *p, double b) { return MT + PH - b / p->ymax * PH; }
static double sec_of(const nd_trace_t *t, uint64_t ns) { return nd_rep_since_start(t, ns) / 1e9; }

static void up(double *m, double v) {
  if (v > *m) *m = v;
}

// A horizontal line at `v` bytes, labelled at its right end.
static void hline(FILE *o, const plot_t *p, uint64_t v, const char *cls, const char *label) {
  double y = py(p, (double)v);
  char h[48];
  nd_rep_human(h, sizeof h, v);
  fprintf(o, "<line class=\"%s\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>", cls, ML, y,
          ML + PW, y);
  fprintf(o, "<text class=\"lab\" x=\"%d\" y=\"%.1f\">%s %s</text>\n", ML + PW + 4, y + 4, label,
          h);
}

// The frame, the grid and the ticks: seconds by 1-2-5 (p->tmax a whole number of p->tstep), bytes
// by 1-2-5 of the largest binary unit that fits (p->ymax rounded up to a whole step here).
static void axes(FILE *o, plot_t *p) {
  static const char *const units[5] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double ymax = p->ymax > 0 ? p->ymax : 1024, unit = 1;
  int u = 0;
  while (u < 4 && ymax >= unit * 1024) unit *= 1024, u++;
  double ystep = nice(ymax / unit / 5) * unit;
  p->ymax = ystep * (double)(long long)(ymax / ystep + 0.999999);
  fprintf(o, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", ML, MT, PW,
          PH);
  char num[48];
  for (int i = 0; (double)i * ystep <= p->ymax * 1.000001; i++) {
    double y = py(p, i * ystep);
    trim_num(num, sizeof num, i * ystep / unit);
    fprintf(o, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
               "<text class=\"yt\" x=\"%d\" y=\"%.1f\">%s %s</text>\n",
            ML, y, ML + PW, y, ML - 6, y + 4, num, i ? units[u] : "");
  }
  for (int i = 0; (double)i * p->tstep <= p->tmax * 1.000001; i++) {
    double x = px(p, i * p->tstep);
    trim_num(num, sizeof num, i * p->tstep);
    fprintf(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
               "<text class=\"xt\" x=\"%.1f\" y=\"%d\">%s s</text>\n",
            x, MT, x, MT + PH, x, MT + PH + 16, num);
  }
  fprintf(o, "<text class=\"xt\" x=\"%d\" y=\"%d\">time since start</text>\n", ML + PW / 2,
          H - 6);
}

// The steady state's start (the first closed cycle) as a line across a chart, where there is one.
static void steady_marker(FILE *o, const nd_trace_t *t, const plot_t *p) {
  if (!t->have_flush || !t->flush.steady_ns) return;
  double x = px(p, sec_of(t, t->flush.steady_ns));
  fprintf(o, "<line class=\"cyc\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
             "<text class=\"lab\" x=\"%.1f\" y=\"%d\">steady state</text>\n",
          x, MT, x, MT + PH, x + 3, MT + 12);
}

// A kind's live bytes at a point as the chart draws them: memory that existed, so a mapping's
// pages never touched (version 18: the point's reading) are left out of the mmap line.
static int64_t point_live(const nd_point_t *q, int k) {
  int64_t v = q->live[k];
  if (k == ND_REP_KIND_MMAP && q->untouched > 0) v -= q->untouched;
  return v > 0 ? v : 0;
}

// A dashed line of the RSS readings (untouched: the mappings' untouched bytes), with its legend.
static void series_of(FILE *o, const nd_trace_t *t, const plot_t *p, bool untouched,
                      const char *color, const char *dash, const char *title, const char *label,
                      int legend) {
  fprintf(o, "<polyline class=\"series\" stroke=\"%s\" stroke-dasharray=\"%s\" points=\"",
          color, dash);
  int first = 1;
  for (size_t i = 0; i < t->npoints; i++) {
    const nd_point_t *q = &t->series[i];
    int64_t v = untouched ? q->untouched : q->rss;
    if (v < 0) continue;
    fprintf(o, "%s%.1f,%.1f", first ? "" : " ", px(p, sec_of(t, q->mono_ns)), py(p, (double)v));
    first = 0;
  }
  fprintf(o, "\"><title>%s</title></polyline>\n", title);
  fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"%s\"/>"
             "<text class=\"lab\" x=\"%d\" y=\"%d\">%s</text>\n",
          ML + PW + 4, MT + PH - 60 + 14 * legend - 4, color, ML + PW + 20,
          MT + PH - 60 + 14 * legend, label);
}

void nd_html_timeline(FILE *o, const report_t *r, plot_t *out) {
  const nd_trace_t *t = r->t;
  fputs("<h2 id=\"timeline\">Timeline</h2>\n", o);
  if (!t->npoints) {
    fputs("<p>No COUNTERS record: nothing to plot.</p>\n", o);
    return;
  }
  // The kinds that ever held memory, and the axes' ranges.
  bool shown[ND_TRACE_KINDS] = {false}, any_untouched = false;
  plot_t p = {sec_of(t, t->last_ns), 0, 0};
  for (size_t i = 0; i < t->npoints; i++) {
    const nd_point_t *q = &t->series[i];
    up(&p.tmax, sec_of(t, q->mono_ns));
    for (int k = 0; k < ND_TRACE_KINDS; k++) {
      if (q->live[k] > 0) shown[k] = true;
      up(&p.ymax, (double)point_live(q, k));
    }
    up(&p.ymax, (double)q->resident);
    up(&p.ymax, (double)q->rss);
    if (q->untouched > 0) any_untouched = true;
    up(&p.ymax, (double)q->untouched);
  }
  const nd_rec_limits_t *l = t->have_limits ? &t->limits : NULL;
  if (l) {
    up(&p.ymax, (double)l->max_bytes);
    up(&p.ymax, (double)l->max_physical_bytes);
    up(&p.ymax, (double)l->warn_at);
  }
  for (size_t i = 0; i < t->nbreaches; i++) {
    up(&p.ymax, (double)t->breaches[i].rec.value);
    up(&p.tmax, sec_of(t, t->breaches[i].rec.mono_ns));
  }
  for (size_t i = 0; i < t->nsnaps; i++) {
    up(&p.ymax, (double)t->snaps[i]->rec.tracked);
    up(&p.ymax, (double)t->snaps[i]->rec.physical);
    up(&p.tmax, sec_of(t, t->snaps[i]->rec.mono_ns));
  }
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++)
    if (t->have_device >> d & 1) up(&p.ymax, (double)t->devices[d].limit_bytes);
  p.tstep = nice((p.tmax > 0 ? p.tmax : 1) / 8);
  p.tmax = p.tstep * (double)(long long)((p.tmax > 0 ? p.tmax : 1) / p.tstep + 0.999999);
  fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"live bytes per kind over time\">\n",
          W, H, W, H);
  fputs("<title>Live bytes per memory kind at each flush</title>\n", o);
  axes(o, &p);
  // The steady state (the first closed cycle), and each point where the cycle clock moved.
  steady_marker(o, t, &p);
  uint64_t prev_cycle = 0;
  for (size_t i = 0; i < t->npoints; i++) {
    const nd_point_t *q = &t->series[i];
    if (q->cycle == prev_cycle) continue;
    prev_cycle = q->cycle;
    double x = px(&p, sec_of(t, q->mono_ns));
    fprintf(o, "<line class=\"cyct\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\">"
               "<title>cycle %llu</title></line>\n",
            x, MT - 6, x, MT, (unsigned long long)q->cycle);
  }
  if (prev_cycle)
    fprintf(o, "<text class=\"lab\" x=\"%d\" y=\"%d\">cycle clock: %llu at the last flush"
               "</text>\n",
            ML, MT - 10, (unsigned long long)prev_cycle);
  // Limits and the watermark.
  if (l && l->max_bytes) hline(o, &p, l->max_bytes, "lim", "maxBytes");
  if (l && l->max_physical_bytes) hline(o, &p, l->max_physical_bytes, "lim", "maxPhysical");
  if (l && l->warn_at) hline(o, &p, l->warn_at, "warn", "watermark");
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1) || !t->devices[d].limit_bytes) continue;
    char lab[32];
    snprintf(lab, sizeof lab, "device%d limit", d);
    hline(o, &p, t->devices[d].limit_bytes, "lim", lab);
  }
  // One line per kind; dots too when there are few points.
  int legend = 0;
  for (int k = 0; k < ND_TRACE_KINDS; k++) {
    if (!shown[k]) continue;
    const char *c = kind_colors[k < 4 ? k : 4 + (k - 4) % 4];
    fprintf(o, "<polyline class=\"series\" stroke=\"%s\" points=\"", c);
    for (size_t i = 0; i < t->npoints; i++) {
      const nd_point_t *q = &t->series[i];
      fprintf(o, "%s%.1f,%.1f", i ? " " : "", px(&p, sec_of(t, q->mono_ns)),
              py(&p, (double)point_live(q, k)));
    }
    fprintf(o, "\"><title>%s</title></polyline>\n", nd_rep_kind_names[k]);
    for (size_t i = 0; t->npoints <= 64 && i < t->npoints; i++) {
      const nd_point_t *q = &t->series[i];
      char h[48];
      nd_rep_human(h, sizeof h, (uint64_t)point_live(q, k));
      fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>%s %s at ",
              px(&p, sec_of(t, q->mono_ns)), py(&p, (double)point_live(q, k)), c,
              nd_rep_kind_names[k], h);
      nd_rep_print_secs(o, nd_rep_since_start(t, q->mono_ns));
      fputs("</title></circle>\n", o);
    }
    fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"%s\"/>"
               "<text class=\"lab\" x=\"%d\" y=\"%d\">%s</text>\n",
            ML + PW + 4, MT + PH - 60 + 14 * legend - 4, c, ML + PW + 20,
            MT + PH - 60 + 14 * legend, nd_rep_kind_names[k]);
    legend++;
  }
  // Anonymous resident memory (version 8), dashed: above the tracked kinds, what the allocator
  // and the program's untracked memory hold.
  if (t->have_resident) {
    fputs("<polyline class=\"series resident\" stroke=\"#555\" stroke-dasharray=\"6 3\" "
          "points=\"", o);
    int first = 1;
    for (size_t i = 0; i < t->npoints; i++) {
      const nd_point_t *q = &t->series[i];
      if (q->resident < 0) continue;
      fprintf(o, "%s%.1f,%.1f", first ? "" : " ", px(&p, sec_of(t, q->mono_ns)),
              py(&p, (double)q->resident));
      first = 0;
    }
    fputs("\"><title>anonymous resident memory</title></polyline>\n", o);
    fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"#555\"/>"
               "<text class=\"lab\" x=\"%d\" y=\"%d\">resident</text>\n",
            ML + PW + 4, MT + PH - 60 + 14 * legend - 4, ML + PW + 20, MT + PH - 60 + 14 * legend);
    legend++;
  }
  // The kernel's resident memory (version 18): VmRSS at each flush, and the mappings' pages never
  // touched, apart (in no other line: the mmap line counts touched pages).
  if (t->have_rss) {
    series_of(o, t, &p, false, "#000", "2 2", "RSS (kernel), sampled at flushes", "RSS", legend++);
    if (any_untouched)
      series_of(o, t, &p, true, "#bbb", "1 3", "mappings reserved, never touched (not resident)",
                "untouched", legend++);
  }
  // Breaches (the logged ones) and snapshots, at the value they saw.
  for (size_t i = 0; i < t->nbreaches; i++) {
    const nd_rec_breach_t *b = &t->breaches[i].rec;
    double x = px(&p, sec_of(t, b->mono_ns)), y = py(&p, (double)b->value);
    char h[48];
    nd_rep_human(h, sizeof h, b->value);
    fprintf(o, "<path class=\"breach\" d=\"M%.1f %.1fl5 8h-10z\"><title>%s breach %llu: %s "
               "before the call, at ",
            x, y - 4, nd_rep_limit_names[b->limit], (unsigned long long)b->count, h);
    nd_rep_print_secs(o, nd_rep_since_start(t, b->mono_ns));
    fputs("</title></path>\n", o);
  }
  for (size_t i = 0; i < t->nsnaps; i++) {
    const nd_snapshot_t *s = t->snaps[i];
    double x = px(&p, sec_of(t, s->rec.mono_ns)), y = py(&p, (double)s->rec.tracked);
    char h[48];
    nd_rep_human(h, sizeof h, s->rec.tracked);
    fprintf(o, "<line class=\"snap\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
               "<rect class=\"snapm\" x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\">"
               "<title>snapshot %llu (%s): tracked %s</title></rect>"
               "<text class=\"lab\" x=\"%.1f\" y=\"%d\">S%llu</text>\n",
            x, MT, x, MT + PH, x - 3.5, y - 3.5, (unsigned long long)s->seq,
            s->rec.reason == ND_SNAP_WATERMARK ? "watermark" : "breach", h, x + 2, MT + PH - 4,
            (unsigned long long)s->seq);
  }
  fputs("</svg>\n", o);
  fprintf(o, "<p class=\"note\">%zu %s of %llu COUNTERS %s",
          t->npoints, t->npoints == 1 ? "point" : "points",
          (unsigned long long)t->series_seen, t->series_seen == 1 ? "record" : "records");
  if (t->series_stride > 1)
    fprintf(o, " (every %llu%s kept, and the latest)", (unsigned long long)t->series_stride,
            t->series_stride == 2 ? "nd" : "th");
  fputs("; live bytes are the exact counters (usable sizes) at each flush. Limits are of tracked "
        "(heap + anonymous mmaps + workspace arenas) or physical memory; markers: breaches "
        "(triangles), snapshots (squares, S<i>n</i>).</p>\n",
        o);
  *out = p;
}

// ---------------------------------------------------------------- the sites' second read

void nd_html_series_free(nd_html_series_t *s) {
  if (s->rc != 2) nd_site_series_free(&s->ss);
  free(s->sel);
  *s = (nd_html_series_t){.rc = 2};
}

// How much a site grew, for choosing the bands: how far its floor (its lowest live bytes in a
// flush window) rose above its first SITE record's, where it rose in ND_HTML_GROWTH_RISES
// windows at least (a site filled once holds memory, it does not grow); else 0.
static uint64_t band_growth(const nd_site_t *s) {
  const nd_site_hist_t *h = &s->h;
  uint64_t rises = h->rises_any + (h->records >= 2 && h->move > 0);
  if (rises < ND_HTML_GROWTH_RISES || h->peak_floor <= h->first_floor) return 0;
  return h->peak_floor - h->first_floor;
}

// Whether site i goes before site j among a kind's growers: a lifetime class "growing" first,
// then the larger growth; a tie to the one first in the list by peak (pos: its place there).
static bool grows_more(const int *cls, const uint64_t *g, const size_t *pos, uint32_t i,
                       uint32_t j) {
  bool gi = cls[i] == ND_LIFE_GROWING, gj = cls[j] == ND_LIFE_GROWING;
  if (gi != gj) return gi;
  return g[i] != g[j] ? g[i] > g[j] : pos[i] < pos[j];
}

// Kind k's bands into s->band[k] (rows of sel, sites appended to it where new): its growers
// first (a lifetime class "growing", or band_growth), up to ND_HTML_GROWTH_SERIES, then
// its largest by peak; drawn the largest peak first.
static void choose_bands(report_t *r, nd_html_series_t *s, int k, const int *cls,
                         const uint64_t *g, const size_t *pos) {
  const nd_trace_t *t = r->t;
  uint32_t pick[ND_HTML_KIND_SERIES];
  size_t n = 0;
  for (size_t j = 0; j < t->nsites; j++) { // the growers, by insertion
    uint32_t i = r->by_peak[j];
    if (t->sites[i].rec.kind != k || (!g[i] && cls[i] != ND_LIFE_GROWING)) continue;
    size_t at = n < ND_HTML_GROWTH_SERIES ? n++ : n;
    while (at && grows_more(cls, g, pos, i, pick[at - 1])) {
      if (at < ND_HTML_GROWTH_SERIES) pick[at] = pick[at - 1];
      at--;
    }
    if (at < ND_HTML_GROWTH_SERIES) pick[at] = i;
  }
  size_t grown = n;
  for (size_t j = 0; j < t->nsites && n < ND_HTML_KIND_SERIES; j++) {
    uint32_t i = r->by_peak[j];
    if (t->sites[i].rec.kind != k || !t->sites[i].rec.peak_live_bytes) continue;
    bool have = false;
    for (size_t q = 0; q < grown && !have; q++) have = pick[q] == i;
    if (!have) pick[n++] = i;
  }
  for (size_t q = 0; q < n; q++) {
    size_t row = 0;
    while (row < s->nsel && s->sel[row] != pick[q]) row++;
    if (row == s->nsel) s->sel[s->nsel++] = pick[q];
    size_t at = s->nband[k]++; // the largest peak first; a tie in the list's order
    while (at && pos[s->sel[s->band[k][at - 1]]] > pos[pick[q]])
      s->band[k][at] = s->band[k][at - 1], at--;
    s->band[k][at] = row;
  }
}

int nd_html_series_read(report_t *r, nd_html_series_t *s) {
  const nd_trace_t *t = r->t;
  *s = (nd_html_series_t){.rc = 2};
  size_t top = nd_rep_list_len(r, t->nsites);
  s->ntop = top < ND_HTML_TOP_SERIES ? top : ND_HTML_TOP_SERIES;
  if (!t->npoints || !t->nsites) return 0;
  s->sel = malloc((s->ntop + (size_t)ND_TRACE_KINDS * ND_HTML_KIND_SERIES) * sizeof *s->sel);
  int *cls = nd_html_site_classes(r);
  uint64_t *g = malloc(t->nsites * sizeof *g);
  size_t *pos = malloc(t->nsites * sizeof *pos);
  if (!s->sel || !cls || !g || !pos) {
    free(cls), free(g), free(pos);
    return -1;
  }
  bool kinds[ND_TRACE_KINDS] = {false};
  for (size_t j = 0; j < t->nsites; j++) {
    uint32_t i = r->by_peak[j];
    pos[i] = j;
    g[i] = band_growth(&t->sites[i]);
    if (t->sites[i].rec.kind < ND_TRACE_KINDS) kinds[t->sites[i].rec.kind] = true;
  }
  for (size_t j = 0; j < s->ntop; j++) s->sel[s->nsel++] = r->by_peak[j];
  for (int k = 0; k < ND_TRACE_KINDS; k++)
    if (kinds[k]) choose_bands(r, s, k, cls, g, pos);
  free(cls), free(g), free(pos);
  s->rc = nd_trace_site_series(t, s->sel, s->nsel, &s->ss);
  return 0;
}

// Why the sites' lines are not drawn (a pipe, a failed read), in a note: 1; else 0.
static int series_note(FILE *o, const nd_html_series_t *s, const char *what) {
  if (s->rc == 1) {
    fprintf(o, "<p class=\"note\">The input is not a regular file (a pipe): %s need a second read "
               "of it, so they are not drawn.</p>\n", what);
  } else if (s->rc < 0) {
    fprintf(o, "<p class=\"note\">%c%s are not drawn: ", what[0] == 't' ? 'T' : what[0], what + 1);
    nd_html_esc(o, s->ss.err);
    fputs(".</p>\n", o);
  }
  return s->rc != 0;
}

void nd_html_time_axis(const report_t *r, plot_t *p) {
  const nd_trace_t *t = r->t;
  *p = (plot_t){sec_of(t, t->last_ns), 0, 0};
  for (size_t i = 0; i < t->npoints; i++) up(&p->tmax, sec_of(t, t->series[i].mono_ns));
  for (size_t i = 0; i < t->nbreaches; i++) up(&p->tmax, sec_of(t, t->breaches[i].rec.mono_ns));
  for (size_t i = 0; i < t->nsnaps; i++) up(&p->tmax, sec_of(t, t->snaps[i]->rec.mono_ns));
  p->tstep = nice((p->tmax > 0 ? p->tmax : 1) / 8);
  p->tmax = p->tstep * (double)(long long)((p->tmax > 0 ? p->tmax : 1) / p->tstep + 0.999999);
}

// ---------------------------------------------------------------- stacked by site, per kind

enum { STACK_POINTS = 800 }; // points drawn at most: one every ~1 px of the plot, fewer bytes

static const char *const band_colors[ND_HTML_KIND_SERIES] = {"#4e79a7", "#f28e2b", "#59a14f",
                                                             "#e15759", "#76b7b2", "#edc948"};

// The limits that concern kind k, named in lab (dlab: room for a device's name): the host's on
// the heap's chart, a device's on its own. The device's index, or -1 for a host kind.
static int kind_limits(const nd_trace_t *t, int k, uint64_t lim[3], const char *lab[3],
                       char dlab[32]) {
  lim[0] = lim[1] = lim[2] = 0;
  lab[0] = "maxBytes", lab[1] = "maxPhysical", lab[2] = "watermark";
  if (k == 0 && t->have_limits)
    lim[0] = t->limits.max_bytes, lim[1] = t->limits.max_physical_bytes, lim[2] = t->limits.warn_at;
  int d = k - 4;
  if (d >= 0 && d < ND_TRACE_MAX_DEVICES && (t->have_device >> d & 1)) {
    lim[0] = t->devices[d].limit_bytes;
    snprintf(dlab, 32, "device%d limit", d);
    lab[0] = dlab;
  }
  return d;
}

// The cycle clock's ticks and the steady state (every chart), then the limits and what hit them
// on the kind they concern: host limits, breaches and snapshots on the heap's chart, a device's
// limit and breaches on its own. A limit line far above the data (over 4 times) is named in the
// note instead, so that it does not flatten the chart: `far` says so.
static void stack_markers(FILE *o, const report_t *r, const plot_t *p, int k, bool *far) {
  const nd_trace_t *t = r->t;
  steady_marker(o, t, p);
  uint64_t prev = 0;
  for (size_t i = 0; i < t->npoints; i++) {
    const nd_point_t *q = &t->series[i];
    if (q->cycle == prev) continue;
    prev = q->cycle;
    double x = px(p, sec_of(t, q->mono_ns));
    fprintf(o, "<line class=\"cyct\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", x, MT - 6,
            x, MT);
  }
  uint64_t lim[3];
  char dlab[32];
  const char *lab[3];
  int d = kind_limits(t, k, lim, lab, dlab);
  for (int i = 0; i < 3; i++) {
    if (!lim[i]) continue;
    if ((double)lim[i] > p->ymax) *far = true;
    else hline(o, p, lim[i], i == 2 ? "warn" : "lim", lab[i]);
  }
  for (size_t i = 0; i < t->nbreaches; i++) {
    const nd_rec_breach_t *b = &t->breaches[i].rec;
    bool mine = b->limit == ND_LIMIT_DEVICE ? d >= 0 && b->device == (uint32_t)d : k == 0;
    if (!mine) continue;
    double x = px(p, sec_of(t, b->mono_ns));
    char h[48];
    nd_rep_human(h, sizeof h, b->value);
    fprintf(o, "<path class=\"breach\" d=\"M%.1f %dl5 -8h-10z\"><title>%s breach %llu: %s before "
               "the call, at ",
            x, MT, nd_rep_limit_names[b->limit], (unsigned long long)b->count, h);
    nd_rep_print_secs(o, nd_rep_since_start(t, b->mono_ns));
    fputs("</title></path>\n", o);
  }
  for (size_t i = 0; k == 0 && i < t->nsnaps; i++) {
    const nd_snapshot_t *s = t->snaps[i];
    double x = px(p, sec_of(t, s->rec.mono_ns));
    char h[48];
    nd_rep_human(h, sizeof h, s->rec.tracked);
    fprintf(o, "<line class=\"snap\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"><title>snapshot "
               "%llu (%s): tracked %s</title></line><text class=\"lab\" x=\"%.1f\" y=\"%d\">S%llu"
               "</text>\n",
            x, MT, x, MT + PH, (unsigned long long)s->seq,
            s->rec.reason == ND_SNAP_WATERMARK ? "watermark" : "breach", h, x + 2, MT + PH - 4,
            (unsigned long long)s->seq);
  }
}

// One kind's chart: its rows of the second read (row[0..n), largest peak first) stacked from the
// bottom, "other" over them, the kind's exact total as a line on top; the points thinned to
// STACK_POINTS; below it, what was live at the kind's highest point as a table (the page without
// scripts), and the box the cursor fills. -1 when out of memory.
static int stack_kind(FILE *o, report_t *r, const nd_html_series_t *s, const plot_t *axis, int k,
                      const size_t *row, size_t n) {
  const nd_trace_t *t = r->t;
  const nd_site_series_t *ss = &s->ss;
  size_t np = t->npoints;
  if (n && ss->npoints < np) np = ss->npoints; // the same COUNTERS records, point for point
  size_t stride = (np + STACK_POINTS - 1) / STACK_POINTS;
  if (!stride) stride = 1;
  size_t *pt = malloc((np / stride + 2) * sizeof *pt);
  uint64_t *acc = calloc((np / stride + 2) * (n + 2), sizeof *acc); // [band][point], cumulative
  if (!pt || !acc) {
    free(pt);
    free(acc);
    return -1;
  }
  size_t m = 0;
  for (size_t i = 0; i < np; i += stride) pt[m++] = i;
  if (np && pt[m - 1] != np - 1) pt[m++] = np - 1; // the latest point always
  // acc[b * m + i]: the top of band b at point i (bands 0 .. n-1 the sites, n "other"), and
  // acc[(n + 1) * m + i] the kind's total.
  plot_t p = {axis->tmax, 0, axis->tstep};
  size_t peak_at = 0;
  for (size_t i = 0; i < m; i++) {
    int64_t tot = t->series[pt[i]].live[k];
    uint64_t total = tot > 0 ? (uint64_t)tot : 0;
    // A sampled site's value is an estimate and may exceed what the exact counters say the kind
    // held: those are lowered together (as the lifetime estimates are) so that the bands never
    // stack above the kind's total. Exact sites' requested bytes never exceed it.
    uint64_t exact = 0, sampled = 0;
    for (size_t j = 0; j < n; j++) {
      uint64_t v = ss->live[row[j] * ND_TRACE_MAX_POINTS + pt[i]];
      if (t->sites[s->sel[row[j]]].rec.flags & ND_SITE_SAMPLED) sampled = nd_rep_sat_add(sampled, v);
      else exact = nd_rep_sat_add(exact, v);
    }
    double scale = nd_flame_scale(exact, sampled, total);
    uint64_t sum = 0;
    for (size_t j = 0; j < n; j++) {
      uint64_t v = ss->live[row[j] * ND_TRACE_MAX_POINTS + pt[i]];
      if (scale < 1 && (t->sites[s->sel[row[j]]].rec.flags & ND_SITE_SAMPLED))
        v = (uint64_t)((double)v * scale);
      sum = nd_rep_sat_add(sum, v);
      acc[j * m + i] = sum;
    }
    acc[n * m + i] = total > sum ? total : sum;
    acc[(n + 1) * m + i] = total;
    up(&p.ymax, (double)acc[n * m + i]);
    if (total > acc[(n + 1) * m + peak_at]) peak_at = i;
  }
  {
    uint64_t lim[3];
    char dlab[32];
    const char *lab[3];
    kind_limits(t, k, lim, lab, dlab);
    double data = p.ymax; // a limit within 4 times the data is drawn to scale
    for (int i = 0; i < 3; i++)
      if (lim[i] && (double)lim[i] <= 4 * data) up(&p.ymax, (double)lim[i]);
  }
  const char *kind = nd_rep_kind_names[k];
  int h = H + 14 * ((int)n + 2) + 8;
  fprintf(o, "<figure class=\"stackfig\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
             "class=\"stack\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
             "tabindex=\"0\" aria-label=\"%s live bytes over time by site\" data-kind=\"%s\" "
             "data-t=\"",
          W, h, W, h, kind, kind);
  for (size_t i = 0; i < m; i++)
    fprintf(o, "%s%.3f", i ? " " : "", sec_of(t, t->series[pt[i]].mono_ns));
  fputs("\" data-x=\"", o);
  for (size_t i = 0; i < m; i++)
    fprintf(o, "%s%.1f", i ? " " : "", px(&p, sec_of(t, t->series[pt[i]].mono_ns)));
  fprintf(o, "\">\n<title>%s: live bytes by site at each flush</title>\n", kind);
  axes(o, &p);
  bool far = false;
  stack_markers(o, r, &p, k, &far);
  // Bands from the bottom: each polygon is its top forward, then the band below's top back.
  int rc = 0;
  for (size_t b = 0; b <= n && !rc; b++) {
    const char *c = b < n ? band_colors[b] : "#bab0ac";
    fprintf(o, "<polygon class=\"band\" fill=\"%s\" data-v=\"", c);
    for (size_t i = 0; i < m; i++)
      fprintf(o, "%s%llu", i ? " " : "",
              (unsigned long long)(acc[b * m + i] - (b ? acc[(b - 1) * m + i] : 0)));
    fputs("\" points=\"", o);
    for (size_t i = 0; i < m; i++)
      fprintf(o, "%.1f,%.1f ", px(&p, sec_of(t, t->series[pt[i]].mono_ns)),
              py(&p, (double)acc[b * m + i]));
    for (size_t i = m; i-- > 0;)
      fprintf(o, "%.1f,%.1f%s", px(&p, sec_of(t, t->series[pt[i]].mono_ns)),
              py(&p, b ? (double)acc[(b - 1) * m + i] : 0), i ? " " : "");
    fputs("\" data-name=\"", o);
    if (b < n) {
      const nd_site_t *site = &t->sites[s->sel[row[b]]];
      fprintf(o, "#%zu %s", b + 1, site->rec.flags & ND_SITE_SAMPLED ? "~" : "");
      rc = nd_html_site_label(o, r, site->stack);
      fputs("\"><title>", o);
      fprintf(o, "#%zu ", b + 1);
      if (!rc) rc = nd_html_site_label(o, r, site->stack);
    } else {
      fputs("other\"><title>other sites of the kind (its counters less the sites above)", o);
    }
    fputs("</title></polygon>\n", o);
  }
  if (rc) {
    free(pt);
    free(acc);
    return -1;
  }
  fputs("<polyline class=\"ktotal\" data-v=\"", o);
  for (size_t i = 0; i < m; i++)
    fprintf(o, "%s%llu", i ? " " : "", (unsigned long long)acc[(n + 1) * m + i]);
  fputs("\" points=\"", o);
  for (size_t i = 0; i < m; i++)
    fprintf(o, "%s%.1f,%.1f", i ? " " : "", px(&p, sec_of(t, t->series[pt[i]].mono_ns)),
            py(&p, (double)acc[(n + 1) * m + i]));
  fprintf(o, "\"><title>%s: all live bytes (exact counters)</title></polyline>\n", kind);
  fprintf(o, "<line class=\"cursor\" x1=\"0\" y1=\"%d\" x2=\"0\" y2=\"%d\" "
             "visibility=\"hidden\"/>\n",
          MT, MT + PH);
  // The legend, the largest first.
  for (size_t b = 0; b < n + 2 && !rc; b++) {
    int y = H + 10 + 14 * (int)b;
    const char *c = b < n ? band_colors[b] : b == n ? "#bab0ac" : "#222";
    fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"%d\" fill=\"%s\"/><text "
               "class=\"lab\" x=\"%d\" y=\"%d\">",
            ML, y - 8, b == n + 1 ? 2 : 9, c, ML + 16, y);
    if (b < n) {
      const nd_site_t *site = &t->sites[s->sel[row[b]]];
      char hb[48];
      nd_rep_human(hb, sizeof hb, site->rec.peak_live_bytes);
      fprintf(o, "#%zu peak %s%s", b + 1, site->rec.flags & ND_SITE_SAMPLED ? "~" : "", hb);
      uint64_t grew = band_growth(site);
      if (grew) {
        nd_rep_human(hb, sizeof hb, grew);
        fprintf(o, ", floor rose %s%s", site->rec.flags & ND_SITE_SAMPLED ? "~" : "", hb);
      }
      fputs(": ", o);
      rc = nd_html_site_label(o, r, site->stack);
    } else {
      fputs(b == n ? "other sites" : "all (exact counters)", o);
    }
    fputs("</text>\n", o);
  }
  fputs("</svg>\n", o);
  if (!rc) {
    // What was live at the kind's highest point: the cursor's answer there, without a script.
    size_t i = peak_at;
    fprintf(o, "<div class=\"readout\" aria-live=\"polite\"><b>At %.3f s</b> (the highest point "
               "drawn): %s ",
            sec_of(t, t->series[pt[i]].mono_ns), kind);
    nd_html_bytes(o, acc[(n + 1) * m + i], false);
    fputs("<table class=\"ro\">", o);
    for (size_t b = n + 1; b-- > 0 && !rc;) {
      uint64_t v = acc[b * m + i] - (b ? acc[(b - 1) * m + i] : 0);
      fprintf(o, "<tr><td><i style=\"background:%s\"></i></td><td>",
              b < n ? band_colors[b] : "#bab0ac");
      if (b < n) {
        fprintf(o, "#%zu ", b + 1);
        rc = nd_html_site_label(o, r, t->sites[s->sel[row[b]]].stack);
      } else {
        fputs("other", o);
      }
      fputs("</td><td class=\"n\">", o);
      nd_html_bytes(o, v, b < n && (t->sites[s->sel[row[b]]].rec.flags & ND_SITE_SAMPLED));
      fputs("</td></tr>", o);
    }
    fputs("</table></div>\n", o);
  }
  fputs("</figure>\n", o);
  if (far)
    fputs("<p class=\"note\">A limit lies far above this kind's memory (see Limits): not drawn "
          "to scale.</p>\n", o);
  free(pt);
  free(acc);
  return rc;
}

int nd_html_stacked(FILE *o, report_t *r, const nd_html_series_t *s) {
  const nd_trace_t *t = r->t;
  fputs("<h2 id=\"over-time\">Memory over time, by site</h2>\n", o);
  if (!t->npoints) {
    fputs("<p>No COUNTERS record: nothing to plot.</p>\n", o);
    return 0;
  }
  series_note(o, s, "the sites' live bytes over time");
  plot_t axis;
  nd_html_time_axis(r, &axis);
  for (int k = 0; k < ND_TRACE_KINDS; k++) {
    bool shown = false;
    for (size_t i = 0; i < t->npoints && !shown; i++) shown = t->series[i].live[k] > 0;
    if (!shown) continue;
    if (stack_kind(o, r, s, &axis, k, s->band[k], s->rc ? 0 : s->nband[k])) return -1;
  }
  fputs("<p class=\"note\">Each kind's live bytes at each flush: its largest sites by peak, "
        "and its sites that grew most however small their peak (those whose floor, their lowest "
        "live bytes in a flush window, rose in two windows or more, or classed growing), "
        "stacked from the bottom (allocated less freed, from the SITE records; ~: estimated from "
        "samples), other sites over them (the kind's exact counters less those sites), and the "
        "counters' total as a line. Markers: the steady state and the cycle clock's moves, "
        "limits and the watermark (dashed), breaches (triangles), snapshots (S<i>n</i>). With "
        "scripts on, move the pointer over a chart (or focus it and press the arrow keys) to see "
        "what was live at that moment.</p>\n", o);
  return 0;
}

// The live bytes of the top sites by peak (the first ND_HTML_TOP_SERIES of the list) at each point
// of the timeline, on its time axis: a second read of the file (nd_trace_site_series), as the first
// keeps only each site's latest totals. -1 when out of memory.
int nd_html_site_timeline(FILE *o, report_t *r, const nd_html_series_t *s,
                          const plot_t *main) {
  const nd_trace_t *t = r->t;
  size_t n = s->ntop;
  if (!n || !t->npoints) return 0;
  fputs("<h3 id=\"timeline-sites\">Top sites over time</h3>\n", o);
  if (series_note(o, s, "the top sites' live bytes over time")) return 0;
  const nd_site_series_t *ss = &s->ss;
  plot_t p = {main->tmax, 0, main->tstep};
  for (size_t j = 0; j < n; j++) up(&p.ymax, (double)ss->peak[j]);
  int h = H + 14 * (int)n + 8;
  fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"live bytes of the top sites over "
             "time\">\n",
          W, h, W, h);
  fprintf(o, "<title>Live bytes of the top %zu %s by peak at each flush</title>\n", n,
          n == 1 ? "site" : "sites");
  axes(o, &p);
  int rc = 0;
  for (size_t j = 0; j < n && !rc; j++) {
    const nd_site_t *site = &t->sites[r->by_peak[j]];
    bool est = site->rec.flags & ND_SITE_SAMPLED;
    const char *c = kind_colors[j % 8];
    const uint64_t *v = ss->live + j * ND_TRACE_MAX_POINTS;
    fprintf(o, "<polyline class=\"series site\" stroke=\"%s\" points=\"", c);
    for (size_t i = 0; i < ss->npoints; i++)
      fprintf(o, "%s%.1f,%.1f", i ? " " : "", px(&p, sec_of(t, ss->mono_ns[i])),
              py(&p, (double)v[i]));
    fprintf(o, "\"><title>#%zu ", j + 1);
    if ((rc = nd_html_site_label(o, r, site->stack))) break;
    fputs("</title></polyline>\n", o);
    for (size_t i = 0; ss->npoints <= 64 && i < ss->npoints; i++) {
      char hb[48];
      nd_rep_human(hb, sizeof hb, v[i]);
      fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>#%zu %s%s at ",
              px(&p, sec_of(t, ss->mono_ns[i])), py(&p, (double)v[i]), c, j + 1, est ? "~" : "",
              hb);
      nd_rep_print_secs(o, nd_rep_since_start(t, ss->mono_ns[i]));
      fputs("</title></circle>\n", o);
    }
    int y = H + 10 + 14 * (int)j;
    char hb[48];
    nd_rep_human(hb, sizeof hb, site->rec.peak_live_bytes);
    fprintf(o, "<a href=\"#peak-%zu\"><rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" "
               "fill=\"%s\"/><text class=\"lab\" x=\"%d\" y=\"%d\">#%zu %s, peak %s%s: ",
            j + 1, ML, y - 4, c, ML + 16, y, j + 1, nd_rep_kind_names[site->rec.kind],
            est ? "~" : "", hb);
    if ((rc = nd_html_site_label(o, r, site->stack))) break;
    fputs("</text></a>\n", o);
  }
  if (rc) return -1;
  fputs("</svg>\n", o);
  fprintf(o, "<p class=\"note\">Live bytes (allocated less freed) of the %zu largest %s by peak "
             "(each named by its place: the program's own innermost frame, then the library "
             "frame it called that allocated; ~: estimated from samples) at the %zu %s of the "
             "timeline "
             "above, from the SITE records of each flush: a site that did not change in a flush "
             "keeps its value.</p>\n",
          n, n == 1 ? "site" : "sites", ss->npoints, ss->npoints == 1 ? "point" : "points");
  return 0;
}
