// SPDX-License-Identifier: MIT
// trace_write.h: appends trace records (trace_format.h) to a caller-supplied buffer and writes
// it out with write(2), compressed as one zstd stream once nd_tw_compress is called (after the
// header, which stays plain). No allocation of its own and no stdio, so the shim can use it from
// any context (zstd's memory comes from the caller's allocator, given when its context was made);
// the trace generator for tests and benchmarks uses it too.
#ifndef ND_TRACE_WRITE_H
#define ND_TRACE_WRITE_H

#include "trace_format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct nd_tw {
  int fd;
  char *buf;
  size_t len, cap;
  uint64_t bytes_out; // bytes written to fd so far
  int error;          // errno of the first failed write, 0 if none
  void *zc;           // ZSTD_CCtx *: the records are compressed (NULL: written as they are)
  char *zbuf;         // compressed bytes on their way to fd
  size_t zcap;
} nd_tw_t;

void nd_tw_init(nd_tw_t *w, int fd, void *buf, size_t cap);
void nd_tw_header(nd_tw_t *w, const nd_trace_header_t *h); // its first header_size bytes
// One record: the fixed payload and an optional variable tail (module path, stack frames).
void nd_tw_record(nd_tw_t *w, uint16_t tag, const void *payload, uint32_t size, const void *tail,
                  uint32_t tail_size);
int nd_tw_flush(nd_tw_t *w); // 0, or -1 (w->error set)
// From now on the records are one zstd stream (ND_TRACE_ZSTD): zc a ZSTD_CCtx * whose session was
// reset, zbuf (at least 4 KiB) where compressed bytes wait for write(2). Every nd_tw_flush ends a
// zstd block, so what reached the file decompresses whole. Without libzstd (ND_HAVE_ZSTD unset)
// it returns -1 and the records stay plain.
int nd_tw_compress(nd_tw_t *w, void *zc, void *zbuf, size_t zcap);
// Flushes and ends the zstd frame (the trace's last write); as nd_tw_flush when not compressing.
int nd_tw_finish(nd_tw_t *w);

#endif
