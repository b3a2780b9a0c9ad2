// SPDX-License-Identifier: MIT
// trace.c: writing the trace file (interpose/common/trace_format.h).
//
// The file is created at start-up (a fork child: at its first allocation, so a fork that only
// execs leaves nothing), O_EXCL|O_NOFOLLOW, mode 0600, at an absolute path fixed then (a
// relative NDMEM_OUTPUT is taken from the start directory; an exec'd child's goes beside its
// parent's trace), so a later chdir or a child's own working directory never receives one. Its
// descriptor lives above the program's range (nd_os_fd_high), is checked before every flush and
// opened again if the program closed it. A writer thread, started at the first
// tracked block, flushes every NDMEM_FLUSH_MS: new modules, new stacks, sites whose totals
// changed, the process counters, then a FLUSH record. At the end (exit, _exit, a fatal signal)
// the live tracked blocks, an EXIT and an END record follow. The writer thread blocks all
// signals and never allocates through the hooks.
#include "runtime/module.h"
#include "account/track.h"

#include "runtime/allocstat.h"
#include "device/cuda_hooks.h"
#include "common/fmt.h"
#include "account/growth.h"
#include "output/metrics.h"
#include "output/rss.h"
#include "heap/regions.h"
#include "common/os.h"
#include "stacks/python.h"
#include "scan/reach.h"
#include "runtime/shim.h"
#include "runtime/sysmem.h"
#include "common/trace_write.h"
#include "ws/ws.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef ND_HAVE_ZSTD
#define ZSTD_STATIC_LINKING_ONLY // ZSTD_customMem: its memory from ndmem's own pages
#include <zstd.h>
#endif

extern char **environ;

#define OUT_BUF (1u << 20)
#define ZOUT_BUF (256u << 10) // compressed bytes on their way to the file

// File not created yet; created; failed (tracing stops); complete (the final flush wrote END:
// a flush that comes later, the writer thread's or the limits', writes nothing after it); an exec
// is being made (its EXEC record is the last, unless it fails: then TR_OK again).
enum { TR_LATER, TR_OK, TR_OFF, TR_DONE, TR_EXEC };

static struct {
  int on;     // tracing configured and set up
  int state;  // TR_*
  char dir[4096]; // absolute folder a relative NDMEM_OUTPUT is taken from ("" if absolute)
  char path[4096 + ND_CONFIG_PATH_MAX + 512];
  dev_t dev;  // the file created, recognised at every flush
  ino_t ino;
  int fd;     // the file, above the program's descriptors; -1 before it is made, and between
              // flushes where it would lie in the program's range (transient)
  int transient; // opened for each flush and closed after: no room above the program's range
  void *named;   // then its first page, mapped: where an exec'd child finds its parent's trace
  pthread_mutex_t lock;
  nd_tw_t w;
  char *buf;
  void *zc;   // ZSTD_CCtx * (NDMEM_COMPRESS=1), its memory ndmem's own pages
  char *zbuf;
  uint64_t seq;
  unsigned long long adds, subs; // loader map generation last written
  uint32_t module_ids;
  int thread_started; // atomic
  nd_trace_header_t hdr;
  nd_rec_exit_t exit; // how the process ended (final flush)
  uint64_t growth_sites; // sites the growth detector has named (the metrics file)
  uint64_t win_cycle; // the cycle clock when the sites' windows last closed
  unsigned win_flushes; // flushes since they last closed
  uint64_t progress; // atomic, moved by the flush that holds the lock as it works through the sites
} tr = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

// ---------------------------------------------------------------- state

// The trace is being written (the module's `writing`).
static int nd_trace_enabled(void) { return tr.on && tr.state != TR_OFF; }

// Creates the file now (a fork child: at its first allocation); alone: no other thread runs.
static void nd_trace_create(int alone);
// final: live blocks, EXIT and END (the end of accounting).
static void nd_trace_flush(int final);
// A flush, and an exec's record (NULL: none) before its FLUSH record.
static void flush_exec(int final, const nd_rec_exec_t *ex, const char *path);

static void start_thread(void);

// ---------------------------------------------------------------- path and header

static void copy_bounded(char *dst, size_t cap, const char *src) {
  size_t n = 0;
  while (src[n] && n + 1 < cap) dst[n] = src[n], n++;
  dst[n] = 0;
}

// An exec'd child's parent under ndmem keeps its trace open above its other descriptors
// (nd_os_fd_high): the folder of the file among the parent's highest descriptors whose header is
// the parent's. Only regular files are opened (a pipe or a terminal there is left alone). 0 or -1.
// Keeps the 8 highest descriptor numbers of a listing (nd_os_each_number), descending.
static int keep_highest(void *ctx, long fd) {
  long *top = ctx;
  for (int i = 0; i < 8; i++)
    if (fd > top[i]) {
      for (int j = 7; j > i; j--) top[j] = top[j - 1];
      top[i] = fd;
      break;
    }
  return 0;
}

// Whether the file opened through `at` (its name: path) is a trace written by pid (its header):
// 0 with its folder in dir.
static int trace_of(const char *at, const char *path, pid_t pid, char *dir, size_t cap) {
  int tfd = open(at, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), found = -1;
  if (tfd < 0) return -1;
  struct stat st;
  nd_trace_header_t h;
  size_t n = strlen(path);
  if (n < cap && path[0] == '/' && fstat(tfd, &st) == 0 && S_ISREG(st.st_mode) &&
      pread(tfd, &h, sizeof h, 0) == (ssize_t)sizeof h && !memcmp(h.magic, ND_TRACE_MAGIC, 8) &&
      h.pid == (uint64_t)pid) {
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    *(slash == dir ? slash + 1 : slash) = 0;
    found = 0;
  }
  close(tfd);
  return found;
}

