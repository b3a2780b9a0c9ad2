// SPDX-License-Identifier: MIT
// summary.c: what ndmem says on stderr: its remarks (bad settings, a trace it cannot create), in
// the process the user started only, and the summary at exit, through a copy of stderr kept
// above the program's descriptors. The rooms add their own lines (runtime/module.h).
#include "runtime/shim.h"

#include "common/fmt.h"
#include "common/os.h"
#include "common/trace_format.h"
#include "runtime/module.h"
#include "runtime/kinds.h"
#include "runtime/sysmem.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// ndmem's own copy of stderr, kept only by a process that prints a summary: programs built on
// gnulib (ls, cat, ...) close fd 2 at exit, before the summary is written. Above the descriptors
// programs manage (nd_os_fd_high), close-on-exec.
static int nd_log_fd = 2;
static struct stat nd_log_st; // what nd_log_fd was when it was made (a program may close it)

// ndmem's own remarks (bad settings, a trace it cannot create): in the process the user started
// only; its children have the same settings, and their stderr is their parents' to read.
int nd_quiet(void) { return nd_child != ND_ROOT && !nd_cfg.summary_children; }

void nd_warn_line(const char *line, void *ctx) {
  (void)ctx;
  if (nd_quiet()) return;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, line);
  nd_buf_line(&b, 2);
}

// Under ndmem run (NDMEM_RUN_LOG set) every process's summary goes to a file of its own beside
// the run's log, "LOG.PID", not to stderr: after the job, ndmem run prints the summary of the
// program that did the work (not that of a wrapper in front of it, timeout's or sh's, whose
// process the user started), and the others' where asked (--summary-children).
static int to_run_file(void) { return nd_cfg.run_log[0] == '/'; }

// Only the process the user started prints its summary, unless NDMEM_SUMMARY_CHILDREN=1; under
// ndmem run, every process writes its own for the run to choose from.
int nd_prints_summary(void) {
  return nd_cfg.summary && (nd_child == ND_ROOT || nd_cfg.summary_children || to_run_file());
}

// The run's file for this process's summary (O_APPEND: an exec chain's images add theirs in
// turn), or -1 (then nothing is said: stderr is the program's).
static int run_file(void) {
  char path[sizeof nd_cfg.run_log + 24];
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_char(&b, '.');
  nd_buf_u64(&b, (uint64_t)nd_os_getpid());
  size_t n = strlen(nd_cfg.run_log);
  if (n + b.len + 1 > sizeof path) return -1;
  memcpy(path, nd_cfg.run_log, n);
  memcpy(path + n, b.data, b.len);
  path[n + b.len] = 0;
  return open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
}

void nd_summary_open(void) {
  if (to_run_file()) return; // written to the run's file at the end: no copy of stderr kept
  int saved = errno;
  nd_os_fd_enter();
  int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
  if (fd >= 0) {
    // Kept even where no room is left above the program's limit (the one descriptor ndmem then
    // keeps in its range, in the process that prints a summary: a dup2 onto it moves it away).
    fd = nd_os_fd_high(fd, 1);
    if (fstat(fd, &nd_log_st) == 0) nd_log_fd = fd;
    else close(fd);
  }
  if (nd_log_fd != 2) nd_os_fd_own(&nd_log_fd);
  nd_os_fd_leave();
  errno = saved;
}

// The summary's descriptor, if it still is what it was made from (a program that closed every
// descriptor may have reused the number for a file of its own); else fd 2.
static int log_fd(void) {
  return nd_log_fd != 2 && nd_os_same_file(nd_log_fd, nd_log_st.st_dev, nd_log_st.st_ino)
             ? nd_log_fd : 2;
}

void nd_summary_atfork_child(void) {
  if (nd_log_fd != 2 && !nd_prints_summary()) { // inherited; this child prints nothing
    int saved = errno;
    close(nd_log_fd);
    errno = saved;
    nd_log_fd = 2;
  }
}

