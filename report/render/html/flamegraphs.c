// SPDX-License-Identifier: MIT
// flamegraphs.c: the HTML report's flame graphs: the sites' stacks merged from the
// outermost frame (flame.h) by live bytes at the process's peak (the first), each site's own peak,
// bytes allocated and live at exit, one icicle each,
// drawn on the server (svg.c's frames) so that they read without a script: a CSS-only
// switch shows one at a time, each frame's <title> gives its name and bytes. The script adds zoom,
// search and the panel with a frame's heaviest site: its full stack, lifetime class and numbers,
// which this file writes once per site shown, hidden, for the script to show.
#include "render/html/html.h"

#include <stdlib.h>
#include <string.h>

enum { FLAME_W = 1200, FLAME_DETAILS = 2000 }; // px; sites whose details the panel can show

static const char *const measure_ids[ND_WEIGHTS] = {"site-peak", "total", "live", "peak"};
// The tabs' order: live at the peak first (the default), then each site's own peak. A trace
// without a peak moment has no first tab (it would be live at exit again): live at exit is its
// default.
static const enum nd_weight tab_order[ND_WEIGHTS] = {ND_BY_PEAK, ND_BY_SITE_PEAK, ND_BY_TOTAL,
                                                     ND_BY_LIVE};

// The details of site i for the panel: its name, kind, lifetime class, numbers and full stack.
static int site_details(FILE *o, report_t *r, uint32_t i, const int *cls) {
  const nd_trace_t *t = r->t;
  const nd_site_t *s = &t->sites[i];
  const nd_rec_site_t *x = &s->rec;
  bool est = x->flags & ND_SITE_SAMPLED;
  fprintf(o, "<div id=\"fs-%u\"><h3>", i);
  if (nd_html_site_label(o, r, s->stack)) return -1;
  fprintf(o, "</h3><table class=\"kv\"><tr><th>kind</th><td>%s, stack %u</td></tr>"
             "<tr><th>at exit</th><td>",
          nd_rep_kind_names[x->kind < ND_TRACE_KINDS ? x->kind : 0], x->stack_id);
  if (cls[i] >= 0) fputs(nd_life_names[cls[i]], o);
  else if (!nd_rep_leaks_known(t))
    fputs(nd_rep_exec_end(t) ? "not judged (an exec)" : "unknown (no normal exit)", o);
  else fputs(nd_rep_site_live(x) ? "live (no class)" : "nothing live", o);
  if (nd_rep_peak_known(t, x->kind)) {
    fputs("</td></tr><tr><th>live at the peak</th><td>", o);
    nd_html_bytes(o, nd_rep_site_at_peak(t, s), est);
  }
  fputs("</td></tr><tr><th>its own peak</th><td>", o);
  nd_html_bytes(o, x->peak_live_bytes, est);
  fputs("</td></tr><tr><th>allocated</th><td>", o);
  nd_html_bytes(o, x->alloc_bytes, est);
  fprintf(o, " in %s%llu allocations, %s%llu freed</td></tr><tr><th>%s</th><td>",
          est ? "~" : "", (unsigned long long)x->allocs, est ? "~" : "",
          (unsigned long long)x->frees, t->ended ? "live at exit" : "live at the last flush");
  nd_html_bytes(o, nd_rep_site_live(x), est);
  fputs("</td></tr></table><ol class=\"stack\" start=\"0\">", o);
  if (nd_html_stack_all(o, r, s->stack)) return -1;
  fputs("</ol></div>\n", o);
  return 0;
}

