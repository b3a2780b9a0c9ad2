// SPDX-License-Identifier: MIT
// trace_read.h: streaming reader for ndmem traces (trace_format.h). It reads the file through one
// fixed buffer, validates every record, and folds the records into the latest state: module map,
// interned stacks, per-site totals, process counters, blocks live at exit (aggregated per stack
// and kind), workspace statistics (version 2: the latest per thread and name), leaked
// workspace pointers (at most ND_TRACE_MAX_ESCAPES kept, the rest counted) and, from version 3,
// the latest limits record, the logged breaches (ND_TRACE_MAX_BREACHES kept) and the first and
// the last ND_TRACE_SNAP_LAST snapshots with their sites, and from version 7 the Python code
// objects that Python frames name and the latest PYTHON record; and the live bytes per kind at
// each COUNTERS record (a time series of at most ND_TRACE_MAX_POINTS points). Memory grows with distinct
// modules, stacks, sites, workspaces and code objects, never with file size, so a trace larger
// than RAM can be read. Versions 1 to ND_TRACE_VERSION are read, the older ones as the latest
// (normalise.c: nd_trace_has_t says what a trace's version had room for); a record is rejected in
// a trace older than its version.
// A trace still being written can be read on as it grows (nd_trace_update): the state is what
// one read of the longer file gives, and each update costs what was appended.
// Malformed input gives an error with its offset, never UB.
#ifndef ND_TRACE_READ_H
#define ND_TRACE_READ_H

#include "read/keymap.h"
#include "trace_format.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nd_module {
  uint64_t base, lo, hi;
  uint64_t seq; // record number of the latest MODULE record naming it: later wins on overlap
  uint32_t id;
  uint32_t path_len;
  char *path; // the record's path up to its first NUL, NUL-terminated
} nd_module_t;

typedef struct nd_stack {
  uint32_t id;
  uint32_t depth;
  size_t first; // index of its innermost frame in nd_trace_t.frames
} nd_stack_t;

// The history of a site's floor (its lowest live bytes in each flush window, version 5), folded
// as its SITE records arrive: how often it rose and fell, where the steady state found it and its
// highest value. The latest record's move is kept apart: when it is the final flush's (after a
// normal exit) it is the teardown, not the run.
typedef struct nd_site_hist {
  uint64_t records;       // SITE records of the site
  uint64_t seq;           // the flush the latest record belongs to (1: the first)
  uint64_t floor, cycle;  // the latest record's floor and cycle clock
  uint64_t first_floor;   // the first record's floor
  uint64_t prev_floor, prev_cycle; // the record's before it (records >= 2)
  uint64_t prev_live, prev_seq;   // ... its live bytes and flush
  int move;               // the latest record's floor against the one before: -1, 0, 1
  // The trailing run of falls (no rise since): how many, the floor before the first and the
  // cycle clock at the first. A teardown may free a structure over several flush windows.
  uint32_t tail_drops;
  uint64_t tail_floor, tail_cycle;
  uint32_t rises, drops;  // moves of the floor before the latest record, in the steady state
  uint32_t rises_any, drops_any; // the same over all records (a job without cycles)
  bool steady;            // a record in the steady state (cycle clock >= 1) was seen
  uint64_t steady_floor, steady_cycle; // the first of them
  uint64_t steady_rec;    // the record number (from 1) of that first steady-state record
  uint64_t peak_floor, peak_cycle, peak_rec; // the highest floor, when it was first reached
  // The steady state's windows closed before the latest record's flush (nd_trace_t's
  // steady_windows then). Where the peak floor was first held: the cycle clock, and the windows
  // closed before the first window it was held in (the peak's record, or the one before it when
  // that record's live bytes were the peak already); those since are the plateau's, if it held.
  uint64_t win, peak_since, peak_since_win;
  // The latest record that rose (its floor, or the live bytes of a site that never freed): its
  // cycle clock and flush; and the longest pause between two rises in the steady state, the
  // cycles between two rising records with a window between them that did not rise. A fill that
  // paused this long may then look flat as long.
  uint64_t rise_cycle, rise_at, max_pause;
  // The flushes where the current rise began (the window before the first rising record since the
  // latest fall, as late as the records allow: a burst is never taken for a long rise; the first
  // record where none rose yet) and of the peak's record.
  uint64_t rise_seq, peak_seq;
  bool rising;            // a rise since the latest fall
  // The counters of the latest record, of the first steady-state one and of the one before the
  // trailing falls (the teardown's): a site whose frees did not move from the first to the last
  // kept every block it made in between, so its growth is counted in blocks, not floors.
  uint64_t allocs, alloc_bytes, frees, live;
  uint64_t steady_allocs, steady_alloc_bytes, steady_frees;
  uint64_t held_allocs, held_alloc_bytes, held_frees, held_live, held_cycle;
  // The first of the trailing falls came a flush or more after the record before it: a site is
  // written only where it changed, so it held that record's live bytes (held_live) in every
  // window between.
  bool held_quiet;
} nd_site_hist_t;

