// SPDX-License-Identifier: MIT
// running.h: for a trace without an END record, whether the process that wrote it still runs,
// so that ndmemreport does not call a running job killed (running.c says how it is told).
#ifndef ND_RUNNING_H
#define ND_RUNNING_H

#include "trace_read.h"

enum { ND_RUN_NO, ND_RUN_YES, ND_RUN_UNKNOWN };

// ND_RUN_YES: the writer runs on this host; ND_RUN_NO: it does not (ended, or its pid now names
// another process); ND_RUN_UNKNOWN: the trace was written on another host. `path`: the trace
// file as read (the writer holds it open).
int nd_trace_running(const nd_trace_t *t, const char *path);

#endif
