// SPDX-License-Identifier: MIT
// report.h: what ndmemreport's parts share: the options (opts_t), the analysed trace (report_t),
// the name tables, the formatting and predicates both renderers use (analyse.c), the analysis
// entry point (analyse.c) and the renderers' (render_text.c, render_json.c, render_html.c). Not
// installed.
#ifndef ND_REPORT_H
#define ND_REPORT_H

#include "lifetime.h"
#include "running.h"
#include "sbuf.h"
#include "suppress.h"
#include "symbolize.h"
#include "textwrap.h"
#include "trace_read.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// What a site weighs: its peak live bytes, bytes allocated, or live bytes at the end.
enum nd_weight { ND_BY_PEAK, ND_BY_TOTAL, ND_BY_LIVE, ND_WEIGHTS };

// --format.
enum nd_format { ND_FMT_TEXT, ND_FMT_JSON, ND_FMT_HTML, ND_FMT_COLLAPSED, ND_FMT_SVG, ND_FORMATS };

typedef struct opts {
  enum nd_format format;
  bool brief, fail_on_leak, fail_on_growth, fail_on_reachable, symbols;
  enum nd_weight collapsed_by; // --collapsed-by (default peak)
  enum nd_weight flame_by;     // --flame-by: what --format svg's flame graph weighs (peak)
  bool workspaces; // --workspaces: the summary's trace and workspaces lines, the view only
  bool limits;     // --limits: the summary's trace and limits lines, the limits view only
  bool python_only; // --python-only: a stack with Python frames shows only those
  size_t top, frames; // entries per list, frames per stack in text output; 0 = all
  bool top_set;       // --top was given (collapsed prints every line without it)
  const char *file;
  const char **supp_files; // --suppressions, in order (malloc'd; freed by nd_report_main)
  size_t nsupp_files;
  bool builtin_supp;       // the built-in suppressions (not --no-builtin-suppressions)
  bool follow;             // --follow: re-read and report until END or SIGINT (follow.c)
  size_t follow_ms;        // --follow-interval (default 1000)
} opts_t;

__extension__ typedef unsigned __int128 u128;

// The leaked workspace pointers of one (workspace, stack id).
typedef struct esc_group {
  uint32_t first;         // its first escape (index into nd_trace_t.escapes): tid, name, stack
  uint64_t count, bytes;
  uint64_t born, seen;    // the earliest cycle_born and cycle_seen
} esc_group_t;

// The sites whose innermost Python frame is one (file, line, function): their totals.
typedef struct py_line {
  const nd_pycode_t *code; // the first site's code object: its file and qualified name
  uint32_t line;           // 0: unknown
  uint64_t allocs, alloc_bytes, live_bytes;
  uint64_t sites;
  bool est;                // a site is sampled: the totals are estimates
} py_line_t;

