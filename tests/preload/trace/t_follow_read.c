// SPDX-License-Identifier: MIT
// t_follow_read: the reading on that `ndmemreport --follow` does (nd_trace_update), against one
// read of the same bytes. Each trace given (and one written here: 10000 COUNTERS records, so the
// timeline's stride doubles twice, snapshots, a module added midway, leaks and END) is copied to
// DIR/grow.trace in pieces of odd sizes (1 byte to 1/16 of it, 4099 at most; 400001 for the
// long one; up to 1/24 of the compressed long one), so records are cut anywhere: in their header, in a stack's frames, in a snapshot's
// run of sites. After each piece the trace read on must equal a fresh nd_trace_read of the
// file: the same state (end of the last good record, records, the timeline's points and the
// sites byte for byte, snapshots) and the same --brief text, JSON and HTML reports, byte for
// byte; an update must read exactly the bytes after the last complete record. Then the file
// rewritten with a shorter trace, replaced by another (rename), rewritten in place as another
// pid's, and cut short must each be read again from the start (nd_trace_update returns 1) and
// equal a full read.
// usage: t_follow_read DIR TRACE...
//        t_follow_read --time BIG_TRACE COPY [CHUNK_MB [STEPS]]: times reading on a copy of
//        BIG_TRACE grown by CHUNK_MB (default 10) per refresh after a first read (no check).
#include "cmd/cmd.h"
#include "trace_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef ND_HAVE_ZSTD
#include <zstd.h>
#endif

static int failures;
static const char *long_path, *long_zstd_path; // the traces written here

static void no(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void no(const char *what, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL: %s: ", what);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  failures++;
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *p = NULL;
  size_t cap = 0;
  *n = 0;
  for (;;) {
    if (*n == cap && !(p = realloc(p, cap = cap ? cap * 2 : 65536))) abort();
    size_t k = fread(p + *n, 1, cap - *n, f);
    if (!k) break;
    *n += k;
  }
  fclose(f);
  return p;
}

static void write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      perror("t_follow_read: write");
      exit(2);
    }
    p += k;
    n -= (size_t)k;
  }
}

static void put_file(const char *path, const char *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    perror(path);
    exit(2);
  }
  write_all(fd, p, n);
  close(fd);
}

// ---------------------------------------------------------------- a long synthetic trace

static char wbuf[1 << 16];


// 10000 flush batches of a version 8 trace: SITE updates, RESIDENT, COUNTERS (the timeline),
// FLUSH; a snapshot of 5 sites at batches 3000 and 7000 (and one of 2 at each 1000th); a second
// module and a stack in it at batch 5000; two leaked blocks and END. `zstd`: its records
// compressed as the shim writes them (version 13, ND_TRACE_ZSTD), a block ended at every FLUSH.
static void write_long(const char *path, bool zstd) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    perror(path);
    exit(2);
  }
  nd_tw_t w;
  nd_tw_init(&w, fd, wbuf, sizeof wbuf);
  nd_trace_header_t h = {.version = ND_TRACE_VERSION, .header_size = sizeof h, .pid = 4242,
                         .start_realtime_ns = 1700000000000000000ull, .start_mono_ns = 1000,
                         .sample_interval = 0, .track_min = 0, .depth = 32, .page_size = 4096};
  memcpy(h.magic, ND_TRACE_MAGIC, sizeof h.magic);
  strcpy(h.host, "follow-synth-host");
  strcpy(h.exe, "/nonexistent/follow-app");
  if (zstd) h.flags = ND_TRACE_ZSTD;
  nd_tw_header(&w, &h);
#ifdef ND_HAVE_ZSTD
  static char zbuf[1 << 16];
  ZSTD_CCtx *zc = zstd ? ZSTD_createCCtx() : NULL;
  if (zstd && (!zc || nd_tw_compress(&w, zc, zbuf, sizeof zbuf))) {
    fprintf(stderr, "t_follow_read: cannot compress %s\n", path);
    exit(2);
  }