// A parent that keeps no descriptor on its trace between flushes (no room above its limit) names
// it by a read-only shared mapping of its first page (nd_trace_create): such a line of its
// /proc/PID/maps whose file is its trace. 0 or -1.
static int mapped_trace_dir(pid_t ppid, char *dir, size_t cap) {
  char path[64], buf[8192];
  nd_os_proc_path(path, sizeof path, ppid, "maps", -1);
  int fd = open(path, O_RDONLY | O_CLOEXEC), found = -1;
  if (fd < 0) return -1;
  size_t len = 0;
  ssize_t got;
  while (found < 0 && (got = read(fd, buf + len, sizeof buf - 1 - len)) > 0) {
    len += (size_t)got;
    char *line = buf, *nl;
    while (found < 0 && (nl = memchr(line, '\n', (size_t)(buf + len - line)))) {
      *nl = 0; // "lo-hi perms offset dev inode   path"
      const char *perms = strchr(line, ' '), *file = perms ? strchr(perms, '/') : NULL;
      if (file && !strncmp(perms + 1, "r--s 00000000 ", 14))
        found = trace_of(file, file, ppid, dir, cap);
      line = nl + 1;
    }
    len = (size_t)(buf + len - line);
    memmove(buf, line, len);
    if (len == sizeof buf - 1) len = 0; // a line longer than the buffer: not ours
  }
  close(fd);
  return found;
}

static int parent_trace_dir(pid_t ppid, char *dir, size_t cap) {
  char path[64];
  nd_os_proc_path(path, sizeof path, ppid, "fd", -1);
  long top[8] = {-1, -1, -1, -1, -1, -1, -1, -1}; // the 8 highest, descending
  if (nd_os_each_number(path, keep_highest, top) < 0) return -1;
  int found = -1;
  for (int i = 0; i < 8 && top[i] >= 3 && found < 0; i++) {
    char link[64], file[4096];
    nd_os_proc_path(link, sizeof link, ppid, "fd", top[i]);
    ssize_t len = readlink(link, file, sizeof file - 1);
    if (len <= 0 || file[0] != '/') continue; // a pipe, a socket
    file[len] = 0;
    found = trace_of(link, file, ppid, dir, cap);
  }
  return found < 0 ? mapped_trace_dir(ppid, dir, cap) : found;
}

// The folder a relative NDMEM_OUTPUT is taken from, fixed at start-up: the working directory of
// the process the user started; for an exec'd child, the folder of its parent's trace (else its
// parent's working directory), so a child started elsewhere (subprocess's cwd=, a test's temporary
// folder) writes beside its parent and never into a working directory of its own.
static void fix_dir(void) {
  tr.dir[0] = 0;
  if (nd_cfg.output[0] == '/') return;
  int saved = errno;
  ssize_t n = -1;
  if (nd_child == ND_EXEC_CHILD) {
    n = parent_trace_dir(getppid(), tr.dir, sizeof tr.dir) == 0 ? 1 : -1;
    // A parent that already ended (an orphan, adopted by init: multiprocessing's resource
    // tracker) or one of another user cannot be looked at: the folder the shell started the
    // job in ($PWD, which children inherit), else the parent's working directory.
    const char *pwd = getenv("PWD");
    struct stat st;
    if (n < 0 && pwd && pwd[0] == '/' && strlen(pwd) < sizeof tr.dir && stat(pwd, &st) == 0 &&
        S_ISDIR(st.st_mode)) {
      memcpy(tr.dir, pwd, strlen(pwd) + 1);
      n = 1;
    }
    if (n < 0) {
      char link[64];
      nd_os_proc_path(link, sizeof link, getppid(), "cwd", -1);
      n = readlink(link, tr.dir, sizeof tr.dir - 1);
      if (n > 0 && tr.dir[0] == '/') tr.dir[n] = 0;
      else n = -1;
    }
  }
  if (n < 0 && !getcwd(tr.dir, sizeof tr.dir)) tr.dir[0] = 0; // unreachable cwd: relative it stays
  errno = saved;
}

// ---------------------------------------------------------------- compression

#ifdef ND_HAVE_ZSTD
// zstd's memory: ndmem's own pages, never the program's heap. Its size sits in front of the block
// (zstd frees by pointer alone). Requests are few and large: the context and its workspace, made
// once, at the first compression (the writer thread's first flush).
static void *z_alloc(void *opaque, size_t n) {
  (void)opaque;
  size_t *p = nd_os_map(n + 64);
  if (!p) return NULL;
  p[0] = n + 64;
  return (char *)p + 64;
}
static void z_free(void *opaque, void *a) {
  (void)opaque;
  if (!a) return;
  size_t *p = (size_t *)((char *)a - 64);
  nd_os_unmap(p, p[0]);
}
#endif

// Level 1: a torch import's 250 MB of exact-mode records become 9 MB at ~800 MB/s of one core,
// on the writer thread. Without libzstd, or NDMEM_COMPRESS=0, the records are written plain.
static void compressor_setup(void) {
#ifdef ND_HAVE_ZSTD
  if (!nd_cfg.compress) return;
  ZSTD_customMem mem = {z_alloc, z_free, NULL};
  ZSTD_CCtx *zc = ZSTD_createCCtx_advanced(mem);
  tr.zbuf = nd_os_map(ZOUT_BUF);
  if (!zc || !tr.zbuf || ZSTD_isError(ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, 1))) {
    if (zc) ZSTD_freeCCtx(zc);
    if (tr.zbuf) nd_os_unmap(tr.zbuf, ZOUT_BUF);
    tr.zbuf = NULL;
    return;
  }
  tr.zc = zc;
  tr.hdr.flags |= ND_TRACE_ZSTD;
#endif
}

// A new trace (start-up, a fork child's): a new stream after its plain header.
static int compressor_start(void) {
#ifdef ND_HAVE_ZSTD
  if (!tr.zc) return 0;
  ZSTD_CCtx_reset(tr.zc, ZSTD_reset_session_only);
  return nd_tw_compress(&tr.w, tr.zc, tr.zbuf, ZOUT_BUF);
#else
  return 0;
#endif
}

// The header's start: now, on both clocks.
static void stamp_start(nd_trace_header_t *h) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  h->start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  h->start_mono_ns = nd_os_mono_ns();
}

