// SPDX-License-Identifier: MIT
// render.h: the formats (one renderer each) and what they share: numbers as every format prints
// them (units.c), text from a trace made safe for a terminal, JSON, HTML and SVG (escape.c), the
// reachability scan's record in words (scan.c) and the flame tree drawn (svg.c). A renderer reads
// the analysed trace (analyse.h) and writes; it never branches on the trace's version, only on
// what the reader says the trace has room for (nd_trace_has_t). Not installed.
#ifndef ND_RENDER_H
#define ND_RENDER_H

#include "analyse/analyse.h"
#include "analyse/flame.h"
#include "analyse/frames.h"
#include "analyse/place.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// The renderers: 0, or -1 when out of memory (a write error shows on `o`).
int nd_rep_text_report_80(FILE *out, report_t *r); // text.c, through the 80-column stream
int nd_rep_json_report(FILE *o, report_t *r);      // json.c
int nd_rep_html_report(FILE *o, report_t *r);      // html/
int nd_rep_collapsed_report(FILE *o, report_t *r); // collapsed.c
// --format svg (svg.c): the sites as a self-contained flame graph (flame.h), --flame-by.
int nd_rep_svg_report(FILE *o, report_t *r);

// The text report's summary alone, unwrapped (text_summary.c): the HTML summary's facts. 0, or -1
// when out of memory.
int nd_rep_text_summary(FILE *o, report_t *r);

// JSON (json.c) that merge writes too. The lifetime classes' members (nd_life_keys: bytes,
// blocks, stacks, estimated), `sep` between them: the single report's leaks.classes and merge's
// per-process lifetime. A header's job fields (has.job) as JSON members, each after ", ":
// "ppid", "origin" (nd_rep_origin_keys: "started", "exec", "fork"), "rank", "world_size",
// "local_rank", "local_world_size" (null: unknown) and "rank_from" (the variable, or null).
void nd_rep_json_classes(FILE *o, const uint64_t *bytes, const uint64_t *blocks,
                         const uint64_t *stacks, const bool *est, const char *sep);
extern const char *const nd_rep_origin_keys[ND_ORIGIN_MAX + 1];
void nd_rep_json_job(FILE *o, const nd_trace_header_t *h);

// ---------------------------------------------------------------- units.c

// A size as the shim prints it (interpose/common/fmt.c): "512 B", "1.50 KiB", "28.23 MiB"; `out`.
const char *nd_rep_human(char *out, size_t n, uint64_t v);
void nd_rep_format_start(char *out, size_t n, uint64_t realtime_ns);
// sum / peak to two decimals ("n/a" without a peak).
void nd_rep_format_ratio(char *out, size_t n, uint64_t sum, uint64_t peak);
// v / limit in percent to one decimal, rounded down so that "100.0 %" means the limit was reached.
void nd_rep_format_pct(char *out, size_t n, uint64_t v, uint64_t limit);
// "12.345 s": nanoseconds as seconds to the millisecond (rounded down).
void nd_rep_print_secs(FILE *o, uint64_t ns);
// "3.11.2", "3.13.0rc1" from PY_VERSION_HEX ("?" for 0).
void nd_rep_format_pyversion(char *out, size_t n, uint32_t hex);

// ---------------------------------------------------------------- escape.c

// Text from a trace (a path, a host, a name) on a terminal's line: control bytes as \xNN; in
// place, each control byte '?' (a fixed-width cell, a progress bar).
void nd_rep_print_text(FILE *o, const char *s);
void nd_rep_no_controls(char *s);
// The length of the well-formed UTF-8 sequence at p (1 to 4) and its code point, or 0: a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate or a code point above
// U+10FFFF (JSON and HTML keep their strings valid with it).
int nd_rep_utf8_len(const unsigned char *p, uint32_t *cp);
// A JSON string: quotes, backslashes and control characters escaped, bytes that are not UTF-8
// each U+FFFD, so the document stays valid whatever a trace names; NULL: null.
void nd_rep_json_str(FILE *o, const char *s);
// Text from the trace HTML- and XML-escaped (the page and the SVG picture), what HTML calls a
// parse error in its input shown as \xNN per byte; for the first `max` characters of s, ".."
// after a cut (a label that must fit); and the characters of s as it counts them (a malformed
// byte is one).
void nd_html_esc(FILE *o, const char *s);
void nd_html_esc_chars(FILE *o, const char *s, size_t max);
size_t nd_html_chars(const char *s);

