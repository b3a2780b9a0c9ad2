// SPDX-License-Identifier: MIT
// text.h: what the text report's files share (private to render/text*.c): text.c puts the
// report in order and holds what every view prints with; text_summary.c, text_leaks.c,
// text_workspaces.c, text_limits.c and text_devices.c each print one view and the summary's
// line about it. Everything goes through the 80-column stream (textwrap.h): a line too wide is
// broken under the value it belongs to, frames pass whole (nd_wrap_raw).
#ifndef ND_TEXT_H
#define ND_TEXT_H

#include "render/render.h"
#include "render/textwrap.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

// ---------------------------------------------------------------- text.c

// "28.23 MiB (29606488 B)", or "512 B" below 1 KiB; `est` prefixes both numbers with '~'. A
// signed amount, "-" before a negative one.
void nd_text_bytes(FILE *o, uint64_t v, bool est);
// The same into `out` (ND_TEXT_SIZE bytes), for a sentence printed by one format string.
#define ND_TEXT_SIZE 64
const char *nd_text_size(char *out, uint64_t v, bool est);
void nd_text_sbytes(FILE *o, int64_t v);
// An estimate the exact counters capped at a bound they prove (lifetime.h): "at most", exact
// digits, as the bound is; else an estimate's "~" or an exact figure.
void nd_text_amount(FILE *o, uint64_t v, bool est, bool most);
const char *nd_text_plural(uint64_t n, const char *one, const char *many);
// A Python line: "qualname (file.py:LINE)", "qualname (file.py)" for line 0.
void nd_text_pyloc(FILE *o, const char *function, const char *file, uint32_t line);
// The frames of a stack, --frames of them; --python-only: only the Python frames of a stack that
// has one, numbered as shown. -1 when out of memory.
int nd_text_stack(FILE *o, report_t *r, uint32_t stack);
// The place of an entry's stack (analyse/place.h), "      at train.py:46, in relu
// (functional.py:1457)": the program's own line first, where it is not the stack's first line
// (`always`: also there, for an entry that does not show its stack). A stack's "(N more frames)"
// may hide it: an entry prints its place before its stack, as nd_text_placed_stack does. -1 when
// out of memory.
int nd_text_place(FILE *o, report_t *r, uint32_t stack, bool always);
int nd_text_placed_stack(FILE *o, report_t *r, uint32_t stack);

// ---------------------------------------------------------------- the summary's lines

void nd_text_trace_line(FILE *o, const nd_trace_t *t);                  // text_summary.c
void nd_text_life_totals(FILE *o, const nd_lifetimes_t *l);             // text_leaks.c
void nd_text_judged_line(FILE *o, const nd_lifetimes_t *l);             // text_leaks.c
void nd_text_ws_line(FILE *o, const report_t *r);                       // text_workspaces.c
void nd_text_ws_effect_line(FILE *o, const report_t *r, const char *label);
void nd_text_ws_retention_line(FILE *o, const report_t *r, bool first);
void nd_text_ws_saving_line(FILE *o, const report_t *r);
void nd_text_limits_line(FILE *o, const nd_trace_t *t);                 // text_limits.c
void nd_text_devices_line(FILE *o, const nd_trace_t *t);                // text_devices.c
// The kernel's peak and its parts, the summary's first lines (version 18); a site's mapped
// bytes never touched, after its totals (text_peak.c).
void nd_text_peak_lines(FILE *o, const nd_trace_t *t);
void nd_text_untouched(FILE *o, uint64_t peak, uint64_t untouched);

// ---------------------------------------------------------------- the views: -1 out of memory

int nd_text_lifetimes(FILE *o, report_t *r);  // what was live at exit, by class
int nd_text_workspaces(FILE *o, report_t *r); // each workspace (unless brief), the escapes
// The limits and totals (`settings`), the logged breaches, the snapshots (unless brief).
int nd_text_limits(FILE *o, report_t *r, bool settings);
int nd_text_devices(FILE *o, report_t *r); // each device, CUPTI's view, the CUDA hooks

#endif
