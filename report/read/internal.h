// SPDX-License-Identifier: MIT
// internal.h: what the reader's files share (private to read/): trace_read.c reads a file's
// header and records through the stream (stream.c), checking each record's header against the
// trace's version (normalise.c) before records.c folds it into nd_trace_t; site_series.c reads
// the file again for the HTML timeline. Every size is checked before it is used and every value
// read from the file is range-checked, so a garbled trace can only give an error or odd numbers.
#ifndef ND_READ_INTERNAL_H
#define ND_READ_INTERNAL_H

#include "read/trace_read.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the trace is little-endian; this reader reads it in host order"
#endif

#define ND_BUF_SIZE (4u << 20) // > ND_TRACE_MAX_RECORD + sizeof(nd_rec_t)
_Static_assert(ND_BUF_SIZE >= ND_TRACE_MAX_RECORD + sizeof(nd_rec_t), "buffer holds a record");

// The records' names by tag, for errors (trace_read.c).
extern const char *const nd_read_tag_names[ND_REC_TAG_MAX];
// t->err and t->err_off set: -1 (trace_read.c).
int nd_read_fail(nd_trace_t *t, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// Grows *p (elements of `size` bytes, capacity *cap) to hold `need` elements. 0 or -1 (ENOMEM).
int nd_read_grow(void *p, size_t *cap, size_t need, size_t size);

// ---------------------------------------------------------------- stream.c

typedef struct nd_in {
  int fd;
  char *buf;
  size_t cap;      // ND_BUF_SIZE, or less for a small regular file (grown if it grows)
  size_t pos, len; // unread bytes are buf[pos, len)
  uint64_t base;   // stream offset of buf[0] (the file's, unless compressed)
  bool eof;
  uint64_t reads; // read(2) calls that returned data, for progress reports
  // A compressed stream (zstd_begin): the file's bytes go through zd into buf.
  void *zd;          // ZSTD_DStream *, NULL when the records are plain
  char *zbuf;        // file bytes read, zbuf[zpos, zlen) not yet given to zd
  size_t zpos, zlen, zcap;
  uint64_t zread;    // file bytes read (header included)
  const char *zerr;  // why decompression failed (errno is then EBADMSG)
} nd_in_t;

#define ND_ZBUF_SIZE (128u << 10)

// Makes at least `want` (<= ND_BUF_SIZE) unread bytes available unless the file ends first. 0,
// or -1 on a read error, a corrupt compressed stream or out of memory (errno set).
int nd_read_fill(nd_in_t *in, size_t want);
// The reason of a failed fill: strerror, or the decompressor's own words; and a failed fill at
// offset off as the trace's error (nd_read_fail).
const char *nd_read_in_error(const nd_in_t *in);
int nd_read_fill_fail(nd_trace_t *t, uint64_t off, const nd_in_t *in);
// The records after the header are a zstd stream (ND_TRACE_ZSTD): the bytes read past the header
// are compressed, and from here on fill decompresses. `zd` continues an earlier read's stream
// (nd_trace_update) or is NULL for a new one. 0, or -1 with t->err set. nd_read_zstd_end frees
// the stream's buffer and its decompressor, unless `keep` holds it.
int nd_read_zstd_begin(nd_trace_t *t, nd_in_t *in, void *zd);
void nd_read_zstd_end(nd_in_t *in, nd_trace_t *keep);
// A compressed trace read to its end keeps its decompressor for nd_trace_update: the stream
// goes on where the file did, with the bytes decompressed past the last whole record. 0 or -1.
int nd_read_zstd_keep(nd_trace_t *t, nd_in_t *in);
// The buffer for reading `size` bytes of a regular file (0: unknown): ND_BUF_SIZE, or less for
// a small file (fill grows it if the file grows). 0, or -1 with t->err set.
int nd_read_in_alloc(nd_trace_t *t, nd_in_t *in, uint64_t size);
// Opens `path` for reading: 0 with *fd and *st, or -1 with t->err set.
int nd_read_open(nd_trace_t *t, const char *path, int *fd, struct stat *st);

// ---------------------------------------------------------------- normalise.c

// What a trace of `version` has room for (nd_trace_has_t).
void nd_read_facts(nd_trace_has_t *has, uint32_t version);
// The payload size a tag allows in a trace of `version`: exact for fixed records, a minimum (and
// *var set) otherwise.
uint32_t nd_read_size(unsigned tag, uint32_t version, int *var);
// Checks a record header before its payload is needed (its tag known and in the trace's version,
// its size possible for both), so an impossible size is an error even when the file ends before
// the payload would. 0, or -1 with t->err set.
int nd_read_check(nd_trace_t *t, uint64_t off, const nd_rec_t *r);
// A record a later version lengthened, in its older short form: copied into `full` (room for
// ND_READ_LONGEST bytes) with the later fields 0, which is returned; any other record's payload
// as it is.
#define ND_READ_LONGEST sizeof(nd_rec_workspace_t)
const char *nd_read_lengthen(const nd_rec_t *r, const char *p, char *full);
// The job fields (version 12) of the header read into t->hdr checked, or set to unknown where
// the header has none. 0, or -1 with t->err set.
int nd_read_header_job(nd_trace_t *t);

// ---------------------------------------------------------------- records.c

// Folds one record (its header checked by nd_read_check) into `t`. 0, or -1 with t->err set.
int nd_read_record(nd_trace_t *t, uint64_t off, const nd_rec_t *r, const char *p);
// A snapshot's sites follow it without any other record in between: a SNAP_SITE record needs an
// open snapshot, and any other record needs none. Checked from the header, before the payload.
int nd_read_check_snap_run(nd_trace_t *t, uint64_t off, const nd_rec_t *r);
// After reading: the escapes' stacks (a STACK record may follow its escape) and the kept
// snapshots in trace order, each one's sites by live bytes.
void nd_read_after(nd_trace_t *t);

// The timeline's thinning, shared by the counters series (on_counters) and the top sites'
// (nd_trace_site_series), which must keep the same points: each COUNTERS record is a point; the
// latest is always kept, replaced by the next one when it is off the stride; when `cap` points
// (on the stride) are held, every other one goes (keep_even(arg, n): point i becomes point 2i)
// and the stride doubles. Returns the index of the new point, which the caller fills.
typedef struct thin {
  uint64_t *seen, *stride; // records counted; every stride-th record is kept
  bool *extra;             // the last point is off the stride
  size_t *npoints;
} nd_read_thin_t;
size_t nd_read_thin_step(nd_read_thin_t th, size_t cap, void (*keep_even)(void *arg, size_t n),
                         void *arg);

#endif