static void line_start(nd_buf_t *b) {
  nd_buf_reset(b);
  nd_buf_fmt(b, "ndmem[%d]: ", (int)nd_os_getpid());
}

static void kind_line(nd_buf_t *b, int fd, int kind, const ndmem_kind_stats_t *k) {
  line_start(b);
  nd_buf_kind(b, kind);
  // Frees of blocks ndmem never saw allocated would make these negative: never shown as memory.
  long long live = k->live_bytes > 0 ? k->live_bytes : 0;
  long long count = k->live_count > 0 ? k->live_count : 0;
  nd_buf_fmt(b, ": peak %s (%lld B); live at exit %s (%lld B) in %lld %s; %llu allocated, "
                "%llu released", ND_BYTES(k->peak_bytes), (long long)k->peak_bytes, ND_BYTES(live), live, count,
             kind == NDMEM_KIND_MMAP ? "mappings" : "blocks", (unsigned long long)k->allocs,
             (unsigned long long)k->frees);
  if (k->live_count < 0 || k->live_bytes < 0)
    nd_buf_fmt(b, " (%llu more released than ndmem saw allocated)",
               0ull - (unsigned long long)k->live_count);
  nd_buf_line(b, fd);
}

static const char *const fb_names[NDMEM_FB_COUNT] = {"bootstrap", "synthesized", "late-thread",
                                                     "untracked-free"};

void nd_print_summary(int fd) {
  ndmem_stats_t s;
  nd_counters_snapshot_process(&s);
  nd_buf_t b;
  // The headline: the kernel's peak of the process's resident memory, as /usr/bin/time, the
  // cgroup and the OOM killer count it (the larger of ru_maxrss and VmHWM, as the report's)
  nd_status_mem_t st;
  uint64_t rss = nd_maxrss_self();
  if (nd_status_self(&st) == 0 && st.hwm > rss) rss = st.hwm;
  if (rss) {
    line_start(&b);
    nd_buf_fmt(&b, "peak RSS %s (%llu B): the kernel's high-water mark of resident memory",
               ND_BYTES((int64_t)rss), (unsigned long long)rss);
    nd_buf_line(&b, fd);
  }
  // heap and mmap always; the other kinds when they were used
  for (int i = 0; i < NDMEM_KIND_COUNT; i++)
    if (i <= NDMEM_KIND_MMAP || s.kind[i].allocs) kind_line(&b, fd, i, &s.kind[i]);
  line_start(&b);
  nd_buf_str(&b, "calls:");
  int calls = 0;
  for (int i = 0; i < NDMEM_FN_COUNT; i++)
    if (s.calls[i])
      calls = 1, nd_buf_fmt(&b, " %s %llu", nd_fn_name(i), (unsigned long long)s.calls[i]);
  nd_buf_fmt(&b, "%s; threads %llu; fallbacks:", calls ? "" : " none",
             (unsigned long long)s.threads);
  int any = 0;
  for (int i = 0; i < NDMEM_FB_COUNT; i++)
    if (s.fallbacks[i])
      any = 1, nd_buf_fmt(&b, " %s %llu", fb_names[i], (unsigned long long)s.fallbacks[i]);
  if (!any) nd_buf_str(&b, " none");
  nd_buf_line(&b, fd);
  int n;
  const nd_module_t *const *m = nd_modules(&n);
  for (int i = 0; i < n; i++)
    if (m[i]->summary) m[i]->summary(fd);
  if (nd_cfg.summary < 2) return;
  for (nd_shard_t *sh = nd_counters_first(); sh; sh = sh->next) {
    if (sh->state != ND_SHARD_OWNED) continue;
    ndmem_stats_t ts;
    nd_counters_snapshot_shard(sh, &ts);
    const ndmem_kind_stats_t *h = &ts.kind[NDMEM_KIND_HEAP];
    line_start(&b);
    nd_buf_fmt(&b, "  thread %lld: heap %llu allocated, %llu released, net %s, thread peak %s",
               (long long)ts.tid, (unsigned long long)h->allocs, (unsigned long long)h->frees,
               ND_BYTES(h->live_bytes), ND_BYTES(h->peak_bytes));
    nd_buf_line(&b, fd);
  }
}

