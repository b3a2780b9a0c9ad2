// SPDX-License-Identifier: MIT
// trace_format.h: the one definition of ndmem's binary trace, shared by the writer (in the shim)
// and the reader (ndmemreport). Little-endian, fixed-size structs with asserted sizes.
//
// A trace is a header followed by records, each a nd_rec_t (tag, payload size) and its payload.
// The writer appends whole batches with write(2), each ending in a FLUSH record, so a trace cut
// short by SIGKILL or the OOM killer is readable up to its last complete record. Records carry
// *state*, not events: SITE records are the current totals of one allocation site and a later
// record of the same site replaces an earlier one, which keeps long runs bounded in size.
#ifndef ND_TRACE_FORMAT_H
#define ND_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define ND_TRACE_MAGIC "NDMEMTR\n"
// 2 added WORKSPACE and WS_ESCAPE records; 3 added LIMITS, BREACH, SNAPSHOT and SNAP_SITE; 4
// added EXIT (how the process ended: exit, _exit, a fatal signal); 5 added GROWTH and lengthened
// SITE (the window's floor, the cycle clock), BLOCK (the birth cycle), FLUSH (the cycle clock and
// the start of the steady state) and WORKSPACE (outlived blocks). A version 5 record carries its
// older fields first, at the same offsets; a reader takes the short form from traces before 5 and
// zeroes the rest (ND_REC_V4_SIZE). 6 added DEVICE and CUDA records and the device limit in
// BREACH (limit ND_LIMIT_DEVICE, the device in `device`). 7 added Python frames in STACK records
// (ND_PYFRAME_*) with the PYCODE records they name, and the PYTHON record. 8 added RESIDENT (the
// process's anonymous resident memory at each flush). 9 lengthened RESIDENT with the next
// allocator's own view of the memory it holds free (ND_REC_RESIDENT_V8_SIZE: the short form,
// read with the rest zeroed: no allocator view). 10 lengthened LIMITS (the bytes of large mappings
// not counted because untouched; flags for how mappings count, a stop on a retry loop and a limit
// that could not be read), BREACH (the refused request's stack; a retry loop's length) and
// WORKSPACE (the bytes its arena served and what ndmem's malloc_trim gave back while it learned),
// read short with the rest zeroed (ND_REC_LIMITS_V9_SIZE, ND_REC_BREACH_V9_SIZE,
// ND_REC_WORKSPACE_V9_SIZE: nothing known). 11 added DEVICE_WS (device workspaces) and DEVICE_SPILL
// (device allocations served from host memory), the breach action ND_ON_LIMIT_HOST, and the CUDA
// record's torch_conf (how PyTorch's CUDA allocator was set up). 12 keeps a stack's Python frames
// whatever NDMEM_DEPTH cut of its native ones (after the ND_FRAME_CUT marker, up to NDMEM_PY_DEPTH:
// stacks of up to ND_TRACE_MAX_STACK frames) and names free-threaded and otherwise laid out
// interpreters in the PYTHON record. 12 also lengthened the header with where the process stands
// in its job: its parent's pid, how it started (ND_ORIGIN_*: a fork child is a DataLoader-style
// worker), and its rank, world size, local rank and local world size with the variable the rank
// came from (ND_RANK_FROM_*); a shorter header (ND_TRACE_HEADER_V11_SIZE) reads as all unknown.
// 13 may compress: with ND_TRACE_ZSTD in the header's flags, everything after the header is one
// zstd stream of the same records, flushed (ZSTD_e_flush) at the end of every batch the writer
// writes and ended (ZSTD_e_end) after END, so a trace cut short still decompresses up to its last
// whole batch and the body of a complete one is a zstd frame (`tail -c +417 T | zstd -d`). A
// record's offset is then its offset in the decompressed stream, the header counted.
// 14 added the reachability scan at exit: a SCAN record (how it went) before the BLOCK records,
// and each BLOCK's class in its flags (ND_BLOCK_REACH_*; 0 before: not scanned).
// 15 added the peak moment: a PEAK record per memory group at each flush (when its total last
// moved to a new peak) and, after a SITE record, a SITE_PEAK record with the site's live bytes
// at that moment where it changed since; and lengthened WORKSPACE with what the allocator held
// freed at the end of each cycle a workspace learned and the trims made just before its arena was
// first used (ND_REC_WORKSPACE_V14_SIZE: nothing known).
// 16 added admissions: requests over a limit from code that cannot take a refusal, let through
// within the slack and counted (ADMITTED per limit, ADMIT_SITE per asking site), and in BREACH's
// flags why a refused request could be refused (ND_BREACH_RUNTIME, _NAMED, _LARGE, _PAST_SLACK;
// before 16 every request over a limit could be, and none is set).
// 16 also added REFUSAL (the last request a limit refused: when, the thread, its size and stack, so that
// an end soon after it is named with it) and EXEC (an exec of the process: the program, whether
// the shim follows it into the new image, and a failed exec's errno), and EXIT's reserved word
// became its flags (ND_EXIT_STATUS: `code` of a normal exit is its exit status; 0 before: unknown).
// 17 lengthened SCAN with the ended threads whose stacks were not read (glibc's cache keeps them
// mapped) and the mappings reached through the address-space reservation they lie in
// (ND_REC_SCAN_V16_SIZE: none known in the short form).
// 18 added the kernel's peak: an RSS record at each flush (VmRSS, VmHWM and their parts from
// /proc/self/status, getrusage's ru_maxrss, the tracked mappings' untouched bytes, and the
// breakdown of the reading with the highest VmRSS so far) and SITE_UNTOUCHED records (a mapping
// site's bytes never resident, where they changed). Before 18 neither is known.
// Readers accept 1 to 18.
#define ND_TRACE_VERSION 18
#define ND_TRACE_MAX_DEPTH 128 // NDMEM_DEPTH: native frames per stack
#define ND_TRACE_MAX_STACK 255 // frames in one STACK record from version 12 (before: 128)
#define ND_TRACE_MAX_RECORD (1u << 20) // no record is larger; the reader rejects what is

typedef struct nd_trace_header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;     // sizeof(nd_trace_header_t) of the writer
  uint64_t pid;
  uint64_t start_realtime_ns; // CLOCK_REALTIME at start
  uint64_t start_mono_ns;     // CLOCK_MONOTONIC at start; record times are monotonic
  uint64_t sample_interval;   // mean bytes between samples of small blocks (0: no sampling)
  uint64_t track_min;         // blocks of at least this many bytes are tracked exactly
  uint32_t depth;             // stack depth captured
  uint32_t page_size;
  char host[64];
  char exe[256];
  // version 12 (header_size ND_TRACE_HEADER_V11_SIZE before: a reader takes these as unknown).
  // The rank and sizes as the launcher's environment gave them at start-up (nd_config_rank, the
  // same reading NDMEM_OUTPUT's %r expands): -1 unknown, no variable set or one that is not a
  // plain non-negative integer. A fork child inherits its parent's (its environment is the same).
  uint64_t ppid;              // the parent's pid when the trace was created (0: unknown)
  int32_t rank, world_size;   // the family of rank_from gives the size too
  int32_t local_rank, local_world_size; // among the job's processes on this host
  uint16_t rank_from;         // enum nd_rank_from: the variable the rank was read from
  uint16_t origin;            // enum nd_origin: how the process came to be traced
  uint32_t flags;             // ND_TRACE_* (version 13; 0 before)
} nd_trace_header_t;
enum nd_trace_flags {
  ND_TRACE_ZSTD = 1, // the records are one zstd stream (version 13)
  ND_TRACE_FLAGS_KNOWN = 1
};
_Static_assert(sizeof(nd_trace_header_t) == 416, "trace header layout");
#define ND_TRACE_HEADER_V11_SIZE 384u // the header of versions 1 to 11: up to exe

