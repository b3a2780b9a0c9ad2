// SPDX-License-Identifier: MIT
// running.h: what the host a trace was written on tells about its process: for a trace without
// an END record, whether the process still runs, so that ndmemreport does not call a running job
// killed (running.c says how it is told); and the traces its descendants wrote beside it (an
// exec'd program behind a wrapper, fork workers), so that none goes unnamed.
#ifndef ND_RUNNING_H
#define ND_RUNNING_H

#include "read/trace_read.h"

enum { ND_RUN_NO, ND_RUN_YES, ND_RUN_UNKNOWN };

// ND_RUN_YES: the writer runs on this host; ND_RUN_NO: it does not (ended, or its pid now names
// another process); ND_RUN_UNKNOWN: the trace was written on another host. `path`: the trace
// file as read (the writer holds it open).
int nd_trace_running(const nd_trace_t *t, const char *path);

// A trace in the same folder whose process descends from this trace's: written on the same host,
// started no earlier (less a clock's slack), and its parents' chain, through other traces of the
// folder, reaches this trace's pid.
typedef struct nd_kin {
  char *path;         // as the trace's path names the folder, then the file's name
  uint64_t pid, ppid;
  uint64_t start_ns;  // its header's start, realtime
  uint16_t origin;    // enum nd_origin
  char exe[257];
} nd_kin_t;
typedef struct nd_family {
  nd_kin_t *v; // by start time
  size_t n;
} nd_family_t;
// Fills `out` (empty when none or the folder cannot be read); -1 only when out of memory.
// At most ND_FAMILY_SCAN entries of the folder are looked at.
#define ND_FAMILY_SCAN 20000
int nd_trace_family(const nd_trace_t *t, const char *path, nd_family_t *out);
void nd_family_free(nd_family_t *f);

#endif