typedef struct nd_site {
  uint32_t stack; // index into nd_trace_t.stacks
  nd_rec_site_t rec; // the latest SITE record of (stack id, kind)
  uint16_t at_peak_epoch; // its latest SITE_PEAK (version 15; 0: none): its live bytes at its
  uint64_t at_peak;       // group's peak moment of that epoch (nd_rep_site_at_peak reads them)
  uint64_t untouched;     // its latest SITE_UNTOUCHED (version 18): live bytes never resident
  uint64_t untouched_last; // the latest of them that was not 0 (what a reading last saw of a
                           // mapping since unmapped)
  nd_site_hist_t h;
} nd_site_t;

// Blocks live at exit (BLOCK records) of one stack and kind. Sampled blocks stand for `weight`
// bytes each; their count is estimated as weight / size (a sampled block of size s is drawn with
// probability about s / weight).
typedef struct nd_leak {
  uint32_t stack; // index into nd_trace_t.stacks
  uint16_t kind;
  bool inherited; // a fork child's blocks born before the fork: its parent's (one entry apart)
  uint8_t reach;  // enum nd_block_reach: the scan's class of its blocks (one entry per class)
  uint64_t exact_bytes, exact_blocks;
  uint64_t est_bytes, sampled_blocks;
  uint64_t sampled_bytes; // the sampled blocks' own requested bytes: what their records prove
  double est_blocks;
  // Births (version 5 traces give every block one; mappings from older ones have 0): the
  // earliest and latest, and those of the blocks born in the steady state (the latest FLUSH's
  // steady_ns; every block when the job had no cycles).
  uint64_t born_first_ns, born_last_ns;
  uint64_t born_last_cycle;             // the latest birth cycle (0: all before the first cycle)
  uint64_t steady_blocks, steady_bytes; // blocks (records) born in the steady state, their bytes
  uint64_t steady_first_ns, steady_first_cycle, steady_last_cycle;
} nd_leak_t;

// A leaked workspace pointer (WS_ESCAPE record). Its stack is resolved after the whole trace is
// read, as the STACK record it names may come later.
typedef struct nd_ws_escape {
  nd_rec_ws_escape_t rec; // name NUL-terminated and NUL-padded
  uint32_t stack; // index into nd_trace_t.stacks, or UINT32_MAX: not tracked or never defined
} nd_ws_escape_t;

#define ND_TRACE_MAX_ESCAPES 100000 // WS_ESCAPE records kept; later ones are only counted

// A site the shim found growing while the job ran (GROWTH record, version 5).
typedef struct nd_growth {
  nd_rec_growth_t rec;
  uint32_t stack; // index into nd_trace_t.stacks
} nd_growth_t;
#define ND_TRACE_MAX_GROWTH 100000 // GROWTH records kept (the writer: one per site)

// A logged breach of a limit (BREACH record, version 3); version 10 names the refused request's
// stack (ND_BREACH_STACK) and a retry loop the process was stopped for.
// Device memory one allocation site got from host memory (DEVICE_SPILL, version 11).
#define ND_TRACE_MAX_SPILL_SITES 4096
typedef struct nd_spill_site {
  nd_rec_device_spill_t rec;
  long stack; // index into nd_trace_t.stacks
} nd_spill_site_t;

