// SPDX-License-Identifier: MIT
// fk_internal.h: what the driver double's two files share (hidden inside libcuda.so.1).
// fakecuda.c owns devices, contexts and memory; fk_stream.c owns streams, events and the work
// queued on them, which runs later, on a worker thread per stream, as a GPU runs it.
#ifndef ND_FK_INTERNAL_H
#define ND_FK_INTERNAL_H

#include "fakecuda.h"

#include <stddef.h>
#include <stdint.h>

#define FK_HIDDEN __attribute__((visibility("hidden")))

struct fk_ctx;

// fakecuda.c
FK_HIDDEN int fk_ready_now(void);               // cuInit succeeded
FK_HIDDEN struct fk_ctx *fk_current(void);      // the calling thread's live context, or NULL
FK_HIDDEN int fk_ctx_device(const struct fk_ctx *c);
FK_HIDDEN int fk_devices(void);
FK_HIDDEN void fk_mem_lock(void);
FK_HIDDEN void fk_mem_unlock(void);
// Whether [p, p + n) lies in one live block the device can read (write: and write): device,
// managed, mapped virtual memory, or page-locked host memory (mapped into the device's address
// space, as every pinned allocation is under unified addressing). Memory lock held.
FK_HIDDEN int fk_device_can(uintptr_t p, size_t n, int write);
// Releases the device or stream-ordered block that starts at p, if there is one (a free that
// its stream has reached). Memory lock held. 0, or -1 when p is not such a block.
FK_HIDDEN int fk_release_block(uintptr_t p);
FK_HIDDEN void fk_count_call(int call); // enum fk_call below

// fk_stream.c
// The stream a handle names (NULL and CU_STREAM_LEGACY: the current context's legacy stream;
// CU_STREAM_PER_THREAD, or NULL through a _ptsz entry point: the calling thread's own).
struct fk_stream;
FK_HIDDEN nd_cu_result fk_stream_get(nd_cu_stream s, int ptsz, struct fk_stream **out);
FK_HIDDEN int fk_stream_device(const struct fk_stream *st);
// Work on a stream. Copies and memsets read and write when the stream reaches them; a free
// releases the block then.
enum fk_op_kind { FK_OP_MARK, FK_OP_COPY, FK_OP_SET, FK_OP_ADD, FK_OP_FILL, FK_OP_FREE };
FK_HIDDEN nd_cu_result fk_enqueue(struct fk_stream *st, int kind, uintptr_t dst, uintptr_t src,
                                  size_t n, uint64_t arg, unsigned delay_us, uint64_t *seq);
FK_HIDDEN void fk_wait(struct fk_stream *st, uint64_t seq); // until the stream reached seq
FK_HIDDEN void fk_sync_device(int dev); // every stream of dev idle (as cuCtxSynchronize)
FK_HIDDEN void fk_streams_atfork_prepare(void);
FK_HIDDEN void fk_streams_atfork_parent(void);
FK_HIDDEN void fk_streams_atfork_child(void);

// Calls counted for fakecuda_calls (the double's own truth).
enum fk_call {
  FKC_ALLOC, FKC_FREE, FKC_ALLOC_ASYNC, FKC_FREE_ASYNC, FKC_CTX_SYNC, FKC_STREAM_SYNC,
  FKC_EVENT_RECORD, FKC_EVENT_QUERY, FKC_EVENT_SYNC, FKC_STREAM_WAIT_EVENT, FKC_HOST_ALLOC,
  FKC_FREE_HOST, FKC_HOST_DEVPTR, FKC_COUNT
};

#endif
