// SPDX-License-Identifier: MIT
// trace_write.c: buffered record writer (see trace_write.h). A batch reaches the file in as few
// write(2) calls as its size allows, so a process killed mid-run leaves whole records behind
// except, at worst, the one being written.
#include "trace_write.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void nd_tw_init(nd_tw_t *w, int fd, void *buf, size_t cap) {
  w->fd = fd;
  w->buf = buf;
  w->len = 0;
  w->cap = cap;
  w->bytes_out = 0;
  w->error = 0;
}

int nd_tw_flush(nd_tw_t *w) {
  int saved = errno;
  size_t off = 0;
  while (off < w->len && !w->error) {
    ssize_t n = write(w->fd, w->buf + off, w->len - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      w->error = errno;
      break;
    }
    off += (size_t)n;
  }
  w->bytes_out += off;
  w->len = 0;
  errno = saved;
  return w->error ? -1 : 0;
}

static void put(nd_tw_t *w, const void *p, size_t n) {
  while (n) {
    if (w->len == w->cap && nd_tw_flush(w)) return;
    size_t k = w->cap - w->len < n ? w->cap - w->len : n;
    memcpy(w->buf + w->len, p, k);
    w->len += k;
    p = (const char *)p + k;
    n -= k;
  }
}

// header_size bytes of it: a generator writing an older version's shorter header (version 12
// lengthened it) gives ND_TRACE_HEADER_V11_SIZE.
void nd_tw_header(nd_tw_t *w, const nd_trace_header_t *h) {
  put(w, h, h->header_size < sizeof *h ? h->header_size : sizeof *h);
}

void nd_tw_record(nd_tw_t *w, uint16_t tag, const void *payload, uint32_t size, const void *tail,
                  uint32_t tail_size) {
  nd_rec_t r = {tag, 0, size + tail_size};
  // Keep a record whole within one write when it fits: flush first if it would straddle.
  if (w->len + sizeof r + r.size > w->cap && r.size + sizeof r <= w->cap) nd_tw_flush(w);
  put(w, &r, sizeof r);
  put(w, payload, size);
  if (tail_size) put(w, tail, tail_size);
}