typedef struct nd_breach {
  nd_rec_breach_t rec;
  long stack; // index into nd_trace_t.stacks; -1: none recorded
} nd_breach_t;

// One asking site's admissions under one limit (ADMIT_SITE, version 16): the latest record of
// each (limit, device, ip).
#define ND_TRACE_MAX_ADMIT_SITES 4096 // the writer keeps 512
typedef struct nd_admit_site {
  nd_rec_admit_site_t rec;
  long stack; // index into nd_trace_t.stacks; -1: none recorded
} nd_admit_site_t;
// The slot of a limit's admissions in nd_trace_t.admitted: maxBytes, maxPhysicalBytes, then each
// device's limit.
#define ND_TRACE_ADMIT_SLOTS (2 + ND_TRACE_MAX_DEVICES)
static inline int nd_admit_slot(unsigned limit, unsigned device) {
  return limit == ND_LIMIT_DEVICE ? 2 + (int)device : (int)limit;
}

// One COUNTERS record as a point of the timeline: its time and each kind's live bytes, and the
// cycle clock of the FLUSH that closed its batch (the latest FLUSH's before that is written).
typedef struct nd_point {
  uint64_t mono_ns;
  uint64_t cycle;
  int64_t live[ND_TRACE_KINDS];
  int64_t resident; // anonymous resident bytes (the RESIDENT record before it); -1: none (< 8)
  int64_t alloc_free; // the allocator's free bytes surely resident (free - trimmed) as read at
                      // this flush (version 9); -1: none
  int64_t alloc_trimmed; // of its free bytes, those a malloc_trim may have given back; -1: none
  int64_t alloc_top;  // of its free bytes, the heap's top chunk; -1: none
  uint64_t alloc_ns;  // when that reading was taken (0: none)
  int64_t rss;        // VmRSS as the latest RSS record read it (version 18); -1: none
  int64_t untouched;  // tracked mappings' bytes never resident at that reading; -1: none
} nd_point_t;
// Points kept. When a point arrives with the array full, every other one is dropped and from then
// on only every 2nd (4th, ...) COUNTERS record is kept, so the points stay evenly spaced in
// records and memory stays bounded however long the trace; the latest record is always the last
// point (an extra one past the stride, replaced by the next arrival).
#define ND_TRACE_MAX_POINTS 4096

#define ND_TRACE_MAX_DEVICES 16 // NDMEM_MAX_DEVICES: devices 0-15 are the kinds device0-15
#define ND_TRACE_MAX_BREACHES 1024 // BREACH records kept (the writer logs ~64 per limit at most)
#define ND_TRACE_SNAP_LAST 4       // snapshots kept besides the first: the latest ones
#define ND_TRACE_MAX_SNAP_SITES 4096 // SNAP_SITE records kept per snapshot (the writer: <= 256)

typedef struct nd_snap_site {
  uint32_t stack; // index into nd_trace_t.stacks
  nd_rec_snap_site_t rec;
} nd_snap_site_t;

// A SNAPSHOT record and its SNAP_SITE records. A snapshot whose run of sites the file ends in
// (SIGKILL, the OOM killer) has read < rec.sites; it can only be the trace's last.
typedef struct nd_snapshot {
  nd_rec_snapshot_t rec;
  uint64_t seq;          // 1 for the trace's first SNAPSHOT record, 2 for the next, ...
  uint32_t read;         // SNAP_SITE records read (kept or not)
  nd_snap_site_t *sites; // the first ND_TRACE_MAX_SNAP_SITES read, by live bytes once read
  size_t nsites, sites_cap;
} nd_snapshot_t;

// A Python code object (PYCODE record, version 7). Its strings are the record's bytes up to their
// first NUL (as a MODULE's path), NUL-terminated; UTF-8 as the writer gave them, not checked.
typedef struct nd_pycode {
  uint32_t id;
  uint32_t firstlineno;
  char *qualname, *filename;
} nd_pycode_t;

