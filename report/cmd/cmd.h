// SPDX-License-Identifier: MIT
// cmd.h: the commands beside the single-trace report (diff.c, merge.c, follow.c) and what they
// and the command line (ndmemreport.c) share (load.c): reading a trace with its progress bar,
// loading the suppressions, reading an option's count, and the single-trace report run on a read
// trace (analysis, renderer, verdict). Not installed.
#ifndef ND_CMD_H
#define ND_CMD_H

#include "analyse/analyse.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

// `ndmemreport diff [OPTIONS] A B` (diff.c; argv[1] is "diff"): 0, 1 (--fail-on-growth SIZE and
// a site that held more than SIZE more at the end of its run in B, a teardown's frees not
// counted: named in one line on `err`), 2.
int nd_report_diff(int argc, char **argv, FILE *out, FILE *err);
// `ndmemreport merge TRACE...` (merge.c): argv[0] is "merge". The same exit statuses.
int nd_report_merge(int argc, char **argv, FILE *out, FILE *err);
// --follow (follow.c): reports o->file (--brief) every o->follow_ms until it is complete or
// SIGINT, reading only what was appended each time; its exit status.
int nd_report_follow(const opts_t *o, nd_supp_t *supp, FILE *out, FILE *err);

// ---------------------------------------------------------------- load.c

// An option's count: decimal digits only, at most `max`. 0, or -1 (the caller says what is wrong).
int nd_rep_parse_count(const char *v, unsigned long long max, unsigned long long *out);

// Reads the trace at `path` (nd_trace_read) for every command: with a progress bar on `err`
// naming the file when `err` is a terminal and the file has bar_from bytes or more
// (ND_PROGRESS_MIN), the bar cleared when done; an error reported on `err` in one line. 0, or 2
// (the caller still frees `t`).
#define ND_PROGRESS_MIN (256ull << 20)
int nd_rep_read_trace(nd_trace_t *t, const char *path, FILE *err, uint64_t bar_from);

// The suppressions `o` asks for: the built-ins unless off, then each --suppressions file; NULL
// after an error, reported on `err`. For merge too, which analyses each trace as the
// single-trace report does.
nd_supp_t *nd_rep_load_suppressions(const opts_t *o, FILE *err);

// The single-trace report in two steps, which --follow repeats on one trace as it grows.
// nd_report_read reads `file` into `t` (update: reads on, nd_trace_update), with a progress bar
// on a terminal for a large read; an error gets its line on `err`. Its result is nd_trace_read's
// or nd_trace_update's (-1: an error; free `t`).
int nd_report_read(nd_trace_t *t, const char *file, bool update, FILE *err);
// Analyses the read trace and renders it as `o` says on `out`: the exit status (0, 1 for
// --fail-on-leak or --fail-on-growth and a finding, 2 out of memory or a write error, reported
// on `err`, ND_REP_UNCHECKED for no finding and what sampling left unchecked: heap blocks live at
// exit that had no record (--fail-on-leak), growth in sampled small blocks (either flag), one
// line each on `err`). `running`: nd_trace_running's answer for a trace without an END record.
#define ND_REP_UNCHECKED 3
int nd_report_render(const opts_t *o, const nd_trace_t *t, nd_sym_t *sym, nd_supp_t *supp,
                     int running, FILE *out, FILE *err);

#endif
