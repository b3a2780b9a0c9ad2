// SPDX-License-Identifier: MIT
// render_html.c: ndmemreport's HTML report (nd_rep_html_report, report.h): one self-contained
// page, readable offline with no network, script or font: the text summary's facts as a table,
// the timeline (live bytes per kind at each COUNTERS record, with cycles, limits, the watermark,
// breaches and snapshots) and the top sites' live bytes at the same points (a second read of
// the trace) as inline SVG, the top sites with their stacks, the top Python lines, growth and
// what was live at exit, the workspaces, device memory, and the limits with each snapshot's
// sites. Every string from the trace is HTML-escaped to strict UTF-8.
#include "report.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- escaping and units

// Text from the trace, HTML-escaped. What HTML calls a parse error in its input stream is shown
// as \xNN per byte (as text shows control bytes), never raw: control characters (C0, DEL, C1),
// noncharacters, and bytes that are not well-formed UTF-8. The page is then strict UTF-8 and
// parses as XML would.
static void esc(FILE *o, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    uint32_t cp;
    int n = nd_rep_utf8_len(p, &cp);
    bool bad = !n || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xfdd0 && cp <= 0xfdef) ||
               (cp & 0xfffe) == 0xfffe;
    if (bad) {
      for (int i = 0; i < (n ? n : 1); i++) fprintf(o, "\\x%02x", p[i]);
      p += n ? n : 1;
      continue;
    }
    switch (*p) {
    case '&': fputs("&amp;", o); break;
    case '<': fputs("&lt;", o); break;
    case '>': fputs("&gt;", o); break;
    case '"': fputs("&quot;", o); break;
    case '\'': fputs("&#39;", o); break;
    default: fwrite(p, 1, (size_t)n, o);
    }
    p += n;
  }
}



// "28.23 MiB" with the exact bytes as its title; `est` prefixes '~'.
static void bytes(FILE *o, uint64_t v, bool est) {
  char h[48];
  nd_rep_human(h, sizeof h, v);
  fprintf(o, "<span title=\"%llu B\">%s%s</span>", (unsigned long long)v, est ? "~" : "", h);
}

// An estimate capped at a bound the exact counters prove (lifetime.h): "at most", no "~".
static void amount(FILE *o, uint64_t v, bool est, bool most) {
  if (est && most) fputs("at most ", o);
  bytes(o, v, est && !most);
}

// ---------------------------------------------------------------- summary

// The text summary, rendered by render_text.c into memory and laid out as a table: its lines are
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
      esc(o, key);
      fputs("</th><td>", o);
      open = true;
    }
    esc(o, val);
  }
  if (open) fputs("</td></tr>\n", o);
  fputs("</table>\n", o);
  free(buf);
  return 0;
}

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

typedef struct plot {
  double tmax, ymax;  // seconds, bytes
  double tstep;       // seconds between ticks (axes)
} plot_t;

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