// Resident memory that grew while the tracked bytes stayed flat (nd_rep_retention, analyse.c).
enum nd_retention_class {
  ND_RET_NONE,      // no such growth (or no RESIDENT records to tell)
  ND_RET_ALLOCATOR, // and the allocator's own free bytes grew by most of it: it keeps freed memory
  ND_RET_UNTRACKED, // and nothing ndmem reads accounts for it: memory ndmem does not see, or kept
                    // by an allocator whose view is unknown
  ND_RET_PREVENTED  // no such growth, but workspaces served the job and ndmem's learning trims
                    // gave back what the allocator held freed (nd_ws_effect_t.held; version 10)
};
typedef struct nd_retention {
  enum nd_retention_class cls;
  bool known;               // RESIDENT records at and after the reference: the figures are read
  uint64_t resident_from, resident_to;
  int64_t tracked_to;       // host kinds' live bytes + workspace arenas at the second point
  int64_t tracked_change;   // the host kinds' live bytes' change between the two
  uint32_t allocator;       // enum nd_allocator (the latest RESIDENT record's)
  bool have_free;           // the allocator's account was read by the peak
  uint64_t free_bytes;      // its free bytes as of the peak point
  int64_t free_growth;      // their change since the reference (see analyse.c)
  uint64_t trimmed_bytes;   // free bytes left out: a malloc_trim may have given them back
} nd_retention_t;
// What workspaces did to resident memory (WORKSPACE records of version 10; analyse.c), as far as
// it was measured: the blocks their arenas served never reached the allocator, so the resident
// memory of the run is not the job's own; and resident memory fell across ndmem's malloc_trim
// while they learned, freed memory the allocator held because of the job's own allocation pattern.
typedef struct nd_ws_effect {
  bool known;             // a version 10 trace: the WORKSPACE records carry these facts
  uint64_t hits, hit_bytes; // allocations served from arenas and their bytes, all workspaces
  uint64_t arena_bytes;   // the arenas (ndmem's own cost: they stay resident)
  uint64_t trims;         // ndmem's measured trims while they learned
  uint64_t trim_bytes;    // resident memory's fall across them, in all
  uint64_t trim_max;      // and across the one that gave back most
  bool served;            // arenas served allocations: the summary says resident is not the job's
  bool held;              // one trim gave back ND_RETAIN_MIN_BYTES or more: retention, measured
} nd_ws_effect_t;

// By enum nd_allocator: in text ("glibc malloc", ...), in JSON ("glibc", ...).
extern const char *const nd_rep_allocator_names[ND_ALLOCATOR_MAX + 1];
extern const char *const nd_rep_allocator_keys[ND_ALLOCATOR_MAX + 1];

typedef struct report {
  const nd_trace_t *t;
  nd_sym_t *sym;
  const opts_t *o;
  uint32_t *by_peak, *by_total; // site indices, sorted
  uint32_t *leaks;              // leak indices, sorted by bytes
  uint32_t *live;               // (not ended) sites with live bytes, sorted by live bytes
  size_t nlive;
  uint64_t leak_bytes, leak_blocks, live_bytes;
  bool leak_est, live_est;
  uint32_t *ws;           // workspace indices by (tid, name)
  uint64_t ws_hits, ws_spills, ws_spill_bytes, ws_escapes; // over all workspaces
  esc_group_t *groups;    // escapes by (workspace, stack id)
  uint32_t *group_order;  // group indices by bytes
  size_t ngroups;
  uint64_t esc_bytes;     // over the escapes kept
  py_line_t *py_lines;    // by bytes allocated (version 7; not with --brief)
  size_t npy_lines;
  nd_lifetimes_t life;    // what was live at exit, by class (a normal exit)
  nd_retention_t retention; // resident growth beside flat tracked memory (RESIDENT records)
  nd_ws_effect_t ws_effect;  // what workspaces did to resident memory (version 10)
  int running;            // no END record: ND_RUN_YES / _NO / _UNKNOWN (running.h)
  nd_family_t family;     // the traces of the process's descendants beside this one (running.h)
  nd_supp_t *supp;        // leak suppressions: the built-ins (unless off), then each file's
  nd_wrap_t *wrap;        // text: the 80-column stream's state (textwrap.h), or NULL
  uint32_t *spill_order;  // device memory from host (version 11): t->spills by bytes, largest first
} report_t;

// The name tables (analyse.c): kinds, functions and fallbacks by index.
extern const char *const nd_rep_kind_names[ND_TRACE_KINDS];
extern const char *const nd_rep_fn_names[ND_TRACE_FNS];
extern const char *const nd_rep_fb_names[4];
// Limits by their JavaCPP names in text, snake case in JSON; actions by NDMEM_ON_LIMIT's values.
// Indexed by enum nd_limit_id and ND_LIMIT_DEVICE.
extern const char *const nd_rep_limit_names[ND_LIMIT_DEVICE + 1];
extern const char *const nd_rep_limit_keys[ND_LIMIT_DEVICE + 1];
extern const char *const nd_rep_cuda_fn_names[ND_CUDA_FN_USED]; // the CUDA record's calls
extern const char *const nd_rep_dev_class_names[ND_DEV_CLASSES]; // device memory by how allocated
extern const char *const nd_rep_action_names[4]; // 3: host (device limits, version 11)