typedef struct nd_trace_has {
  bool workspaces;    // WORKSPACE and WS_ESCAPE records (version 2)
  bool limits;        // LIMITS, BREACH, SNAPSHOT and SNAP_SITE records (version 3)
  bool exit_record;   // an EXIT record, and an END record wherever the shim could write one, so
                      // that a trace without END was killed or crashed (version 4)
  bool site_history;  // SITE floors and cycle clocks, BLOCK births, FLUSH windows and GROWTH
                      // records: what growth is judged by (version 5)
  bool devices;       // DEVICE and CUDA records; a device limit's breach names its device (6)
  bool python;        // Python frames in stacks, PYCODE and PYTHON records (version 7)
  bool resident;      // RESIDENT records (version 8)
  bool allocator_view; // RESIDENT records carry the allocator's own account (version 9)
  bool ws_served;     // WORKSPACE records carry the bytes served and ndmem's learning trims (10)
  bool limit_details; // LIMITS: large mappings by their touched pages, a stop on a retry loop,
                      // values that could not be read; BREACH: the refused request's stack and a
                      // retry loop (version 10)
  bool device_ws;     // DEVICE_WS and DEVICE_SPILL records; the CUDA record's stream functions
                      // and PyTorch's allocator settings (version 11)
  bool job;           // the header's job fields (parent, origin, rank), so that the traces of
                      // descendants beside it can be found (version 12)
  bool py_depth;      // Python frames cut at NDMEM_PY_DEPTH, the marker of native frames cut at
                      // NDMEM_DEPTH, the PYTHON record's later states (version 12)
  bool reach;         // SCAN records, BLOCK records classed by the reachability scan (14)
  bool ws_held;       // WORKSPACE: the allocator's freed memory at learning cycles' ends (15)
  bool admissions;    // ADMITTED and ADMIT_SITE records; BREACH says why a request could be
                      // refused (16): before, every request over a limit could be
  bool end_causes;    // REFUSAL and EXEC records, a normal exit's status in EXIT: what an end
                      // came after (version 16)
  bool rss;           // RSS and SITE_UNTOUCHED records: the kernel's peak and its parts, the
                      // mappings' untouched pages (version 18)
  uint32_t cuda_fns;  // the calls a CUDA record counts (ND_CUDA_FN_USED_V10 before device_ws)
} nd_trace_has_t;

