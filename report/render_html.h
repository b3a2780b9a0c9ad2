// SPDX-License-Identifier: MIT
// render_html.h: what the HTML report's files share (private to them and render_svg.c):
// render_html.c assembles the page from the summary, the tables and the sections of
// render_html_glance.c (the first screen), render_html_flame.c (the flame graphs),
// render_html_timeline.c (memory over time) and render_html_assets.c (the inline CSS and script).
// Every string from the trace reaches the page through nd_html_esc.
#ifndef ND_RENDER_HTML_H
#define ND_RENDER_HTML_H

#include "render.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

// Escaping and units (render_html.c). Text from the trace HTML- and XML-escaped, what HTML calls
// a parse error in its input shown as \xNN per byte; at most `max` bytes of it ('...' after a
// cut, at a character); "28.23 MiB" with the exact bytes as its title, `est` prefixing '~'; an
// estimate capped at a bound the counters prove, "at most".
void nd_html_esc(FILE *o, const char *s);
void nd_html_esc_max(FILE *o, const char *s, size_t max);
// As nd_html_esc, for the first `max` characters of s, ".." after a cut (a label that must fit);
// and the characters of s as it counts them (a malformed byte is one).
void nd_html_esc_chars(FILE *o, const char *s, size_t max);
size_t nd_html_chars(const char *s);
void nd_html_bytes(FILE *o, uint64_t v, bool est);
void nd_html_amount(FILE *o, uint64_t v, bool est, bool most);
// A site named by its first useful frame (its innermost Python frame, else the innermost frame
// outside the C and C++ runtimes); a stack's frames as a list (--frames of them). -1 when out of
// memory.
#define ND_HTML_LEGEND_NAME 72
int nd_html_site_label(FILE *o, report_t *r, uint32_t stack);
int nd_html_stack(FILE *o, report_t *r, uint32_t stack);
// Every frame of a stack, innermost first, one <li> each, for the flame graph's panel (no
// --frames limit: the panel shows the full stack).
int nd_html_stack_all(FILE *o, report_t *r, uint32_t stack);
// Each site's lifetime class at exit (enum nd_life_class), -1 for none: a malloc'd array of
// t->nsites, or NULL when out of memory.
int *nd_html_site_classes(const report_t *r);

// The time axis both timelines share (render_html_timeline.c).
typedef struct nd_html_plot {
  double tmax, ymax; // seconds, bytes
  double tstep;      // seconds between ticks
} nd_html_plot_t;
// The sites drawn over time, read in one second pass over the trace (nd_trace_site_series): the
// first `ntop` of the list by peak (the top sites' chart), then each kind's largest sites by peak
// that are not among them (the stacked charts). rc: nd_trace_site_series's (1: a pipe, not read
// again; -1: s.err says why), or 2: no point or no site, nothing read.
#define ND_HTML_TOP_SERIES 5 // sites in the top sites' chart
#define ND_HTML_KIND_SERIES 6 // sites of a kind stacked in its chart, the rest "other"
typedef struct nd_html_series {
  uint32_t *sel; // the sites read (indices into t->sites), in the order of ss.live's rows
  size_t nsel, ntop;
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

// The flame graphs by peak, total and live at exit (render_html_flame.c); -1 out of memory.
int nd_html_flame(FILE *o, report_t *r);
// The first screen (render_html_glance.c): what used the memory, what grew, what was live at
// exit, what hit a limit. -1 when out of memory.
int nd_html_glance(FILE *o, report_t *r);

// The page's inline style and script (render_html_assets.c), each in pieces, NULL after the last.
extern const char *const nd_html_css[];
extern const char *const nd_html_js[];

#endif
