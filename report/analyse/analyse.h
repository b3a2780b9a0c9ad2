// SPDX-License-Identifier: MIT
// analyse.h: the trace analysed, as every format and command reads it: the options a report is
// asked for (opts_t), the analysed trace (report_t) and its analysis (analyse.c), and what every
// format says of a trace alike (facts.c): the name tables and the predicates on a trace. Not
// installed.
#ifndef ND_ANALYSE_H
#define ND_ANALYSE_H

#include "analyse/lifetime.h"
#include "read/running.h"
#include "analyse/sbuf.h"
#include "analyse/suppress.h"
#include "analyse/symbolize.h"
#include "read/trace_read.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// What a site weighs: its own peak of live bytes (sites peak at different times: summed, more than
// ever existed), bytes allocated, live bytes at the end, or live bytes at the process's peak
// moment (its group's, trace_format.h PEAK: memory that existed together; the flame graphs' and
// collapsed's default). diff compares sites by the first three (ND_DIFF_WEIGHTS): two traces'
// moments are not the same moment.
enum nd_weight { ND_BY_SITE_PEAK, ND_BY_TOTAL, ND_BY_LIVE, ND_BY_PEAK, ND_WEIGHTS };
#define ND_DIFF_WEIGHTS 3

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

// The sites under one Python line (file, line, function): their totals. The program's lines group
// the sites by the program's innermost Python frame, the libraries' lines by the innermost one
// (analyse.c: analyse_py_lines).
typedef struct py_line {
  const nd_pycode_t *code; // the first site's code object: its file and qualified name
  uint32_t line;           // 0: unknown
  uint64_t allocs, alloc_bytes, live_bytes;
  uint64_t sites;
  bool est;                // a site is sampled: the totals are estimates
  bool program;            // a line of the program's own (not nd_rep_py_library)
  // The line's largest site by bytes allocated: its place (analyse/place.h) names the line
  // beside the frame the site went through (the library function a line of the program called,
  // the program's line that called a library's); others_differ: a site of the line went another
  // way.
  uint32_t top_site;
  bool others_differ;
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
  // Live host memory: the host kinds' live bytes (heap, mmap, pinned, managed; untouched pages
  // of large mappings too) + workspace arenas, at the second point ("host" in every format; not
  // maxBytes' `tracked`, which counts large mappings by their touched pages)
  int64_t tracked_to;
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
  // The workspace saving (analyse.c, ws_saving; version 15): how far they kept the resident peak
  // down, estimated from what the allocator held freed below its top at the end of the cycles they
  // learned (held_learning: what it keeps from cycle to cycle without them) less what it held,
  // surely resident, in readings since arenas served (held_serving).
  bool saving_known;        // arenas served and held_learning was read
  bool serving_read;        // the allocator was read since arenas served (else no saving claimed)
  uint64_t held_learning;   // max over workspaces of learn_held_max_bytes
  uint64_t held_reads;      // the learning cycles' ends read, all workspaces
  uint64_t plan_trims;      // trims measured just before an arena was first used (0: no saving)
  uint64_t held_serving;    // max of (free - trimmed - top) over readings since arenas served
  uint64_t learning_peak;   // the highest resident point before arenas served
  uint64_t serving_peak;    // ... and since
  uint64_t saving;          // see ws_saving; 0: none estimated
} nd_ws_effect_t;

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
  py_line_t *py_lines;    // the program's lines by bytes allocated, then the libraries'
  size_t npy_lines, npy_program; // (Python frames in the trace; not with --brief)
  nd_lifetimes_t life;    // what was live at exit, by class (a normal exit)
  nd_retention_t retention; // resident growth beside flat tracked memory (RESIDENT records)
  nd_ws_effect_t ws_effect;  // what workspaces did to resident memory (has.ws_served)
  int running;            // no END record: ND_RUN_YES / _NO / _UNKNOWN (running.h)
  nd_family_t family;     // the traces of the process's descendants beside this one (running.h)
  nd_supp_t *supp;        // leak suppressions: the built-ins (unless off), then each file's
  struct nd_wrap *wrap;   // text: the 80-column stream's state (textwrap.h), or NULL
  uint32_t *spill_order;  // device memory from host (has.device_ws): t->spills by bytes, largest
                          // first
} report_t;

