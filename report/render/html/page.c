// SPDX-License-Identifier: MIT
// page.c: ndmemreport's HTML report (nd_rep_html_report, render.h): one self-contained page,
// readable offline with no network or font, and with scripts off: the first screen (glance.c),
// the flame graphs (flamegraphs.c), memory over time (timeline.c), then the details: the text
// summary's facts as a table, the top sites with their stacks, the top Python lines, growth and
// what was live at exit (sites.c), the workspaces (workspaces.c), device memory (devices.c), and
// the limits with each snapshot's sites (limits.c). The inline script (assets.c) only adds zoom,
// search, the stack panel and the timeline's cursor to what the server-rendered SVG and tables
// already show. Every string from the trace is HTML-escaped to strict UTF-8 (nd_html_esc).
#include "render/html/html.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- summary

// The text summary, rendered by text.c into memory and laid out as a table: its lines are
// "  KEY<pad>  VALUE", a line with an empty key continues the row above. One source of facts for
// both formats.
static int html_summary(FILE *o, report_t *r) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return -1;
  int rc = nd_rep_text_summary(m, r);
  if (fclose(m) || rc) {
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
  if (nd_rep_has_limits(t) || nd_rep_device_limited(t))
    fputs(" · <a href=\"#limits\">limits</a>", o);
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
  if (nd_html_sites(o, r, r->by_peak, n, title, "sites", NULL)) return -1;
  uint32_t *peak_rank = calloc(t->nsites ? t->nsites : 1, sizeof *peak_rank);
  if (!peak_rank) return -1;
  for (size_t i = 0; i < n; i++) peak_rank[r->by_peak[i]] = (uint32_t)i + 1;
  snprintf(title, sizeof title, "Top %zu allocation sites by total bytes (of %zu)", n, t->nsites);
  rc = nd_html_sites(o, r, r->by_total, n, title, "sites-total", peak_rank);
  free(peak_rank);
  if (rc) return -1;
  nd_html_py_lines(o, r);
  if (nd_html_growth(o, r) || nd_html_workspaces(o, r) || nd_html_devices(o, r)) return -1;
  if (nd_html_limits(o, r)) return -1;
  // The script last: the page is whole before it runs, and whole without it.
  fputs("<script>\n", o);
  for (size_t i = 0; nd_html_js[i]; i++) fputs(nd_html_js[i], o);
  fputs("</script>\n</body>\n</html>\n", o);
  return 0;
}