// Where a rank was read from: the first of these variables set (and not empty) wins, and its
// family gives the sizes (config.c, nd_config_rank, has the table). A value set but not a plain
// non-negative integer leaves the rank unknown (-1) with rank_from still naming the variable.
enum nd_rank_from {
  ND_RANK_FROM_NONE = 0,  // no rank variable set
  ND_RANK_FROM_TORCH = 1, // RANK (WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE): torch.distributed
  ND_RANK_FROM_OMPI = 2,  // OMPI_COMM_WORLD_RANK (_SIZE, _LOCAL_RANK, _LOCAL_SIZE): Open MPI
  ND_RANK_FROM_PMI = 3,   // PMI_RANK (PMI_SIZE; MPI_LOCALRANKID, MPI_LOCALNRANKS): MPICH's Hydra
  ND_RANK_FROM_PMIX = 4,  // PMIX_RANK (no size in the environment): PMIx launchers
  ND_RANK_FROM_SLURM = 5, // SLURM_PROCID (SLURM_NTASKS, SLURM_LOCALID): srun
  ND_RANK_FROM_MAX = 5
};
// The variable a rank was read from, by enum nd_rank_from; NULL for none or out of range.
static inline const char *nd_rank_from_name(unsigned from) {
  static const char *const names[ND_RANK_FROM_MAX + 1] = {
      NULL, "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
  return from <= ND_RANK_FROM_MAX ? names[from] : NULL;
}

// How a traced process started, as the shim knows it: a fork child that did not exec is its
// parent's helper (a DataLoader worker, a multiprocessing fork): `ndmemreport merge` shows it as
// a worker of the trace whose pid is its ppid. An exec'd process (a rank mpirun started) is not.
enum nd_origin {
  ND_ORIGIN_UNKNOWN = 0, // a header before version 12, or a parent ndmem could not read (another
                         // user's, or one already gone): whether it ran under ndmem is unknown
  ND_ORIGIN_STARTED = 1, // its parent does not run under ndmem: the process the user started
                         // (or the child of an untraced launcher)
  ND_ORIGIN_EXEC = 2,    // a program exec'd in a child of a process under ndmem (a subprocess, a
                         // rank that a traced mpirun started)
  ND_ORIGIN_FORK = 3,    // a fork child of a process under ndmem, running its parent's program
  ND_ORIGIN_MAX = 3
};

enum nd_rec_tag {
  ND_REC_MODULE = 1,   // nd_rec_module_t + path bytes
  ND_REC_STACK = 2,    // nd_rec_stack_t + uint64_t ips[depth]
  ND_REC_SITE = 3,     // nd_rec_site_t
  ND_REC_COUNTERS = 4, // nd_rec_counters_t
  ND_REC_BLOCK = 5,    // nd_rec_block_t: a block live at exit
  ND_REC_FLUSH = 6,    // nd_rec_flush_t: end of a consistent batch
  ND_REC_END = 7,      // nd_rec_end_t: the process finished normally
  ND_REC_WORKSPACE = 8, // nd_rec_workspace_t: one workspace's statistics (latest wins)
  ND_REC_WS_ESCAPE = 9, // nd_rec_ws_escape_t: a leaked workspace pointer, once per plan entry
  ND_REC_LIMITS = 10,   // nd_rec_limits_t: the limits in force and their totals (latest wins)
  ND_REC_BREACH = 11,   // nd_rec_breach_t: one logged breach of a limit
  ND_REC_SNAPSHOT = 12, // nd_rec_snapshot_t: live memory by site; `sites` SNAP_SITE records follow
  ND_REC_SNAP_SITE = 13, // nd_rec_snap_site_t: one site's live memory in the preceding SNAPSHOT
  ND_REC_EXIT = 14,     // nd_rec_exit_t: how the process ended, just before END (version 4)
  ND_REC_GROWTH = 15,   // nd_rec_growth_t: a site found growing while the job ran (version 5)
  ND_REC_DEVICE = 16,   // nd_rec_device_t: one device's memory (latest wins; version 6)
  ND_REC_CUDA = 17,     // nd_rec_cuda_t: the CUDA driver hooks' own totals (latest wins; version 6)
  ND_REC_PYCODE = 18,   // nd_rec_pycode_t + qualname + filename: a Python code object (version 7)
  ND_REC_PYTHON = 19,   // nd_rec_python_t: the interpreter found and the frames read (latest wins)
  ND_REC_RESIDENT = 20, // nd_rec_resident_t: anonymous resident memory, before each COUNTERS
  ND_REC_DEVICE_WS = 21, // nd_rec_device_ws_t: one device's workspace (latest wins; version 11)
  ND_REC_DEVICE_SPILL = 22, // nd_rec_device_spill_t: device memory served from host (version 11)
  ND_REC_SCAN = 23,     // nd_rec_scan_t: the reachability scan at exit (version 14)
  ND_REC_PEAK = 24,     // nd_rec_peak_t: a memory group's peak moment (latest wins; version 15)
  ND_REC_SITE_PEAK = 25, // nd_rec_site_peak_t: a site's live bytes at its group's peak moment
  ND_REC_ADMITTED = 26, // nd_rec_admitted_t: one limit's admissions (latest wins; version 16)
  ND_REC_ADMIT_SITE = 27, // nd_rec_admit_site_t: one asking site's admissions (latest wins)
  ND_REC_REFUSAL = 28,  // nd_rec_refusal_t: the last refused request (latest wins; version 16)
  ND_REC_EXEC = 29,     // nd_rec_exec_t + path bytes: an exec of the process (version 16)
  ND_REC_RSS = 30,      // nd_rec_rss_t: the kernel's resident memory and peak, before each
                        // COUNTERS (latest wins; version 18)
  ND_REC_SITE_UNTOUCHED = 31, // nd_rec_site_untouched_t: a site's mapped bytes never resident
  ND_REC_TAG_MAX
};

typedef struct nd_rec {
  uint16_t tag;
  uint16_t reserved;
  uint32_t size; // payload bytes that follow
} nd_rec_t;
_Static_assert(sizeof(nd_rec_t) == 8, "record header layout");

// An executable or shared object as the loader mapped it. `base` is its load bias
// (dl_phdr_info.dlpi_addr); [lo, hi) spans its PT_LOAD segments in the process.
typedef struct nd_rec_module {
  uint32_t id;
  uint32_t path_len;
  uint64_t base, lo, hi;
} nd_rec_module_t;
_Static_assert(sizeof(nd_rec_module_t) == 32, "module record layout");

// An interned call stack, innermost frame first; written once, before any SITE naming it. From
// version 7 a frame with bit 63 set is a Python frame, not an address: the PYCODE record `code`
// (written before the stack) at source line `line` (0: unknown). Python frames stand where the
// interpreter's evaluator frames that ran them stood (py-spy's and memray's native mode), and the
// interpreter's own frames between an evaluator and the allocation are left out.
typedef struct nd_rec_stack {
  uint32_t id;
  uint32_t depth;
} nd_rec_stack_t;
_Static_assert(sizeof(nd_rec_stack_t) == 8, "stack record layout");

enum nd_site_flags { ND_SITE_SAMPLED = 1 }; // totals are estimates scaled from samples

// One allocation site (a stack and a memory kind) and its totals so far. Bytes are requested
// sizes; for a sampled site they are unbiased estimates of the sampled population. A fork child
// (ND_ORIGIN_FORK) counts from the fork: its own blocks, never those it inherited (its parent's,
// in its parent's trace, even where the child frees them); a site it never changed has no SITE
// record there. A fork child's trace from before this rule counted its parent's totals too.
typedef struct nd_rec_site {
  uint32_t stack_id;
  uint16_t kind; // enum ndmem_kind
  uint16_t flags;
  uint64_t allocs, frees;
  uint64_t alloc_bytes, free_bytes;
  uint64_t peak_live_bytes; // high-water of alloc_bytes - free_bytes for this site
  // version 5: the lowest live bytes of the site since its previous SITE record (the floor of
  // the window that ends here: what a cycle's temporaries do not reach), and the cycle clock
  // (the most cycles any thread's workspace has closed) when it was written.
  uint64_t floor_bytes;
  uint64_t cycle;
} nd_rec_site_t;
_Static_assert(sizeof(nd_rec_site_t) == 64, "site record layout");
// The writer closes the sites' windows (their floors start again) at a flush where the cycle
// clock is 0 or moved since the previous flush, and at the ND_WINDOW_FLUSHES-th flush in a row
// where it stood still (a stream the cycle detector lost: time windows then); between closes a
// SITE record's floor is that of the window still open. The reader counts the windows by it.
#define ND_WINDOW_FLUSHES 4

// Growth under a floor is no finding, for the shim's live line (growth.c) and ndmemreport's
// classes (lifetime.c) alike: a rise of under ND_GROWTH_MIN_RATE bytes per cycle (per flush window
// in a job without cycles) that totals under ND_GROWTH_MIN_BYTES too, as a runtime's small
// internal cache fills (numpy's, +24 B per cycle). A leak that slow is named once its total
// passes ND_GROWTH_MIN_BYTES (docs/leaks.md).
#define ND_GROWTH_MIN_RATE 1024u
#define ND_GROWTH_MIN_BYTES (64u * 1024)
static inline int nd_growth_below_floor(uint64_t grew, uint64_t span) {
  return grew < ND_GROWTH_MIN_BYTES && grew / ND_GROWTH_MIN_RATE < (span ? span : 1);
}

#define ND_TRACE_KINDS 20 // NDMEM_KIND_COUNT
#define ND_TRACE_FNS 15   // NDMEM_FN_COUNT
typedef struct nd_rec_kind_totals {
  int64_t live_bytes, peak_bytes, live_count;
  uint64_t allocs, frees;
} nd_rec_kind_totals_t;

// The process-wide counters (the shim's exact, usable-size totals) at a point in time.
typedef struct nd_rec_counters {
  uint64_t mono_ns;
  uint32_t threads;
  uint32_t reserved;
  nd_rec_kind_totals_t kind[ND_TRACE_KINDS];
  uint64_t calls[ND_TRACE_FNS];
  uint64_t fallbacks[4];
} nd_rec_counters_t;
_Static_assert(sizeof(nd_rec_counters_t) == 16 + 40 * ND_TRACE_KINDS + 8 * ND_TRACE_FNS + 32,
               "counters record layout");

// A tracked block still live when the process exited: a leak candidate.
typedef struct nd_rec_block {
  uint32_t stack_id;
  uint16_t kind;
  uint16_t flags; // ND_SITE_SAMPLED: `weight` bytes stand for it
  uint64_t addr;
  uint64_t size;
  uint64_t weight;
  uint64_t mono_ns; // allocation time
  uint64_t cycle;   // version 5: the cycle clock at its allocation (0: before the first cycle)
} nd_rec_block_t;
_Static_assert(sizeof(nd_rec_block_t) == 48, "block record layout");
// Version 14: what the reachability scan at exit found of the block (bits 1-3 of `flags`), as
// memcheck classes it. From the roots (writable segments of loaded objects, other anonymous
// memory of the program, every thread's stack above its stack pointer and its registers):
// reachable through a pointer to its start, possibly lost (reached only through interior pointers
// somewhere on the way), indirectly lost (reached only from lost blocks), definitely lost (no
// pointer to it anywhere but from the blocks it leads to). Not scanned: no scan ran, or the block
// was made after it.
enum nd_block_reach {
  ND_REACH_NONE = 0,
  ND_REACH_REACHABLE = 1,
  ND_REACH_POSSIBLE = 2,
  ND_REACH_INDIRECT = 3,
  ND_REACH_LOST = 4,
  ND_REACH_MAX = 4
};
#define ND_BLOCK_REACH_SHIFT 1
#define ND_BLOCK_REACH_MASK (7u << ND_BLOCK_REACH_SHIFT)
static inline unsigned nd_block_reach(uint16_t flags) { // may exceed ND_REACH_MAX: check it
  return (flags & ND_BLOCK_REACH_MASK) >> ND_BLOCK_REACH_SHIFT;
}

// How the reachability scan at exit went (version 14; reach.c). status: enum nd_scan_status.
enum nd_scan_status {
  ND_SCAN_DONE = 0,       // it ran: the BLOCK records carry its classes
  ND_SCAN_OFF = 1,        // NDMEM_LEAK_SCAN=0
  ND_SCAN_NOT_AT_END = 2, // the process did not end by exit or _exit (a signal, a limit's abort),
                          // or its last thread ended it from inside ndmem (a signal handler)
  ND_SCAN_BUSY = 3,       // other threads kept ndmem's tables busy every time they were stopped
  ND_SCAN_NO_SIGNAL = 4,  // no real-time signal was free to stop the other threads with
  ND_SCAN_OWN_UNKNOWN = 5, // ndmem's own mappings were not all known (its table was full)
  ND_SCAN_NO_MEMORY = 6,  // no memory for the scan's own tables
  ND_SCAN_NO_MAPS = 7,    // /proc/self/maps could not be read
  ND_SCAN_STATUS_MAX = 7
};
enum nd_scan_flags {
  // Every live heap block had a record (the heap's live count equals its tracked blocks): the
  // allocator's other memory (free chunks, its metadata) holds nothing of the program's and was
  // not read. Without it that memory is read as roots: it may hold the only pointer to a tracked
  // block, so a block is never called lost because an untracked one pointed to it (fewer finds).
  ND_SCAN_COMPLETE = 1,
  ND_SCAN_ALLOCATOR_KNOWN = 2, // the allocator's regions were told apart (glibc's heaps)
};
typedef struct nd_rec_scan {
  uint64_t mono_ns;     // when it began
  uint64_t ns;          // how long the world stood still (threads stopped) for it
  uint32_t status, flags;
  uint32_t threads;     // other threads of the program found
  uint32_t unheld;      // of them, those that did not stop (every signal blocked, or inside
                        // ndmem's hooks at every ask): their stacks were read from the stack
                        // pointer the kernel shows, their registers not, and the memory read was
                        // copied first (a page they unmapped meanwhile skipped)
  uint64_t blocks;      // live blocks it classed
  uint64_t root_bytes;  // bytes of roots read (stacks, registers, data, other memory)
  uint64_t block_bytes; // bytes of reached blocks read
  uint64_t skipped_bytes; // bytes of roots and blocks never resident (read as zeros, not read)
  uint64_t untracked_blocks; // live heap blocks without a record (the counters less the table)
  uint64_t tries;       // times the world was stopped for it
  // The exact counters of the heap [0] and anonymous mappings [1] while the threads stood still:
  // the BLOCK records that follow are the tables at that same moment (the threads stay stopped
  // until END), so what is live and has no record is measured against these, not against the
  // last COUNTERS record (other threads allocated and freed between the two).
  int64_t live_count[2], live_bytes[2];
  // Version 17. Threads that had ended, whose stacks glibc keeps mapped for the next ones: their
  // stacks, static TLS and descriptors not read (what they left there is dead).
  uint32_t ended_threads;
  // Tracked mappings that lie in a larger reservation or mapping of the program's (committed
  // inside it with MAP_FIXED, or a piece of it): a pointer into the whole reaches each.
  uint32_t reserved_maps;
  uint64_t ended_bytes; // the ended threads' stack bytes not read
} nd_rec_scan_t;
_Static_assert(sizeof(nd_rec_scan_t) == 128, "scan record layout");
#define ND_REC_SCAN_V16_SIZE 112u // versions 14 to 16: up to `live_bytes`

// The peak moment of a group of memory kinds (host: heap, mmap, pinned, managed; each device on
// its own): the shim moves it when a publish of the exact counters finds the group's total above
// it by more than max(256 KiB, 1/1024 of it) (counters.h). A site's live bytes at the moment are
// its latest SITE_PEAK of the same epoch, or, where it has none, its live bytes in its latest
// SITE record (it has not changed since). Written at each flush, before the SITE records.
typedef struct nd_rec_peak {
  uint16_t group;   // 0: host; 1 + N: device N
  uint16_t epoch;   // moves so far (1 ..)
  uint32_t reserved;
  uint64_t mono_ns; // when
  uint64_t bytes;   // the group's live bytes then (exact counters, usable sizes)
  uint64_t max;     // the highest total the counters published (>= bytes)
} nd_rec_peak_t;
_Static_assert(sizeof(nd_rec_peak_t) == 32, "peak record layout");
#define ND_PEAK_HOST 0
#define ND_PEAK_GROUP(kind) ((kind) >= 4 ? 1 + (kind) - 4 : 0) // enum ndmem_kind: DEVICE0 is 4
#define ND_TRACE_PEAK_GROUPS (ND_TRACE_KINDS - 3)

// A site's live bytes (requested sizes; a sampled site's estimate) at its group's peak moment of
// `epoch`, written after its SITE record when it changed since that moment.
typedef struct nd_rec_site_peak {
  uint32_t stack_id;
  uint16_t kind;
  uint16_t epoch;
  uint64_t live_bytes;
} nd_rec_site_peak_t;
_Static_assert(sizeof(nd_rec_site_peak_t) == 16, "site peak record layout");

typedef struct nd_rec_flush {
  uint64_t mono_ns;
  uint64_t seq;
  // version 5: the cycle clock (the most cycles any thread's workspace has closed, detected or
  // marked), and when the first cycle closed: the steady state begins there (0: not yet).
  uint64_t cycles;
  uint64_t steady_ns;
} nd_rec_flush_t;
_Static_assert(sizeof(nd_rec_flush_t) == 32, "flush record layout");

// How the process ended. `code`: the exit status for ND_EXIT_NORMAL and ND_EXIT_UNDERSCORE, the
// signal number for ND_EXIT_SIGNAL and ND_EXIT_LIMIT_ABORT (SIGABRT).
enum nd_exit_how {
  ND_EXIT_NORMAL = 0,     // exit() or a return from main: ndmem's destructor ran
  ND_EXIT_UNDERSCORE = 1, // _exit() or _Exit(): no atexit handlers, no destructors
  ND_EXIT_SIGNAL = 2,     // a fatal signal whose disposition was the default (it then ended it)
  ND_EXIT_LIMIT_ABORT = 3 // NDMEM_ON_LIMIT=abort
};
typedef struct nd_rec_exit {
  uint64_t mono_ns;
  uint32_t how; // enum nd_exit_how
  int32_t code;
  uint32_t tid; // the thread that ended the process
  uint32_t flags; // enum nd_exit_flags (version 16; reserved, 0, before)
} nd_rec_exit_t;
_Static_assert(sizeof(nd_rec_exit_t) == 24, "exit record layout");
enum nd_exit_flags {
  // `code` is the exit status: of _exit always; of a normal exit where the shim saw it (exit()
  // from anywhere and a return from main go through the handler it registers as main starts; a
  // process whose main it did not see start, a fork child of one, leaves it unknown)
  ND_EXIT_STATUS = 1
};

// An end this soon after the last refused request (REFUSAL) is named with it whatever it was; an
// end that is not clean (a fatal signal, a non-zero exit status, a limit's abort) is named with it
// however long after (the time is said). A clean exit later than this is not tied to it.
#define ND_REFUSAL_NEAR_NS (5ull * 1000000000)

// The last request a limit refused (version 16; latest wins): NDMEM_ON_LIMIT=fail's ENOMEM (or
// abort's stop) at maxBytes or maxPhysicalBytes, or a device limit's CUDA_ERROR_OUT_OF_MEMORY;
// every refusal, logged or not (BREACH records log the 1st, 2nd, 4th, ...). Written at the flush
// after it and at every end the shim sees (exit, _exit, a fatal signal), so that how the process
// ended is told beside the request it was refused last.
typedef struct nd_rec_refusal {
  uint64_t mono_ns;
  uint32_t tid;
  uint16_t limit;       // enum nd_limit_id, or ND_LIMIT_DEVICE
  uint16_t flags;       // enum nd_refusal_flags
  uint32_t fn;          // enum ndmem_fn; for ND_LIMIT_DEVICE, the CUDA hook (ND_CUDA_FN_*)
  uint32_t device;      // ND_LIMIT_DEVICE: the device
  uint64_t requested;   // bytes asked for (for realloc and mremap: the growth)
  uint64_t limit_bytes; // the limit
  uint64_t refusals;    // requests refused so far, every limit together (this one included)
  uint32_t stack_id;    // ND_REFUSAL_STACK: the request's stack (a STACK written before)
  uint32_t reserved;
} nd_rec_refusal_t;
_Static_assert(sizeof(nd_rec_refusal_t) == 56, "refusal record layout");
enum nd_refusal_flags { ND_REFUSAL_STACK = 1 };

// An exec of the process (version 16), written just before the exec is made, with a flush of
// everything up to it where the shim cannot follow it: where it succeeds the image is gone and
// this is the trace's last record (no END: the process lives on as another program). A followed
// exec's new image runs under the shim and, with the same output path, takes the trace over
// (trace.c): its record comes alone. Where the exec fails, a second EXEC record with its errno
// follows and the trace goes on.
enum nd_exec_follow {
  ND_EXEC_FOLLOWED = 0,   // the new program loads the shim again (its environment preloads it)
  ND_EXEC_NO_PRELOAD = 1, // its environment does not preload libndmem (cleared, or changed)
  ND_EXEC_STATIC = 2,     // a statically linked program: no loader to preload the shim into
  ND_EXEC_SECURE = 3,     // set-user-ID or set-group-ID: the loader ignores LD_PRELOAD's paths
  ND_EXEC_FOREIGN = 4,    // an ELF of another class or machine than the shim's (a 32-bit one)
  ND_EXEC_UNKNOWN = 5,    // the program could not be read: whether the shim follows is unknown
  ND_EXEC_FOLLOW_MAX = 5
};
// The exec function called (glibc's execl* and execvp build on execve inside libc, unseen: each is
// hooked itself).
enum nd_exec_fn {
  ND_EXEC_FN_EXECVE = 0, ND_EXEC_FN_EXECV, ND_EXEC_FN_EXECVP, ND_EXEC_FN_EXECVPE, ND_EXEC_FN_EXECL,
  ND_EXEC_FN_EXECLE, ND_EXEC_FN_EXECLP, ND_EXEC_FN_FEXECVE, ND_EXEC_FN_EXECVEAT, ND_EXEC_FN_MAX = 8
};
#define ND_EXEC_FN_NAMES \
  "execve", "execv", "execvp", "execvpe", "execl", "execle", "execlp", "fexecve", "execveat"
#define ND_EXEC_PATH_MAX 4096
typedef struct nd_rec_exec {
  uint64_t mono_ns;
  uint32_t tid;
  uint16_t follow;   // enum nd_exec_follow
  uint16_t fn;       // enum nd_exec_fn
  int32_t err;       // 0: the exec is being made; else it failed with this errno (the trace goes on)
  uint32_t path_len; // bytes of the program's path that follow (UTF-8 as given, no NUL), at most
                     // ND_EXEC_PATH_MAX: the file found (execvp's PATH search; fexecve's link)
} nd_rec_exec_t;
_Static_assert(sizeof(nd_rec_exec_t) == 24, "exec record layout");

typedef struct nd_rec_end {
  uint64_t mono_ns;
  uint64_t blocks; // BLOCK records written at exit
} nd_rec_end_t;
_Static_assert(sizeof(nd_rec_end_t) == 16, "end record layout");

// The statistics of one workspace of one thread; a later record for the same (tid, name)
// replaces an earlier one. ND4J's triple: allocated = arena_bytes, external (spilled) =
// spill_bytes, external (pinned) = pinned_bytes.
typedef struct nd_rec_workspace {
  uint32_t tid;
  uint32_t reserved;
  char name[32];          // NUL-terminated
  uint64_t cycles;        // cycles closed
  uint64_t learned_cycles;
  uint64_t arena_bytes;   // the planned arena(s) mapped
  uint64_t plan_peak_bytes, plan_sum_bytes; // the learned cycle's peak live bytes, and its sum
  uint64_t hits;          // allocations served from the arena
  uint64_t spills, spill_bytes; // routed allocations served externally
  uint64_t escapes, relearns, deviations;
  uint64_t pinned_bytes;  // escaped blocks still live
  // version 5: blocks of an *automatic* workspace that outlived the cycle ndmem detected (an
  // array kept across iterations, a result handed to another thread): ndmem's misprediction,
  // not the program's error. They stay valid and their plan entries stop being routed. `escapes`
  // counts only blocks that outlived a cycle the program declared (marks, named workspaces).
  uint64_t outlived;
  // version 10: what the workspace did to the process's resident memory, as far as it is measured.
  // hit_bytes: the bytes of the blocks its arena served (usable sizes, as the heap counters count
  // them): memory the allocator never held. learn_trims: ndmem's malloc_trim calls while it
  // learned (ws/trim.c: after large frees, and once before its arena is first used) around which
  // anonymous resident memory was read; learn_trim_bytes: by how much it fell across them in all,
  // learn_trim_max_bytes: across the one that gave back most. A fall across a trim is freed memory
  // the allocator held resident because of the program's own allocation pattern (another thread
  // freeing or touching memory meanwhile blurs it either way: ws/trim.c).
  uint64_t hit_bytes;
  uint64_t learn_trims;
  uint64_t learn_trim_bytes;
  uint64_t learn_trim_max_bytes;
  // version 15: what the job's allocator keeps without workspaces, measured while they learned
  // (docs/resident-memory.md). learn_held_max_bytes: the most freed memory below the heap's top the
  // allocator held at the end of a cycle the workspace learned (glibc: mallinfo2's fordblks -
  // keepcost), over learn_held_reads such ends; plan_trims, plan_trim_bytes: the trims made just
  // before a plan's arena was first used (also counted in learn_trims) and the fall across them.
  uint64_t learn_held_max_bytes;
  uint64_t learn_held_reads;
  uint64_t plan_trims;
  uint64_t plan_trim_bytes;
} nd_rec_workspace_t;
_Static_assert(sizeof(nd_rec_workspace_t) == 208, "workspace record layout");
#define ND_REC_WORKSPACE_V14_SIZE 176u // versions 10 to 14: up to `learn_trim_max_bytes`
#define ND_REC_WORKSPACE_V9_SIZE 144u // versions 5 to 9: up to `outlived`
// Resident memory worth naming (64 MiB: far above what thread caches, a heap's top chunk or a
// library loaded late add): the growth ndmemreport calls retention, and the fall across one of
// ndmem's learning trims that the shim's summary and ndmemreport both name as the job's own
// retention (prevented where workspaces then served it). One number: the two never disagree.
#define ND_RETAIN_MIN_BYTES (64ull << 20)

// A workspace block still live after its cycle ended (ND4J's "leaked workspace pointer").
typedef struct nd_rec_ws_escape {
  uint32_t tid;
  uint32_t stack_id;      // its allocation site; UINT32_MAX when it was not tracked
  char name[32];          // the workspace
  uint64_t addr, size;
  uint64_t cycle_born;    // the cycle it was allocated in (1 = the first cycle)
  uint64_t cycle_seen;    // the cycle in which it was found still live
} nd_rec_ws_escape_t;
_Static_assert(sizeof(nd_rec_ws_escape_t) == 72, "workspace escape record layout");

// A site found growing while the job ran (version 5): the floor of its live bytes (its lowest
// value in a flush window) rose in `rises` windows from `base_bytes` at cycle `base_cycle` to
// `floor_bytes` at cycle `cycle`. Written once per site, when the shim warned about it.
typedef struct nd_rec_growth {
  uint64_t mono_ns;
  uint32_t stack_id;
  uint16_t kind;
  uint16_t flags;       // ND_SITE_SAMPLED: estimates
  uint64_t cycle, base_cycle;     // cycle clock now and when the growth began (0: no cycles)
  uint64_t base_ns;               // when the growth began
  uint64_t base_bytes, floor_bytes;
  uint64_t rises;                 // windows in which the floor rose
} nd_rec_growth_t;
_Static_assert(sizeof(nd_rec_growth_t) == 64, "growth record layout");

// The payload sizes of records that version 5 lengthened, as versions 1 to 4 wrote them.
#define ND_REC_SITE_V4_SIZE 48u
#define ND_REC_BLOCK_V4_SIZE 40u
#define ND_REC_FLUSH_V4_SIZE 16u
#define ND_REC_WORKSPACE_V4_SIZE 136u

// ---------------------------------------------------------------- limits (version 3)

enum nd_limit_id { ND_LIMIT_BYTES = 0, ND_LIMIT_PHYSICAL = 1, ND_LIMIT_COUNT = 2 };
// A device's limit (NDMEM_MAX_DEVICE_BYTES[_<i>]): BREACH records only; its totals are in DEVICE.
#define ND_LIMIT_DEVICE 2
// ND_ON_LIMIT_HOST (version 11, device limits only): served from page-locked host memory
// (NDMEM_ON_DEVICE_LIMIT=host).
enum nd_limit_action {
  ND_ON_LIMIT_FAIL = 0, ND_ON_LIMIT_WARN = 1, ND_ON_LIMIT_ABORT = 2, ND_ON_LIMIT_HOST = 3
};
enum nd_limits_flags {
  ND_LIMITS_ABORTED = 1,        // the process was stopped by a breach (abort, or a retry loop)
  ND_LIMITS_RETRY_LOOP = 2,     // (version 10) it was stopped because a thread retried a refused
                                // request for NDMEM_LIMIT_RETRY_MS (its BREACH record says which)
  ND_LIMITS_MAPPINGS_WHOLE = 4, // (version 10) large mappings counted whole towards maxBytes;
                                // without it (and from version 10) by their touched pages
  // (version 10) NDMEM_MAX_BYTES, NDMEM_MAX_PHYSICAL_BYTES was set to a value that is not a
  // limit: the process ran without that limit
  ND_LIMITS_UNREAD_BYTES = 8,
  ND_LIMITS_UNREAD_PHYSICAL = 16
};

// The limits in force (0: none) and what happened to them so far; a later record replaces an
// earlier one. `tracked` is heap usable bytes + anonymous mmaps + workspace arenas (maxBytes);
// `physical` is anonymous resident memory, resident - shared of /proc/self/statm
// (maxPhysicalBytes, and the warning watermark).
typedef struct nd_rec_limits {
  uint64_t max_bytes, max_physical_bytes, warn_at;
  uint64_t ram_bytes;    // physical RAM
  uint64_t cgroup_bytes; // the tightest cgroup memory limit found (0: none)
  uint32_t action;       // enum nd_limit_action (NDMEM_ON_LIMIT)
  uint32_t flags;        // enum nd_limits_flags
  uint64_t breaches[ND_LIMIT_COUNT]; // every breach, logged or not
  uint64_t failed;       // allocations that were made to fail
  uint64_t reliefs;      // relief runs (idle workspace arenas released, malloc_trim)
  uint64_t relief_bytes; // workspace arena bytes released by relief
  uint64_t peak_tracked;   // the highest tracked total the checks saw
  uint64_t peak_physical;  // the highest anonymous resident memory any of ndmem's readings saw
                           // (the checks', the flushes' RESIDENT: one peak; the checks' alone
                           // in writers before ndmemreport took the highest of both)
  uint64_t physical_reads; // readings of the anonymous resident memory
  uint64_t snapshots;      // SNAPSHOT records taken (watermark and breach)
  uint64_t untouched;      // (version 10) bytes of large mappings not counted towards maxBytes at
                           // this record: never touched (NDMEM_MAX_BYTES_MAPPINGS=touched)
} nd_rec_limits_t;
_Static_assert(sizeof(nd_rec_limits_t) == 128, "limits record layout");
#define ND_REC_LIMITS_V9_SIZE 120u

// A breach of a limit that was logged: the 1st, 2nd, 4th, 8th, ... of each limit.
typedef struct nd_rec_breach {
  uint64_t mono_ns;
  uint32_t tid;
  uint16_t limit;  // enum nd_limit_id
  uint16_t action; // enum nd_limit_action: what was done with this allocation
  uint32_t fn;     // enum ndmem_fn of the call; for ND_LIMIT_DEVICE, the CUDA hook (ND_CUDA_FN_*)
  uint32_t device; // for ND_LIMIT_DEVICE (version 6): the device
  uint64_t requested;   // bytes asked for (for realloc: the growth)
  uint64_t value;       // tracked or physical bytes before this allocation
  uint64_t limit_bytes; // the limit
  uint64_t count;       // this is the count-th breach of this limit
  // Version 10:
  uint32_t stack_id;    // the refused request's stack (a STACK written before) when flags has
  uint32_t flags;       // ND_BREACH_STACK; ND_BREACH_RETRY_LOOP: the thread retried it
  uint64_t retries;     // ND_BREACH_RETRY_LOOP: refusals of the same request in a row
  uint64_t retry_ns;    // and the time from the first to this one
} nd_rec_breach_t;
_Static_assert(sizeof(nd_rec_breach_t) == 80, "breach record layout");
#define ND_REC_BREACH_V9_SIZE 56u
// Version 16: why the request could be refused (at least one; limits/admit.c): it came from a
// tensor runtime's allocator, from an object NDMEM_LIMIT_REFUSE names, it was large
// (NDMEM_LIMIT_LARGE), or admitting it would have taken the total past the limit and its slack.
enum nd_breach_flags {
  ND_BREACH_STACK = 1, ND_BREACH_RETRY_LOOP = 2,
  ND_BREACH_RUNTIME = 4, ND_BREACH_NAMED = 8, ND_BREACH_LARGE = 16, ND_BREACH_PAST_SLACK = 32,
  ND_BREACH_WHY = 4 | 8 | 16 | 32
};

// ---------------------------------------------------------------- admissions (version 16)

// A request over a limit is refused only where the program can take the refusal (a tensor
// runtime's allocator, an object the user names, a large request); any other is admitted: let
// through, counted, and its asking site kept, while admitting it keeps the total within the
// limit plus the slack. One ADMITTED record per limit (a device's: limit ND_LIMIT_DEVICE and its
// device) that admitted or refused past the slack, the latest wins.
typedef struct nd_rec_admitted {
  uint16_t limit;        // enum nd_limit_id, or ND_LIMIT_DEVICE
  uint16_t reserved;
  uint32_t device;       // for ND_LIMIT_DEVICE
  uint64_t limit_bytes;  // the limit at the last admission
  uint64_t slack_bytes;  // how far admissions may take the total past it
  uint64_t large_bytes;  // a request this large may be refused wherever it comes from
  uint64_t admitted;     // requests admitted over the limit
  uint64_t bytes;        // the bytes they added
  uint64_t over_max;     // the most the total stood past the limit after an admission
  uint64_t past_slack;   // requests refused because admitting them would have passed the slack
  uint64_t unplaced;     // admissions in no ADMIT_SITE record (the shim's table of sites was full)
} nd_rec_admitted_t;
_Static_assert(sizeof(nd_rec_admitted_t) == 72, "admitted record layout");

// One asking site's admissions under one limit: `ip` is the code asking (the request's first
// frame outside the objects that pass requests on: libc, the loader, the C++ runtime, for device
// memory the CUDA runtime and driver), and with ND_ADMIT_STACK `stack_id` the STACK of the first
// request admitted from there. The latest record of a (limit, device, ip) wins.
enum nd_admit_flags { ND_ADMIT_STACK = 1 };
typedef struct nd_rec_admit_site {
  uint16_t limit;    // as in ADMITTED
  uint16_t flags;    // enum nd_admit_flags
  uint32_t device;
  uint32_t stack_id; // with ND_ADMIT_STACK: a STACK written before
  uint16_t kind;     // the requests' memory kind
  uint16_t reserved;
  uint64_t ip;
  uint64_t admitted, bytes, over_max;
  uint64_t first_ns, last_ns; // monotonic
} nd_rec_admit_site_t;
_Static_assert(sizeof(nd_rec_admit_site_t) == 64, "admit site record layout");

enum nd_snapshot_reason { ND_SNAP_WATERMARK = 0, ND_SNAP_BREACH = 1 };

// Live memory by allocation site at a moment worth keeping (the watermark was crossed, or the
// first breach of a limit): the largest `sites` sites by live bytes follow as SNAP_SITE records.
typedef struct nd_rec_snapshot {
  uint64_t mono_ns;
  uint32_t reason; // enum nd_snapshot_reason
  uint32_t sites;  // SNAP_SITE records that follow
  uint64_t tracked, physical; // physical 0: not read
  uint64_t threshold;         // the watermark, or the limit breached
} nd_rec_snapshot_t;
_Static_assert(sizeof(nd_rec_snapshot_t) == 40, "snapshot record layout");

typedef struct nd_rec_snap_site {
  uint32_t stack_id; // a STACK written before
  uint16_t kind;
  uint16_t flags;    // ND_SITE_SAMPLED: estimates
  uint64_t live_bytes, live_count;
} nd_rec_snap_site_t;
_Static_assert(sizeof(nd_rec_snap_site_t) == 24, "snapshot site record layout");

// ---------------------------------------------------------------- device memory (version 6)

// Device memory by how it was allocated: cuMemAlloc/cuMemAllocPitch, stream-ordered
// (cuMemAllocAsync, cuMemAllocFromPoolAsync: the bytes handed out; a pool may hold more), and the
// virtual-memory API's physical allocations (cuMemCreate).
enum nd_dev_class { ND_DEV_PLAIN = 0, ND_DEV_ASYNC = 1, ND_DEV_VMM = 2, ND_DEV_CLASSES = 3 };
enum nd_dev_flags { ND_DEV_CUPTI = 1 }; // the cupti fields hold CUPTI's view (ndmem run --cupti)

typedef struct nd_rec_dev_class {
  uint64_t allocs, frees, alloc_bytes, free_bytes;
} nd_rec_dev_class_t;

// One device as the hooks saw it (exact, requested bytes), and CUPTI's view beside it.
typedef struct nd_rec_device {
  uint32_t device;
  uint32_t flags;             // enum nd_dev_flags
  uint64_t total_bytes;       // the device's memory (cuDeviceTotalMem; 0: not asked)
  uint64_t limit_bytes;       // NDMEM_MAX_DEVICE_BYTES[_<i>] in bytes (0: none)
  int64_t live_bytes, peak_bytes;
  nd_rec_dev_class_t cls[ND_DEV_CLASSES];
  uint64_t breaches, failed;  // breaches of the limit; allocations made to fail
  uint64_t getinfo_calls, getinfo_clamped; // cuMemGetInfo answers; those the limit lowered
  nd_rec_dev_class_t cupti, cupti_pool; // CUPTI: memory outside pools; served by pools
  uint64_t cupti_pool_reserved, cupti_pool_reserved_peak; // what pools hold from the device
  uint64_t cupti_pinned, cupti_managed; // live pinned host and managed memory
  uint64_t cupti_records, cupti_dropped;
} nd_rec_device_t;
_Static_assert(sizeof(nd_rec_device_t) == 280, "device record layout");

// The hooked driver functions, in the order of nd_rec_cuda_t.calls.
#define ND_CUDA_FNS 24
#define ND_CUDA_FN_NAMES                                                                          \
  "cuMemAlloc", "cuMemAllocPitch", "cuMemFree", "cuMemAllocManaged", "cuMemAllocHost",           \
      "cuMemHostAlloc", "cuMemFreeHost", "cuMemAllocAsync", "cuMemAllocAsync_ptsz",               \
      "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", "cuMemFreeAsync",                \
      "cuMemFreeAsync_ptsz", "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap",              \
      "cuMemGetInfo", "cuGetProcAddress", "cuGetProcAddress_v2", "cuStreamCreate",                \
      "cuStreamCreateWithPriority", "cuStreamDestroy"
#define ND_CUDA_FN_USED 23
#define ND_CUDA_FN_USED_V10 20 // versions 6 to 10 hooked the first 20 (no stream functions)

typedef struct nd_rec_cuda {
  uint64_t first_ns;            // the first hooked call
  uint64_t calls[ND_CUDA_FNS];  // per hooked function (ND_CUDA_FN_NAMES)
  uint64_t answered_dlsym, answered_proc; // lookups answered with a hook
  uint64_t unhooked;      // lookups left to the driver (no hook instance left): not seen
  uint64_t unknown_frees; // releases of memory ndmem did not see allocated
  uint64_t untracked;     // allocations not kept (no memory for the table): counted, no stack
  uint64_t torch_conf;    // (version 11) enum nd_torch_conf: PYTORCH_CUDA_ALLOC_CONF at start-up
  uint64_t reserved[2];
} nd_rec_cuda_t;
_Static_assert(sizeof(nd_rec_cuda_t) == 8 + 8 * ND_CUDA_FNS + 64, "cuda record layout");

// PyTorch's CUDA caching allocator as PYTORCH_CUDA_ALLOC_CONF set it up when the process started
// (bits): whether the variable was set, its backend, expandable segments, and whether ndmem run
// --torch-tensors set it.
enum nd_torch_conf {
  ND_TORCH_CONF_SET = 1,          // PYTORCH_CUDA_ALLOC_CONF was in the environment
  ND_TORCH_CONF_ASYNC = 2,        // backend:cudaMallocAsync (each tensor a stream-ordered block)
  ND_TORCH_CONF_EXPANDABLE = 4,   // expandable_segments:True (cuMemCreate and cuMemMap)
  ND_TORCH_CONF_BY_NDMEM = 8,     // set by ndmem run --torch-tensors
};

// ---------------------------------------------------------------- device workspaces (version 11)

// enum values as in ndmem_device_ws_stats_t (mode, sync, streams) and workspace.h (policies);
// the modes by name, as the shim's summary and ndmemreport say them.
#define ND_DWS_MODE_NAMES "off", "finding the cycle", "learning", "planned", "ND4J arena"
typedef struct nd_rec_device_ws {
  uint32_t device, mode, sync, streams;
  uint32_t learning, allocation, spill, reset;
  uint64_t cycles, learned_cycles, relearns;
  uint64_t arena_bytes, plan_peak_bytes, plan_sum_bytes;
  uint64_t hits, hit_bytes, spills, spill_bytes, deviations, outlived, frees;
  uint64_t ctx_syncs, fences, host_waits, stream_waits, fallbacks;
  uint64_t arena_allocs, arena_frees;
  uint64_t reserved[2];
} nd_rec_device_ws_t;
_Static_assert(sizeof(nd_rec_device_ws_t) == 208, "device workspace record layout");

// Device allocations served from page-locked host memory (NDMEM_ON_DEVICE_LIMIT=host), per
// device and allocation site (stack_id a STACK written before), and once per device with
// stack_id ND_SPILL_TOTAL (the device's totals, its peak of live bytes included).
#define ND_SPILL_TOTAL UINT32_MAX
typedef struct nd_rec_device_spill {
  uint32_t device, stack_id;
  uint64_t allocs, frees, alloc_bytes;
  int64_t live_bytes, peak_bytes;
  uint64_t over_limit, device_full; // allocations spilled for each reason
} nd_rec_device_spill_t;
_Static_assert(sizeof(nd_rec_device_spill_t) == 64, "device spill record layout");

// ---------------------------------------------------------------- resident memory (version 8)

// The allocator ndmem chains to, as far as the shim could name it (version 9).
enum nd_allocator {
  ND_ALLOCATOR_UNKNOWN = 0, // none that ndmem can ask: its free bytes are never guessed
  ND_ALLOCATOR_GLIBC = 1,   // glibc malloc: mallinfo2()
  ND_ALLOCATOR_JEMALLOC = 2 // jemalloc: mallctl stats.resident, stats.allocated
};
#define ND_ALLOCATOR_MAX ND_ALLOCATOR_JEMALLOC

// The process's anonymous resident memory (resident - shared of /proc/self/statm, as
// maxPhysicalBytes reads it), written at each flush just before its COUNTERS record: beside the
// tracked bytes, it shows memory the allocator keeps after the program freed it. Version 9 adds
// the allocator's own account of what it holds free, the evidence that names that retention: it
// is read only when the gap between resident and tracked bytes has moved materially since the
// last reading (mallinfo2 locks and walks every arena), and a flush in between repeats the last
// reading with its time (alloc_ns). alloc_ns 0: not read (yet, or the allocator is unknown).
typedef struct nd_rec_resident {
  uint64_t mono_ns;
  uint64_t anon_bytes;
  uint64_t alloc_trimmed_bytes; // version 9 (0 in 8): of alloc_free_bytes, an upper bound on
                                // those not resident, after a malloc_trim gave their pages back
                                // (allocstat.c); 0: no trim seen
  // version 9
  uint64_t alloc_free_bytes;   // freed by the program, kept by the allocator (glibc: fordblks,
                               // free chunks in the arenas incl. the top; jemalloc: resident -
                               // allocated, i.e. dirty pages, fragmentation and metadata)
  uint64_t alloc_system_bytes; // what the allocator got from the system (glibc: arena + hblkhd;
                               // jemalloc: stats.resident)
  uint64_t alloc_top_bytes;    // of the free bytes, glibc's trimmable top chunk (keepcost); 0 else
  uint64_t alloc_ns;           // when that account was read (monotonic); 0: none
  uint32_t allocator;          // enum nd_allocator
  uint32_t alloc_query_us;     // how long that reading took, microseconds (its cost, shown)
} nd_rec_resident_t;
_Static_assert(sizeof(nd_rec_resident_t) == 64, "resident record layout");
#define ND_REC_RESIDENT_V8_SIZE 24u // version 8: mono_ns, anon_bytes, a reserved 0

// ---------------------------------------------------------------- the kernel's peak (version 18)

// The process's resident memory as the kernel keeps it, and what held it, at one reading:
// /proc/self/status's VmRSS = RssAnon + RssFile + RssShmem (the kernel's own split), and ndmem's
// account of the anonymous part from the same flush: the parts below, plus what none of them
// explains (the reader shows anon - the parts as "other", signed, never hidden). Heap blocks are
// counted by usable size whether touched or not; mappings by their resident pages (mincore).
typedef struct nd_rss_parts {
  uint64_t mono_ns;            // when it was read (0: no reading)
  uint64_t rss, anon, file, shmem; // VmRSS, RssAnon, RssFile, RssShmem
  uint64_t heap_bytes;         // heap in use: the tracked heap's live bytes (usable sizes; blocks
                               // served from workspace arenas included)
  uint64_t alloc_free_bytes;   // freed memory the allocator holds, surely resident (its free
                               // bytes less those a trim may have given back), as last read
  uint64_t alloc_ns;           // when the allocator was read (0: not read or unknown: 0 above)
  uint64_t maps_touched_bytes; // tracked anonymous mappings: their resident pages
  uint64_t maps_untouched_bytes; // ... and their pages never resident (in no RSS: shown apart)
  uint64_t ws_idle_bytes;      // workspace arenas not holding live blocks
  uint64_t self_bytes;         // ndmem's own mappings' resident pages (its metadata, the trace's
                               // buffers), the workspace arenas' mapped bytes left out
} nd_rss_parts_t;
_Static_assert(sizeof(nd_rss_parts_t) == 96, "rss parts layout");

// Written at each flush before COUNTERS (latest wins). maxrss_bytes is the kernel's peak of the
// process (getrusage's ru_maxrss, which an exec keeps: what /usr/bin/time's %M, wait4 and the
// cgroup's accounting of one process go by), exact to the KiB, not sampled: the kernel keeps it.
// Read at every flush and again by the last one (ND_RSS_AT_END), so a process killed early keeps
// its figure as of its last flush. `now` is this flush's reading; `at_peak` the reading with the
// highest VmRSS so far (the closest a reading came to the peak: maxrss - at_peak.rss of the peak
// fell between two readings and is shown as such).
enum nd_rss_flags {
  ND_RSS_AT_END = 1,       // read by the last flush, at the process's end
  ND_RSS_MAPS_UNREAD = 2,  // the mappings' pages could not be read now (the table was busy): the
                           // untouched bytes are the last reading's
  ND_RSS_OWN_UNREAD = 4,   // ndmem's own mappings could not be read now (0 or the last reading)
  ND_RSS_SITES_FULL = 8,   // more mapping sites with untouched pages than the writer keeps: some
                           // sites' untouched bytes are in the totals only
  ND_RSS_FLAGS_KNOWN = 15
};
typedef struct nd_rec_rss {
  uint64_t maxrss_bytes;   // ru_maxrss x 1024
  uint64_t hwm_bytes;      // VmHWM: the peak of this program image (since its exec)
  uint32_t flags;          // enum nd_rss_flags
  uint32_t reserved;
  nd_rss_parts_t now;
  nd_rss_parts_t at_peak;
} nd_rec_rss_t;
_Static_assert(sizeof(nd_rec_rss_t) == 24 + 2 * 96, "rss record layout");

// A mapping site's live bytes that were never resident at a flush's reading (mincore): a
// reservation made and not (yet) touched. Written after the SITE records for each site whose
// untouched bytes changed since last written (0 included); the latest wins.
typedef struct nd_rec_site_untouched {
  uint32_t stack_id;
  uint16_t kind;     // enum ndmem_kind (anonymous mappings)
  uint16_t reserved;
  uint64_t untouched_bytes;
} nd_rec_site_untouched_t;
_Static_assert(sizeof(nd_rec_site_untouched_t) == 16, "site untouched record layout");

// ---------------------------------------------------------------- Python (version 7)

#define ND_PYFRAME_BIT (1ull << 63)
#define ND_PYFRAME_LINE_BITS 24
#define ND_PYFRAME_LINE_MAX ((1u << ND_PYFRAME_LINE_BITS) - 1) // larger lines are written as 0
static inline uint64_t nd_pyframe(uint32_t code, uint32_t line) {
  return ND_PYFRAME_BIT | (uint64_t)code << ND_PYFRAME_LINE_BITS |
         (line <= ND_PYFRAME_LINE_MAX ? line : 0);
}
static inline int nd_is_pyframe(uint64_t ip) { return (ip & ND_PYFRAME_BIT) != 0; }
static inline uint64_t nd_pyframe_code(uint64_t ip) { return (ip & ~ND_PYFRAME_BIT) >> ND_PYFRAME_LINE_BITS; }
static inline uint32_t nd_pyframe_line(uint64_t ip) { return (uint32_t)(ip & ND_PYFRAME_LINE_MAX); }
// (version 12) Where the native frames of a stack were cut at NDMEM_DEPTH and the thread's Python
// frames beyond them follow, up to NDMEM_PY_DEPTH: the frames between were not recorded. Never a
// return address.
#define ND_FRAME_CUT ((uint64_t)1)

// A Python code object as the shim first met it: its qualified name and file (UTF-8, not
// NUL-terminated) follow the struct, qualname first. A code object that died and whose address
// was reused by another is a new record with a new id.
typedef struct nd_rec_pycode {
  uint32_t id;          // the `code` of Python frames (ND_PYFRAME_*), from 0
  uint32_t firstlineno; // co_firstlineno
  uint32_t qualname_len, filename_len; // bytes that follow, each at most ND_PYCODE_MAX_STR
} nd_rec_pycode_t;
_Static_assert(sizeof(nd_rec_pycode_t) == 16, "pycode record layout");
#define ND_PYCODE_MAX_STR 1024

enum nd_python_state {
  ND_PY_NONE = 0,        // no interpreter in the process (or not yet)
  ND_PY_ON = 1,          // a supported interpreter: Python frames are read
  ND_PY_UNSUPPORTED = 2, // an interpreter of a version ndmem cannot read: native frames only
  ND_PY_OFF = 3,         // NDMEM_PYTHON=0
  ND_PY_FREE_THREADED = 4, // (version 12) a free-threaded build (3.13t, 3.14t): not read, native only
  ND_PY_LAYOUT_DIFFERS = 5 // (version 12) the interpreter's own offsets (_PyRuntime.debug_offsets)
                           // differ from those ndmem knows for its version: not read, native only
};

// The interpreter ndmem found and what reading its frames gave (latest wins).
typedef struct nd_rec_python {
  uint32_t version_hex; // PY_VERSION_HEX of the interpreter (0: none found)
  uint32_t state;       // enum nd_python_state
  uint64_t stacks;      // tracked allocations whose stack was read for Python frames
  uint64_t with_python; // of those, stacks with at least one Python frame
  uint64_t frames;      // Python frames read
  uint64_t dropped;     // Python frames left out: NDMEM_PY_DEPTH (before 12: NDMEM_DEPTH), or a
                        // frame that could not be read
  uint64_t codes;       // PYCODE records written
} nd_rec_python_t;
_Static_assert(sizeof(nd_rec_python_t) == 48, "python record layout");

#endif
