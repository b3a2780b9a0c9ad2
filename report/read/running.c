// SPDX-License-Identifier: MIT
// running.c: what the host tells about a trace's process (running.h). Whether it still runs:
// the pid in the header is looked up on this host in /proc; pid reuse is told apart by the
// process's start time, and a process that holds the trace open is its writer. Its
// descendants' traces: the headers of the files in the trace's folder.
#include "read/running.h"

#include "trace_format.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUN_SLACK_NS 2000000000ull // start times compared: clock ticks, clock adjustments

// Whether a process (`dir`: its /proc/PID/fd) holds `path` open, as the shim keeps its trace
// open while it runs. False when that cannot be told (no such file, another user's process).
static bool holds_file(const char *dir, const char *path) {
  struct stat want, st;
  if (stat(path, &want) || !S_ISREG(want.st_mode)) return false;
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  char link[96];
  for (struct dirent *e; !found && (e = readdir(d));) {
    if (e->d_name[0] == '.' || snprintf(link, sizeof link, "%s/%s", dir, e->d_name) >= 96)
      continue;
    found = !stat(link, &st) && st.st_dev == want.st_dev && st.st_ino == want.st_ino;
  }
  closedir(d);
  return found;
}

// Only a process on this host can be looked at (the header's host is gethostname's). Its pid
// must name a live process (not a zombie) that is the same one: pids are unique among
// live processes, so a process with that pid that already existed when the trace started (its
// start time, from /proc/PID/stat's clock ticks since boot, at most RUN_SLACK_NS after the
// header's) is the writer; no lower bound, as the program may have been exec'd long after its
// process started (a launcher script's `exec`). A process that started later is a reused pid,
// unless it holds the trace file open (a fork child's trace carries its parent's start time).
int nd_trace_running(const nd_trace_t *t, const char *path) {
  char host[sizeof t->host];
  if (gethostname(host, sizeof host)) return ND_RUN_UNKNOWN;
  host[sizeof host - 1] = 0;
  if (strncmp(host, t->host, sizeof t->hdr.host - 1)) return ND_RUN_UNKNOWN;
  uint64_t pid = t->hdr.pid;
  if (!pid || pid > 0x7fffffff) return ND_RUN_NO;
  char name[64], buf[1024];
  snprintf(name, sizeof name, "/proc/%llu/stat", (unsigned long long)pid);
  FILE *f = fopen(name, "re");
  if (!f) return ND_RUN_NO;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  // "pid (comm) state ppid ... starttime": comm may hold spaces and ')'; starttime is field 22,
  // the 20th after the last ')'.
  char *p = strrchr(buf, ')');
  if (!p) return ND_RUN_NO;
  char state = 0;
  unsigned long long start = 0;
  if (sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                    "%*s %llu",
             &state, &start) != 2 ||
      state == 'Z' || state == 'X')
    return ND_RUN_NO;
  struct timespec rt, bt;
  long tck = sysconf(_SC_CLK_TCK);
  if (tck <= 0 || clock_gettime(CLOCK_REALTIME, &rt) || clock_gettime(CLOCK_BOOTTIME, &bt))
    return ND_RUN_NO;
  // Boot time on the real-time clock, then the process's start.
  double boot = ((double)rt.tv_sec - (double)bt.tv_sec) * 1e9 + ((double)rt.tv_nsec - bt.tv_nsec);
  double began = boot + (double)start * (1e9 / (double)tck);
  if (began <= (double)t->hdr.start_realtime_ns + (double)RUN_SLACK_NS) return ND_RUN_YES;
  snprintf(name, sizeof name, "/proc/%llu/fd", (unsigned long long)pid);
  return holds_file(name, path) ? ND_RUN_YES : ND_RUN_NO;
}

// The header of a trace file (a regular file, not a link, at least a header long), or false.
static bool header_of(int dfd, const char *name, nd_trace_header_t *h) {
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size >= (off_t)sizeof *h &&
            pread(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h && nd_trace_header_valid(h);
  close(fd);
  return ok;
}

static int by_start(const void *a, const void *b) {
  const nd_kin_t *x = a, *y = b;
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void nd_family_free(nd_family_t *f) {
  for (size_t i = 0; i < f->n; i++) free(f->v[i].path);
  free(f->v);
  f->v = NULL;
  f->n = 0;
}

int nd_trace_family(const nd_trace_t *t, const char *path, nd_family_t *out) {
  out->v = NULL;
  out->n = 0;
  if (!path || !t->has.job || !t->hdr.pid) return 0;
  const char *slash = strrchr(path, '/');
  size_t dl = slash ? (size_t)(slash - path) + 1 : 0; // the folder as the path names it, with '/'
  char dir[4096];
  if (dl >= sizeof dir) return 0;
  memcpy(dir, path, dl);
  dir[dl] = 0;
  DIR *d = opendir(dl ? dir : ".");
  if (!d) return 0;
  struct stat self;
  bool have_self = !stat(path, &self);
  // Every trace of the folder from this host that started no earlier than this one (less the
  // slack of two clocks' readings), then those whose parents' chain reaches this pid.
  typedef struct cand { nd_trace_header_t h; char *name; } cand_t;
  cand_t *c = NULL;
  size_t n = 0, cap = 0, seen = 0;
  int rc = 0;
  for (struct dirent *e; (e = readdir(d)) && seen < ND_FAMILY_SCAN;) {
    if (e->d_name[0] == '.' || (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)) continue;
    seen++;
    nd_trace_header_t h;
    struct stat st;
    if (!header_of(dirfd(d), e->d_name, &h)) continue;
    if (have_self && !fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
        st.st_dev == self.st_dev && st.st_ino == self.st_ino)
      continue;
    if (memcmp(h.host, t->hdr.host, sizeof h.host) || h.pid == t->hdr.pid ||
        h.start_realtime_ns + RUN_SLACK_NS < t->hdr.start_realtime_ns)
      continue;
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      cand_t *p = realloc(c, nc * sizeof *p);
      if (!p) {
        rc = -1;
        break;
      }
      c = p, cap = nc;
    }
    if (!(c[n].name = strdup(e->d_name))) {
      rc = -1;
      break;
    }
    c[n++].h = h;
  }
  closedir(d);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    uint64_t p = c[i].h.ppid;
    // up the chain: at most n steps (a cycle of reused pids ends there)
    for (size_t steps = 0; p && p != t->hdr.pid && steps < n; steps++) {
      size_t j = 0;
      while (j < n && c[j].h.pid != p) j++;
      p = j < n ? c[j].h.ppid : 0;
    }
    if (p != t->hdr.pid) continue;
    nd_kin_t *v = realloc(out->v, (out->n + 1) * sizeof *v);
    size_t nl = strlen(c[i].name);
    char *full = malloc(dl + nl + 1);
    if (!v || !full) {
      if (v) out->v = v;
      free(full);
      rc = -1;
      break;
    }
    out->v = v;
    memcpy(full, dir, dl);
    memcpy(full + dl, c[i].name, nl + 1);
    nd_kin_t *k = &out->v[out->n++];
    *k = (nd_kin_t){.path = full, .pid = c[i].h.pid, .ppid = c[i].h.ppid,
                    .start_ns = c[i].h.start_realtime_ns, .origin = c[i].h.origin};
    memcpy(k->exe, c[i].h.exe, sizeof c[i].h.exe);
    k->exe[sizeof c[i].h.exe] = 0;
  }
  for (size_t i = 0; i < n; i++) free(c[i].name);
  free(c);
  if (rc) nd_family_free(out);
  else if (out->n > 1) qsort(out->v, out->n, sizeof *out->v, by_start);
  return rc;
}
