// SPDX-License-Identifier: MIT
// trace.h: writing the shim's trace file (which blocks are tracked: account/track.h).
#ifndef ND_TRACE_H
#define ND_TRACE_H

#include <stddef.h>
#include <stdint.h>

int nd_trace_enabled(void);      // the trace is being written
void nd_trace_create(int alone); // creates the file now (a fork child: first allocation); alone:
                                 // no other thread runs
void nd_trace_flush(int final);            // final: live blocks, EXIT and END (the end of accounting)
void nd_trace_set_exit(int how, int code); // how the process ends (enum nd_exit_how), before final

#endif
