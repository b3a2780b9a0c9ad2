// SPDX-License-Identifier: MIT
// frames.h: a stack's frames by name (frames.c), for every format and command: the text
// report's and merge's names of a frame, the names collapsed stacks, diff and the flame graphs
// give each function of a stack (walked outermost first, or all at once), stacks ordered by those
// names, what a site weighs, and a stack's stable key.
#ifndef ND_FRAMES_H
#define ND_FRAMES_H

#include "analyse/analyse.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// A frame's name as the text report and merge print it, appended to `b` (NUL-terminated, its
// bytes as the trace has them: print with nd_rep_print_text): a Python frame "qualname
// (file.py:LINE)"; a native one "function (file:LINE)", "function (module+0xOFF)" where no file
// is known, "module+0xOFF" where no function is; a frame outside every module its function (the
// mark of native frames cut at NDMEM_DEPTH) or "0xIP". nd_rep_loc_text names one position of a
// native frame (its `at`, or a function it was inlined into) by the same rule. `how`: ND_NAME_*.
enum {
  ND_NAME_BASE = 1,   // a native frame's module and file by their base names (merge: the traces
                      // of a job come from hosts with other paths)
  ND_NAME_MODULE = 2, // "module!function (file:LINE)": the module even where a file is known
  ND_NAME_PY = 4      // "py " before a Python frame
};
void nd_rep_frame_text(sbuf_t *b, const nd_frame_t *f, unsigned how);
void nd_rep_loc_text(sbuf_t *b, const nd_frame_t *f, const nd_loc_t *l, unsigned how);

// A 64-bit key of a stack from its symbolized frames (module basename, function, file:line, else
// the offset in the module; Python frames: qualname, file, line), never from its stack id or
// addresses: the same code path in two runs, at other ids and load addresses, has the same key.
// A frame outside every module adds its address (not stable); --no-symbols changes every key.
// -1 when out of memory.
int nd_rep_stack_key(report_t *r, uint32_t stack, uint64_t *key);

// --collapsed-by's, --flame-by's and diff --by's words ("peak", "total", "live"), and a site's
// weight in each.
extern const char *const nd_rep_weight_names[ND_WEIGHTS];
int nd_rep_parse_weight(const char *word); // -1: none of them
uint64_t nd_rep_site_weight(const nd_trace_t *t, const nd_site_t *s, enum nd_weight w);
// A site's live bytes at its group's peak moment (trace_format.h, PEAK); where the trace has no
// moment for its group (nd_rep_peak_known false), its live bytes at the end.
// Only memory that existed counts (version 18): a mapping's pages never touched, as the last
// reading saw them (SITE_UNTOUCHED), are left out of it and shown apart.
uint64_t nd_rep_site_at_peak(const nd_trace_t *t, const nd_site_t *s);
// A site's bytes never resident as the readings last saw them (live: the latest reading; a site
// with nothing live: the last reading that saw some untouched), 0 before version 18; and its own
// peak less them (what the top sites rank by: a reservation barely touched does not lead).
uint64_t nd_rep_site_untouched(const nd_site_t *s);
uint64_t nd_rep_site_peak_touched(const nd_site_t *s);
bool nd_rep_peak_known(const nd_trace_t *t, unsigned kind);

// The frames of a stack named as in text on one line each (function, module+0xOFF, 0xIP;
// Python: "qualname (file.py:LINE)"; an inlined call one name per function, the innermost first;
// ';' and control characters replaced), innermost first, --python-only respected: a malloc'd
// array of malloc'd strings (nd_rep_free_names), or -1 when out of memory.
int nd_rep_frame_names(report_t *r, uint32_t stack, char ***names, size_t *n);
void nd_rep_free_names(char **names, size_t n);
// The frames of stack `s` a format shows: --python-only keeps only the Python frames of a stack
// that has one (*py_only); their number, and of them *show under --frames (0: all).
size_t nd_rep_frames_shown(const report_t *r, const nd_stack_t *s, bool *py_only, size_t *show);

// The same names one at a time, outermost first, without allocating (the flame tree and the
// collapsed lines walk stacks with them): a frame has nd_rep_frame_parts names (its inlined
// functions, then itself); part j of frame f into `b` (emptied first; f NULL: "[no frames]"). A
// walk gives (frame, part) pairs; its next is false at the end, or when out of memory (symbolize
// every frame first to rule it out: nd_rep_names_fit).
size_t nd_rep_frame_parts(const nd_frame_t *f);
void nd_rep_frame_name(sbuf_t *b, const nd_frame_t *f, size_t j);
typedef struct nd_rep_walk {
  report_t *r;
  const uint64_t *ips;
  size_t i;             // frames not yet entered: ips[0 .. i)
  bool py_only, none;   // none: the stack has no frame and "[no frames]" is still to give
  const nd_frame_t *f;  // the frame being walked
  size_t j;             // its parts not yet given: 0 .. j)
} nd_rep_walk_t;
void nd_rep_walk_init(nd_rep_walk_t *w, report_t *r, uint32_t stack);
bool nd_rep_walk_next(nd_rep_walk_t *w, const nd_frame_t **f, size_t *j);

// Stacks ordered by those names, for a sort's comparator, which cannot fail: nd_rep_names_fit
// symbolizes every frame of a stack and makes room in a and b for its longest name, so that
// comparing never allocates. a and b are scratch (a caller may name frames into a afterwards).
typedef struct nd_rep_names {
  report_t *r;
  sbuf_t a, b;
} nd_rep_names_t;
void nd_rep_names_init(nd_rep_names_t *c, report_t *r);
int nd_rep_names_fit(nd_rep_names_t *c, uint32_t stack); // -1 when out of memory
void nd_rep_names_free(nd_rep_names_t *c);
// <0, 0, >0 as stack x's names come before, with or after y's, name by name from the outermost,
// a stack that another starts first; `joined`: the byte order of the joined lines ("a;b;c", the
// collapsed stacks' order), else by whole names (the flame tree's, which keeps the sites that
// share a name at a depth together).
int nd_rep_names_cmp(nd_rep_names_t *c, uint32_t x, uint32_t y, bool joined);
// Whether (f, j) and (g, k) are different names: the same frame and part are the same name, two
// frames may still share one (two return addresses in one function).
bool nd_rep_names_differ(nd_rep_names_t *c, const nd_frame_t *f, size_t j, const nd_frame_t *g,
                         size_t k);

#endif
