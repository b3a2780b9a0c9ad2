// SPDX-License-Identifier: MIT
// allocstat.h: the next allocator's own account of the memory it holds free (allocstat.c), read at
// a trace flush beside the anonymous resident memory: the evidence that names allocator
// retention (resident growing while the tracked bytes stay flat) in ndmemreport.
#ifndef ND_ALLOCSTAT_H
#define ND_ALLOCSTAT_H

#include "trace_format.h"

#include <stdint.h>

// Names the allocator whose malloc ndmem chains to (`real_malloc`), once, at resolution: glibc
// (mallinfo2 in the same object, and that object is libc.so), jemalloc (mallctl in the same
// object), else unknown. Calls dlsym and dladdr: from init.c's resolve only.
void nd_allocstat_resolve(void *real_malloc);
enum nd_allocator nd_allocstat_kind(void);

// At a flush: fills r's allocator fields (version 9). The allocator is asked again only when
// `may_ask` (not in a flush from a fatal signal or _exit) and the gap, `anon` resident minus
// `tracked` bytes, has moved by ALLOCSTAT_MIN_MOVE and ALLOCSTAT_MIN_FRAC since the last
// answer (or there is none yet), and the answers so far leave the time share ALLOCSTAT_SHARE;
// otherwise the last answer is repeated with its own time. Under the trace writer's lock.
void nd_allocstat_flush(uint64_t anon, uint64_t tracked, int may_ask, nd_rec_resident_t *r);
// The last answer, for the metrics file: 0, or -1 when there is none.
int nd_allocstat_last(nd_rec_resident_t *r);
// A fork child asks again at its first flush (its own trace starts without a reading).
void nd_allocstat_atfork_child(void);

#endif
