// SPDX-License-Identifier: MIT
// running.c: whether the process that wrote a trace without an END record still runs
// (running.h). The pid in the header is looked up on this host in /proc; pid reuse is told
// apart by the process's start time, and a process that holds the trace open is its writer.
#include "running.h"

#include <dirent.h>
#include <stdio.h>
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