typedef struct nd_trace {
  const char *path;
  nd_trace_header_t hdr;
  nd_trace_has_t has; // what hdr.version gave the trace room for
  char host[sizeof(((nd_trace_header_t *)0)->host) + 1]; // header strings, NUL-terminated
  char exe[sizeof(((nd_trace_header_t *)0)->exe) + 1];

  uint64_t file_size; // bytes in the file (what was read, for a pipe)
  uint64_t good_end;  // offset just past the last complete record: nd_trace_update reads on there
  uint64_t last_read; // bytes the latest nd_trace_read or nd_trace_update read from the file
  bool regular;       // a regular file, which nd_trace_update can tell from another (dev, ino)
  uint64_t dev, ino;
  bool truncated;     // the file ends inside a record (good_end < file_size)
  // A compressed trace (ND_TRACE_ZSTD): file_size, good_end and every record offset count the
  // decompressed stream (the header included); stored_size is the file's bytes read. For
  // nd_trace_update the decompressor's state stays here with the bytes it gave past good_end.
  bool compressed;
  uint64_t stored_size;
  void *zd;           // ZSTD_DStream *
  uint64_t zfed;      // file bytes given to zd
  char *ztail;        // decompressed bytes after good_end (a record not yet whole)
  size_t nztail;
  uint64_t records, rec_count[ND_REC_TAG_MAX];

  bool ended; // an END record: the trace is complete (the shim wrote its final records)
  nd_rec_end_t end;
  bool have_exit;     // an EXIT record (version 4): how the process ended
  nd_rec_exit_t exit; // (flags 0 before version 16: a normal exit's status unknown)
  // The latest REFUSAL record (version 16): the last request a limit refused, its stack an index
  // into stacks (-1: none recorded).
  bool have_refusal;
  nd_rec_refusal_t refusal;
  long refusal_stack;
  // The latest EXEC record (version 16) where it was not followed by its failure: the process
  // exec'd `exec_path` (NUL-terminated) and its trace ends there. Execs that failed are counted.
  bool have_exec;
  nd_rec_exec_t exec;
  char exec_path[ND_EXEC_PATH_MAX + 1];
  uint64_t exec_failures;
  // The latest PEAK record of each group of kinds (version 15; epoch 0: none): the moment its
  // total last moved to a new peak.
  nd_rec_peak_t peak[ND_TRACE_PEAK_GROUPS];
  bool have_scan;     // a SCAN record (version 14): the reachability scan at exit
  nd_rec_scan_t scan;
  bool have_counters;
  nd_rec_counters_t counters; // the latest COUNTERS record
  bool have_resident;       // a RESIDENT record (version 8; version 9: the allocator's view)
  nd_rec_resident_t resident; // the latest
  // The highest anonymous resident memory any reading recorded (records.c: saw_resident): the
  // flushes', the limit checks', breaches' and snapshots'. The one `peak resident` of a report.
  bool have_resident_peak;
  uint64_t resident_peak;
  bool have_rss;            // an RSS record (version 18): the kernel's peak and its parts
  nd_rec_rss_t rss;         // the latest
  uint64_t untouched_unplaced; // SITE_UNTOUCHED records naming no site read before them
  uint64_t ws_served_ns;    // the flush whose WORKSPACE records first show an arena's hit (its
                            // last record's time): points before it are from before any arena
                            // served; 0: none did
  nd_point_t *series;       // the timeline, in trace order (ND_TRACE_MAX_POINTS at most)
  size_t npoints, series_cap;
  uint64_t series_seen;     // COUNTERS records read
  uint64_t series_stride;   // keep records whose number (from 0) is a multiple of it
  bool series_extra;        // the last point is the latest record, off the stride
  bool series_open;         // a point since the last FLUSH: that FLUSH gives its cycle
  bool have_flush;
  nd_rec_flush_t flush;     // the latest FLUSH record
  uint64_t flushes;         // FLUSH records read
  // The windows the growth rules judge a job with cycles by (version 5): FLUSH records that
  // closed the sites' windows (trace_format.h, ND_WINDOW_FLUSHES) with the cycle clock at 1 or
  // more, those of them closed by a clock that stood still, and the time of the latest.
  uint64_t steady_windows, stalled_windows, steady_window_ns;
  uint32_t win_still; // FLUSH records in a row since the last close whose clock stood still
  uint64_t after_flush;     // complete records after it
  uint64_t last_ns;         // latest time in a COUNTERS, FLUSH, END, BREACH or SNAPSHOT record

  nd_module_t *mods;
  size_t nmods, mods_cap;
  uint32_t *mod_slots; // content hash table over mods (index + 1)
  size_t mod_slots_cap;
  uint32_t *mod_order; // mods sorted by lo, built after reading, for nd_trace_module_of
  uint64_t *mod_maxhi; // prefix maxima of hi over mod_order

  nd_stack_t *stacks;
  size_t nstacks, stacks_cap;
  uint64_t *frames;
  size_t nframes, frames_cap;
  nd_map_t stack_ids; // stack id -> index
  size_t py_stacks;   // stacks with at least one Python frame (version 7)

  nd_pycode_t *pycodes; // PYCODE records (version 7), in trace order
  size_t npycodes, pycodes_cap;
  nd_map_t pycode_ids;  // code id -> index
  bool have_python;
  nd_rec_python_t python; // the latest PYTHON record

  nd_site_t *sites;
  size_t nsites, sites_cap;
  nd_map_t site_keys; // (stack id, kind) -> index

  nd_leak_t *leaks;
  size_t nleaks, leaks_cap;
  nd_map_t leak_keys; // (stack id, kind) -> index
  uint64_t block_records;

  nd_rec_workspace_t *ws; // the latest WORKSPACE record of each (tid, name), in first-seen order;
  size_t nws, ws_cap;     // names NUL-terminated and NUL-padded
  nd_map_t ws_keys;       // hash of (tid, name), re-hashed on collision -> index
  nd_ws_escape_t *escapes;  // the first ND_TRACE_MAX_ESCAPES WS_ESCAPE records, in trace order
  size_t nescapes, escapes_cap;
  uint64_t escapes_dropped; // WS_ESCAPE records beyond ND_TRACE_MAX_ESCAPES
  nd_growth_t *growth;      // the first ND_TRACE_MAX_GROWTH GROWTH records, in trace order
  size_t ngrowth, growth_cap;
  uint64_t growth_dropped;

  nd_rec_device_t devices[ND_TRACE_MAX_DEVICES]; // the latest DEVICE record of each device
  uint32_t have_device;       // bit d: devices[d] was read
  nd_rec_device_ws_t device_ws[ND_TRACE_MAX_DEVICES]; // the latest DEVICE_WS (version 11)
  uint32_t have_device_ws;    // bit d: device_ws[d] was read
  nd_rec_device_spill_t spill_total[ND_TRACE_MAX_DEVICES]; // DEVICE_SPILL totals (version 11)
  uint32_t have_spill;        // bit d: spill_total[d] was read
  nd_spill_site_t *spills;    // the latest DEVICE_SPILL of each (device, stack), first-seen order
  size_t nspills, spills_cap; // at most ND_TRACE_MAX_SPILL_SITES
  uint64_t spills_dropped;    // sites beyond them
  bool have_cuda;
  nd_rec_cuda_t cuda;         // the latest CUDA record
  bool have_limits;
  nd_rec_limits_t limits;     // the latest LIMITS record
  nd_breach_t *breaches;      // the first ND_TRACE_MAX_BREACHES BREACH records, in trace order
  size_t nbreaches, breaches_cap;
  uint64_t breaches_dropped;  // BREACH records beyond ND_TRACE_MAX_BREACHES
  // Admissions (version 16): the latest ADMITTED of each limit (nd_admit_slot), and the latest
  // ADMIT_SITE of each asking site, in first-seen order.
  nd_rec_admitted_t admitted[ND_TRACE_ADMIT_SLOTS];
  uint32_t have_admitted;     // bit s: admitted[s] was read
  nd_admit_site_t *admit_sites;
  size_t nadmit_sites, admit_sites_cap; // at most ND_TRACE_MAX_ADMIT_SITES
  uint64_t admit_sites_dropped;         // sites beyond them
  // Snapshots: snap[0] is the first, snap[1..] a ring of the latest; after reading,
  // snaps[0, nsnaps) point to the kept ones in trace order.
  nd_snapshot_t snap[1 + ND_TRACE_SNAP_LAST];
  const nd_snapshot_t *snaps[1 + ND_TRACE_SNAP_LAST];
  size_t nsnaps;
  uint64_t snap_records;      // SNAPSHOT records read
  nd_snapshot_t *snap_open;   // the snapshot whose SNAP_SITE records are still to come, or NULL
  uint16_t prev_tag;          // the tag of the previous record (0: none)

  char err[256];    // the error of a failed nd_trace_read, without the file name
  uint64_t err_off; // offset of the record (or header field) at fault
} nd_trace_t;

