// SPDX-License-Identifier: MIT
// allocstat.h: the next allocator's own account of the memory it holds free (allocstat.c), read at
// a trace flush beside the anonymous resident memory: the evidence that names allocator
// retention (resident growing while the tracked bytes stay flat) in ndmemreport.
#ifndef ND_ALLOCSTAT_H
#define ND_ALLOCSTAT_H

#include "common/trace_format.h"

#include <stddef.h>
#include <stdint.h>

// Names the allocator whose malloc ndmem chains to (`real_malloc`), once, at resolution: glibc
// (mallinfo2 in the same object, and that object is libc.so), jemalloc (mallctl in the same
// object), else unknown. Calls dlsym and dladdr: from init.c's resolve only.
void nd_allocstat_resolve(void *real_malloc);
enum nd_allocator nd_allocstat_kind(void);

// The writer thread, before a flush and outside every ndmem lock: asks the allocator again when
// there is no answer yet, a trim came since the last one, or the gap (`anon` resident minus
// `tracked` bytes) has moved by ALLOCSTAT_MIN_MOVE and ALLOCSTAT_MIN_FRAC since it, and the
// answers so far leave the time share ALLOCSTAT_SHARE; then publishes the answer.
void nd_allocstat_poll(uint64_t anon, uint64_t tracked);
// At a flush (any thread): fills r's allocator fields (version 9) with the last answer and its
// own time, or with none (alloc_ns 0) when there is none, a trim came after it, or it cannot be
// had without waiting. Never asks the allocator.
void nd_allocstat_fill(nd_rec_resident_t *r);
// Every malloc_trim (ndmem's or the program's) goes through here: `trim(pad)`, counted before it
// starts and after it returns (glibc's free bytes then include pages given back to the system).
// The counts are an atomic add each: safe anywhere. fell (NULL: not read): by how much resident
// memory fell across it (0 when it did not; left as it was when statm could not be read).
int nd_allocstat_trim(int (*trim)(size_t), size_t pad, uint64_t *fell);
// What the allocator holds freed below its top chunk now, asked on the caller's thread (glibc:
// mallinfo2's fordblks - keepcost; jemalloc: resident - allocated): 0, or -1 when unknown. For
// callers on the hook path only (ws/trim.c), never a flush.
int nd_allocstat_held(uint64_t *held);
// The last answer, for the metrics file, as nd_allocstat_fill has it: 0, or -1 when none.
int nd_allocstat_last(nd_rec_resident_t *r);
// A fork child asks again at its first flush (its own trace starts without a reading).
void nd_allocstat_atfork_child(void);

#endif