// The analysis (analyse.c): sorts the sites, leaks and workspaces and classifies what was live at
// exit; -1 when out of memory. nd_rep_analysis_free frees what it allocated in `r` (after an
// error too); `r`'s trace, symbolizer and options stay.
int nd_rep_analyse(report_t *r);
void nd_rep_analysis_free(report_t *r);

// ---------------------------------------------------------------- peak.c

// The kernel's peak of resident memory and its parts (RSS records, version 18), as every format
// gives them. The peak is ru_maxrss (what /usr/bin/time, wait4 and the OOM killer's accounting
// of one process go by) or VmHWM where it stands higher (the kernel reads its per-CPU counters
// exactly for /proc and not for ru_maxrss: they may differ by a counter batch). The parts are
// those of the reading with the highest VmRSS; with `other` (the anonymous memory none of
// ndmem's parts explains) and `unseen` (the peak above that reading: it fell between two
// readings) they add up to the peak exactly; both are signed and always shown.
typedef struct nd_rep_peak {
  bool known;            // an RSS record
  bool at_end;           // read at the process's end (else: at its last flush)
  uint64_t peak, maxrss, hwm;
  nd_rss_parts_t p;      // the reading nearest the peak
  int64_t other, unseen;
  uint64_t untouched;    // tracked mappings' bytes never resident at that reading (not in RSS)
  uint64_t rss_now;      // VmRSS at the latest reading
} nd_rep_peak_t;
void nd_rep_peak(const nd_trace_t *t, nd_rep_peak_t *out);

// ---------------------------------------------------------------- facts.c

// The name tables: kinds, functions and fallbacks by index.
extern const char *const nd_rep_kind_names[ND_TRACE_KINDS];
#define ND_REP_KIND_MMAP 1 // NDMEM_KIND_MMAP: anonymous mappings, counted by the bytes mapped
extern const char *const nd_rep_fn_names[ND_TRACE_FNS];
extern const char *const nd_rep_fb_names[4];
// Limits by their JavaCPP names in text, snake case in JSON; actions by NDMEM_ON_LIMIT's values.
// Indexed by enum nd_limit_id and ND_LIMIT_DEVICE.
extern const char *const nd_rep_limit_names[ND_LIMIT_DEVICE + 1];
extern const char *const nd_rep_limit_keys[ND_LIMIT_DEVICE + 1];
extern const char *const nd_rep_cuda_fn_names[ND_CUDA_FN_USED]; // the CUDA record's calls
extern const char *const nd_rep_dev_class_names[ND_DEV_CLASSES]; // device memory by how allocated
extern const char *const nd_rep_action_names[4]; // 3: host (device limits, has.device_ws)
// By enum nd_allocator: in text ("glibc malloc", ...), in JSON ("glibc", ...).
extern const char *const nd_rep_allocator_names[ND_ALLOCATOR_MAX + 1];
extern const char *const nd_rep_allocator_keys[ND_ALLOCATOR_MAX + 1];