// A sampled estimate of live bytes of `kind` (a GROWTH record's floor) held to the most that the
// exact counters show the kind ever held, its peak: *most when that lowered it ("at most").
uint64_t nd_rep_peak_cap(const nd_trace_t *t, uint16_t kind, uint64_t v, bool est, bool *most);

// Formatting both renderers use (analyse.c).
void nd_rep_format_start(char *out, size_t n, uint64_t realtime_ns);
// sum / peak to two decimals ("n/a" without a peak).
void nd_rep_format_ratio(char *out, size_t n, uint64_t sum, uint64_t peak);
// v / limit in percent to one decimal, rounded down so that "100.0 %" means the limit was reached.
void nd_rep_format_pct(char *out, size_t n, uint64_t v, uint64_t limit);
// "12.345 s": nanoseconds as seconds to the millisecond (rounded down).
void nd_rep_print_secs(FILE *o, uint64_t ns);
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

// The analysis (analyse.c): sorts the sites, leaks and workspaces and classifies what was live at
// exit; -1 when out of memory.
int nd_rep_analyse(report_t *r);
// A 64-bit key of a stack from its symbolized frames (module basename, function, file:line, else
// the offset in the module; Python frames: qualname, file, line), never from its stack id or
// addresses: the same code path in two runs, at other ids and load addresses, has the same key.
// A frame outside every module adds its address (not stable); --no-symbols changes every key.
// -1 when out of memory.
int nd_rep_stack_key(report_t *r, uint32_t stack, uint64_t *key);
// Entries of a list shown: --top (0: all), 5 with --brief.
size_t nd_rep_list_len(const report_t *r, size_t n);
uint64_t nd_rep_site_live(const nd_rec_site_t *s);
uint64_t nd_rep_sat_add(uint64_t a, uint64_t b);
// Escape records seen, kept or not.
uint64_t nd_rep_esc_records(const nd_trace_t *t);
// Any record of limits (LIMITS, breaches, snapshots).
bool nd_rep_has_limits(const nd_trace_t *t);
const char *nd_rep_breach_fn(const nd_rec_breach_t *b); // the function a breach refused
bool nd_rep_has_devices(const nd_trace_t *t);           // DEVICE or CUDA records (version 6)
// Device workspaces and host spill (version 11): the mode names (ndmem_device_ws_stats_t.mode),
// the sync policies and stream kinds, in text; and PyTorch's CUDA allocator as the trace shows it:
// ND_REP_TORCH_NONE (no PyTorch CUDA library loaded, nothing set), _NATIVE (its caching allocator:
// device sites are its segments) or _ASYNC (backend:cudaMallocAsync: device sites are tensors).
extern const char *const nd_rep_dws_modes[5];
extern const char *const nd_rep_dws_syncs[2];
extern const char *const nd_rep_dws_streams[3];
enum { ND_REP_TORCH_NONE, ND_REP_TORCH_NATIVE, ND_REP_TORCH_ASYNC };
int nd_rep_torch(const nd_trace_t *t);
const char *nd_rep_torch_text(const nd_trace_t *t); // one line about it, or NULL for NONE
bool nd_rep_device_limited(const nd_trace_t *t);        // a device had a limit or breaches
// Whether CUPTI's view of device d disagrees with the hooks' (and on what, into why[n]).
bool nd_rep_cupti_differs(const nd_rec_device_t *d, char *why, size_t n);
// Python (version 7): "3.11.2", "3.13.0rc1" from PY_VERSION_HEX ("?" for 0); the PYTHON
// record's state as a word ("none", "on", "unsupported", "off"); the index of a stack's innermost
// Python frame, or -1; whether a stack is shown without its native frames (--python-only, and the
// stack has a Python frame).
void nd_rep_format_pyversion(char *out, size_t n, uint32_t hex);
extern const char *const nd_rep_py_states[ND_PY_LAYOUT_DIFFERS + 1];
long nd_rep_py_innermost(const nd_trace_t *t, const nd_stack_t *s);
bool nd_rep_python_only(const report_t *r, const nd_stack_t *s);
// Python code the program did not write: an installed package, the standard library, a frozen
// module, an unknown file (the shim's live lines tell them apart by the same rules,
// interpose/stacks/names.c).
bool nd_rep_py_library(const char *file);
// Whether what was live at the end is a leak: the program ended on its own.
bool nd_rep_leaks_known(const nd_trace_t *t);
bool nd_rep_aborted(const nd_trace_t *t);
bool nd_rep_pct_of_cgroup(const nd_rec_limits_t *l);
int nd_rep_snap_limit(const nd_trace_t *t, const nd_rec_snapshot_t *s);
uint64_t nd_rep_since_start(const nd_trace_t *t, uint64_t ns);
uint64_t nd_rep_snap_live(const nd_snapshot_t *s, bool *est);