static void html_timeline(FILE *o, const report_t *r, plot_t *out) {
  const nd_trace_t *t = r->t;
  fputs("<h2 id=\"timeline\">Timeline</h2>\n", o);
  if (!t->npoints) {
    fputs("<p>No COUNTERS record: nothing to plot.</p>\n", o);
    return;
  }
  // The kinds that ever held memory, and the axes' ranges.
  bool shown[ND_TRACE_KINDS] = {false};
  plot_t p = {sec_of(t, t->last_ns), 0, 0};
  for (size_t i = 0; i < t->npoints; i++) {
    const nd_point_t *q = &t->series[i];
    up(&p.tmax, sec_of(t, q->mono_ns));
    for (int k = 0; k < ND_TRACE_KINDS; k++) {
      if (q->live[k] > 0) shown[k] = true;
      up(&p.ymax, (double)q->live[k]);
    }
    up(&p.ymax, (double)q->resident);
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
  if (t->have_flush && t->flush.steady_ns) {
    double x = px(&p, sec_of(t, t->flush.steady_ns));
    fprintf(o, "<line class=\"cyc\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
               "<text class=\"lab\" x=\"%.1f\" y=\"%d\">steady state</text>\n",
            x, MT, x, MT + PH, x + 3, MT + 12);
  }
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
              py(&p, q->live[k] > 0 ? (double)q->live[k] : 0));
    }
    fprintf(o, "\"><title>%s</title></polyline>\n", nd_rep_kind_names[k]);
    for (size_t i = 0; t->npoints <= 64 && i < t->npoints; i++) {
      const nd_point_t *q = &t->series[i];
      char h[48];
      nd_rep_human(h, sizeof h, q->live[k] > 0 ? (uint64_t)q->live[k] : 0);
      fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>%s %s at ",
              px(&p, sec_of(t, q->mono_ns)), py(&p, q->live[k] > 0 ? (double)q->live[k] : 0), c,
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

// ---------------------------------------------------------------- top sites over time

// At most this many bytes of a name in a legend, which does not wrap.
#define LEGEND_NAME 72

// As esc, for at most `max` bytes of s (cut at a character, '...' after a cut).
static void esc_max(FILE *o, const char *s, size_t max) {
  size_t n = strlen(s);
  if (n <= max) {
    esc(o, s);
    return;
  }
  char b[LEGEND_NAME + 1];
  if (max > LEGEND_NAME) max = LEGEND_NAME;
  while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80) max--; // not inside a character
  memcpy(b, s, max);
  b[max] = 0;
  esc(o, b);
  fputs("...", o);
}

// The C and C++ runtimes and ndmem itself: their frames are allocation wrappers (malloc,
// operator new, strdup), not where a site's memory is wanted.
static bool runtime_module(const char *path) {
  static const char *const prefixes[] = {"libc.so", "libc-", "libstdc++.so", "libc++.so",
                                         "libc++abi.so", "libgcc_s.so", "libndmem"};
  const char *b = nd_rep_base_name(path);
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(b, prefixes[i], strlen(prefixes[i]))) return true;
  return false;
}

// A site named by its first useful frame: its stack's innermost Python frame where it has one,
// else its innermost frame outside the runtimes (runtime_module) with a function name, else with
// a module, else outside every module, else frame #0; a function, else module+0xOFF (the
// module's base name), else the address. -1 when out of memory.
static int site_label(FILE *o, report_t *r, uint32_t stack) {
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
    if (f->module && runtime_module(f->module)) continue;
    int rank = !f->module ? 1 : f->at.function ? 3 : 2;
    if (rank > best) at = i, best = rank;
  }
  f = nd_sym_frame(r->sym, ips[at]);
  if (!f) return -1;
  char b[LEGEND_NAME + 64];
  if (f->python) {
    esc_max(o, f->at.function && *f->at.function ? f->at.function : "?", LEGEND_NAME);
    fputs(" (", o);
    esc_max(o, f->at.file && *f->at.file ? nd_rep_base_name(f->at.file) : "?", LEGEND_NAME / 2);
    if (f->at.line) fprintf(o, ":%d", f->at.line);
    fputc(')', o);
  } else if (!f->module) {
    fprintf(o, "0x%llx", (unsigned long long)f->ip);
  } else if (f->at.function) {
    esc_max(o, f->at.function, LEGEND_NAME);
  } else {
    esc_max(o, nd_rep_base_name(f->module), LEGEND_NAME / 2);
    snprintf(b, sizeof b, "+0x%llx", (unsigned long long)f->offset);
    fputs(b, o);
  }
  return 0;
}

enum { TOP_SERIES = 5 }; // sites drawn over time

