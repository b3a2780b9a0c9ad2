// SPDX-License-Identifier: MIT
// site_series.c: the live bytes of chosen sites at each COUNTERS record (trace_read.h,
// nd_trace_site_series), a second, light pass over the file for the HTML timeline.
#include "read/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// A second pass (trace_read.h, nd_trace_site_series): the file was checked by nd_trace_read up
// to t->good_end, but it may have changed since (a job still writing it appends, which the
// bound ignores; one replaced is caught by its header, a record that no longer fits, or a
// different count of COUNTERS records). Every size is still checked before it is used.

static int series_fail(nd_site_series_t *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err, sizeof s->err, fmt, ap);
  va_end(ap);
  return -1;
}

#define SERIES_SLOTS ND_TRACE_MAX_POINTS // points per site; on_counters never holds more

static void sites_keep_even(void *arg, size_t n) {
  nd_site_series_t *s = arg;
  for (size_t i = 0; 2 * i < n; i++) {
    s->mono_ns[i] = s->mono_ns[2 * i];
    for (size_t j = 0; j < s->nsites; j++)
      s->live[j * SERIES_SLOTS + i] = s->live[j * SERIES_SLOTS + 2 * i];
  }
}

// A point at each COUNTERS record, kept or dropped as on_counters keeps t->series (thin_step).
static void series_point(nd_site_series_t *s, const uint64_t *cur, uint64_t ns, uint64_t *stride,
                         bool *extra) {
  nd_read_thin_t th = {&s->seen, stride, extra, &s->npoints};
  size_t i = nd_read_thin_step(th, SERIES_SLOTS, sites_keep_even, s);
  s->mono_ns[i] = ns;
  for (size_t j = 0; j < s->nsites; j++) s->live[j * SERIES_SLOTS + i] = cur[j];
}

int nd_trace_site_series(const nd_trace_t *t, const uint32_t *sites, size_t n,
                         nd_site_series_t *s) {
  memset(s, 0, sizeof *s);
  s->nsites = n;
  nd_in_t in = {.fd = -1};
  uint64_t *cur = NULL; // each site's latest value
  int rc = -1;
  // A pipe (or a named one) was read once; opening a named one again would wait for a writer.
  // O_NONBLOCK for a file replaced by one since: fstat below says so without waiting.
  if (!t->regular) return 1;
  in.fd = open(t->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (in.fd < 0) return series_fail(s, "cannot open it again: %s", strerror(errno));
  struct stat st;
  if (fstat(in.fd, &st)) {
    series_fail(s, "cannot stat: %s", strerror(errno));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = 1;
    goto out;
  }
  if ((uint64_t)st.st_size < (t->compressed ? t->zfed : t->good_end)) {
    series_fail(s, "the file is shorter than when it was read");
    goto out;
  }
  s->mono_ns = malloc(SERIES_SLOTS * sizeof *s->mono_ns);
  s->live = calloc(n ? n * SERIES_SLOTS : 1, sizeof *s->live);
  s->peak = calloc(n ? n : 1, sizeof *s->peak);
  cur = calloc(n ? n : 1, sizeof *cur);
  uint64_t size = t->compressed ? ND_BUF_SIZE : t->good_end;
  in.cap = size < ND_BUF_SIZE - 4096 ? size + 4096 : ND_BUF_SIZE;
  in.buf = malloc(in.cap);
  if (!s->mono_ns || !s->live || !s->peak || !cur || !in.buf) {
    series_fail(s, "out of memory");
    goto out;
  }
  if (nd_read_fill(&in, t->hdr.header_size)) {
    series_fail(s, "read error: %s", strerror(errno));
    goto out;
  }
  // The header's first part as read (the reader fills in a later part that was unknown or
  // normalizes it): its pid, start times, host and program say whether this is the same trace.
  if (in.len < t->hdr.header_size || memcmp(in.buf, &t->hdr, ND_TRACE_HEADER_V11_SIZE)) {
    series_fail(s, "the file changed since it was read");
    goto out;
  }
  in.pos = t->hdr.header_size;
  if (t->compressed) {
    nd_trace_t tmp = {.err_off = 0};
    if (nd_read_zstd_begin(&tmp, &in, NULL)) {
      series_fail(s, "%s", tmp.err);
      goto out;
    }
  }
  uint64_t stride = 1;
  bool extra = false;
  while (in.base + in.pos < t->good_end) {
    nd_rec_t r;
    if (nd_read_fill(&in, sizeof r)) {
      series_fail(s, "read error: %s", nd_read_in_error(&in));
      goto out;
    }
    if (in.len - in.pos < sizeof r) break; // checked below: the counts differ
    memcpy(&r, in.buf + in.pos, sizeof r);
    if (r.size > ND_TRACE_MAX_RECORD) break;
    if (nd_read_fill(&in, sizeof r + r.size)) {
      series_fail(s, "read error: %s", nd_read_in_error(&in));
      goto out;
    }
    if (in.len - in.pos < sizeof r + r.size) break;
    const char *p = in.buf + in.pos + sizeof r;
    int var;
    if (r.tag == ND_REC_SITE && r.size == nd_read_size(r.tag, t->hdr.version, &var)) {
      nd_rec_site_t x;
      memset(&x, 0, sizeof x);
      memcpy(&x, p, r.size); // the version 4 form holds both byte counts
      for (size_t j = 0; j < n; j++) {
        const nd_rec_site_t *k = &t->sites[sites[j]].rec;
        if (k->stack_id == x.stack_id && k->kind == x.kind)
          cur[j] = x.alloc_bytes > x.free_bytes ? x.alloc_bytes - x.free_bytes : 0;
      }
    } else if (r.tag == ND_REC_COUNTERS && r.size == sizeof(nd_rec_counters_t)) {
      uint64_t ns;
      memcpy(&ns, p, sizeof ns); // mono_ns comes first
      series_point(s, cur, ns, &stride, &extra);
    }
    in.pos += sizeof r + r.size;
  }
  if (s->seen != t->series_seen || s->npoints != t->npoints) {
    series_fail(s, "the file changed since it was read");
    goto out;
  }
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < s->npoints; i++)
      if (s->live[j * SERIES_SLOTS + i] > s->peak[j]) s->peak[j] = s->live[j * SERIES_SLOTS + i];
  rc = 0;
out:
  nd_read_zstd_end(&in, NULL);
  free(cur);
  free(in.buf);
  if (in.fd >= 0) close(in.fd);
  return rc;
}

void nd_site_series_free(nd_site_series_t *s) {
  free(s->mono_ns);
  free(s->live);
  free(s->peak);
  s->mono_ns = s->live = s->peak = NULL;
  s->npoints = s->nsites = 0;
}