// How the process ended, where that is worth a line: a fatal signal, _exit, and any end a module
// ties something to (limits: a refused request shortly before, or before an end that is not
// clean). code: the exit status (-1: not known) or the signal.
static void exit_line(int fd, int how, int code) {
  nd_buf_t b;
  line_start(&b);
  int say = how == ND_EXIT_SIGNAL || how == ND_EXIT_UNDERSCORE;
  if (how == ND_EXIT_SIGNAL)
    nd_buf_fmt(&b, "ended by signal %d (%s)", code, sigabbrev_np(code) ? sigabbrev_np(code) : "?");
  else if (how == ND_EXIT_UNDERSCORE)
    nd_buf_fmt(&b, "ended by _exit(%d)", code);
  else if (how == ND_EXIT_NORMAL && code >= 0)
    nd_buf_fmt(&b, "ended by exit(%d)", code);
  else
    nd_buf_str(&b, "ended");
  int n;
  const nd_module_t *const *m = nd_modules(&n);
  for (int i = 0; i < n; i++)
    if (m[i]->exit_note && m[i]->exit_note(&b, how, code)) say = 1;
  if (how == ND_EXIT_SIGNAL) nd_buf_str(&b, "; the trace is complete up to here");
  if (say) nd_buf_line(&b, fd);
}

void nd_summary_end(int how, int code) {
  nd_os_fd_enter(); // its descriptor stays where it is while the summary is written (os.h)
  int saved = errno;
  int file = to_run_file() ? run_file() : -1, fd = to_run_file() ? file : log_fd();
  if (fd >= 0) {
    nd_buf_t b;
    nd_buf_reset(&b);
    if (!nd_os_at_line_start(fd)) nd_buf_line(&b, fd); // after a program's unfinished line
    exit_line(fd, how, code);
    nd_print_summary(fd);
  }
  if (file >= 0) close(file);
  errno = saved;
  nd_os_fd_leave();
}

// Why the shim does not follow an exec, by enum nd_exec_follow (the report says the same).
static const char *const not_followed[ND_EXEC_FOLLOW_MAX + 1] = {
    "followed", "its environment does not preload libndmem", "a statically linked program",
    "set-user-ID: the loader ignores LD_PRELOAD", "another ELF class or machine",
    "the program could not be read"};

static void summary_exec(int fd, const char *path, int follow, int err);
void nd_summary_exec(const char *path, int follow, int err) {
  nd_os_fd_enter();
  int saved = errno;
  int file = to_run_file() ? run_file() : -1;
  if (file >= 0 || !to_run_file()) summary_exec(file >= 0 ? file : log_fd(), path, follow, err);
  if (file >= 0) close(file);
  errno = saved;
  nd_os_fd_leave();
}

static void summary_exec(int fd, const char *path, int follow, int err) {
  nd_buf_t b;
  nd_buf_reset(&b);
  if (!err && !nd_os_at_line_start(fd)) nd_buf_line(&b, fd);
  line_start(&b);
  nd_buf_str(&b, err ? "the exec of " : "exec'd ");
  nd_buf_elided(&b, path, strlen(path), 256);
  if (err) {
    nd_buf_str(&b, " failed (");
    nd_buf_str(&b, nd_errno_text(err));
    nd_buf_str(&b, "): the process goes on under ndmem");
    nd_buf_line(&b, fd);
    return;
  }
  nd_buf_str(&b, " (not followed: ");
  nd_buf_str(&b, not_followed[follow <= ND_EXEC_FOLLOW_MAX ? follow : ND_EXEC_UNKNOWN]);
  nd_buf_str(&b, "); the figures below are this process's up to it");
  nd_buf_line(&b, fd);
  nd_print_summary(fd);
}