// The live bytes of the top sites by peak (the first TOP_SERIES of the list) at each point of the
// timeline, on its time axis: a second read of the file (nd_trace_site_series), as the first
// keeps only each site's latest totals. -1 when out of memory.
static int html_site_timeline(FILE *o, report_t *r, const plot_t *main) {
  const nd_trace_t *t = r->t;
  size_t n = nd_rep_list_len(r, t->nsites);
  if (n > TOP_SERIES) n = TOP_SERIES;
  if (!n || !t->npoints) return 0;
  fputs("<h3 id=\"timeline-sites\">Top sites over time</h3>\n", o);
  nd_site_series_t ss;
  int rc = nd_trace_site_series(t, r->by_peak, n, &ss);
  if (rc > 0) {
    fputs("<p class=\"note\">The input is not a regular file (a pipe): the top sites' live bytes "
          "over time need a second read of it, so they are not drawn.</p>\n",
          o);
  } else if (rc < 0) {
    fputs("<p class=\"note\">The top sites' live bytes over time are not drawn: ", o);
    esc(o, ss.err);
    fputs(".</p>\n", o);
  }
  if (rc) {
    nd_site_series_free(&ss);
    return 0;
  }
  plot_t p = {main->tmax, 0, main->tstep};
  for (size_t j = 0; j < n; j++) up(&p.ymax, (double)ss.peak[j]);
  int h = H + 14 * (int)n + 8;
  fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"live bytes of the top sites over "
             "time\">\n",
          W, h, W, h);
  fprintf(o, "<title>Live bytes of the top %zu %s by peak at each flush</title>\n", n,
          n == 1 ? "site" : "sites");
  axes(o, &p);
  rc = 0;
  for (size_t j = 0; j < n && !rc; j++) {
    const nd_site_t *site = &t->sites[r->by_peak[j]];
    bool est = site->rec.flags & ND_SITE_SAMPLED;
    const char *c = kind_colors[j % 8];
    const uint64_t *v = ss.live + j * ND_TRACE_MAX_POINTS;
    fprintf(o, "<polyline class=\"series site\" stroke=\"%s\" points=\"", c);
    for (size_t i = 0; i < ss.npoints; i++)
      fprintf(o, "%s%.1f,%.1f", i ? " " : "", px(&p, sec_of(t, ss.mono_ns[i])),
              py(&p, (double)v[i]));
    fprintf(o, "\"><title>#%zu ", j + 1);
    if ((rc = site_label(o, r, site->stack))) break;
    fputs("</title></polyline>\n", o);
    for (size_t i = 0; ss.npoints <= 64 && i < ss.npoints; i++) {
      char hb[48];
      nd_rep_human(hb, sizeof hb, v[i]);
      fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>#%zu %s%s at ",
              px(&p, sec_of(t, ss.mono_ns[i])), py(&p, (double)v[i]), c, j + 1, est ? "~" : "",
              hb);
      nd_rep_print_secs(o, nd_rep_since_start(t, ss.mono_ns[i]));
      fputs("</title></circle>\n", o);
    }
    int y = H + 10 + 14 * (int)j;
    char hb[48];
    nd_rep_human(hb, sizeof hb, site->rec.peak_live_bytes);
    fprintf(o, "<a href=\"#peak-%zu\"><rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" "
               "fill=\"%s\"/><text class=\"lab\" x=\"%d\" y=\"%d\">#%zu %s, peak %s%s: ",
            j + 1, ML, y - 4, c, ML + 16, y, j + 1, nd_rep_kind_names[site->rec.kind],
            est ? "~" : "", hb);
    if ((rc = site_label(o, r, site->stack))) break;
    fputs("</text></a>\n", o);
  }
  if (rc) {
    nd_site_series_free(&ss);
    return -1;
  }
  fputs("</svg>\n", o);
  fprintf(o, "<p class=\"note\">Live bytes (allocated less freed) of the %zu largest %s by peak "
             "(each named by its innermost Python frame, else its first frame outside the C and "
             "C++ runtimes, one with a function name or a module where there is one; ~: "
             "estimated from samples) at the %zu %s of the timeline "
             "above, from the SITE records of each flush: a site that did not change in a flush "
             "keeps its value.</p>\n",
          n, n == 1 ? "site" : "sites", ss.npoints, ss.npoints == 1 ? "point" : "points");
  nd_site_series_free(&ss);
  return 0;
}

// ---------------------------------------------------------------- stacks and sites

