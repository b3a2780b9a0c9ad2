// SPDX-License-Identifier: MIT
// html.h: what the HTML report's files share (private to render/html/): page.c assembles the
// page from the summary and the sections of glance.c (the first screen), flamegraphs.c (the
// flame graphs), timeline.c (memory over time), sites.c, workspaces.c, devices.c and limits.c
// (the details), with assets.c's inline CSS and script; common.c holds what the sections print
// with. Every string from the trace reaches the page through nd_html_esc (render.h).
#ifndef ND_HTML_H
#define ND_HTML_H

#include "render/render.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

// Units and escaping (common.c): at most `max` bytes of a string escaped ('...' after a cut, at a
// character); "28.23 MiB" with the exact bytes as its title, `est` prefixing '~'; an estimate
// capped at a bound the counters prove, "at most".
void nd_html_esc_max(FILE *o, const char *s, size_t max);
void nd_html_bytes(FILE *o, uint64_t v, bool est);
// The same into `out` (ND_HTML_SIZE bytes), for a row or sentence printed by one format string.
#define ND_HTML_SIZE 96
const char *nd_html_size(char *out, uint64_t v, bool est);
void nd_html_amount(FILE *o, uint64_t v, bool est, bool most);
// A site named by its place (analyse/place.h: the program's own innermost frame, then the
// library frame that allocated); a stack's frames as a list (--frames of them). -1 when out of
// memory.
#define ND_HTML_LEGEND_NAME 72
int nd_html_site_label(FILE *o, report_t *r, uint32_t stack);
// The labels of a list's rows (stacks[0 .. n)), made once (nd_html_labels: a malloc'd array of
// malloc'd strings, -1 when out of memory), and row i's label: where another row has the same,
// what tells row i apart follows it (" · via FUNCTION": its innermost named native function that
// none of theirs has, else " · stack N"). -1 when out of memory.
int nd_html_labels(report_t *r, const uint32_t *stacks, size_t n, char ***labels);
void nd_html_labels_free(char **labels, size_t n);
int nd_html_site_label_apart(FILE *o, report_t *r, const uint32_t *stacks, char **labels,
                             size_t n, size_t i);
int nd_html_stack(FILE *o, report_t *r, uint32_t stack);
// Every frame of a stack, innermost first, one <li> each, for the flame graph's panel (no
// --frames limit: the panel shows the full stack).
int nd_html_stack_all(FILE *o, report_t *r, uint32_t stack);
// Each site's lifetime class at exit (enum nd_life_class), -1 for none: a malloc'd array of
// t->nsites, or NULL when out of memory.
int *nd_html_site_classes(const report_t *r);

// The time axis both timelines share (timeline.c).
typedef struct nd_html_plot {
  double tmax, ymax; // seconds, bytes
  double tstep;      // seconds between ticks
} nd_html_plot_t;
// The sites drawn over time, read in one second pass over the trace (nd_trace_site_series): the
// first `ntop` of the list by peak (the top sites' chart), then each kind's bands that are not
// among them (the stacked charts): its sites that grew most (timeline.c's band_growth, up to
// ND_HTML_GROWTH_SERIES, however small their peak: a slow leak beside large temporaries), the
// rest its largest by peak. rc: nd_trace_site_series's (1: a pipe, not read again; -1: s.err
// says why), or 2: no point or no site, nothing read.
#define ND_HTML_TOP_SERIES 5 // sites in the top sites' chart
#define ND_HTML_KIND_SERIES 6 // sites of a kind stacked in its chart, the rest "other"
#define ND_HTML_GROWTH_SERIES 3 // of those, at most this many chosen by growth
#define ND_HTML_GROWTH_RISES 2 // flush windows in which a site's floor rose, at least, to grow
typedef struct nd_html_series {
  uint32_t *sel; // the sites read (indices into t->sites), in the order of ss.live's rows
  size_t nsel, ntop;
  // Each kind's bands: rows of sel, the largest peak first.
  size_t band[ND_TRACE_KINDS][ND_HTML_KIND_SERIES], nband[ND_TRACE_KINDS];
  int rc;
  nd_site_series_t ss;
} nd_html_series_t;
int nd_html_series_read(report_t *r, nd_html_series_t *s); // -1: out of memory
void nd_html_series_free(nd_html_series_t *s);
// The time axis of both: seconds from the start to the last record, ticks 1-2-5.
void nd_html_time_axis(const report_t *r, nd_html_plot_t *p);
void nd_html_timeline(FILE *o, const report_t *r, nd_html_plot_t *out);
int nd_html_site_timeline(FILE *o, report_t *r, const nd_html_series_t *s,
                          const nd_html_plot_t *main);
// Memory over time per kind, stacked by the kind's top sites and "other", with the timeline's
// markers and the data the cursor reads; -1 when out of memory.
int nd_html_stacked(FILE *o, report_t *r, const nd_html_series_t *s);

// The flame graphs by peak, total and live at exit (flamegraphs.c); -1 out of memory.
int nd_html_flame(FILE *o, report_t *r);
// The first screen (glance.c): what used the memory, what grew, what was live at
// exit, what hit a limit. -1 when out of memory.
int nd_html_glance(FILE *o, report_t *r);
// The kernel's peak of resident memory and its parts at the reading nearest it (peak.c; version
// 18, nothing before), the figures text and JSON give (analyse/peak.c).
void nd_html_peak(FILE *o, const nd_trace_t *t);

// The page's inline style and script (assets.c), each in pieces, NULL after the last.
extern const char *const nd_html_css[];
extern const char *const nd_html_js[];

// The details (sites.c, workspaces.c, devices.c, limits.c), each a section of the page, empty
// where the trace has nothing of it; -1 when out of memory. The sites by peak (peak_rank NULL:
// stacks shown) or by total (a site already listed by peak links there, by its rank in
// peak_rank); the sites by Python line; the sites found growing and what was live at exit.
int nd_html_sites(FILE *o, report_t *r, const uint32_t *order, size_t n, const char *title,
                  const char *id, const uint32_t *peak_rank);
void nd_html_py_lines(FILE *o, const report_t *r);
int nd_html_growth(FILE *o, report_t *r);
int nd_html_workspaces(FILE *o, report_t *r);
int nd_html_devices(FILE *o, report_t *r);
int nd_html_limits(FILE *o, report_t *r);

#endif