// ---------------------------------------------------------------- phrases.c

// What the text and HTML reports say in the same words, a size printed by each format's own
// function (nd_text_bytes: "28.23 MiB (29606488 B)"; nd_html_bytes: a span with its bytes).
typedef void (*nd_rep_bytes_fn)(FILE *o, uint64_t v, bool est);
// The last refused request (REFUSAL): "malloc of 128.00 MiB over maxBytes 64.00 MiB on thread
// 4242 at 0.051 s" (a growth: "realloc growing a block by ..."; a device's: "... of device 0").
void nd_rep_refusal_words(FILE *o, const nd_trace_t *t, nd_rep_bytes_fn bytes);
// How the process ended, after "ended ": "by signal 11 (SIGSEGV)", "by exit(1)", "by _exit(3)",
// "normally", "by NDMEM_ON_LIMIT's stop (SIGABRT)", "in an exec"; "" without an end.
void nd_rep_end_words(FILE *o, const nd_trace_t *t);
// "; N more not kept (over MAX)" where the reader dropped records beyond the MAX it keeps.
void nd_rep_not_kept(FILE *o, uint64_t dropped, unsigned max);
// A snapshot's sites: "N sites" ("R of N sites (the trace ends inside the snapshot)"), ", live X"
// over the kept ones, " in the K kept; M more not kept (over MAX)", "; top T" when --top shows
// fewer than are kept.
void nd_rep_snap_sites(FILE *o, const nd_snapshot_t *s, size_t top, nd_rep_bytes_fn bytes);
// The workspace saving (analyse.c, ws_saving; r->ws_effect.saving_known): "workspaces kept ~S off
// the resident peak (estimated: ALLOCATOR held X freed below its top at the end of the cycles they
// learned (N read) and Y since they serve; ...)", or "none estimated (...)".
void nd_rep_ws_saving(FILE *o, const report_t *r, nd_rep_bytes_fn bytes);

// ---------------------------------------------------------------- scan.c

// What the reachability scan at exit did (the SCAN record), said the same way by every format:
// whether it ran (and why not), how long the world stood still, the threads it held, what it
// read, and what a partial scan can and cannot conclude. Why a scan did not run, or "done"; NULL
// for an unknown status. The text report's summary line ("  reach       ..."; nothing for a
// trace without a SCAN record). JSON: "scan": {...} or "scan": null, with no trailing comma.
const char *nd_scan_status_text(uint32_t status);
void nd_scan_text(FILE *o, const nd_trace_t *t);
void nd_scan_json(FILE *o, const nd_trace_t *t);

// ---------------------------------------------------------------- svg.c: the flame tree drawn

// A total as the pictures print it: "~X" for an estimate, "at most X" for a capped one.
void nd_flame_total(uint64_t v, bool est, bool most, char *out, size_t n);
// A colour for a node: Python frames green, the C and C++ runtimes and ndmem grey, other native
// frames red to yellow by a hash of the name (the same name, the same colour), "#rrggbb" in c[8].
void nd_flame_colour(const nd_flame_node_t *n, const char *name, char c[8]);
// The measure's words in a heading: "peak live bytes", "bytes allocated", "live at exit".
const char *nd_flame_measure(const report_t *r, enum nd_weight by);
// When the host memory's peak moment was, and what it held then, into out (or why the trace
// has none).
void nd_flame_moment(const report_t *r, char *out, size_t n);
// The tree's frames as an icicle (the root on top, callees below), for an <svg> of `width` px
// that the caller opens and closes, from `top` px down: each frame a <g class="fr"> holding a
// <title> (name, weight, share, sites), a <rect> and its name cut to fit, with data-i (its
// index), data-p (its parent's), data-x and data-w (its offset and weight, in bytes) and data-s
// (the site whose stack it shows) for the page's script and for tests. -1 when out of memory.
int nd_flame_frames(FILE *o, const nd_flame_t *f, int width, int top);
#define ND_FLAME_ROW 18 // px per depth

#endif