// What follows the last '/' of a path (all of it without one).
const char *nd_rep_base_name(const char *path);
// A GROWTH record's base and lowest floor as every format gives them: a sampled estimate (est)
// held to the most that the exact counters show its kind ever held, its peak (most_base,
// most_floor: that lowered it, "at most").
typedef struct nd_rep_growth {
  uint64_t base, lowest;
  bool est, most_base, most_floor;
} nd_rep_growth_t;
nd_rep_growth_t nd_rep_growth(const nd_trace_t *t, const nd_rec_growth_t *g);
// Entries of a list shown: --top (0: all), 5 with --brief.
size_t nd_rep_list_len(const report_t *r, size_t n);
uint64_t nd_rep_site_live(const nd_rec_site_t *s);
uint64_t nd_rep_sat_add(uint64_t a, uint64_t b);
// Escape records seen, kept or not.
uint64_t nd_rep_esc_records(const nd_trace_t *t);
// Any record of limits (LIMITS, breaches, snapshots, admissions, a refused request).
bool nd_rep_has_limits(const nd_trace_t *t);
// Admissions (has.admissions): why a refused request could be refused (a BREACH's ND_BREACH_WHY
// flags, in their order) as JSON keys, and in words joined by "; " into buf ("" for none); a
// limit's name by its slot (nd_admit_slot; a device's into buf); admissions over every limit;
// the asking sites of one slot, most bytes first (*out: indices into t->admit_sites, malloc'd,
// NULL when none; -1 when out of memory).
#define ND_REP_WHY 4
extern const char *const nd_rep_why_keys[ND_REP_WHY];
const char *nd_rep_breach_why(const nd_rec_breach_t *b, char *buf, size_t n);
const char *nd_rep_admit_limit_name(const nd_trace_t *t, int slot, char *buf, size_t n);
uint64_t nd_rep_admitted_total(const nd_trace_t *t);
int nd_rep_admit_order(const nd_trace_t *t, int slot, size_t **out, size_t *n);
const char *nd_rep_breach_fn(const nd_rec_breach_t *b); // the function a breach refused
bool nd_rep_has_devices(const nd_trace_t *t);           // DEVICE or CUDA records
// Device workspaces and host spill (has.device_ws): the mode names
// (ndmem_device_ws_stats_t.mode), the sync policies and stream kinds, in text; and PyTorch's CUDA
// allocator as the trace shows it: ND_REP_TORCH_NONE (no PyTorch CUDA library loaded, nothing
// set), _NATIVE (its caching allocator: device sites are its segments) or _ASYNC
// (backend:cudaMallocAsync: device sites are tensors).
extern const char *const nd_rep_dws_modes[5];
extern const char *const nd_rep_dws_syncs[2];
extern const char *const nd_rep_dws_streams[3];
enum { ND_REP_TORCH_NONE, ND_REP_TORCH_NATIVE, ND_REP_TORCH_ASYNC };
int nd_rep_torch(const nd_trace_t *t);
const char *nd_rep_torch_text(const nd_trace_t *t); // one line about it, or NULL for NONE
bool nd_rep_device_limited(const nd_trace_t *t);        // a device had a limit or breaches
// Whether CUPTI's view of device d disagrees with the hooks' (and on what, into why[n]).
bool nd_rep_cupti_differs(const nd_rec_device_t *d, char *why, size_t n);
// Python (has.python): the PYTHON record's state as a word ("none", "on", "unsupported",
// "off"); the index of a stack's innermost Python frame, or -1; whether a stack is shown without
// its native frames (--python-only, and the stack has a Python frame).
extern const char *const nd_rep_py_states[ND_PY_LAYOUT_DIFFERS + 1];
long nd_rep_py_innermost(const nd_trace_t *t, const nd_stack_t *s);
bool nd_rep_python_only(const report_t *r, const nd_stack_t *s);
// Python code the program did not write: an installed package, the standard library, a frozen
// module, an unknown file (the shim's live lines tell them apart by the same rules,
// interpose/stacks/names.c).
bool nd_rep_py_library(const char *file);
// The Python lines a list shows (--top of each group): *program of the program's, py_lines[0 ..
// *program), then the rest from py_lines[npy_program]; their number.
size_t nd_rep_py_lines_shown(const report_t *r, size_t *program);
// Whether what was live at the end is a leak: the program ended on its own.
bool nd_rep_leaks_known(const nd_trace_t *t);
bool nd_rep_aborted(const nd_trace_t *t);
bool nd_rep_pct_of_cgroup(const nd_rec_limits_t *l);
int nd_rep_snap_limit(const nd_trace_t *t, const nd_rec_snapshot_t *s);
uint64_t nd_rep_since_start(const nd_trace_t *t, uint64_t ns);
uint64_t nd_rep_snap_live(const nd_snapshot_t *s, bool *est);
// How the process's end stands to its last refused request (version 16, REFUSAL): named with it
// (true, *since_ns from the refusal to the end) where the end came within ND_REFUSAL_NEAR_NS of
// it, or was not clean (a fatal signal, a non-zero exit status, a limit's stop) however long
// after. A trace without an end (killed, running) names none; an exec's end is clean.
bool nd_rep_end_after_refusal(const nd_trace_t *t, uint64_t *since_ns);
const char *nd_rep_refusal_fn(const nd_rec_refusal_t *r); // the function refused
// The process ended in an exec (version 16): the trace's last EXEC record did not fail and no
// END follows it. Why the shim does not follow one, by enum nd_exec_follow: in words (text,
// HTML) and as a JSON key.
bool nd_rep_exec_end(const nd_trace_t *t);
extern const char *const nd_rep_exec_why[ND_EXEC_FOLLOW_MAX + 1];
extern const char *const nd_rep_exec_keys[ND_EXEC_FOLLOW_MAX + 1];
// A normal exit's or _exit's status where the trace knows it (version 16 for a normal exit):
// true with *status.
bool nd_rep_exit_status(const nd_trace_t *t, int *status);

#endif
