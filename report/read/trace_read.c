// SPDX-License-Identifier: MIT
// trace_read.c: the streaming trace reader (see trace_read.h): the header read and normalised,
// then the records one at a time through the stream's buffer (stream.c), each one's header
// checked against the trace's version (normalise.c) before its payload is folded in
// (records.c); reading on where the last read stopped; the module index built after reading.
// A garbled trace can only give an error with its offset or odd numbers (internal.h).
#include "read/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef ND_HAVE_ZSTD
#include <zstd.h>
#endif

const char *const nd_read_tag_names[ND_REC_TAG_MAX] = {
    "?",         "MODULE",    "STACK",  "SITE",   "COUNTERS", "BLOCK",     "FLUSH",        "END",
    "WORKSPACE", "WS_ESCAPE", "LIMITS", "BREACH", "SNAPSHOT", "SNAP_SITE", "EXIT",         "GROWTH",
    "DEVICE",    "CUDA",      "PYCODE", "PYTHON", "RESIDENT", "DEVICE_WS", "DEVICE_SPILL", "SCAN",
    "PEAK",      "SITE_PEAK", "ADMITTED",  "ADMIT_SITE", "REFUSAL",   "EXEC",
    "RSS",       "SITE_UNTOUCHED"};
_Static_assert(ND_REC_TAG_MAX == 32, "a name for every record tag");

int nd_read_fail(nd_trace_t *t, uint64_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->err, sizeof t->err, fmt, ap);
  va_end(ap);
  t->err_off = off;
  return -1;
}

int nd_read_grow(void *p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 16;
  while (n < need) {
    if (n > SIZE_MAX / 2 / size) return -1;
    n *= 2;
  }
  void *q = realloc(*(void **)p, n * size);
  if (!q) return -1;
  *(void **)p = q;
  *cap = n;
  return 0;
}

static int read_header(nd_trace_t *t, nd_in_t *in) {
  if (nd_read_fill(in, sizeof t->hdr)) return nd_read_fill_fail(t, 0, in);
  size_t have = in->len;
  if (have == 0) return nd_read_fail(t, 0, "empty file, not an ndmem trace");
  if (have < sizeof t->hdr.magic ||
      memcmp(in->buf, ND_TRACE_MAGIC, sizeof t->hdr.magic))
    return nd_read_fail(t, 0, "not an ndmem trace (bad magic)");
  // Every version's header is at least as long as version 1's (ND_TRACE_HEADER_V11_SIZE); version
  // 12 lengthened it, and header_size says how long this one is.
  if (have < ND_TRACE_HEADER_V11_SIZE)
    return nd_read_fail(t, have, "trace header cut short (%zu of %u bytes)", have,
                ND_TRACE_HEADER_V11_SIZE);
  memset(&t->hdr, 0, sizeof t->hdr);
  memcpy(&t->hdr, in->buf, have < sizeof t->hdr ? have : sizeof t->hdr);
  if (t->hdr.version < 1 || t->hdr.version > ND_TRACE_VERSION)
    return nd_read_fail(t, 8, "unsupported trace version %u (this reader knows 1 to %u)",
                        t->hdr.version, ND_TRACE_VERSION);
  nd_read_facts(&t->has, t->hdr.version);
  // A later writer may append header fields: skip them, within reason.
  uint32_t least = t->hdr.version >= 12 ? sizeof t->hdr : ND_TRACE_HEADER_V11_SIZE;
  if (t->hdr.header_size < least || t->hdr.header_size > ND_TRACE_MAX_RECORD)
    return nd_read_fail(t, 12, "impossible header size %u", t->hdr.header_size);
  if (t->hdr.header_size < sizeof t->hdr) // the bytes after it are records
    memset((char *)&t->hdr + t->hdr.header_size, 0, sizeof t->hdr - t->hdr.header_size);
  if (t->hdr.depth > ND_TRACE_MAX_DEPTH)
    return nd_read_fail(t, 56, "header stack depth %u above the maximum %u", t->hdr.depth,
                ND_TRACE_MAX_DEPTH);
  if (nd_read_fill(in, t->hdr.header_size)) return nd_read_fill_fail(t, 0, in);
  if (in->len < t->hdr.header_size)
    return nd_read_fail(t, in->len, "trace header cut short (%zu of %u bytes)", in->len,
                t->hdr.header_size);
  if (nd_read_header_job(t)) return -1;
  if (t->hdr.version < 13) t->hdr.flags = 0; // reserved before
  if (t->hdr.flags & ~(uint32_t)ND_TRACE_FLAGS_KNOWN)
    return nd_read_fail(t, offsetof(nd_trace_header_t, flags), "unknown header flags 0x%x",
                t->hdr.flags & ~(uint32_t)ND_TRACE_FLAGS_KNOWN);
  in->pos = t->hdr.header_size;
  t->compressed = t->hdr.flags & ND_TRACE_ZSTD;
  if (t->compressed && nd_read_zstd_begin(t, in, NULL)) return -1;
  memcpy(t->host, t->hdr.host, sizeof t->hdr.host);
  t->host[sizeof t->hdr.host] = 0;
  memcpy(t->exe, t->hdr.exe, sizeof t->hdr.exe);
  t->exe[sizeof t->hdr.exe] = 0;
  return 0;
}