static void html_loc(FILE *o, const nd_loc_t *l, const nd_frame_t *f) {
  if (l->function) {
    fputs("<b>", o);
    esc(o, l->function);
    fputs("</b> ", o);
  }
  fputs("<span class=\"at\">", o);
  if (l->file) {
    esc(o, l->file);
    fprintf(o, ":%d", l->line);
  } else {
    esc(o, f->module);
    fprintf(o, "+0x%llx", (unsigned long long)f->offset);
  }
  fputs("</span>", o);
}

// A stack's frames as a list (--frames of them; --python-only as in text).
static int html_stack(FILE *o, report_t *r, uint32_t stack) {
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
    fputs("<li>", o);
    if (f->python) {
      fputs("<b>", o);
      esc(o, f->at.function ? f->at.function : "?");
      fputs("</b> <span class=\"at\">", o);
      esc(o, f->at.file ? f->at.file : "?");
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
    bytes(o, x->peak_live_bytes, est);
    fputs("</td><td class=\"n\">", o);
    bytes(o, x->alloc_bytes, est);
    fprintf(o, "</td><td class=\"n\">%s%llu</td><td class=\"n\">%s%llu</td><td class=\"n\">",
            est ? "~" : "", (unsigned long long)x->allocs, est ? "~" : "",
            (unsigned long long)x->frees);
    bytes(o, nd_rep_site_live(x), est);
    fprintf(o, "</td><td>stack %u ", x->stack_id);
    if (peak_rank && peak_rank[order[i]]) {
      fprintf(o, "(as in <a href=\"#peak-%u\">#%u by peak</a>)", peak_rank[order[i]],
              peak_rank[order[i]]);
    } else if (html_stack(o, r, s->stack)) {
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
    bytes(o, l->alloc_bytes, l->est);
    fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">%s%llu</td><td class=\"n\">",
            (unsigned long long)l->sites, l->est ? "~" : "", (unsigned long long)l->allocs);
    bytes(o, l->live_bytes, l->est);
    fputs("</td><td><b>", o);
    esc(o, l->code->qualname && *l->code->qualname ? l->code->qualname : "?");
    fputs("</b> <span class=\"at\">", o);
    esc(o, l->code->filename && *l->code->filename ? l->code->filename : "?");
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
      amount(o, base, est, most_base);
      fputs("</td><td class=\"n\">", o);
      amount(o, lowest, est, most_floor);
      if (g->cycle > g->base_cycle)
        fprintf(o, "</td><td>%llu to %llu</td><td>", (unsigned long long)g->base_cycle,
                (unsigned long long)g->cycle);
      else
        fputs("</td><td>none</td><td>", o);
      nd_rep_print_secs(o, nd_rep_since_start(t, g->mono_ns));
      fprintf(o, "</td><td class=\"n\">%llu</td><td>stack %u ", (unsigned long long)g->rises,
              g->stack_id);
      if (html_stack(o, r, t->growth[i].stack)) return -1;
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
    if (c == ND_LIFE_STARTUP || c == ND_LIFE_SUPPRESSED) shown = 0; // totals only, as in text
    if (n && !shown) {
      fprintf(o, "<tr><td>%s</td><td></td><td class=\"n\">", nd_life_names[c]);
      amount(o, l->bytes[c], l->est[c], l->most_bytes[c]);
      fprintf(o, "</td><td class=\"n\">%s%llu</td><td>%zu %s</td><td></td></tr>\n",
              l->most_blocks[c] ? "at most " : l->est[c] ? "~" : "",
              (unsigned long long)l->blocks[c], n, n == 1 ? "stack" : "stacks");
    }
    for (size_t i = 0; i < shown; i++) {
      const nd_life_t *e = &l->v[at + i];
      bool est = e->samples > 0;
      fprintf(o, "<tr><td>%s</td><td>%s</td><td class=\"n\">", nd_life_names[c],
              nd_rep_kind_names[e->kind]);
      amount(o, e->bytes, est, e->most_bytes);
      fprintf(o, "</td><td class=\"n\">%s%llu</td><td>",
              est && e->most_blocks ? "at most " : est ? "~" : "",
              (unsigned long long)e->blocks);
      if (e->cls == ND_LIFE_GROWING || e->cls == ND_LIFE_TEARDOWN) {
        fputs("+", o); // growth is capped with the bytes it is part of
        if (e->cycles) {
          amount(o, e->grew / e->cycles, est, e->most_grew);
          fprintf(o, " per cycle over %llu cycles", (unsigned long long)e->cycles);
        } else {
          amount(o, e->grew, est, e->most_grew);
          fputs(" during the run", o);
        }
        if (e->cls == ND_LIFE_TEARDOWN) fputs("; freed only at exit", o);
      } else {
        fprintf(o, "births %.0f-%.0f %% of the run", e->born_first * 100, e->born_last * 100);
      }
      if (e->flagged) fputs("; flagged while running", o);
      fprintf(o, "</td><td>stack %u ", r->t->stacks[e->stack].id);
      if (html_stack(o, r, e->stack)) return -1;
      fputs("</td></tr>\n", o);
    }
    at += n;
  }
  fputs("</table>\n", o);
  if (l->untracked_blocks)
    fprintf(o, "<p>Untracked: %llu small %s live at exit in no entry above (sampled).</p>\n",
            (unsigned long long)l->untracked_blocks, l->untracked_blocks == 1 ? "block" : "blocks");
  if (l->unrecorded_blocks) { // the blocks --fail-on-leak cannot check (ndmemreport.c)
    fprintf(o, "<p>Unrecorded: %llu heap %s live at exit, at most ",
            (unsigned long long)l->unrecorded_blocks,
            l->unrecorded_blocks == 1 ? "block" : "blocks");
    bytes(o, l->unrecorded_bytes, false);
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
    bool v10 = t->hdr.version >= 10; // what it served, and what its learning trims gave back
    if (v10) fputs("<th>served</th><th>learning trims</th><th>gave back</th><th>at most</th>", o);
    fputs("</tr>\n", o);
    for (size_t i = 0; i < t->nws; i++) {
      const nd_rec_workspace_t *w = &t->ws[r->ws[i]];
      char ratio[64];
      nd_rep_format_ratio(ratio, sizeof ratio, w->plan_sum_bytes, w->plan_peak_bytes);
      fputs("<tr><td>", o);
      esc(o, w->name); // NUL-terminated (check_name)
      fprintf(o, "</td><td class=\"n\">%u</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
                 "<td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">",
              w->tid, (unsigned long long)w->cycles, (unsigned long long)w->learned_cycles,
              (unsigned long long)w->relearns, (unsigned long long)w->deviations);
      bytes(o, w->arena_bytes, false);
      fputs("</td><td class=\"n\">", o);
      bytes(o, w->plan_peak_bytes, false);
      fputs("</td><td class=\"n\">", o);
      bytes(o, w->plan_sum_bytes, false);
      fprintf(o, "</td><td class=\"n\">%s</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
                 "<td class=\"n\">",
              ratio, (unsigned long long)w->hits, (unsigned long long)w->spills);
      bytes(o, w->spill_bytes, false);
      fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">", (unsigned long long)w->escapes);
      bytes(o, w->pinned_bytes, false);
      fprintf(o, "</td><td class=\"n\">%llu</td>", (unsigned long long)w->outlived);
      if (v10) {
        fputs("<td class=\"n\">", o);
        bytes(o, w->hit_bytes, false);
        fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">",
                (unsigned long long)w->learn_trims);
        bytes(o, w->learn_trim_bytes, false);
        fputs("</td><td class=\"n\">", o);
        bytes(o, w->learn_trim_max_bytes, false);
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
    esc(o, e->rec.name); // NUL-terminated (check_name)
    fprintf(o, "</td><td class=\"n\">%u</td><td class=\"n\">%llu</td><td class=\"n\">", e->rec.tid,
            (unsigned long long)g->count);
    bytes(o, g->bytes, false);
    fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td>",
            (unsigned long long)g->born, (unsigned long long)g->seen);
    if (e->rec.stack_id == UINT32_MAX) {
      fputs("unknown (not tracked)", o);
    } else if (e->stack == UINT32_MAX) {
      fprintf(o, "stack %u (not in the trace)", e->rec.stack_id);
    } else {
      fprintf(o, "stack %u ", e->rec.stack_id);
      if (html_stack(o, r, e->stack)) return -1;
    }
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  return 0;
}

