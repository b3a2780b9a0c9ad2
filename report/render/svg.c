// SPDX-License-Identifier: MIT
// svg.c: --format svg, the sites as a flame graph in one self-contained SVG file (no
// script, no font, nothing fetched) for a CI artefact or a bug report, and the frames the HTML
// report's flame graphs are drawn with (nd_flame_frames). An icicle: the root ("all") on top,
// each frame's callees below it, as wide as their share of --flame-by (peak live bytes, bytes
// allocated, or live at exit); hovering a frame shows its <title>: name, bytes, share, sites.
#include "render/render.h"

#include <stdlib.h>
#include <string.h>

enum { MARGIN = 10, CHAR_PX = 7 }; // 12 px monospace: ~7.2 px a character, 7 leaves no overflow

static double xpx(const nd_flame_t *f, uint64_t v, int width) {
  return f->total ? (double)v / (double)f->total * (width - 2 * MARGIN) : 0;
}

void nd_flame_total(uint64_t v, bool est, bool most, char *out, size_t n) {
  char h[48];
  nd_rep_human(h, sizeof h, v);
  snprintf(out, n, "%s%s", most ? "at most " : est ? "~" : "", h);
}

void nd_flame_colour(const nd_flame_node_t *n, const char *name, char c[8]) {
  uint32_t h = 2166136261u; // FNV-1a: stable across runs and machines
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 16777619u;
  unsigned v = h % 64, u = (h >> 8) % 64;
  if (!n->depth) snprintf(c, 8, "#%02x%02x%02x", 0xc8, 0xc8, 0xd0);
  else if (n->f && n->f->python) snprintf(c, 8, "#%02x%02x%02x", 0x50 + v, 0xb4 + u / 2, 0x5a + v);
  else if (n->f && n->f->module && nd_flame_runtime_module(n->f->module))
    snprintf(c, 8, "#%02x%02x%02x", 0xb0 + v / 2, 0xb0 + v / 2, 0xb0 + v / 2);
  else snprintf(c, 8, "#%02x%02x%02x", 0xe6 + v / 4, 0x64 + 2 * u, 0x37 + v / 2);
}

const char *nd_flame_measure(const report_t *r, enum nd_weight by) {
  bool end = r->t->ended;
  switch (by) {
  case ND_BY_TOTAL: return "bytes allocated";
  case ND_BY_LIVE: return end ? "live at exit" : "live at the last flush";
  case ND_BY_SITE_PEAK: return "each site's own peak";
  default:
    if (r->t->peak[ND_PEAK_HOST].epoch) return "live at the peak";
    return end ? "live at exit (the trace has no peak moment)"
               : "live at the last flush (the trace has no peak moment)";
  }
}

void nd_flame_moment(const report_t *r, char *out, size_t n) {
  const nd_trace_t *t = r->t;
  const nd_rec_peak_t *m = &t->peak[ND_PEAK_HOST];
  if (!m->epoch) {
    snprintf(out, n, "%s", t->hdr.version < 15 ? "traces before version 15 do not record it"
                                               : "the host memory never passed 256 KiB");
    return;
  }
  char a[48], b[48];
  nd_rep_human(a, sizeof a, m->bytes);
  nd_rep_human(b, sizeof b, m->max);
  double s = m->mono_ns > t->hdr.start_mono_ns ? (m->mono_ns - t->hdr.start_mono_ns) / 1e9 : 0;
  if (m->max > m->bytes)
    snprintf(out, n, "%.2f s after the start, when heap and mappings held %s (their highest: %s)",
             s, a, b);
  else
    snprintf(out, n, "%.2f s after the start, when heap and mappings held %s", s, a);
}

int nd_flame_frames(FILE *o, const nd_flame_t *f, int width, int top) {
  sbuf_t name = {0};
  char h[48], pct[32], colour[8];
  for (size_t i = 0; i < f->n; i++) {
    const nd_flame_node_t *n = &f->v[i];
    nd_flame_name(n, &name);
    if (name.oom) {
      free(name.p);
      return -1;
    }
    double x = MARGIN + xpx(f, n->x, width), w = xpx(f, n->w, width);
    int y = top + (int)n->depth * ND_FLAME_ROW;
    nd_flame_colour(n, name.p, colour);
    nd_rep_human(h, sizeof h, n->w);
    nd_rep_format_pct(pct, sizeof pct, n->w, f->total);
    fprintf(o, "<g class=\"fr\" data-i=\"%zu\" data-p=\"%ld\" data-x=\"%llu\" data-w=\"%llu\" "
               "data-s=\"%u\"><title>",
            i, n->parent == UINT32_MAX ? -1L : (long)n->parent, (unsigned long long)n->x,
            (unsigned long long)n->w, n->site);
    nd_html_esc(o, name.p);
    fprintf(o, "\n%s%s (%s), %u %s</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
               "height=\"%d\" fill=\"%s\"/>",
            n->est ? "~" : "", h, pct, n->sites, n->sites == 1 ? "site" : "sites", x, y, w,
            ND_FLAME_ROW - 1, colour);
    // The name cut to what fits (3 characters at least, else none).
    size_t fit = w > 6 ? (size_t)((w - 6) / CHAR_PX) : 0;
    if (fit >= 3) {
      fprintf(o, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + ND_FLAME_ROW - 5);
      size_t chars = nd_html_chars(name.p);
      nd_html_esc_chars(o, name.p, chars > fit ? fit - 2 : fit);
      fputs("</text>", o);
    }
    fputs("</g>\n", o);
  }
  free(name.p);
  return 0;
}