#endif
  const char *app = "/nonexistent/follow-app", *lib = "/nonexistent/libfollow.so";
  nd_rec_module_t m = {.id = 0, .path_len = (uint32_t)strlen(app), .base = 0x400000,
                       .lo = 0x400000, .hi = 0x800000};
  nd_tw_record(&w, ND_REC_MODULE, &m, sizeof m, app, m.path_len);
  uint64_t frames[6];
  for (uint32_t s = 1; s <= 3; s++) {
    for (int i = 0; i < 6; i++) frames[i] = 0x401000 + s * 0x100 + (uint64_t)i * 0x10;
    nd_rec_stack_t st = {.id = s, .depth = 3 + s};
    nd_tw_record(&w, ND_REC_STACK, &st, sizeof st, frames, st.depth * 8);
  }
  nd_rec_site_t site[5] = {0};
  uint64_t ns = 2000;
  for (uint32_t b = 1; b <= 10000; b++) {
    if (b == 5000) {
      nd_rec_module_t m2 = {.id = 1, .path_len = (uint32_t)strlen(lib), .base = 0x7f0000000000,
                            .lo = 0x7f0000000000, .hi = 0x7f0000100000};
      nd_tw_record(&w, ND_REC_MODULE, &m2, sizeof m2, lib, m2.path_len);
      for (int i = 0; i < 6; i++) frames[i] = 0x7f0000001000 + (uint64_t)i * 0x40;
      nd_rec_stack_t st = {.id = 4, .depth = 6};
      nd_tw_record(&w, ND_REC_STACK, &st, sizeof st, frames, st.depth * 8);
    }
    uint32_t nsites = b >= 5000 ? 4 : 3;
    for (uint32_t k = 0; k < nsites; k++) {
      if ((b + k) % (k + 1)) continue; // site k every (k+1)th batch
      nd_rec_site_t *s = &site[k];
      s->stack_id = k + 1;
      s->kind = (uint16_t)(k % 2);
      s->allocs += 3;
      s->frees += 1 + (b % 3 == 0);
      s->alloc_bytes += 4096 * (k + 1);
      s->free_bytes += 2048 * (k + 1) + (b % 7) * 64;
      uint64_t live = s->alloc_bytes - s->free_bytes;
      if (live > s->peak_live_bytes) s->peak_live_bytes = live;
      s->floor_bytes = live - (b % 5) * 16;
      s->cycle = b / 100;
      nd_tw_record(&w, ND_REC_SITE, s, sizeof *s, NULL, 0);
    }
    if (b % 1000 == 0 || b == 3000 || b == 7000) {
      uint32_t n = b == 3000 || b == 7000 ? 5 : 2;
      nd_rec_snapshot_t sn = {.mono_ns = ns, .reason = ND_SNAP_BREACH, .sites = n,
                              .tracked = b * 4096ull, .threshold = 1 << 20};
      nd_tw_record(&w, ND_REC_SNAPSHOT, &sn, sizeof sn, NULL, 0);
      for (uint32_t k = 0; k < n; k++) {
        nd_rec_snap_site_t x = {.stack_id = 1 + k % 3, .kind = (uint16_t)(k / 3),
                                .live_bytes = (b * 7 + k * 1013) % 100000, .live_count = k + 1};
        nd_tw_record(&w, ND_REC_SNAP_SITE, &x, sizeof x, NULL, 0);
      }
    }
    if (b % 10 == 0) {
      nd_rec_resident_t r = {.mono_ns = ns, .anon_bytes = (uint64_t)b * 8192 + (b % 13) * 4096};
      nd_tw_record(&w, ND_REC_RESIDENT, &r, sizeof r, NULL, 0);
    }
    nd_rec_counters_t c = {.mono_ns = ns, .threads = 1 + b % 4};
    for (int k = 0; k < 2; k++) {
      c.kind[k].live_bytes = (int64_t)(site[k].alloc_bytes - site[k].free_bytes);
      c.kind[k].peak_bytes = (int64_t)site[k].peak_live_bytes;
    }
    nd_tw_record(&w, ND_REC_COUNTERS, &c, sizeof c, NULL, 0);
    nd_rec_flush_t f = {.mono_ns = ns, .seq = b, .cycles = b / 100,
                        .steady_ns = b >= 100 ? 3000 : 0};
    nd_tw_record(&w, ND_REC_FLUSH, &f, sizeof f, NULL, 0);
    if (zstd && nd_tw_flush(&w)) exit(2); // as the shim: a batch at a time
    ns += 1000000;
  }
  for (uint32_t k = 0; k < 2; k++) {
    nd_rec_block_t bl = {.stack_id = k + 1, .kind = (uint16_t)k, .size = 4096 * (k + 1),
                         .mono_ns = ns - 5000000, .cycle = 99};
    nd_tw_record(&w, ND_REC_BLOCK, &bl, sizeof bl, NULL, 0);
  }
  nd_rec_exit_t ex = {.mono_ns = ns, .how = ND_EXIT_NORMAL};
  nd_tw_record(&w, ND_REC_EXIT, &ex, sizeof ex, NULL, 0);
  nd_rec_end_t e = {.mono_ns = ns, .blocks = 2};
  nd_tw_record(&w, ND_REC_END, &e, sizeof e, NULL, 0);
  if (nd_tw_finish(&w)) {
    fprintf(stderr, "t_follow_read: writing %s failed\n", path);
    exit(2);
  }