// Called after every buffer refill with the bytes consumed so far and the file size (0 if
// unknown).
typedef void (*nd_progress_fn)(void *arg, uint64_t done, uint64_t total);

// Reads the trace at `path` into `t` (zeroed here). Returns 0, or -1 with t->err and t->err_off
// set (when the failure is not tied to an offset, e.g. open(2), err_off is UINT64_MAX). A file
// cut short inside a record is not an error: t->truncated is set and everything before is used.
// nd_trace_free releases `t` in either case.
int nd_trace_read(nd_trace_t *t, const char *path, nd_progress_fn progress, void *arg);
// Reads on a trace that nd_trace_read (or nd_trace_update) read without an error, as it grows:
// only the bytes from t->good_end on, so that `t` ends as one nd_trace_read of the longer file
// would leave it (a record cut short before is read whole now; a snapshot whose sites were cut
// off gets the rest). When t->path names another file, one shorter than t->good_end, or one
// whose header differs (another job's trace, the file cut or rewritten), it is read again from
// its start. Returns 0 (read on), 1 (read again from the start), or -1 with t->err and
// t->err_off set, after which `t` is only fit for nd_trace_free (it may hold part of the
// records). Progress reports count from the file's start.
int nd_trace_update(nd_trace_t *t, nd_progress_fn progress, void *arg);
void nd_trace_free(nd_trace_t *t);