// The sum of a measure over the sites (saturating), as the flame graph weighs them, into
// out as "~X" when a sampled estimate is in it, "at most X" when one was capped.
static void sum_of(const nd_trace_t *t, enum nd_weight by, char *out, size_t n) {
  nd_flame_cap_t cap;
  nd_flame_weigh(t, &cap);
  uint64_t s = 0;
  bool est = false;
  for (size_t i = 0; i < t->nsites; i++) {
    uint64_t v = nd_flame_weight(t, &cap, i, by);
    s = nd_rep_sat_add(s, v);
    est |= v && (t->sites[i].rec.flags & ND_SITE_SAMPLED);
  }
  nd_flame_total(s, est, (by == ND_BY_LIVE && cap.capped) || (by == ND_BY_PEAK && cap.peak_capped),
                 out, n);
}

int nd_rep_svg_report(FILE *o, report_t *r) {
  enum { WIDTH = 1200, TOP = 84 };
  const nd_trace_t *t = r->t;
  enum nd_weight by = r->o->flame_by;
  nd_flame_order_t ord;
  nd_flame_t f;
  int rc = nd_flame_order(r, &ord);
  if (!rc) rc = nd_flame_build(r, &ord, by, 1000, &f);
  nd_flame_order_free(&ord);
  if (rc) {
    nd_flame_free(&f);
    return -1;
  }
  int height = TOP + ((int)f.depth + 1) * ND_FLAME_ROW + 24;
  fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" "
             "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"monospace\" "
             "font-size=\"12\" data-by=\"%s\" data-total=\"%llu\">\n",
          WIDTH, height, WIDTH, height, nd_rep_weight_names[by], (unsigned long long)f.total);
  fputs("<style>text{fill:#000}.h{font:bold 17px sans-serif}.s{font:13px sans-serif}"
        ".n{font:12px sans-serif;fill:#555}.fr rect{stroke:#fff;stroke-width:.5}"
        ".fr:hover rect{stroke:#000;stroke-width:1}</style>\n", o);
  fprintf(o, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n<title>ndmem flame graph: ",
          WIDTH, height);
  nd_html_esc(o, t->exe[0] ? t->exe : "?");
  fprintf(o, " (pid %llu)</title>\n<text class=\"h\" x=\"%d\" y=\"24\">ndmem flame graph: ",
          (unsigned long long)t->hdr.pid, MARGIN);
  nd_html_esc_chars(o, t->exe[0] ? t->exe : "?", 100);
  fprintf(o, " (pid %llu)</text>\n", (unsigned long long)t->hdr.pid);
  // The measure and the totals of every one, so the picture says what its widths are.
  char a[64], b[64], c[64], d[64], when[160];
  nd_flame_total(f.total, f.est, f.most, a, sizeof a);
  nd_flame_moment(r, when, sizeof when);
  fprintf(o, "<text class=\"s\" x=\"%d\" y=\"46\">Width: %s, %s over %zu %s%s", MARGIN,
          nd_flame_measure(r, by), a, f.nsites, f.nsites == 1 ? "site" : "sites",
          by == ND_BY_SITE_PEAK ? " (summed: sites peak at different times)" : "");
  if (by == ND_BY_PEAK && t->peak[ND_PEAK_HOST].epoch) {
    fputs(" (", o);
    nd_html_esc(o, when);
    fputc(')', o);
  }
  sum_of(t, ND_BY_PEAK, a, sizeof a);
  sum_of(t, ND_BY_SITE_PEAK, b, sizeof b);
  sum_of(t, ND_BY_TOTAL, c, sizeof c);
  sum_of(t, ND_BY_LIVE, d, sizeof d);
  fputs(". All sites: ", o);
  if (t->peak[ND_PEAK_HOST].epoch) fprintf(o, "live at the peak %s, ", a);
  fprintf(o, "their own peaks summed %s, allocated %s, %s %s.</text>\n", b, c,
          t->ended ? "live at exit" : "live at the last flush", d);
  fprintf(o, "<text class=\"n\" x=\"%d\" y=\"66\">Callers above callees; green: Python, grey: "
             "C/C++ runtime and ndmem, warm: other native code. ", MARGIN);
  if (f.cut_nodes) {
    nd_rep_human(a, sizeof a, f.cut);
    fprintf(o, "Frames narrower than 0.1 %% left out: %s in %llu. ", a,
            (unsigned long long)f.cut_nodes);
  }
  fputs("Hover a frame for its name and bytes.</text>\n", o);
  rc = nd_flame_frames(o, &f, WIDTH, TOP);
  if (!f.total)
    fprintf(o, "<text class=\"s\" x=\"%d\" y=\"%d\">No site has %s.</text>\n", MARGIN,
            TOP + 2 * ND_FLAME_ROW, nd_flame_measure(r, by));
  fputs("</svg>\n", o);
  nd_flame_free(&f);
  return rc;
}