static int cmp_lo(const void *a, const void *b, void *arg) {
  const nd_module_t *m = arg;
  const nd_module_t *x = &m[*(const uint32_t *)a], *y = &m[*(const uint32_t *)b];
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int build_module_index(nd_trace_t *t) {
  free(t->mod_order); // nd_trace_update: built again over the modules read since
  free(t->mod_maxhi);
  t->mod_order = NULL;
  t->mod_maxhi = NULL;
  if (!t->nmods) return 0;
  t->mod_order = malloc(t->nmods * sizeof *t->mod_order);
  t->mod_maxhi = malloc(t->nmods * sizeof *t->mod_maxhi);
  if (!t->mod_order || !t->mod_maxhi) return nd_read_fail(t, UINT64_MAX, "out of memory");
  for (size_t i = 0; i < t->nmods; i++) t->mod_order[i] = (uint32_t)i;
  qsort_r(t->mod_order, t->nmods, sizeof *t->mod_order, cmp_lo, t->mods);
  uint64_t hi = 0;
  for (size_t i = 0; i < t->nmods; i++) {
    if (t->mods[t->mod_order[i]].hi > hi) hi = t->mods[t->mod_order[i]].hi;
    t->mod_maxhi[i] = hi;
  }
  return 0;
}

const nd_module_t *nd_trace_module_of(const nd_trace_t *t, uint64_t ip) {
  // The last module (by lo) starting at or below ip; then walk down while an earlier module
  // could still reach ip (prefix maximum of hi), keeping the most recent one that holds it.
  size_t lo = 0, hi = t->nmods;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->mods[t->mod_order[mid]].lo <= ip) lo = mid + 1;
    else hi = mid;
  }
  const nd_module_t *best = NULL;
  for (size_t i = lo; i-- > 0 && t->mod_maxhi[i] > ip;) {
    const nd_module_t *m = &t->mods[t->mod_order[i]];
    if (ip < m->hi && (!best || m->seq > best->seq)) best = m;
  }
  return best;
}

// Reads records from in->fd (positioned at in->base, the end of the last complete record read so
// far) up to the file's end or its last complete record, folding them into `t`, then derives
// what is built after reading (escapes' stacks, the snapshots' order, the module index). Each
// of those is rebuilt from the state kept, so that reading on later gives what one read of the
// longer file gives. 0, or -1 with t->err set.
static int read_records(nd_trace_t *t, nd_in_t *in, uint64_t size, nd_progress_fn progress,
                        void *arg) {
  t->truncated = false;
  for (;;) {
    uint64_t reads = in->reads;
    if (nd_read_fill(in, sizeof(nd_rec_t))) return nd_read_fill_fail(t, in->base + in->pos, in);
    uint64_t off = in->base + in->pos;
    size_t avail = in->len - in->pos;
    if (avail == 0) break; // clean end
    if (avail < sizeof(nd_rec_t)) {
      t->truncated = true;
      break;
    }
    nd_rec_t r;
    memcpy(&r, in->buf + in->pos, sizeof r);
    if (nd_read_check(t, off, &r)) return -1;
    if (avail < sizeof r + r.size) {
      if (nd_read_fill(in, sizeof r + r.size)) return nd_read_fill_fail(t, off, in);
      if (in->len - in->pos < sizeof r + r.size) {
        t->truncated = true;
        break;
      }
    }
    if (nd_read_record(t, off, &r, in->buf + in->pos + sizeof r)) return -1;
    in->pos += sizeof r + r.size;
    t->records++;
    t->rec_count[r.tag]++;
    t->prev_tag = r.tag;
    t->after_flush = r.tag == ND_REC_FLUSH ? 0 : t->after_flush + 1;
    t->good_end = in->base + in->pos;
    if (progress && in->reads != reads) progress(arg, in->zd ? in->zread : t->good_end, size);
  }
  if (!t->records) t->good_end = t->hdr.header_size;
  t->file_size = in->base + in->len;
  t->stored_size = in->zd ? in->zread : t->file_size;
  nd_read_after(t);
  return build_module_index(t);
}

