// SPDX-License-Identifier: MIT
// scan.h: what the reachability scan at exit did (the SCAN record, version 14), said the same way
// by every format: whether it ran (and why not), how long the world stood still, the threads it
// held, what it read, and what a partial scan can and cannot conclude.
#ifndef ND_SCAN_H
#define ND_SCAN_H

#include "trace_read.h"

#include <stdio.h>

// Why a scan did not run, or "done"; NULL for an unknown status.
const char *nd_scan_status_text(uint32_t status);
// The text report's summary line ("  reach       ..."); nothing for a trace without a SCAN record.
void nd_scan_text(FILE *o, const nd_trace_t *t);
// JSON: "scan": {...} or "scan": null, with no trailing comma.
void nd_scan_json(FILE *o, const nd_trace_t *t);

#endif