#ifdef ND_HAVE_ZSTD
  ZSTD_freeCCtx(zc);
#endif
  close(fd);
}

// ---------------------------------------------------------------- comparing

typedef struct view {
  const char *name;
  opts_t o;
} view_t;

static view_t views[3];

static char *render(const opts_t *o, const nd_trace_t *t, nd_sym_t *sym, nd_supp_t *supp,
                    size_t *n) {
  char *p = NULL;
  FILE *f = open_memstream(&p, n);
  if (!f) abort();
  int running = t->ended ? ND_RUN_NO : nd_trace_running(t, t->path);
  int rc = nd_report_render(o, t, sym, supp, running, f, stderr);
  fclose(f);
  if (rc == 2) no("render", "%s: nd_report_render failed", t->path);
  return p;
}

static bool same_snap(const nd_snapshot_t *a, const nd_snapshot_t *b) {
  return !memcmp(&a->rec, &b->rec, sizeof a->rec) && a->seq == b->seq && a->read == b->read &&
         a->nsites == b->nsites &&
         (!a->nsites || !memcmp(a->sites, b->sites, a->nsites * sizeof *a->sites));
}

// The state a reader leaves that the reports do not all show.
static void compare_state(const char *what, const nd_trace_t *a, const nd_trace_t *b) {
#define SAME(f)                                                                                    \
  if (a->f != b->f)                                                                                \
    no(what, #f " %llu, a full read gives %llu", (unsigned long long)a->f,                         \
       (unsigned long long)b->f)
  SAME(good_end);
  SAME(file_size);
  SAME(truncated);
  SAME(records);
  SAME(ended);
  SAME(nmods);
  SAME(nstacks);
  SAME(nframes);
  SAME(nsites);
  SAME(nleaks);
  SAME(npoints);
  SAME(series_stride);
  SAME(series_seen);
  SAME(series_extra);
  SAME(nsnaps);
  SAME(snap_records);
  SAME(last_ns);
  SAME(flushes);
  SAME(after_flush);
  SAME(nescapes);
  SAME(nbreaches);
#undef SAME
  if (a->npoints == b->npoints && a->npoints &&
      memcmp(a->series, b->series, a->npoints * sizeof *a->series))
    no(what, "the timeline's points differ from a full read's");
  if (a->nsites == b->nsites && a->nsites &&
      memcmp(a->sites, b->sites, a->nsites * sizeof *a->sites))
    no(what, "the sites (or their histories) differ from a full read's");
  if ((a->snap_open == NULL) != (b->snap_open == NULL)) no(what, "snapshot open differs");
  for (size_t i = 0; i < a->nsnaps && a->nsnaps == b->nsnaps; i++)
    if (!same_snap(a->snaps[i], b->snaps[i])) no(what, "snapshot %zu differs", i);
}

static void compare_reports(const char *what, const nd_trace_t *a, nd_sym_t *sa,
                            const nd_trace_t *b, nd_sym_t *sb, nd_supp_t *supp) {
  for (size_t v = 0; v < sizeof views / sizeof *views; v++) {
    size_t na, nb;
    char *ra = render(&views[v].o, a, sa, supp, &na);
    char *rb = render(&views[v].o, b, sb, supp, &nb);
    if (na != nb || memcmp(ra, rb, na)) {
      size_t i = 0;
      while (i < na && i < nb && ra[i] == rb[i]) i++;
      no(what, "%s report differs from a full read's at byte %zu:\n--- read on:\n%.300s\n--- "
         "full read:\n%.300s", views[v].name, i, ra + (i > 100 ? i - 100 : 0),
         rb + (i > 100 ? i - 100 : 0));
    }
    free(ra);
    free(rb);
  }
}