// ---------------------------------------------------------------- device memory

static void sbytes(FILE *o, int64_t v) {
  if (v < 0) fputc('-', o);
  bytes(o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, false);
}

static void dev_class_row(FILE *o, const char *name, const nd_rec_dev_class_t *c) {
  fprintf(o, "<tr><td>%s</td><td class=\"n\">%llu</td><td class=\"n\">", name,
          (unsigned long long)c->allocs);
  bytes(o, c->alloc_bytes, false);
  fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">", (unsigned long long)c->frees);
  bytes(o, c->free_bytes, false);
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
    bytes(o, w->hit_bytes, false);
    fputs(") from an arena of ", o);
    bytes(o, w->arena_bytes, false);
    fputs(" with no driver call; plan peak ", o);
    bytes(o, w->plan_peak_bytes, false);
    fputs(", sum ", o);
    bytes(o, w->plan_sum_bytes, false);
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
  bytes(o, s->alloc_bytes, false);
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
    bytes(o, x->rec.alloc_bytes, false);
    fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">", (unsigned long long)x->rec.allocs);
    sbytes(o, x->rec.peak_bytes);
    fputs("</td><td>", o);
    if (html_stack(o, r, (uint32_t)x->stack)) return -1;
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
    if (v->total_bytes) bytes(o, v->total_bytes, false);
    else fputs("not asked", o);
    fputs("</td></tr>\n<tr><th>maxDeviceBytes</th><td>", o);
    if (v->limit_bytes) bytes(o, v->limit_bytes, false);
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
      if (differs) esc(o, why);
      fputs("</td></tr>\n", o);
      if (v->cupti_pool_reserved_peak) {
        fputs("<tr><th>pools reserve</th><td>", o);
        bytes(o, v->cupti_pool_reserved, false);
        fputs(" now, peak ", o);
        bytes(o, v->cupti_pool_reserved_peak, false);
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
    esc(o, torch);
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
  if (limit) bytes(o, limit, false);
  else fputs("none", o);
  fprintf(o, "</td><td>%s</td><td class=\"n\">", what);
  if (read) bytes(o, peak, false);
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
  bytes(o, live, est);
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
      bytes(o, e->rec.live_bytes, sampled);
      fprintf(o, "</td><td class=\"n\">%s%llu %s</td><td>stack %u ", sampled ? "~" : "",
              (unsigned long long)e->rec.live_count,
              e->rec.kind == 1 ? (e->rec.live_count == 1 ? "mapping" : "mappings")
                               : (e->rec.live_count == 1 ? "block" : "blocks"),
              e->rec.stack_id);
      if (html_stack(o, r, e->stack)) return -1;
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
    bytes(o, l->relief_bytes, false);
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
      bytes(o, b->requested, false);
      fputs("</td><td class=\"n\">", o);
      bytes(o, b->value, false);
      fputs("</td><td class=\"n\">", o);
      bytes(o, b->limit_bytes, false);
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
      bytes(o, s->rec.tracked, false);
      fputs("</td><td class=\"n\">", o);
      if (s->rec.physical) bytes(o, s->rec.physical, false);
      else fputs("not read", o);
      fputs("</td><td class=\"n\">", o);
      bytes(o, s->rec.threshold, false);
      fprintf(o, "</td><td class=\"n\"><a href=\"#snap-%llu\">%u</a></td><td>",
              (unsigned long long)s->seq, s->read);
      if (s->nsites) {
        const nd_snap_site_t *e = &s->sites[0];
        fprintf(o, "%s ", nd_rep_kind_names[e->rec.kind]);
        bytes(o, e->rec.live_bytes, e->rec.flags & ND_SITE_SAMPLED);
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

// ---------------------------------------------------------------- the page

static const char css[] =
    "body{font:14px/1.4 sans-serif;margin:1em 2em;color:#222;background:#fff}\n"
    "h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.6em}\n"
    "h3{font-size:1em}table{border-collapse:collapse;margin:.5em 0}\n"
    "td,th{border:1px solid #ddd;padding:2px 6px;vertical-align:top;text-align:left}\n"
    "th{background:#f3f3f3}td.n{text-align:right;white-space:nowrap}\n"
    "table.kv th{width:8em}ol.stack{margin:0;padding-left:2.5em;font:12px monospace}\n"
    ".at{color:#555}.note{color:#666;font-size:.9em}\n"
    "svg{font:11px sans-serif;max-width:100%;height:auto}\n"
    "svg .frame{fill:none;stroke:#999}svg .grid{stroke:#eee}\n"
    "svg .yt{text-anchor:end}svg .xt{text-anchor:middle}\n"
    "svg .series{fill:none;stroke-width:2}\n"
    "svg .lim{stroke:#c00;stroke-dasharray:6 3}svg .warn{stroke:#e80;stroke-dasharray:3 3}\n"
    "svg .cyc{stroke:#393;stroke-dasharray:2 2}svg .cyct{stroke:#393}\n"
    "svg .breach{fill:#c00}svg .snap{stroke:#888;stroke-dasharray:1 3}svg .snapm{fill:#555}\n"
    "svg a text{fill:#0645ad}details{margin:.3em 0}summary{cursor:pointer}\n";

int nd_rep_html_report(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>ndmem: ",
        o);
  esc(o, t->exe[0] ? t->exe : "?");
  fprintf(o, " (pid %llu)</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>ndmem report: ",
          (unsigned long long)t->hdr.pid, css);
  esc(o, t->exe[0] ? t->exe : "?");
  fputs("</h1>\n<p class=\"note\"><a href=\"#summary\">summary</a> · <a href=\"#timeline\">"
        "timeline</a> · <a href=\"#sites\">sites</a> · <a href=\"#growth\">growth</a>",
        o);
  if (r->npy_lines) fputs(" · <a href=\"#python\">Python lines</a>", o);
  if (t->nws || nd_rep_esc_records(t)) fputs(" · <a href=\"#workspaces\">workspaces</a>", o);
  if (nd_rep_has_devices(t)) fputs(" · <a href=\"#devices\">devices</a>", o);
  if (nd_rep_has_limits(t) || nd_rep_device_limited(t)) fputs(" · <a href=\"#limits\">limits</a>", o);
  fputs("</p>\n", o);
  if (html_summary(o, r)) return -1;
  plot_t p = {0, 0, 0}; // set by html_timeline when there are points (the only use)
  html_timeline(o, r, &p);
  if (t->npoints && html_site_timeline(o, r, &p)) return -1;
  size_t n = nd_rep_list_len(r, t->nsites);
  char title[96];
  snprintf(title, sizeof title, "Top %zu allocation sites by peak live bytes (of %zu)", n,
           t->nsites);
  if (html_sites(o, r, r->by_peak, n, title, "sites", NULL)) return -1;
  uint32_t *peak_rank = calloc(t->nsites ? t->nsites : 1, sizeof *peak_rank);
  if (!peak_rank) return -1;
  for (size_t i = 0; i < n; i++) peak_rank[r->by_peak[i]] = (uint32_t)i + 1;
  snprintf(title, sizeof title, "Top %zu allocation sites by total bytes (of %zu)", n, t->nsites);
  int rc = html_sites(o, r, r->by_total, n, title, "sites-total", peak_rank);
  free(peak_rank);
  if (rc) return -1;
  html_py_lines(o, r);
  if (html_growth(o, r) || html_workspaces(o, r) || html_devices(o, r)) return -1;
  if (html_limits(o, r)) return -1;
  fputs("</body>\n</html>\n", o);
  return 0;
}