static void nd_trace_setup(void) {
  if (nd_sites_init((int)nd_cfg.depth) != 0) return;
  nd_sites_depth = (int)nd_cfg.depth;
  tr.buf = nd_os_map(OUT_BUF);
  if (!tr.buf) return;
  compressor_setup();
  nd_trace_header_t *h = &tr.hdr;
  memcpy(h->magic, ND_TRACE_MAGIC, 8);
  h->version = ND_TRACE_VERSION;
  h->header_size = sizeof *h;
  h->pid = (uint64_t)nd_os_getpid();
  stamp_start(h);
  h->sample_interval = (uint64_t)nd_cfg.sample;
  h->track_min = (uint64_t)nd_cfg.track_min;
  h->depth = (uint32_t)nd_cfg.depth;
  h->page_size = (uint32_t)nd_os_page_size();
  if (gethostname(h->host, sizeof h->host) != 0) copy_bounded(h->host, sizeof h->host, "unknown");
  h->host[sizeof h->host - 1] = 0;
  ssize_t n = readlink("/proc/self/exe", h->exe, sizeof h->exe - 1);
  h->exe[n > 0 ? n : 0] = 0;
  h->origin = nd_child != ND_EXEC_CHILD ? ND_ORIGIN_STARTED
              : nd_parent_unread       ? ND_ORIGIN_UNKNOWN // taken as traced, not seen: no claim
                                       : ND_ORIGIN_EXEC;
  fix_dir();
  nd_py_setup();
  nd_metrics_setup(tr.dir);
  tr.on = 1;
  tr.state = TR_LATER;
  nd_track_setup((double)nd_cfg.sample, (size_t)nd_cfg.track_min, &tr.thread_started,
                 start_thread);
  nd_trace_create(1);
}

// ---------------------------------------------------------------- writing

static void warn_once(const char *what, const char *path, int err) {
  if (nd_quiet()) return;
  nd_say_path_error(what, path, err, "tracing off (counters and summary go on)");
}

// A file of this process from before an exec: written by an earlier image of this very process
// (same pid, started no earlier than the process was created: a process that had the pid before
// ended before this one began). An exec chain (a launcher script that execs another, pyenv's
// shims, `exec` in a shell) ends in the program the user meant: its image takes the path over,
// as the trace of the run, whatever the earlier images wrote (a fork child that became this
// process wrote a header at its first allocation; a script that ran for a while, its flushes).
static int take_over(const char *path) {
  int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  nd_trace_header_t h;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1 &&
      st.st_size >= (off_t)sizeof h && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
      memcmp(h.magic, ND_TRACE_MAGIC, 8) == 0 && h.pid == (uint64_t)nd_os_getpid()) {
    uint64_t born = st.st_size == (off_t)sizeof h ? 0 : nd_os_process_start_mono_ns();
    if ((st.st_size == (off_t)sizeof h || (born && h.start_mono_ns >= born)) && ftruncate(fd, 0) == 0)
      return fd;
  }
  close(fd);
  return -1;
}

// Writes decimal v at p (fmt.c's digits; a path around it may be longer than an nd_buf_t);
// returns the digits' count (at most 20).
static size_t put_u64(char *p, uint64_t v) {
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_u64(&b, v);
  memcpy(p, b.data, b.len);
  return b.len;
}

