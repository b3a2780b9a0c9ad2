// SPDX-License-Identifier: MIT
// stream.c: a trace file as a stream of bytes for the reader (internal.h): one buffer that holds
// at least one whole record, refilled by read(2), through zstd's decompressor for a compressed
// trace (ND_TRACE_ZSTD); a file opened, its buffer sized, a decompressor kept for reading on.
#include "read/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef ND_HAVE_ZSTD
#include <zstd.h>
#endif

#define ND_ZBUF_SIZE (128u << 10)

// Up to cap - len more bytes into buf: read(2), or read and decompressed. The bytes added
// (0: the file ended), or -1 (errno set).
static ssize_t more(nd_in_t *in) {
  for (;;) {
    if (!in->zd) return read(in->fd, in->buf + in->len, in->cap - in->len);
#ifdef ND_HAVE_ZSTD
    // zd may hold output from input already given: ask it first, then read.
    ZSTD_inBuffer zi = {in->zbuf, in->zlen, in->zpos};
    ZSTD_outBuffer zo = {in->buf + in->len, in->cap - in->len, 0};
    size_t r = ZSTD_decompressStream(in->zd, &zo, &zi);
    in->zpos = zi.pos;
    if (ZSTD_isError(r)) {
      in->zerr = ZSTD_getErrorName(r);
      errno = EBADMSG;
      return -1;
    }
    if (zo.pos) return (ssize_t)zo.pos;
    if (in->zpos < in->zlen) continue; // consumed input without output yet (a frame header)
    ssize_t n = read(in->fd, in->zbuf, in->zcap);
    if (n <= 0) return n;
    in->zread += (uint64_t)n;
    in->zpos = 0;
    in->zlen = (size_t)n;
#endif
  }
}

int nd_read_fill(nd_in_t *in, size_t want) {
  if (in->len - in->pos >= want || in->eof) return 0;
  if (want > in->cap) { // a small file that grew while we read it
    char *p = realloc(in->buf, ND_BUF_SIZE);
    if (!p) return -1;
    in->buf = p;
    in->cap = ND_BUF_SIZE;
  }
  if (in->pos) {
    memmove(in->buf, in->buf + in->pos, in->len - in->pos);
    in->base += in->pos;
    in->len -= in->pos;
    in->pos = 0;
  }
  while (in->len < want && !in->eof) {
    ssize_t n = more(in);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) in->eof = true;
    else in->reads++;
    in->len += (size_t)n;
  }
  return 0;
}

const char *nd_read_in_error(const nd_in_t *in) {
  return in->zerr && errno == EBADMSG ? in->zerr : strerror(errno);
}

int nd_read_zstd_begin(nd_trace_t *t, nd_in_t *in, void *zd) {
#ifdef ND_HAVE_ZSTD
  size_t raw = in->len - in->pos; // file bytes already in buf: the stream's first
  in->zcap = raw > ND_ZBUF_SIZE ? raw : ND_ZBUF_SIZE;
  in->zbuf = malloc(in->zcap);
  if (!zd) zd = ZSTD_createDStream();
  if (!in->zbuf || !zd) {
    if (zd && zd != t->zd) ZSTD_freeDStream(zd);
    return nd_read_fail(t, UINT64_MAX, "out of memory");
  }
  in->zd = zd;
  memcpy(in->zbuf, in->buf + in->pos, raw);
  in->zpos = 0;
  in->zlen = raw;
  in->zread = in->base + in->len;
  in->len = in->pos;
  in->eof = false;
  return 0;
#else
  (void)in, (void)zd;
  return nd_read_fail(t, offsetof(nd_trace_header_t, flags),
              "compressed trace (zstd), and this ndmemreport was built without libzstd");
#endif
}

void nd_read_zstd_end(nd_in_t *in, nd_trace_t *keep) {
  free(in->zbuf);
  in->zbuf = NULL;
#ifdef ND_HAVE_ZSTD
  if (in->zd && (!keep || keep->zd != in->zd)) ZSTD_freeDStream(in->zd);
#endif
  (void)keep;
  in->zd = NULL;
}

int nd_read_fill_fail(nd_trace_t *t, uint64_t off, const nd_in_t *in) {
  if (in->zerr && errno == EBADMSG)
    return nd_read_fail(t, off, "compressed records corrupt (zstd: %s)", in->zerr);
  return nd_read_fail(t, off, "read error: %s", strerror(errno));
}

int nd_read_in_alloc(nd_trace_t *t, nd_in_t *in, uint64_t size) {
  in->cap = ND_BUF_SIZE;
  if (size && size < ND_BUF_SIZE - 4096) in->cap = size + 4096 > 65536 ? size + 4096 : 65536;
  in->buf = malloc(in->cap);
  return in->buf ? 0 : nd_read_fail(t, UINT64_MAX, "out of memory");
}

int nd_read_open(nd_trace_t *t, const char *path, int *fd, struct stat *st) {
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) return nd_read_fail(t, UINT64_MAX, "cannot open: %s", strerror(errno));
  if (fstat(*fd, st)) {
    nd_read_fail(t, UINT64_MAX, "cannot stat: %s", strerror(errno));
  } else if (S_ISDIR(st->st_mode)) {
    nd_read_fail(t, UINT64_MAX, "is a directory, not a trace");
  } else {
    return 0;
  }
  close(*fd);
  *fd = -1;
  return -1;
}

int nd_read_zstd_keep(nd_trace_t *t, nd_in_t *in) {
  if (!in->zd) return 0;
  size_t n = in->len - in->pos;
  char *tail = n ? malloc(n) : NULL;
  if (n && !tail) return nd_read_fail(t, UINT64_MAX, "out of memory");
  if (n) memcpy(tail, in->buf + in->pos, n);
  free(t->ztail);
  t->ztail = tail;
  t->nztail = n;
  t->zd = in->zd;
  t->zfed = in->zread - (in->zlen - in->zpos);
  return 0;
}
