// SPDX-License-Identifier: MIT
// follow.c: `ndmemreport --follow TRACE`, a running job's trace re-read and reported every
// interval (the --brief view) until it has its END record (then reported once more, as final)
// or SIGINT. Each refresh reads the trace from its start: the reader stops at the last complete
// record, so a trace cut mid-record by a writer still at work is read up to its last flush.
// On a terminal the screen is cleared between refreshes; otherwise each refresh is headed by a
// line `== refresh N at HH:MM:SS`, so a log or a test can tell them apart.
#include "ndmemreport.h"
#include "report.h"
#include "trace_read.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

// Whether the trace can be read, and whether it is complete (an END record). 1: complete,
// 0: not yet (or not yet even a whole header: the writer has just started), -1: an error
// (reported on `err`).
static int trace_state(const char *path, FILE *err) {
  nd_trace_t *t = malloc(sizeof *t);
  if (!t) {
    fprintf(err, "ndmemreport: %s: out of memory\n", path);
    return -1;
  }
  int rc = nd_trace_read(t, path, NULL, NULL);
  struct stat st;
  if (rc && !stat(path, &st) && (uint64_t)st.st_size < sizeof(nd_trace_header_t)) rc = 0;
  else if (rc) {
    if (t->err_off == UINT64_MAX) fprintf(err, "ndmemreport: %s: %s\n", path, t->err);
    else
      fprintf(err, "ndmemreport: %s: %s at offset %llu\n", path, t->err,
              (unsigned long long)t->err_off);
    rc = -1;
  } else {
    rc = t->ended;
  }
  nd_trace_free(t);
  free(t);
  return rc;
}

int nd_report_follow(int argc, char **argv, const opts_t *o, FILE *out, FILE *err) {
  // The report's own arguments: these, less --follow and --follow-interval, with --brief.
  char **sub = calloc((size_t)argc + 2, sizeof *sub);
  if (!sub) {
    fputs("ndmemreport: out of memory\n", err);
    return 2;
  }
  int n = 0;
  sub[n++] = argv[0];
  sub[n++] = "--brief";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--follow")) continue;
    if (!strcmp(argv[i], "--follow-interval")) {
      i++;
      continue;
    }
    if (!strncmp(argv[i], "--follow-interval=", 18)) continue;
    sub[n++] = argv[i];
  }
  struct sigaction sa = {.sa_handler = on_sigint}, old;
  sigemptyset(&sa.sa_mask); // no SA_RESTART: the sleep ends at once
  interrupted = 0;
  sigaction(SIGINT, &sa, &old);
  bool tty = isatty(fileno(out));
  int rc = 0;
  for (unsigned long refresh = 1; !interrupted; refresh++) {
    int state = trace_state(o->file, err);
    if (state < 0) {
      rc = 2;
      break;
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    if (tty) fputs("\033[H\033[2J", out);
    fprintf(out, "== refresh %lu at %02d:%02d:%02d%s\n", refresh, tm.tm_hour, tm.tm_min,
            tm.tm_sec, state ? " (final: the trace is complete)" : "");
    fflush(out);
    struct stat st;
    if (!state && (stat(o->file, &st) || (uint64_t)st.st_size < sizeof(nd_trace_header_t)))
      fputs("(no trace yet)\n", out);
    else rc = nd_report_main(n, sub, out, err);
    fflush(out);
    if (state || rc == 2) break;
    struct timespec ts = {(time_t)(o->follow_ms / 1000), (long)(o->follow_ms % 1000) * 1000000};
    while (!interrupted && nanosleep(&ts, &ts) && errno == EINTR) {}
  }
  sigaction(SIGINT, &old, NULL);
  free(sub);
  return interrupted && rc != 2 ? 0 : rc;
}