int nd_html_flame(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("<h2 id=\"flame\">Where the memory was allocated</h2>\n", o);
  nd_flame_order_t ord;
  nd_flame_t f[ND_WEIGHTS] = {{0}};
  int *cls = NULL;
  bool *shown = NULL;
  int rc = nd_flame_order(r, &ord);
  for (int m = 0; !rc && m < ND_WEIGHTS; m++)
    rc = nd_flame_build(r, &ord, (enum nd_weight)m, 1000, &f[m]);
  nd_flame_order_free(&ord);
  if (!rc && !(cls = nd_html_site_classes(r))) rc = -1;
  if (!rc && !(shown = calloc(t->nsites ? t->nsites : 1, sizeof *shown))) rc = -1;
  if (rc) goto out;
  if (!f[ND_BY_TOTAL].total && !f[ND_BY_SITE_PEAK].total) {
    fputs("<p>No allocation site in the trace.</p>\n", o);
    goto out;
  }
  // Which moment the default width is.
  char when[160];
  nd_flame_moment(r, when, sizeof when);
  fputs("<p class=\"note\" id=\"fmoment\">", o);
  if (t->peak[ND_PEAK_HOST].epoch) {
    fputs("Live at the peak: what the sites held together at the process's peak, ", o);
    nd_html_esc(o, when);
    fputs(". Each site's own peak, summed, is more than ever existed at once: sites peak at "
          "different times.</p>\n", o);
  } else {
    fprintf(o, "No peak moment in this trace (");
    nd_html_esc(o, when);
    fprintf(o, "): shown first, what was %s.</p>\n",
            t->ended ? "live at exit" : "live at the last flush");
  }
  fputs("<div class=\"flame\">\n", o);
  // The switch: radio buttons that CSS alone turns into tabs (no script needed).
  bool moment = t->peak[ND_PEAK_HOST].epoch;
  enum nd_weight first = moment ? ND_BY_PEAK : ND_BY_LIVE;
  for (int k = !moment; k < ND_WEIGHTS; k++) {
    enum nd_weight m = tab_order[k];
    char h[64];
    nd_flame_total(f[m].total, f[m].est, f[m].most, h, sizeof h);
    fprintf(o, "<input type=\"radio\" name=\"fm\" id=\"fm-%s\" value=\"%s\"%s><label "
               "for=\"fm-%s\"%s>%s <small>%s</small></label>\n",
            measure_ids[m], measure_ids[m], m == first ? " checked=\"checked\"" : "",
            measure_ids[m],
            m == ND_BY_SITE_PEAK ? " title=\"the sites' own peaks summed: they peak at different "
                                   "times, so this is more than the process ever held\"" : "",
            nd_flame_measure(r, m), h);
  }
  fputs("<span class=\"ftools\" hidden=\"hidden\"><input type=\"search\" id=\"fsearch\" "
        "placeholder=\"search frames (text or /regex/)\" aria-label=\"search frames\"> "
        "<span id=\"fmatch\"></span> <button type=\"button\" id=\"freset\">reset zoom</button></span>\n", o);
  for (int k = !moment; k < ND_WEIGHTS && !rc; k++) {
    enum nd_weight m = tab_order[k];
    int height = ((int)f[m].depth + 1) * ND_FLAME_ROW + 4;
    fprintf(o, "<div class=\"fg fg-%s\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "class=\"flamesvg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"flame graph by %s\" data-by=\"%s\" data-total=\"%llu\">\n",
            measure_ids[m], FLAME_W, height, FLAME_W, height,
            nd_flame_measure(r, m), measure_ids[m],
            (unsigned long long)f[m].total);
    rc = nd_flame_frames(o, &f[m], FLAME_W, 2);
    fputs("</svg>\n", o);
    if (f[m].cut_nodes) {
      char h[48];
      nd_rep_human(h, sizeof h, f[m].cut);
      fprintf(o, "<p class=\"note\">Frames narrower than 0.1 %% of the width are left out: %s in "
                 "%llu.</p>\n",
              h, (unsigned long long)f[m].cut_nodes);
    }
    fputs("</div>\n", o);
  }
  fputs("<div id=\"fpanel\" class=\"panel\" aria-live=\"polite\"><p class=\"note\">Each frame is "
        "as wide as its share of the measure chosen above; callers above callees; green: Python, "
        "grey: the C/C++ runtime and ndmem, warm: other native code. Hover a frame for its name "
        "and bytes. With scripts on, click a frame to zoom into it and see its heaviest site's "
        "stack here.</p></div>\n</div>\n", o);
  // The panel's contents, one per site a frame shows (the first FLAME_DETAILS).
  fputs("<div id=\"fsites\" hidden=\"hidden\">\n", o);
  size_t details = 0;
  for (int k = !moment; k < ND_WEIGHTS && !rc; k++)
    for (size_t i = 0, m = tab_order[k]; i < f[m].n && !rc && details < FLAME_DETAILS; i++) {
      uint32_t s = f[m].v[i].site;
      if (s >= t->nsites || shown[s]) continue;
      shown[s] = true;
      details++;
      rc = site_details(o, r, s, cls);
    }
  fputs("</div>\n", o);
out:
  for (int m = 0; m < ND_WEIGHTS; m++) nd_flame_free(&f[m]);
  free(cls);
  free(shown);
  return rc;
}