// A full read of `path` compared with `t` (read on): 0, or -1 when the full read failed.
static int check_against_full(const char *what, const char *path, nd_trace_t *t, nd_sym_t *sym,
                              nd_supp_t *supp) {
  nd_trace_t *f = calloc(1, sizeof *f);
  if (!f) abort();
  int rc = nd_trace_read(f, path, NULL, NULL);
  if (rc) {
    no(what, "a full read failed: %s at %llu", f->err, (unsigned long long)f->err_off);
  } else {
    nd_sym_t *fs = nd_sym_new(f, true);
    compare_state(what, t, f);
    compare_reports(what, t, sym, f, fs, supp);
    nd_sym_free(fs);
  }
  nd_trace_free(f);
  free(f);
  return rc;
}

// follow.c's rule: the symbolizer is kept while no MODULE record was read.
static nd_sym_t *keep_sym(nd_sym_t *sym, uint64_t *mods, const nd_trace_t *t, bool again) {
  if (sym && !again && t->rec_count[ND_REC_MODULE] == *mods) return sym;
  nd_sym_free(sym);
  *mods = t->rec_count[ND_REC_MODULE];
  return nd_sym_new(t, true);
}

// A replaced trace: nd_trace_update must read it again from its start (1), and then equal a full
// read of it. Returns the symbolizer for the trace as read now.
static nd_sym_t *reread(const char *what, const char *path, nd_trace_t *t, nd_sym_t *sym,
                        uint64_t *mods, nd_supp_t *supp) {
  int rc = nd_trace_update(t, NULL, NULL);
  if (rc != 1) no(what, "nd_trace_update returned %d, want 1 (read again)", rc);
  if (rc >= 0) {
    sym = keep_sym(sym, mods, t, true);
    check_against_full(what, path, t, sym, supp);
  }
  return sym;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
// An odd size from 1 to max (odd), skewed to small where `small`.
static size_t piece(size_t max, bool small) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  uint64_t r = rng * 0x2545f4914f6cdd1dull;
  size_t lim = small && (r >> 60) < 10 ? 97 : max;
  return (size_t)(r % lim) | 1;
}