// The file at tr.path is another process's (a wrapper in front of the program -- timeout, time,
// sh -c -- took a fixed NDMEM_OUTPUT first; DataLoader workers share it; a launcher's child took
// %r's name): this process writes a name of its own beside it, the pid before ".trace" (after
// the name when it has no such end), then "-2" ... "-9" after the pid where that is taken too:
// job.trace -> job.4242.trace -> job.4242-2.trace (docs/jobs.md). The descriptor, or -1 with
// *err set and tr.path as it was asked.
static int derive(int *err) {
  static const char ext[] = ".trace";
  const size_t el = sizeof ext - 1;
  char asked[sizeof tr.path];
  size_t n = strlen(tr.path);
  memcpy(asked, tr.path, n + 1);
  const char *slash = strrchr(asked, '/'), *name = slash ? slash + 1 : asked;
  size_t stem = strlen(name) > el && !strcmp(asked + n - el, ext) ? n - el : n;
  if (n + 1 + 20 + 2 + 1 > sizeof tr.path) {
    *err = ENAMETOOLONG;
    return -1;
  }
  for (unsigned k = 1; k <= 9; k++) {
    char *p = tr.path + stem;
    *p++ = '.';
    p += put_u64(p, (uint64_t)nd_os_getpid());
    if (k > 1) *p++ = '-', *p++ = (char)('0' + k);
    memcpy(p, asked + stem, n - stem + 1);
    int fd = open(tr.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    *err = errno;
    if (fd < 0 && *err == EEXIST) fd = take_over(tr.path); // an earlier image's of this pid
    if (fd >= 0) return fd;
    if (*err != EEXIST) break;
  }
  memcpy(tr.path, asked, n + 1);
  return -1;
}

// NDMEM_RUN_LOG (ndmem run sets it; docs/configuration.md): one line appended for this process's
// trace, "trace PID PPID ORIGIN PATH", or for a trace it could not write, "lost PID PPID ORIGIN
// PATH<tab>WHY", so that the run knows every process's; and at its end, "end PID REALTIME_NS
// PEAK_BYTES" (its heap and mmap peaks), so that the run can tell a wrapper from its program. One
// write(2) of one line to a file opened O_APPEND: lines of processes writing at once do not mix.
static void run_log_line(const char *line, size_t n) {
  int saved = errno;
  int fd = open(nd_cfg.run_log, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t w = write(fd, line, n);
    (void)w; // nothing to do about a log that cannot be written: the trace itself is written
    close(fd);
  }
  errno = saved;
}

static void run_log_end(void) {
  if (nd_cfg.run_log[0] != '/') return;
  ndmem_stats_t s;
  nd_counters_snapshot_process(&s);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t peak = s.kind[0].peak_bytes + s.kind[1].peak_bytes;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "end ");
  nd_buf_u64(&b, (uint64_t)nd_os_getpid());
  nd_buf_char(&b, ' ');
  nd_buf_u64(&b, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
  nd_buf_char(&b, ' ');
  nd_buf_u64(&b, peak > 0 ? (uint64_t)peak : 0);
  nd_buf_char(&b, '\n');
  run_log_line(b.data, b.len);
}

static void run_log(const nd_trace_header_t *h, int err) {
  if (nd_cfg.run_log[0] != '/') return;
  char line[sizeof tr.path + 128], *p = line;
  const char *what = err ? "lost " : "trace ";
  size_t wl = strlen(what), pl = strlen(tr.path);
  memcpy(p, what, wl), p += wl;
  p += put_u64(p, h->pid), *p++ = ' ';
  p += put_u64(p, h->ppid), *p++ = ' ';
  p += put_u64(p, h->origin), *p++ = ' ';
  memcpy(p, tr.path, pl), p += pl;
  if (err) {
    const char *why = nd_errno_text(err);
    size_t n = strlen(why);
    *p++ = '\t';
    memcpy(p, why, n < 96 ? n : 96), p += n < 96 ? n : 96;
  }
  *p++ = '\n';
  run_log_line(line, (size_t)(p - line));
}

static void create_entered(int alone);
// After a write: a descriptor that lies in the program's range is not kept (trace_fd opens the
// file again for the next flush), so that a scan of the program's descriptors never meets it.
static void put_down(void) {
  if (!tr.transient || tr.fd < 0) return;
  int saved = errno;
  close(tr.fd);
  tr.fd = -1;
  errno = saved;
}

// Creates the file and writes the header (once; under tr.lock). `alone`: no other thread runs
// (start-up, a fork child's first allocation), so the descriptor may go above the soft limit.
static void create_locked(int alone) {
  if (tr.state != TR_LATER) return;
  tr.state = TR_OFF;
  nd_os_fd_enter(); // the descriptor is made, kept and written: no move of the program's meanwhile
  create_entered(alone);
  nd_os_fd_leave();
}

static void create_entered(int alone) {
  char rel[ND_CONFIG_PATH_MAX + 256];
  if (nd_config_expand_path(rel, sizeof rel, nd_cfg.output, environ) != 0) {
    warn_once("cannot expand NDMEM_OUTPUT", nd_cfg.output, EINVAL);
    return;
  }
  size_t dl = strlen(tr.dir), rl = strlen(rel);
  if (dl + rl + 2 > sizeof tr.path) {
    warn_once("trace path too long", rel, ENAMETOOLONG);
    return;
  }
  memcpy(tr.path, tr.dir, dl);
  if (dl) tr.path[dl++] = '/';
  memcpy(tr.path + dl, rel, rl + 1);
  int saved = errno;
  int fd = open(tr.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int err = errno;
  if (fd < 0 && err == EEXIST) fd = take_over(tr.path);
  if (fd < 0 && err == EEXIST) fd = derive(&err);
  errno = saved;
  nd_trace_header_t h = tr.hdr;
  h.pid = (uint64_t)nd_os_getpid();
  // A fork child's parent as the fork saw it (its first allocation may come after the parent
  // exited, when getppid says 1 or a subreaper); others' now, at start-up.
  h.ppid = tr.hdr.ppid ? tr.hdr.ppid : (uint64_t)getppid();
  if (fd < 0) {
    run_log(&h, err ? err : EIO);
    warn_once("cannot create trace", tr.path, err);
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return;
  }
  tr.dev = st.st_dev;
  tr.ino = st.st_ino;
  tr.fd = nd_os_fd_high(fd, alone);
  nd_os_fd_own(&tr.fd);
  tr.transient = nd_os_fd_in_range(tr.fd);
  nd_tw_init(&tr.w, tr.fd, tr.buf, OUT_BUF);
  // Where the process stands in its job, read from the environment as %r was just expanded from
  // it, so the trace's name and its header agree (a fork child: its environment at its first
  // allocation, usually its parent's).
  nd_rank_t rank;
  nd_config_rank(environ, &rank);
  h.rank = rank.rank;
  h.world_size = rank.world_size;
  h.local_rank = rank.local_rank;
  h.local_world_size = rank.local_world_size;
  h.rank_from = (uint16_t)rank.from;
  nd_tw_header(&tr.w, &h);
  tr.adds = tr.subs = ~0ull;
  if (nd_tw_flush(&tr.w) != 0 || compressor_start() != 0) {
    run_log(&h, tr.w.error ? tr.w.error : ENOMEM);
    warn_once("cannot write trace", tr.path, tr.w.error ? tr.w.error : ENOMEM);
  } else {
    tr.state = TR_OK;
    run_log(&h, 0);
  }
  // Kept in no descriptor between flushes (put_down), the trace is named by a mapping of its first
  // page instead, so that a child exec'd under ndmem still finds its parent's trace (fix_dir).
  if (tr.transient && !tr.named) {
    int saved = errno, rfd = open(tr.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC); // (tr.fd writes only)
    if (nd_os_same_file(rfd, tr.dev, tr.ino)) tr.named = nd_os_map_file(rfd, (size_t)nd_os_page_size());
    if (rfd >= 0) close(rfd);
    errno = saved;
  }
  put_down();
}

static void nd_trace_create(int alone) {
  if (!tr.on) return;
  nd_os_mutex_lock(&tr.lock);
  create_locked(alone);
  pthread_mutex_unlock(&tr.lock);
}

// The file's descriptor for a flush: still the file created, or that file opened again (a program
// that closes every descriptor closes ndmem's too; one kept in no descriptor between flushes:
// put_down); -1 when the file is gone or was replaced.
static int trace_fd(void) {
  int saved = errno;
  if (!nd_os_same_file(tr.fd, tr.dev, tr.ino)) {
    int fd = open(tr.path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (nd_os_same_file(fd, tr.dev, tr.ino)) {
      tr.fd = nd_os_fd_high(fd, 0);
      nd_os_fd_own(&tr.fd);
      tr.transient = nd_os_fd_in_range(tr.fd);
    } else {
      if (fd >= 0) close(fd);
      tr.fd = -1;
      warn_once("the trace was removed or replaced", tr.path, fd >= 0 ? ESTALE : errno);
    }
  }
  errno = saved;
  return tr.fd;
}

static int write_modules(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  (void)ctx;
  uintptr_t lo, hi;
  nd_module_range(info, &lo, &hi);
  if (!hi) return 0;
  const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : tr.hdr.exe;
  size_t len = strlen(path);
  if (len > 4096) len = 4096;
  nd_rec_module_t m = {tr.module_ids++, (uint32_t)len, info->dlpi_addr, lo, hi};
  nd_tw_record(&tr.w, ND_REC_MODULE, &m, sizeof m, path, (uint32_t)len);
  return 0;
}

static int loader_generation(struct dl_phdr_info *info, size_t size, void *ctx) {
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    unsigned long long *g = ctx;
    g[0] = info->dlpi_adds;
    g[1] = info->dlpi_subs;
  }
  return 1; // the first entry carries the counters
}

// Anonymous resident memory beside the counters (RESIDENT, version 8; 9: and the allocator's
// account), from the statm descriptor sysmem.c keeps above the program's range (nd_statm_self).
static int resident_now(uint64_t *v) { return nd_statm_self(v); }

// The host memory ndmem tracks now: heap, mmap, pinned, managed and the workspace arenas.
static uint64_t tracked_now(void) {
  ndmem_stats_t s;
  nd_counters_snapshot_process(&s);
  nd_ws_totals_t w;
  nd_ws_totals(&w);
  int64_t tracked = (int64_t)w.arena_bytes;
  for (int k = 0; k < NDMEM_KIND_DEVICE0; k++) tracked += s.kind[k].live_bytes;
  return tracked > 0 ? (uint64_t)tracked : 0;
}

// 0 with the bytes read (the metrics file has them too), or -1: no record.
static int write_resident(uint64_t *anon) {
  uint64_t v;
  if (resident_now(&v) != 0) return -1;
  *anon = v;
  nd_rec_resident_t r;
  memset(&r, 0, sizeof r);
  r.mono_ns = nd_os_mono_ns();
  r.anon_bytes = v;
  // The allocator's own view beside it (version 9): its last answer, which only the writer
  // thread asks for, outside this lock (allocstat.c).
  nd_allocstat_fill(&r);
  nd_tw_record(&tr.w, ND_REC_RESIDENT, &r, sizeof r, NULL, 0);
  return 0;
}

static void write_counters(void) {
  ndmem_stats_t s;
  nd_counters_snapshot_process(&s);
  nd_rec_counters_t c;
  memset(&c, 0, sizeof c);
  c.mono_ns = nd_os_mono_ns();
  c.threads = s.threads;
  for (int i = 0; i < ND_TRACE_KINDS; i++) {
    c.kind[i].live_bytes = s.kind[i].live_bytes;
    c.kind[i].peak_bytes = s.kind[i].peak_bytes;
    c.kind[i].live_count = s.kind[i].live_count;
    c.kind[i].allocs = s.kind[i].allocs;
    c.kind[i].frees = s.kind[i].frees;
  }
  memcpy(c.calls, s.calls, sizeof c.calls);
  memcpy(c.fallbacks, s.fallbacks, sizeof c.fallbacks);
  nd_tw_record(&tr.w, ND_REC_COUNTERS, &c, sizeof c, NULL, 0);
}

// Sites whose totals changed since the last flush, each with its window's floor. The windows
// close at this flush when the cycle clock moved since they last did (a window holds at least
// one whole cycle, so a cycle's temporaries are back at their floor somewhere in it), at every
// flush in a job without cycles, and after ND_WINDOW_FLUSHES flushes in one whose cycles stalled
// (a stream the detector lost: time windows then); a closed window goes to the growth detector.
static void pycode_record(void *ctx, const nd_rec_pycode_t *r, const char *strings) {
  (void)ctx;
  nd_tw_record(&tr.w, ND_REC_PYCODE, r, sizeof *r, strings, r->qualname_len + r->filename_len);
}

static void write_sites(void) {
  uint64_t clock = __atomic_load_n(&nd_cycle_clock, __ATOMIC_RELAXED), now = nd_os_mono_ns();
  int close = clock == 0 || clock != tr.win_cycle || ++tr.win_flushes >= ND_WINDOW_FLUSHES;
  if (close) tr.win_flushes = 0;
  tr.win_cycle = clock;
  uint32_t win = close ? nd_growth_close(clock, now) : 0;
  // The peak moments, read before the sites: a site that changed since the one read here has
  // noted its bytes at it (a moment that moves during the loop is written at the next flush).
  uint16_t epoch[ND_PEAK_GROUPS];
  for (int grp = 0; grp < ND_PEAK_GROUPS; grp++) {
    nd_peak_moment_t m;
    epoch[grp] = nd_peak_read(grp, &m);
    if (!epoch[grp]) continue;
    nd_rec_peak_t p = {(uint16_t)grp, epoch[grp], 0, m.mono_ns, (uint64_t)m.bytes, (uint64_t)m.max};
    nd_tw_record(&tr.w, ND_REC_PEAK, &p, sizeof p, NULL, 0);
  }
  uint32_t n = nd_sites_count();
  for (uint32_t i = 0; i < n; i++) {
    // (nd_trace_flush; the sites are what takes long: modules, Python code objects and the other
    // records are not counted, and a long write of them gets the patience alone)
    __atomic_store_n(&tr.progress, tr.progress + 1, __ATOMIC_RELAXED);
    nd_site_t *s = nd_site_by_id(i);
    if (!s) continue; // being created: next flush
    if (!s->written) {
      // Python code objects first: every one a stack names was interned before the stack was.
      nd_py_write_pending(pycode_record, NULL);
      nd_rec_stack_t st = {s->id, s->depth};
      uintptr_t ips[ND_STACK_MAX];
      nd_site_stack(s, ips);
      nd_tw_record(&tr.w, ND_REC_STACK, &st, sizeof st, ips, s->depth * (uint32_t)sizeof(uint64_t));
      s->written = 1;
    }
    if (!__atomic_exchange_n(&s->dirty, 0, __ATOMIC_RELAXED)) continue;
    nd_rec_site_t r = {s->id, s->kind, s->sampled ? ND_SITE_SAMPLED : 0,
                       __atomic_load_n(&s->allocs, __ATOMIC_RELAXED),
                       __atomic_load_n(&s->frees, __ATOMIC_RELAXED),
                       __atomic_load_n(&s->alloc_bytes, __ATOMIC_RELAXED),
                       __atomic_load_n(&s->free_bytes, __ATOMIC_RELAXED),
                       (uint64_t)__atomic_load_n(&s->peak, __ATOMIC_RELAXED), 0, clock};
    if (close) {
      r.floor_bytes = nd_site_window(s);
    } else {
      int64_t f = __atomic_load_n(&s->floor, __ATOMIC_RELAXED);
      r.floor_bytes = f > 0 ? (uint64_t)f : 0;
    }
    nd_tw_record(&tr.w, ND_REC_SITE, &r, sizeof r, NULL, 0);
    uint16_t e = epoch[nd_peak_group(s->kind)];
    if (e && __atomic_load_n(&s->pk_epoch, __ATOMIC_ACQUIRE) == e) {
      int64_t at = nd_site_at_peak(s);
      nd_rec_site_peak_t sp = {s->id, s->kind, e, at > 0 ? (uint64_t)at : 0};
      nd_tw_record(&tr.w, ND_REC_SITE_PEAK, &sp, sizeof sp, NULL, 0);
    }
    nd_rec_growth_t g;
    if (close && nd_growth_window(s, win, r.floor_bytes, r.allocs - r.frees, clock, now,
                                  (uint64_t)nd_cfg.growth_cycles, nd_quiet() ? -1 : 2, &g)) {
      tr.growth_sites++;
      nd_tw_record(&tr.w, ND_REC_GROWTH, &g, sizeof g, NULL, 0);
    }
  }
}

static void module_record(void *ctx, uint16_t tag, const void *payload, uint32_t size) {
  (void)ctx;
  nd_tw_record(&tr.w, tag, payload, size, NULL, 0);
}

// A live block's BLOCK record: as the reachability scan saw it, the other threads stopped
// (reach.h), or from the tables where no scan ran. A block whose site's STACK is not in the trace
// (made by a thread after this flush wrote the sites) is left out, and counted by the reader as
// live without a record: a BLOCK naming an unknown stack would make the whole trace unreadable.
static void live_record(void *ctx, const nd_reach_block_t *b) {
  uint64_t *count = ctx;
  if (!b->site || !b->site->written) return;
  uint64_t weight = b->size, n;
  uint16_t flags = (uint16_t)(b->reach << ND_BLOCK_REACH_SHIFT);
  if (b->from == ND_REACH_FROM_BLOCKS) { // a heap block may be a sample standing for others
    nd_block_t blk = {b->addr, b->site, b->size, b->born, b->cycle};
    nd_track_weigh(&blk, &n, &weight);
    if (b->site->sampled) flags |= ND_SITE_SAMPLED;
  }
  nd_rec_block_t r = {b->site->id, b->site->kind, flags, b->addr, b->size, weight, b->born,
                      b->cycle};
  nd_tw_record(&tr.w, ND_REC_BLOCK, &r, sizeof r, NULL, 0);
  (*count)++;
}

static void block_record(void *ctx, const nd_block_t *b) {
  nd_reach_block_t r = {b->addr, b->size, b->mono_ns, b->cycle, b->site, ND_REACH_FROM_BLOCKS,
                        ND_REACH_NONE};
  live_record(ctx, &r);
}

static void device_record(void *ctx, const nd_cuda_block_t *b) {
  nd_reach_block_t r = {(uintptr_t)b->key, b->size, b->born, b->cycle, b->site,
                        ND_REACH_FROM_DEVICE, ND_REACH_NONE};
  live_record(ctx, &r);
}

static void region_record(void *ctx, const nd_range_t *m) {
  nd_reach_block_t r = {m->start, m->end - m->start, m->born, m->cycle, m->tag,
                        ND_REACH_FROM_MAPS, ND_REACH_NONE};
  live_record(ctx, &r);
}

// How the process ends (enum nd_exit_how), before the final flush.
// code: the exit status (-1: a normal exit's not known) or the signal.
static void nd_trace_set_exit(int how, int code) {
  tr.exit.mono_ns = nd_end_ns ? nd_end_ns : nd_os_mono_ns();
  tr.exit.how = (uint32_t)how;
  tr.exit.code = code < 0 ? 0 : code;
  tr.exit.tid = (uint32_t)nd_os_gettid();
  tr.exit.flags = (how == ND_EXIT_NORMAL && code >= 0) || how == ND_EXIT_UNDERSCORE ? ND_EXIT_STATUS : 0;
}

static void nd_trace_flush(int final) { flush_exec(final, NULL, NULL); }

// A followed exec of a program that did work of its own (EXEC_KEEP_BYTES at its heap and mmap
// peak, or EXEC_KEEP_NS of life since it started or was forked) keeps its trace: flushed whole, then moved aside
// (move_aside), so that an exec chain shows each program in turn (`ndmem run` reports them in
// order). A launcher's link of the chain (a shell that only execs, pyenv's shims, `nice`) is
// taken over by the new image, as the program the user meant.
#define EXEC_KEEP_BYTES (1ll << 20)
#define EXEC_KEEP_NS 1000000000ull
// A fork child that execs (subprocess, a launcher starting its ranks) ran its parent's program
// until then, and its peak is its parent's, inherited: only its life counts.
static int exec_keeps(void) {
  if (nd_os_mono_ns() - tr.hdr.start_mono_ns >= EXEC_KEEP_NS) return 1;
  if (tr.hdr.origin == ND_ORIGIN_FORK) return 0;
  ndmem_stats_t s;
  nd_counters_snapshot_process(&s);
  return s.kind[NDMEM_KIND_HEAP].peak_bytes + s.kind[NDMEM_KIND_MMAP].peak_bytes >= EXEC_KEEP_BYTES;
}

// The trace of an image about to exec moves to "STEM.execN.trace" beside it (STEM: the path less
// its ".trace"; N the first of 1-9 free: link, which never replaces a file, then unlink), logged
// for the run under its new name; the new image then creates its own at the path. Where none is
// free, or the folder cannot link, it stays, for the new image to take over.
static void move_aside(void) {
  static const char ext[] = ".trace";
  const size_t el = sizeof ext - 1;
  char to[sizeof tr.path];
  size_t n = strlen(tr.path);
  size_t stem = n > el && !strcmp(tr.path + n - el, ext) ? n - el : n;
  if (n + 8 > sizeof to) return;
  int saved = errno;
  for (char k = '1'; k <= '9'; k++) {
    memcpy(to, tr.path, stem);
    memcpy(to + stem, ".exec", 5);
    to[stem + 5] = k;
    memcpy(to + stem + 6, tr.path + stem, n - stem + 1);
    if (link(tr.path, to) == 0) {
      if (unlink(tr.path) == 0) {
        memcpy(tr.path, to, strlen(to) + 1);
        nd_trace_header_t h = tr.hdr;
        h.pid = (uint64_t)nd_os_getpid();
        h.ppid = tr.hdr.ppid ? tr.hdr.ppid : (uint64_t)getppid();
        run_log(&h, 0);
      } else {
        unlink(to);
      }
      break;
    }
    if (errno != EEXIST) break;
  }
  errno = saved;
}

static void flush_exec(int final, const nd_rec_exec_t *ex, const char *path) {
  if (!tr.on) return;
  // The last words wait for a flush of the writer thread's while it works (a million sites take
  // longer than a lock's patience): running beside it would interleave two writers' records.
  nd_os_mutex_lock_working(&tr.lock, &tr.progress);
  nd_os_fd_enter(); // ndmem's descriptors stay where they are while it writes (os.h)
  if (ex && ex->err && tr.state == TR_EXEC) tr.state = TR_OK; // it failed: the trace goes on
  // A fork child that never allocated (it only exec'd or _exit'ed) leaves no file: TR_LATER.
  int fd = tr.state == TR_OK ? trace_fd() : -1;
  if (fd < 0) {
    if (tr.state == TR_OK) tr.state = TR_OFF;
    // The metrics file does not depend on the trace's: a trace that could not be made or was
    // removed still leaves the counters to the textfile collector.
    uint64_t anon;
    if (tr.state == TR_OFF)
      nd_metrics_write(tr.growth_sites, resident_now(&anon) == 0 ? &anon : NULL);
    nd_os_fd_leave();
    pthread_mutex_unlock(&tr.lock);
    return;
  }
  tr.w.fd = fd;
  int keep = ex && !ex->err && ex->follow == ND_EXEC_FOLLOWED && exec_keeps();
  if (ex && !ex->err && ex->follow == ND_EXEC_FOLLOWED && !keep) {
    // Followed: the new image writes on where this one stopped (it takes the file over, trace's
    // pid being its own), so this one's figures since its last flush are not worth a flush of
    // every site at each link of an exec chain: the record and the batch's end.
    nd_tw_record(&tr.w, ND_REC_EXEC, ex, sizeof *ex, path, ex->path_len);
    nd_rec_flush_t f = {nd_os_mono_ns(), ++tr.seq, __atomic_load_n(&nd_cycle_clock, __ATOMIC_RELAXED),
                        __atomic_load_n(&nd_steady_ns, __ATOMIC_RELAXED)};
    nd_tw_record(&tr.w, ND_REC_FLUSH, &f, sizeof f, NULL, 0);
    if (nd_tw_flush(&tr.w) != 0) {
      warn_once("cannot write trace", tr.path, tr.w.error);
      tr.state = TR_OFF;
    } else {
      tr.state = TR_EXEC;
    }
    put_down();
    nd_os_fd_leave();
    pthread_mutex_unlock(&tr.lock);
    return;
  }
  int held = 0;
  unsigned long long gen[2] = {0, 0};
  dl_iterate_phdr(loader_generation, gen);
  if (gen[0] != tr.adds || gen[1] != tr.subs) { // the loader's map changed: write it again
    tr.adds = gen[0];
    tr.subs = gen[1];
    dl_iterate_phdr(write_modules, NULL);
    if (!final) nd_py_modules_changed(); // an embedding program may have dlopen'ed libpython
  }
  // The interpreter is looked for (python.h; nothing once decided), also by the last flush of a
  // run too short for the writer to have started, but not when the process may have stopped
  // inside malloc (a fatal signal, _exit from a handler): a failed dlsym allocates its message.
  if (!final || !nd_os_last_words) nd_py_detect();
  write_sites();
  nd_modules_write_records(module_record, NULL); // after the sites: records name their stacks
  uint64_t anon;
  int have_anon = write_resident(&anon) == 0;
  nd_rss_write(&tr.w, final); // the kernel's peak and its parts (version 18)
  write_counters();
  if (nd_py_state() != ND_PY_NONE) {
    nd_rec_python_t py;
    nd_py_record(&py);
    nd_tw_record(&tr.w, ND_REC_PYTHON, &py, sizeof py, NULL, 0);
  }
  if (ex) nd_tw_record(&tr.w, ND_REC_EXEC, ex, sizeof *ex, path, ex->path_len);
  nd_rec_flush_t f = {nd_os_mono_ns(), ++tr.seq, __atomic_load_n(&nd_cycle_clock, __ATOMIC_RELAXED),
                      __atomic_load_n(&nd_steady_ns, __ATOMIC_RELAXED)};
  nd_tw_record(&tr.w, ND_REC_FLUSH, &f, sizeof f, NULL, 0);
  if (final) {
    if (!tr.exit.mono_ns) nd_trace_set_exit(ND_EXIT_NORMAL, -1);
    nd_rec_scan_t scan;
    held = nd_reach_scan((int)tr.exit.how, &scan);
    nd_tw_record(&tr.w, ND_REC_SCAN, &scan, sizeof scan, NULL, 0);
    uint64_t blocks = 0;
    if (held) { // the blocks the scan classed, the threads still stopped
      nd_reach_each(live_record, &blocks);
    } else {
      nd_blocks_each(block_record, &blocks);
      nd_mmap_each_live(region_record, &blocks);
      nd_cuda_each_live(device_record, &blocks);
    }
    // The kernel's peak again (latest wins): the exit scan's own memory is the process's too, as
    // /usr/bin/time and the summary after it count it. Locks are only tried (threads may be held).
    nd_rss_write(&tr.w, 1);
    nd_tw_record(&tr.w, ND_REC_EXIT, &tr.exit, sizeof tr.exit, NULL, 0);
    nd_rec_end_t e = {nd_os_mono_ns(), blocks};
    nd_tw_record(&tr.w, ND_REC_END, &e, sizeof e, NULL, 0);
  }
  int bad = (final ? nd_tw_finish(&tr.w) : nd_tw_flush(&tr.w)) != 0;
  nd_reach_release(); // the other threads go on (from a scan of this final flush)
  if (bad) {
    warn_once("cannot write trace", tr.path, tr.w.error);
    tr.state = TR_OFF;
  } else if (final) {
    tr.state = TR_DONE;
    run_log_end();
  } else if (ex && !ex->err) { // nothing more until the exec fails; where it succeeds, its end
    tr.state = TR_EXEC;
    run_log_end();
    if (keep) move_aside();
  }
  // After the trace: its sites' windows named the growth.
  nd_metrics_write(tr.growth_sites, have_anon ? &anon : NULL);
  put_down();
  nd_os_fd_leave();
  pthread_mutex_unlock(&tr.lock);
}

// ---------------------------------------------------------------- writer thread

// The first flushes come sooner: after FIRST_FLUSH_MS, then at intervals doubling up to
// NDMEM_FLUSH_MS (100, 200, 400, 800 ms with the default), so that a job of a few seconds still
// has a timeline (a point at each flush) and a live view early; a long job pays 4 flushes more.
// Where the steady state begins (the first cycle closed, nd_steady_ns) the interval becomes a
// quarter of the time since, FIRST_FLUSH_MS at least and NDMEM_FLUSH_MS at most. Growth is
// judged by each site's floor over the flush windows of the steady state (3 at the least, and
// its last quarter decides whether it still rose: report/analyse/lifetime.c), and a loop that runs a
// second or two after a long start-up (imports, a process group, data loading) would otherwise
// get one or two windows at the default interval and could not be judged; so every window is at
// most a fifth of the loop so far, and a 1.5 s loop gets 10 (a long job pays about 10 flushes
// more, in the first 5 s of its loop). The writer naps FIRST_FLUSH_MS at a time, to see the
// steady state begin (an atomic load per nap, no flush) and whether the program's last thread
// ended (a pread of /proc/self/stat: nd_exit_if_alone).
#define FIRST_FLUSH_MS 100
static void *writer_main(void *arg) {
  (void)arg;
  nd_tls.mode = ND_T_BUSY; // nothing this thread does is the program's
  // The interpreter is looked for here, not in the hook that tracked the first block (python.h).
  nd_os_mutex_lock(&tr.lock);
  nd_py_detect();
  pthread_mutex_unlock(&tr.lock);
  int64_t least = FIRST_FLUSH_MS < nd_cfg.flush_ms ? FIRST_FLUSH_MS : nd_cfg.flush_ms;
  int64_t wait = least, due = least; // the interval; ms to the next flush
  uint64_t steady = 0;               // when the steady state began (0: not yet)
  for (;;) {
    int64_t nap = due < FIRST_FLUSH_MS ? due : FIRST_FLUSH_MS;
    nd_os_sleep_ms(nap);
    due -= nap;
    if (__atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) != ND_READY) break;
    nd_exit_if_alone();
    if (!steady && (steady = __atomic_load_n(&nd_steady_ns, __ATOMIC_RELAXED)) && due > least)
      due = least; // it began within the last nap
    if (due > 0) continue;
    uint64_t v; // the allocator asked here, holding no lock of ndmem's (allocstat.c)
    if (nd_allocstat_kind() != ND_ALLOCATOR_UNKNOWN && resident_now(&v) == 0)
      nd_allocstat_poll(v, tracked_now());
    nd_trace_flush(0);
    uint64_t now = nd_os_mono_ns();
    wait = steady ? (int64_t)((now > steady ? now - steady : 0) / 4000000) : wait * 2;
    if (wait < least) wait = least;
    if (wait > nd_cfg.flush_ms) wait = nd_cfg.flush_ms;
    due = wait;
  }
  return NULL;
}

// Without a thread (resource limits) the trace is still written at exit; a later block tries again.
static void start_thread(void) {
  if (nd_os_thread_once(&tr.thread_started, writer_main) < 0) tr.thread_started = 0;
}

// ---------------------------------------------------------------- fork

static void atfork_prepare(void) { nd_os_mutex_lock(&tr.lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&tr.lock); }
// The child writes its own trace (a new file, under its own pid, created at its first
// allocation: nd_thread_prepare calls nd_trace_create): every stack and module must be written
// there again, its sites count from the fork (nd_sites_atfork_rebase), and it needs its own
// writer thread. After the CUDA module's fork handler, which takes the parent's device blocks
// from their sites before they are rebased.
static void atfork_child(nd_tls_t *t) {
  (void)t;
  if (tr.fd >= 0) { // the parent's file: never written by the child
    int saved = errno;
    close(tr.fd);
    errno = saved;
    tr.fd = -1;
  }
  if (tr.named) { // the parent's, which would name it to the child's children
    nd_os_unmap(tr.named, (size_t)nd_os_page_size());
    tr.named = NULL;
  }
  if (tr.on && tr.state != TR_OFF) tr.state = TR_LATER;
  tr.hdr.origin = ND_ORIGIN_FORK; // its pid is its own (create_locked)
  tr.hdr.ppid = (uint64_t)getppid(); // the process that forked it (DataLoader's main)
  // The child's trace starts at the fork (its duration, and ndmemreport's check that a running
  // process is the trace's, go by the header's start).
  stamp_start(&tr.hdr);
  nd_track_fork(tr.hdr.start_mono_ns);
  tr.seq = 0;
  tr.module_ids = 0;
  tr.thread_started = 0;
  memset(&tr.exit, 0, sizeof tr.exit);
  nd_sites_atfork_rebase();
  nd_py_mark_unwritten();
  nd_allocstat_atfork_child();
  nd_rss_atfork_child();
  nd_metrics_atfork_child();
  pthread_mutex_init(&tr.lock, NULL);
}

static void setup(char *const *envp) {
  (void)envp;
  if (nd_cfg.trace) nd_trace_setup();
}

static void forked(void) { nd_trace_create(1); }
static void finish(int how, int code) {
  nd_trace_set_exit(how, code);
  nd_trace_flush(1);
}
static void flush(void) { nd_trace_flush(0); }
static void trace_exec(const nd_rec_exec_t *r, const char *path) { flush_exec(0, r, path); }

ND_MODULE(nd_trace_module) = {.name = "trace", .rank = 20, .order = 1, .setup = setup,
                              .atfork_prepare = atfork_prepare, .atfork_parent = atfork_parent,
                              .atfork_child = atfork_child, .forked = forked, .finish = finish,
                              .flush = flush, .exec = trace_exec, .writing = nd_trace_enabled};