// The site of (stack id, kind): an index into t->sites, or -1.
long nd_trace_site_of(const nd_trace_t *t, uint32_t stack_id, uint16_t kind);

// The module of an instruction pointer: the most recently written one whose [lo, hi) holds it,
// or NULL. Valid after a successful nd_trace_read or nd_trace_update.
const nd_module_t *nd_trace_module_of(const nd_trace_t *t, uint64_t ip);

// Whether a frame of the trace is a Python frame: bit 63 means one only where the trace has
// Python frames (in older traces it is part of an address).
static inline bool nd_trace_is_pyframe(const nd_trace_t *t, uint64_t ip) {
  return t->has.python && nd_is_pyframe(ip);
}

// Whether a frame is the marker of native frames cut at NDMEM_DEPTH, Python frames after it.
static inline bool nd_trace_is_cut(const nd_trace_t *t, uint64_t ip) {
  return t->has.py_depth && ip == ND_FRAME_CUT;
}

// The code object of a Python frame (nd_trace_is_pyframe), or NULL. The reader has checked that
// every Python frame of every stack names one, so NULL means `ip` is not such a frame.
const nd_pycode_t *nd_trace_pycode(const nd_trace_t *t, uint64_t ip);

// A stack's frames, innermost first; NULL for a stack of depth 0 (a trace whose stacks all have
// no frame has no frame array, and NULL + 0 is undefined).
static inline const uint64_t *nd_stack_frames(const nd_trace_t *t, const nd_stack_t *s) {
  return s->depth ? t->frames + s->first : NULL;
}

// ---------------------------------------------------------------- sites over time

// The live bytes of chosen sites at each COUNTERS record: a second, light pass over the file
// (nd_trace_site_series) for the HTML timeline, as the first folds SITE records into their
// latest. A site's value at a point is alloc_bytes - free_bytes of its latest SITE record
// before that COUNTERS record (0 before its first): the shim writes a flush's SITE records
// before its COUNTERS record. The points are thinned exactly as nd_trace_t.series is (same
// records kept), so point i of both is the same COUNTERS record.
typedef struct nd_site_series {
  size_t nsites;      // the chosen sites, in the order given
  size_t npoints;     // <= ND_TRACE_MAX_POINTS
  uint64_t *mono_ns;  // [npoints]: each point's COUNTERS time
  uint64_t *live;     // site j's point i at live[j * ND_TRACE_MAX_POINTS + i]
  uint64_t *peak;     // [nsites]: the highest value among the points
  uint64_t seen;      // COUNTERS records read
  char err[256];      // why the pass failed (return -1)
} nd_site_series_t;

// Reads t->path again up to t->good_end, decoding only SITE, COUNTERS and FLUSH records, for the
// sites t->sites[sites[0..n)]. 0; 1 when the input is not a regular file (a pipe cannot be read
// twice: nothing read); -1 with s->err (out of memory, a read error, or a file that is no longer
// the one t was read from). nd_site_series_free releases `s` in every case.
int nd_trace_site_series(const nd_trace_t *t, const uint32_t *sites, size_t n,
                         nd_site_series_t *s);
void nd_site_series_free(nd_site_series_t *s);

// Whether a header (version 12 on: with its job fields) is one this reader accepts, as far as
// the header alone tells; for a look at many files (running.c, the traces beside one).
bool nd_trace_header_valid(const nd_trace_header_t *h);

#endif
