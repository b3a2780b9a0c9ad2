// SPDX-License-Identifier: MIT
// trace.h: the shim's trace: which blocks are tracked, and writing the trace file.
#ifndef ND_TRACE_H
#define ND_TRACE_H

#include <stddef.h>
#include <stdint.h>

struct nd_tls;
struct nd_site;

// Blocks of at least nd_track_min requested bytes are tracked exactly; SIZE_MAX when tracing
// is off, so the hook's test `req >= nd_track_min` never fires.
extern size_t nd_track_min;

void nd_trace_setup(void);                // at initialisation, when NDMEM_TRACE=1
int nd_trace_enabled(void);               // the trace is being written
void nd_trace_thread_init(struct nd_tls *t); // per-thread sampler state
void nd_track_alloc(struct nd_tls *t, void *p, size_t req, int kind);
void nd_track_free(void *p);
// The bytes and blocks a tracked block stands for: its size and 1, or a sampled block's weights.
struct nd_block;
void nd_track_weigh(const struct nd_block *b, uint64_t *count, uint64_t *weight);
void nd_track_untrack(const struct nd_block *b); // its site's totals lose it (a realloc moved it)
// In a fork child, whether a block or mapping born at born_ns (monotonic) is one it inherited:
// its parent's, which the child's sites never count (sites.h, nd_sites_atfork_rebase).
int nd_track_inherited(uint64_t born_ns);
int nd_track_take(void *p, void *out_block); // for realloc: untrack, keeping the record
void nd_track_restore(const void *block);   // realloc failed: the old block is live again
struct nd_site *nd_track_site_here(int kind); // exact site for an mmap, NULL when tracing is off
void nd_trace_create(int alone); // creates the file now (a fork child: first allocation); alone:
                                 // no other thread runs
void nd_trace_flush(int final);            // final: live blocks, EXIT and END (the end of accounting)
void nd_trace_set_exit(int how, int code); // how the process ends (enum nd_exit_how), before final

#endif