static void grow_and_check(const char *dir, const char *src, const char *other,
                           nd_supp_t *supp) {
  size_t n, on;
  char *p = slurp(src, &n), *op = slurp(other, &on);
  if (!p || !op) {
    no(src, "cannot read it or %s", other);
    return;
  }
  char path[4096], what[4200];
  snprintf(path, sizeof path, "%s/grow.trace", dir);
  put_file(path, "", 0);
  int fd = open(path, O_WRONLY | O_APPEND);
  nd_trace_t *t = calloc(1, sizeof *t);
  nd_sym_t *sym = NULL;
  uint64_t mods = 0;
  bool have = false;
  size_t steps = 0, cut = 0;
  size_t max = n > 1000000 ? 400001 : n / 16 < 4099 ? n / 16 | 1 : 4099; // 16 pieces or more
  // The compressed long trace (each read on decompresses and checks 40000 records against a full
  // read): some 50 pieces of up to 1/24 of it, none skewed small, still cut its blocks anywhere.
  bool small = src != long_zstd_path;
  if (!small) max = n / 24 | 1;
  for (size_t at = 0; at < n && !failures;) {
    size_t k = piece(max, small);
    if (k > n - at) k = n - at;
    write_all(fd, p + at, k);
    at += k;
    if (at < sizeof(nd_trace_header_t)) continue; // follow: "(no trace yet)"
    snprintf(what, sizeof what, "%s after %zu of %zu bytes", src, at, n);
    int rc;
    if (!have) {
      rc = nd_trace_read(t, path, NULL, NULL);
      if (rc == 0 && t->last_read != at) no(what, "the first read read %llu bytes",
                                             (unsigned long long)t->last_read);
    } else {
      uint64_t from = t->compressed ? t->zfed : t->good_end; // the file's offset
      rc = nd_trace_update(t, NULL, NULL);
      if (rc > 0) no(what, "read again from the start (%d) though the trace only grew", rc);
      if (rc == 0 && t->last_read != at - from)
        no(what, "an update read %llu bytes, want the %llu after the last complete record",
           (unsigned long long)t->last_read, (unsigned long long)(at - from));
    }
    if (rc < 0) {
      no(what, "reading failed: %s at %llu", t->err, (unsigned long long)t->err_off);
      break;
    }
    have = true;
    cut += t->truncated;
    steps++;
    sym = keep_sym(sym, &mods, t, false);
    check_against_full(what, path, t, sym, supp);
  }
  // A compressed trace is decompressed a whole zstd block at a time, and its blocks end at the
  // batches' FLUSH records: its reads stop between records; the pieces cut its blocks instead.
  if (!failures && (steps < 16 || (cut < steps / 4 && src != long_zstd_path)))
    no(src, "the pieces did not test what they should (%zu of %zu reads cut mid-record)", cut,
       steps);
  printf("%s: %zu reads, %zu cut mid-record; %llu records, timeline stride %llu, %llu "
         "snapshots, %zu modules\n", src, steps, cut, (unsigned long long)t->records,
         (unsigned long long)t->series_stride, (unsigned long long)t->snap_records, t->nmods);
  // 10000 COUNTERS records: the 4096 points kept were halved twice (at 4097 and 8193 records).
  if ((src == long_path || src == long_zstd_path) && (t->series_stride != 4 || t->snap_records != 10 || t->nmods != 2))
    no(src, "the long trace is not what it was written to be");
  // Nothing appended: only a record cut short at the end is read again (killed.trace's); a
  // compressed trace's decompressor has had the whole file already.
  uint64_t tail = t->compressed ? 0 : t->file_size - t->good_end;
  if (src == long_zstd_path && !t->compressed) no(src, "not read as compressed");
  if (!failures && (nd_trace_update(t, NULL, NULL) != 0 || t->last_read != tail))
    no(src, "an update of an unchanged trace read %llu bytes, want %llu",
       (unsigned long long)t->last_read, (unsigned long long)tail);
  close(fd);

  // The file rewritten in place with a shorter trace (same inode).
  snprintf(what, sizeof what, "%s rewritten with the shorter %s", src, other);
  put_file(path, op, on < n ? on : n / 2); // a prefix of a trace is a trace (cut short)
  sym = reread(what, path, t, sym, &mods, supp);
  // Another file renamed over it: the original, longer, trace.
  snprintf(what, sizeof what, "%s renamed over %s", src, other);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.new", path);
  put_file(tmp, p, n);
  if (rename(tmp, path)) no(what, "rename: %s", strerror(errno));
  sym = reread(what, path, t, sym, &mods, supp);
  // Rewritten in place (same inode, same size) as another process's trace: read again.
  snprintf(what, sizeof what, "%s rewritten in place with another pid", src);
  ((nd_trace_header_t *)(void *)p)->pid ^= 1; // p is malloc'd: aligned
  put_file(path, p, n);
  ((nd_trace_header_t *)(void *)p)->pid ^= 1;
  sym = reread(what, path, t, sym, &mods, supp);
  // The same trace cut short (its header intact): read again, up to the cut.
  snprintf(what, sizeof what, "%s cut to %zu bytes", src, n / 2);
  if (truncate(path, (off_t)(n / 2))) no(what, "truncate: %s", strerror(errno));
  sym = reread(what, path, t, sym, &mods, supp);
  nd_sym_free(sym);
  nd_trace_free(t);
  free(t);
  free(p);
  free(op);
  unlink(path);
}

