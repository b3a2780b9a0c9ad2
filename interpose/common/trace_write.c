// SPDX-License-Identifier: MIT
// trace_write.c: buffered record writer (see trace_write.h). A batch reaches the file in as few
// write(2) calls as its size allows, so a process killed mid-run leaves whole records behind
// except, at worst, the one being written.
#include "trace_write.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#ifdef ND_HAVE_ZSTD
#include <zstd.h>
#endif

void nd_tw_init(nd_tw_t *w, int fd, void *buf, size_t cap) {
  w->fd = fd;
  w->buf = buf;
  w->len = 0;
  w->cap = cap;
  w->bytes_out = 0;
  w->error = 0;
  w->zc = NULL;
  w->zbuf = NULL;
  w->zcap = 0;
}

// len bytes to the file, all of them unless a write fails (w->error).
static void out(nd_tw_t *w, const char *p, size_t len) {
  size_t off = 0;
  while (off < len && !w->error) {
    ssize_t n = write(w->fd, p + off, len - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      w->error = errno;
      break;
    }
    off += (size_t)n;
  }
  w->bytes_out += off;
}

#ifdef ND_HAVE_ZSTD
// The buffered records through the compressor: ZSTD_e_flush ends a block, so the file holds
// every record given so far in decompressible form; ZSTD_e_end also ends the frame;
// ZSTD_e_continue (a full buffer within a batch) lets zstd keep what it has not yet compressed.
static void out_zstd(nd_tw_t *w, ZSTD_EndDirective how) {
  ZSTD_inBuffer in = {w->buf, w->len, 0};
  for (;;) {
    ZSTD_outBuffer o = {w->zbuf, w->zcap, 0};
    size_t left = ZSTD_compressStream2(w->zc, &o, &in, how);
    if (ZSTD_isError(left)) { // the context is unusable: nothing more reaches the file
      w->error = EIO;
      return;
    }
    out(w, w->zbuf, o.pos);
    if (w->error || (in.pos == in.size && (!left || how == ZSTD_e_continue))) return;
  }
}
#endif

enum { AS_CONTINUE, AS_FLUSH, AS_END };

static int flush_as(nd_tw_t *w, int how) {
  int saved = errno;
#ifdef ND_HAVE_ZSTD
  static const ZSTD_EndDirective dir[] = {ZSTD_e_continue, ZSTD_e_flush, ZSTD_e_end};
  if (w->zc && !w->error) out_zstd(w, dir[how]);
  else
#endif
    out(w, w->buf, w->len);
  (void)how;
  w->len = 0;
  errno = saved;
  return w->error ? -1 : 0;
}

int nd_tw_flush(nd_tw_t *w) { return flush_as(w, AS_FLUSH); }

int nd_tw_finish(nd_tw_t *w) { return flush_as(w, AS_END); }

int nd_tw_compress(nd_tw_t *w, void *zc, void *zbuf, size_t zcap) {
#ifdef ND_HAVE_ZSTD
  if (!zc || !zbuf || zcap < 4096 || nd_tw_flush(w)) return -1;
  w->zc = zc;
  w->zbuf = zbuf;
  w->zcap = zcap;
  return 0;
#else
  (void)w, (void)zc, (void)zbuf, (void)zcap;
  return -1;
#endif
}

static void put(nd_tw_t *w, const void *p, size_t n) {
  while (n) {
    if (w->len == w->cap && flush_as(w, AS_CONTINUE)) return;
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
  if (w->len + sizeof r + r.size > w->cap && r.size + sizeof r <= w->cap) flush_as(w, AS_CONTINUE);
  put(w, &r, sizeof r);
  put(w, payload, size);
  if (tail_size) put(w, tail, tail_size);
}