int nd_trace_read(nd_trace_t *t, const char *path, nd_progress_fn progress, void *arg) {
  memset(t, 0, sizeof *t);
  t->path = path;
  t->err_off = UINT64_MAX;
  nd_in_t in = {.fd = -1};
  struct stat st;
  if (nd_read_open(t, path, &in.fd, &st)) return -1;
  int rc = -1;
  t->regular = S_ISREG(st.st_mode);
  t->dev = (uint64_t)st.st_dev;
  t->ino = (uint64_t)st.st_ino;
  uint64_t size = t->regular ? (uint64_t)st.st_size : 0;
  if (nd_read_in_alloc(t, &in, size) || read_header(t, &in)) goto out;
  rc = read_records(t, &in, size, progress, arg);
  if (!rc) rc = nd_read_zstd_keep(t, &in);
out:
  t->last_read = in.zd ? in.zread : in.len + in.base;
  nd_read_zstd_end(&in, t);
  free(in.buf);
  close(in.fd);
  return rc;
}

int nd_trace_update(nd_trace_t *t, nd_progress_fn progress, void *arg) {
  const char *path = t->path;
  nd_in_t in = {.fd = -1};
  struct stat st;
  if (nd_read_open(t, path, &in.fd, &st)) return -1;
  // The same file, no shorter than what was read, with the same header: else another trace was
  // written there (a new job, a copy, the file cut), and it is read from its start.
  nd_trace_header_t hdr;
  bool same = t->regular && S_ISREG(st.st_mode) && (uint64_t)st.st_dev == t->dev &&
              (uint64_t)st.st_ino == t->ino &&
              (uint64_t)st.st_size >= (t->compressed ? t->zfed : t->good_end) &&
              pread(in.fd, &hdr, ND_TRACE_HEADER_V11_SIZE, 0) == ND_TRACE_HEADER_V11_SIZE &&
              !memcmp(&hdr, &t->hdr, ND_TRACE_HEADER_V11_SIZE); // its part as read, unchanged
  if (!same) {
    close(in.fd);
    nd_trace_free(t);
    int rc = nd_trace_read(t, path, progress, arg);
    return rc ? rc : 1;
  }
  int rc = -1;
  uint64_t size = (uint64_t)st.st_size;
  uint64_t start = in.base = t->good_end;
  uint64_t from = t->compressed ? t->zfed : t->good_end; // the file offset to read on from
  if (lseek(in.fd, (off_t)from, SEEK_SET) < 0) {
    nd_read_fail(t, from, "cannot seek: %s", strerror(errno));
    goto out;
  }
  if (nd_read_in_alloc(t, &in, t->compressed ? ND_BUF_SIZE : size - in.base)) goto out;
  if (t->compressed) { // the stream goes on: the bytes it gave past good_end first
    if (nd_read_zstd_begin(t, &in, t->zd)) goto out;
    if (t->nztail) memcpy(in.buf, t->ztail, t->nztail);
    in.len = t->nztail;
    in.zread = from;
  }
  rc = read_records(t, &in, size, progress, arg);
  if (!rc) rc = nd_read_zstd_keep(t, &in);
out:
  // in.base moved on as the buffer was reused
  t->last_read = in.zd ? in.zread - from : in.base + in.len - start;
  nd_read_zstd_end(&in, t);
  free(in.buf);
  close(in.fd);
  return rc;
}

void nd_trace_free(nd_trace_t *t) {
#ifdef ND_HAVE_ZSTD
  if (t->zd) ZSTD_freeDStream(t->zd);
#endif
  free(t->ztail);
  for (size_t i = 0; i < t->nmods; i++) free(t->mods[i].path);
  free(t->mods);
  free(t->mod_slots);
  free(t->mod_order);
  free(t->mod_maxhi);
  free(t->stacks);
  free(t->frames);
  nd_map_free(&t->stack_ids);
  for (size_t i = 0; i < t->npycodes; i++) {
    free(t->pycodes[i].qualname);
    free(t->pycodes[i].filename);
  }
  free(t->pycodes);
  nd_map_free(&t->pycode_ids);
  free(t->sites);
  nd_map_free(&t->site_keys);
  free(t->leaks);
  nd_map_free(&t->leak_keys);
  free(t->ws);
  nd_map_free(&t->ws_keys);
  free(t->escapes);
  free(t->growth);
  free(t->breaches);
  free(t->spills);
  free(t->admit_sites);
  free(t->series);
  for (size_t i = 0; i < 1 + ND_TRACE_SNAP_LAST; i++) free(t->snap[i].sites);
  memset(t, 0, sizeof *t);
}
