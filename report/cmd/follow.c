// SPDX-License-Identifier: MIT
// follow.c: `ndmemreport --follow TRACE`, a running job's trace reported every interval (the
// --brief view) until it has its END record (then reported once more, as final) or SIGINT.
// The trace is read once and then read on (nd_trace_update): each refresh reads only what was
// appended since the last complete record, so its cost is the new bytes plus the analysis and
// the rendering (which grow with the sites, not the file), and a 1 GB trace is not read again
// every second. The reader stops at the last complete record, so a trace cut mid-record by a
// writer still at work is read up to its last flush and the rest next time. The arguments,
// suppressions and the symbolizer's state (its opened modules and resolved frames) are kept
// across refreshes; the symbolizer is made anew only when a MODULE record was read (the writer
// writes the map again when the loader's changed: which module holds an address may change).
// On a terminal the screen is cleared between refreshes; otherwise each refresh is headed by a
// line `== refresh N at HH:MM:SS, ...`, so a log or a test can tell them apart. The header says
// how many bytes the refresh read and the job's state. A trace without an END record whose
// writer is gone (nd_trace_running: its pid is dead, or another process) and that did not grow
// in GONE_REFRESHES refreshes in a row ends the view too: the job was killed and the trace will
// never be completed. Both conditions are needed: a writer in another pid namespace on the same
// host looks gone, but its trace still grows.
#include "cmd/cmd.h"

#include "fmt.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GONE_REFRESHES 2

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

// The job's state for the header: the trace is complete, or nd_trace_running's `running`.
static const char *state_of(const nd_trace_t *t, int running) {
  if (t->ended) return " (final: the trace is complete)";
  switch (running) {
  case ND_RUN_YES: return ", running";
  case ND_RUN_NO: return ", the writer is gone (no END record)";
  default: return ", written on another host (its state unknown)";
  }
}

int nd_report_follow(const opts_t *o, nd_supp_t *supp, FILE *out, FILE *err) {
  opts_t bo = *o; // the report of each refresh: --brief
  bo.brief = true;
  bo.follow = false;
  nd_trace_t *t = calloc(1, sizeof *t); // zeroed: nd_trace_free is safe before any read
  if (!t) {
    fprintf(err, "ndmemreport: %s: out of memory\n", o->file);
    return 2;
  }
  bool have = false;   // t holds a trace read without error, to be read on
  nd_sym_t *sym = NULL;
  uint64_t sym_mods = 0; // t->rec_count[ND_REC_MODULE] when sym was made
  struct sigaction sa = {.sa_handler = on_sigint}, old;
  sigemptyset(&sa.sa_mask); // no SA_RESTART: the sleep ends at once
  interrupted = 0;
  sigaction(SIGINT, &sa, &old);
  bool tty = isatty(fileno(out));
  int rc = 0, gone = 0; // refreshes in a row that found the writer gone and nothing appended
  for (unsigned long refresh = 1; !interrupted; refresh++) {
    // A file shorter than a header: the writer has just started (or started again).
    struct stat st;
    bool none = !stat(o->file, &st) && S_ISREG(st.st_mode) &&
                (uint64_t)st.st_size < sizeof(nd_trace_header_t);
    bool again = false; // the file is another trace than the one read: read from its start
    if (none && have) {
      nd_sym_free(sym);
      sym = NULL;
      nd_trace_free(t);
      have = false;
      again = true;
    } else if (!none) {
      int r = nd_report_read(t, o->file, have, err);
      if (r < 0) {
        rc = 2;
        break;
      }
      again = r == 1;
      have = true;
      if (!sym || again || t->rec_count[ND_REC_MODULE] != sym_mods) {
        nd_sym_free(sym);
        sym = nd_sym_new(t, o->symbols);
        sym_mods = t->rec_count[ND_REC_MODULE];
        if (!sym) {
          fprintf(err, "ndmemreport: %s: out of memory\n", o->file);
          rc = 2;
          break;
        }
      }
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    if (tty) fputs("\033[H\033[2J", out);
    fprintf(out, "== refresh %lu at %02d:%02d:%02d", refresh, tm.tm_hour, tm.tm_min, tm.tm_sec);
    int running = !have || t->ended ? ND_RUN_NO : nd_trace_running(t, o->file);
    gone = have && !t->ended && running == ND_RUN_NO && !t->last_read && !again ? gone + 1 : 0;
    if (have) {
      nd_buf_t b = {.len = 0};
      nd_buf_ubytes(&b, t->last_read);
      fprintf(out, ", +%s read%s\n", nd_buf_cstr(&b), state_of(t, running));
    } else {
      fputs("\n", out);
    }
    if (gone >= GONE_REFRESHES)
      fputs("(final: the writer is gone and the trace stopped growing; it has no END record)\n",
            out);
    if (again)
      fprintf(out, "(%s was replaced or cut short: read again from its start)\n", o->file);
    if (!have) fputs("(no trace yet)\n", out);
    else rc = nd_report_render(&bo, t, sym, supp, running, out, err);
    fflush(out);
    if ((have && t->ended) || gone >= GONE_REFRESHES || rc == 2) break;
    struct timespec ts = {(time_t)(o->follow_ms / 1000), (long)(o->follow_ms % 1000) * 1000000};
    while (!interrupted && nanosleep(&ts, &ts) && errno == EINTR) {}
  }
  sigaction(SIGINT, &old, NULL);
  nd_sym_free(sym);
  nd_trace_free(t);
  free(t);
  return interrupted && rc != 2 ? 0 : rc;
}