// The renderers: 0, or -1 when out of memory (a write error shows on `o`).
int nd_rep_text_report_80(FILE *out, report_t *r); // render_text.c
int nd_rep_json_report(FILE *o, report_t *r);      // render_json.c
// A JSON string (render_json.c): quotes, backslashes and control characters escaped, bytes that
// are not UTF-8 each U+FFFD, so the document stays valid whatever a trace names; NULL: null.
void nd_rep_json_str(FILE *o, const char *s);
// The lifetime classes' members (nd_life_keys: bytes, blocks, stacks, estimated), `sep` between
// them: the single report's leaks.classes and merge's per-process lifetime.
void nd_rep_json_classes(FILE *o, const uint64_t *bytes, const uint64_t *blocks,
                         const uint64_t *stacks, const bool *est, const char *sep);
// A version 12 header's job fields as JSON members, each after ", " (render_json.c): "ppid",
// "origin" (nd_rep_origin_keys: "started", "exec", "fork"), "rank", "world_size", "local_rank",
// "local_world_size" (null: unknown) and "rank_from" (the variable, or null).
extern const char *const nd_rep_origin_keys[ND_ORIGIN_MAX + 1];
void nd_rep_json_job(FILE *o, const nd_trace_header_t *h);
int nd_rep_html_report(FILE *o, report_t *r);      // render_html.c
// The text report's summary alone, unwrapped (render_text.c): the HTML summary's facts.
void nd_rep_text_summary(FILE *o, report_t *r);

// The single-trace report in two steps (ndmemreport.c), which --follow repeats on one trace as it
// grows. nd_report_read reads `file` into `t` (update: reads on, nd_trace_update), with a
// progress bar on a terminal for a large read; an error gets its line on `err`. Its result is
// nd_trace_read's or nd_trace_update's (-1: an error; free `t`).
int nd_report_read(nd_trace_t *t, const char *file, bool update, FILE *err);
// Analyses the read trace and renders it as `o` says on `out`: the exit status (0, 1 for
// --fail-on-leak or --fail-on-growth and a finding, 2 out of memory or a write error, reported
// on `err`, ND_REP_UNCHECKED for --fail-on-leak, no finding, and heap blocks live at exit that
// had no record, with its one line on `err`). `running`: nd_trace_running's answer for a trace
// without an END record.
#define ND_REP_UNCHECKED 3
int nd_report_render(const opts_t *o, const nd_trace_t *t, nd_sym_t *sym, nd_supp_t *supp,
                     int running, FILE *out, FILE *err);