// ---------------------------------------------------------------- timing

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int time_follow(const char *big, const char *copy, size_t chunk_mb, int steps) {
  int in = open(big, O_RDONLY);
  struct stat st;
  if (in < 0 || fstat(in, &st)) {
    perror(big);
    return 2;
  }
  size_t chunk = chunk_mb << 20, size = (size_t)st.st_size;
  if ((size_t)steps * chunk >= size) {
    fprintf(stderr, "t_follow_read: %s is too small for %d steps of %zu MiB\n", big, steps,
            chunk_mb);
    return 2;
  }
  size_t at = size - (size_t)steps * chunk;
  int out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char *buf = malloc(chunk > (64u << 20) ? chunk : 64u << 20);
  for (size_t done = 0; done < at;) { // the first part, as the job had written it
    size_t k = at - done < (64u << 20) ? at - done : 64u << 20;
    ssize_t r = pread(in, buf, k, (off_t)done);
    if (r <= 0) return 2;
    write_all(out, buf, (size_t)r);
    done += (size_t)r;
  }
  nd_supp_t *supp = nd_supp_new();
  nd_supp_builtin(supp);
  opts_t o = {.brief = true, .symbols = true, .top = 10, .frames = 8, .file = copy};
  nd_trace_t *t = calloc(1, sizeof *t);
  double t0 = now_s();
  if (nd_trace_read(t, copy, NULL, NULL)) {
    fprintf(stderr, "t_follow_read: %s: %s\n", copy, t->err);
    return 2;
  }
  nd_sym_t *sym = nd_sym_new(t, true);
  uint64_t mods = t->rec_count[ND_REC_MODULE];
  FILE *null = fopen("/dev/null", "w");
  nd_report_render(&o, t, sym, supp, ND_RUN_UNKNOWN, null, stderr);
  double first = now_s() - t0;
  printf("first read and report of %.1f MiB: %.3f s\n", (double)at / 1048576, first);
  double sum = 0, max = 0, rsum = 0;
  for (int s = 0; s < steps; s++) {
    ssize_t r = pread(in, buf, chunk, (off_t)at);
    if (r <= 0) return 2;
    write_all(out, buf, (size_t)r);
    at += (size_t)r;
    t0 = now_s();
    if (nd_trace_update(t, NULL, NULL) < 0) {
      fprintf(stderr, "t_follow_read: %s: %s\n", copy, t->err);
      return 2;
    }
    double rd = now_s() - t0;
    sym = keep_sym(sym, &mods, t, false);
    nd_report_render(&o, t, sym, supp, ND_RUN_UNKNOWN, null, stderr);
    double dt = now_s() - t0;
    sum += dt;
    rsum += rd;
    if (dt > max) max = dt;
    printf("refresh %d: +%.1f MiB read in %.3f s, with the report %.3f s\n", s + 1,
           (double)t->last_read / 1048576, rd, dt);
  }
  printf("refreshes after the first read: mean %.3f s (reading %.3f s), max %.3f s\n",
         sum / steps, rsum / steps, max);
  nd_sym_free(sym);
  nd_trace_free(t);
  t0 = now_s();
  nd_trace_read(t, copy, NULL, NULL);
  printf("one full read of the grown %.1f MiB (what each refresh read twice before): %.3f s\n",
         (double)at / 1048576, now_s() - t0);
  nd_trace_free(t);
  free(t);
  fclose(null);
  nd_supp_free(supp);
  close(out);
  close(in);
  free(buf);
  unlink(copy);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "--time"))
    return time_follow(argv[2], argv[3], argc > 4 ? (size_t)atoi(argv[4]) : 10,
                       argc > 5 ? atoi(argv[5]) : 10);
  if (argc < 3) {
    fputs("usage: t_follow_read DIR TRACE... | --time BIG_TRACE COPY [CHUNK_MB [STEPS]]\n",
          stderr);
    return 2;
  }
  const char *dir = argv[1];
  views[0] = (view_t){"--brief text", {.brief = true, .symbols = true, .top = 10, .frames = 8}};
  views[1] = (view_t){"JSON (--top 0)",
                      {.format = ND_FMT_JSON, .symbols = true, .top = 0, .frames = 0}};
  views[2] = (view_t){"HTML", {.format = ND_FMT_HTML, .symbols = true, .top = 10, .frames = 8}};
  nd_supp_t *supp = nd_supp_new();
  if (!supp || nd_supp_builtin(supp)) return 2;
  char longp[4096];
  snprintf(longp, sizeof longp, "%s/long.trace", dir);
  write_long(longp, false);
  long_path = longp;
  char zlongp[4096];
  snprintf(zlongp, sizeof zlongp, "%s/long-zstd.trace", dir);
#ifdef ND_HAVE_ZSTD
  write_long(zlongp, true);
  long_zstd_path = zlongp;
#endif
  // Each trace grown, then rewritten with another (the next; the first for the last), cut to be
  // shorter.
  int n = argc - 2;
  for (int i = 0; i <= n + (long_zstd_path != NULL) && !failures; i++) {
    const char *src = i < n ? argv[2 + i] : i == n ? longp : zlongp;
    const char *other = i + 1 < n ? argv[3 + i] : argv[2];
    for (size_t v = 0; v < 3; v++) views[v].o.file = src;
    grow_and_check(dir, src, other, supp);
  }
  unlink(longp);
  unlink(zlongp);
  nd_supp_free(supp);
  if (!failures)
    printf("ok: %d traces grown piece by piece and read on%s\n", n + 1 + (long_zstd_path != NULL),
           long_zstd_path ? " (one compressed)" : " (none compressed: built without libzstd)");
  return failures ? 1 : 0;
}
