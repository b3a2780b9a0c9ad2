// SPDX-License-Identifier: MIT
// trace_write.h: appends trace records (trace_format.h) to a caller-supplied buffer and writes
// it out with write(2). No allocation and no stdio, so the shim can use it from any context; the
// trace generator for tests and benchmarks uses it too.
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
} nd_tw_t;

void nd_tw_init(nd_tw_t *w, int fd, void *buf, size_t cap);
void nd_tw_header(nd_tw_t *w, const nd_trace_header_t *h); // its first header_size bytes
// One record: the fixed payload and an optional variable tail (module path, stack frames).
void nd_tw_record(nd_tw_t *w, uint16_t tag, const void *payload, uint32_t size, const void *tail,
                  uint32_t tail_size);
int nd_tw_flush(nd_tw_t *w); // 0, or -1 (w->error set)

#endif