// What nd_rep_analyse allocated in `r`, freed (ndmemreport.c); `r`'s trace, symbolizer and
// options stay. And the suppressions `o` asks for: the built-ins unless off, then each
// --suppressions file; NULL after an error, reported on `err`. Both for merge.c too, which
// analyses each trace as the single-trace report does.
void nd_rep_analysis_free(report_t *r);
nd_supp_t *nd_rep_load_suppressions(const opts_t *o, FILE *err);
// --follow (follow.c): reports o->file (--brief) every o->follow_ms until it is complete or
// SIGINT, reading only what was appended each time; its exit status.
int nd_report_follow(const opts_t *o, nd_supp_t *supp, FILE *out, FILE *err);
int nd_rep_collapsed_report(FILE *o, report_t *r); // render_collapsed.c

// Reads the trace at `path` (nd_trace_read) for every command (ndmemreport.c): with a progress bar
// on `err` naming the file when `err` is a terminal and the file has bar_from bytes or more
// (ND_PROGRESS_MIN), the bar cleared when done; an error reported on `err` in one line. 0, or 2
// (the caller still frees `t`).
#define ND_PROGRESS_MIN (256ull << 20)
// Text from a trace (a path, a host, a name) on a terminal's line: control bytes as \xNN
// (render_text.c); in place, each control byte '?' (a fixed-width cell, a progress bar).
void nd_rep_print_text(FILE *o, const char *s);
void nd_rep_no_controls(char *s);
// A size as the shim prints it (interpose/common/fmt.c): "512 B", "1.50 KiB", "28.23 MiB"; `out`.
const char *nd_rep_human(char *out, size_t n, uint64_t v);
// What follows the last '/' of a path (all of it without one).
const char *nd_rep_base_name(const char *path);
// An option's count: decimal digits only, at most `max`. 0, or -1 (the caller says what is wrong).
int nd_rep_parse_count(const char *v, unsigned long long max, unsigned long long *out);
// The length of the well-formed UTF-8 sequence at p (1 to 4) and its code point, or 0: a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate or a code point above
// U+10FFFF (render_json.c; JSON and HTML keep their strings valid with it).
int nd_rep_utf8_len(const unsigned char *p, uint32_t *cp);
int nd_rep_read_trace(nd_trace_t *t, const char *path, FILE *err, uint64_t bar_from);

// render_collapsed.c: --collapsed-by's words ("peak", "total", "live"), a site's weight, and the
// frames of a stack named as in text on one line each (function, module+0xOFF, 0xIP; Python:
// "qualname (file.py:LINE)"; an inlined call one name per function, the innermost first; ';' and
// control characters replaced), innermost first, --python-only respected: a malloc'd array of
// malloc'd strings (nd_rep_free_names), or -1 when out of memory.
extern const char *const nd_rep_weight_names[ND_WEIGHTS];
int nd_rep_parse_weight(const char *word); // -1: none of them
uint64_t nd_rep_site_weight(const nd_rec_site_t *s, enum nd_weight w);
int nd_rep_frame_names(report_t *r, uint32_t stack, char ***names, size_t *n);
void nd_rep_free_names(char **names, size_t n);
// The same names one at a time, outermost first, without allocating (flame.c walks stacks with
// them): a frame has nd_rep_frame_parts names (its inlined functions, then itself); part j of
// frame f into `b` (emptied first; f NULL: "[no frames]"). A walk gives (frame, part) pairs; its
// next is false at the end, or when out of memory (symbolize every frame first to rule it out).
size_t nd_rep_frame_parts(const nd_frame_t *f);
void nd_rep_frame_name(sbuf_t *b, const nd_frame_t *f, size_t j);
// Raises *longest to the longest such name among the frames of a stack as the views show it
// (--python-only applied), with b as scratch: the room the name walks need. -1 when out of memory.
int nd_rep_longest_name(report_t *r, uint32_t stack, sbuf_t *b, size_t *longest);
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

// --format svg (render_svg.c): the sites as a self-contained flame graph (flame.h), --flame-by.
int nd_rep_svg_report(FILE *o, report_t *r);

#endif
