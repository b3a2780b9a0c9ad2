// SPDX-License-Identifier: MIT
// merge.h: what `ndmemreport merge` (merge.c) knows of the traces it reads, shared with the job
// view (job.c: `merge --job MAIN`, the report `ndmem run` gives of a job of several processes).
// Not installed.
#ifndef ND_MERGE_H
#define ND_MERGE_H

#include "cmd/cmd.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define NONE SIZE_MAX
#define JOB_FINDINGS 3 // a process's largest entries the job view names

// An entry of what a process held at its end (nd_life_t), kept for the job view: its site among
// the merged ones, its class and bytes.
typedef struct mfind {
  size_t site;    // the site's id (msite_t.id)
  int cls;        // enum nd_life_class
  uint64_t bytes;
  bool est;       // an estimate (sampled blocks)
  bool own;       // made by the program's own code (msite_t.own)
} mfind_t;

// One trace: its row of the tables, where it stands in the job (version 12 headers; older ones
// know none of it) and what was live at its end by class.
typedef struct mproc {
  const char *path;
  char host[sizeof(((nd_trace_t *)0)->host)];
  nd_trace_header_t hdr; // pid, ppid, origin, rank fields as the reader gives them
  uint64_t duration_ns;
  char ended[48];
  uint64_t peak[ND_TRACE_KINDS], live_end;
  bool leaks_known;            // a normal exit: the classes below are known
  uint64_t life_bytes[ND_LIFE_CLASSES], life_blocks[ND_LIFE_CLASSES], life_stacks[ND_LIFE_CLASSES];
  bool life_est[ND_LIFE_CLASSES];
  bool life_most[ND_LIFE_CLASSES]; // the class's estimates are bounds the counters prove
  size_t parent;  // the trace whose fork child (worker) this is, or NONE
  size_t col;     // its column: the process (a rank, or one without) it is merged into
  unsigned worker; // its number among its column's workers (1, 2, ...); 0: the column's own
  int not_rank;    // NOT_RANK_*: a header's rank that is no rank of the merged job (then -1)
  char exe[sizeof(((nd_trace_t *)0)->exe)]; // the program, as the header names it
  uint64_t peak_rss;          // the kernel's peak of its resident memory (0: no RSS record)
  mfind_t find[JOB_FINDINGS]; // its largest entries, by bytes (nfind of them)
  size_t nfind, nentries;     // and how many entries it had in all
  uint64_t growth_flagged;    // sites the shim found growing while it ran (GROWTH records)
  mfind_t grew[JOB_FINDINGS]; // the largest of them by their rise (bytes: the floor reached;
  uint64_t grew_base[JOB_FINDINGS]; // from this floor), ngrew of them
  size_t ngrew;
} mproc_t;

// A process whose header holds a rank that is not one of the merged job's ranks: a fork child
// whose parent's trace is not among these (a worker: its rank is its parent's), and a launcher
// whose exec'd children read their ranks from another variable (srun's task running torchrun:
// SLURM_PROCID 0, its children RANK 0 and 1). Each is ordered and labelled by its pid.
enum { NOT_RANK_NO, NOT_RANK_ORPHAN, NOT_RANK_LAUNCHER };

// A column of the sites' statistics: a process and its workers.
typedef struct mcol {
  size_t main;  // its process (index into procs)
  char label[48];
} mcol_t;

// A site aggregated over the traces: its identity (stack key, kind), its frames as the first trace
// with it names them, and each trace's peak live bytes (the sum over that trace's stacks with the
// same identity), then each column's.
typedef struct msite {
  size_t id;     // its index when made (mfind_t.site), before the sites are sorted
  bool own;      // its innermost Python frame is the program's own (no library's, no import's)
  uint64_t key;  // nd_rep_stack_key
  uint16_t kind;
  char *frames;  // per frame: 'P' (Python) or 'N', then its name NUL-terminated; innermost first
  uint32_t nframes;
  char *python;  // its Python line (frame_names), or NULL
  // Per trace: its peak live bytes; what of it was live at the end as a leak (growing, released
  // at teardown, live at exit), as held since start-up and as a bounded cache, by the trace's own
  // classes. One allocation, val first.
  uint64_t *val, *leak, *startup, *cache;
  uint64_t *col, *col_leak, *col_startup, *col_cache; // the same per column (finish_sites)
  uint64_t allocs, alloc_bytes; // summed over traces
  uint64_t total, min, median, max;
  size_t in;      // columns with the site
  // traces with the site; with some of it leaked, held since start-up, a bounded cache at their end
  size_t procs_in, procs_leak, procs_startup, procs_cache;
} msite_t;

typedef struct merge {
  size_t nprocs, ncols;
  mproc_t *procs;
  size_t *order; // procs in display order: each column's process, then its workers
  mcol_t *cols;
  msite_t *sites;
  size_t nsites, cap;
  uint32_t *slots; // open addressing over sites (index + 1)
  size_t nslots;
  opts_t o;        // the options the single-trace report shares (symbols, frames, python-only)
  size_t job;      // --job: the trace of the job's main program (NONE: a plain merge)
} merge_t;

// merge.c's, for the job view
// The aggregated site of (key, kind), made with the frames of stack `st` where new; NULL: OOM.
msite_t *nd_merge_site_of(merge_t *m, uint64_t key, uint16_t kind, const nd_trace_t *t,
                          nd_sym_t *sym, const nd_stack_t *st);
void nd_merge_label(const merge_t *m, const mproc_t *p, char *out, size_t n);
const char *nd_merge_cell(char *out, size_t n, uint64_t v, bool est);
uint64_t nd_merge_leak_bytes(const mproc_t *p);
void nd_merge_print_frame(FILE *o, const char *name);
// job.c: what the job view keeps of trace `i` (merge --job), read and analysed in `rep`: 0, or
// -1 out of memory; and its text
int nd_merge_job_fold(merge_t *m, size_t i, const nd_trace_t *t, nd_sym_t *sym, report_t *rep);
void nd_merge_job_text(FILE *o, const merge_t *m);

#endif
