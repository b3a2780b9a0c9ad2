// SPDX-License-Identifier: MIT
// load.c: what every command and the command line share (cmd.h): an option's count, a trace read
// with the progress bar a large read shows on a terminal, the suppressions, and the single-trace
// report run on a read trace: the analysis (analyse.h), the renderer --format names (render.h)
// and the verdict --fail-on-leak and --fail-on-growth ask for, with what it could not check.
#include "cmd/cmd.h"
#include "render/render.h"
#include "render/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nd_rep_parse_count(const char *v, unsigned long long max, unsigned long long *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long n = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
  if (!end || *end || errno || n > max) return -1;
  *out = n;
  return 0;
}

// ---------------------------------------------------------------- the progress bar

typedef struct progress {
  FILE *err;
  int last;       // percent shown, -1 none
  char name[24];  // the file's base name as the bar shows it
} progress_t;

static void on_progress(void *arg, uint64_t done, uint64_t total) {
  progress_t *p = arg;
  if (!total) return;
  int pct = done >= total ? 100 : (int)(done * 100 / total);
  if (pct == p->last) return;
  p->last = pct;
  char bar[31];
  int fill = pct * 30 / 100;
  memset(bar, '#', (size_t)fill);
  memset(bar + fill, '.', (size_t)(30 - fill));
  bar[30] = 0;
  fprintf(p->err, "\rndmemreport: reading %s [%s] %3d%%", p->name, bar, pct);
  fflush(p->err);
}

// Reads `path` into `t` (update: reads on from what `t` holds, nd_trace_update), with the bar for a
// file of `bar_from` bytes or more; an error reported on `err` in one line. The reader's result:
// 0, 1 (update: the file was read again from its start) or -1.
static int read_trace(nd_trace_t *t, const char *path, FILE *err, uint64_t bar_from, bool update) {
  progress_t prog = {.err = err, .last = -1};
  struct stat st;
  bool bar = isatty(fileno(err)) && !stat(path, &st) && S_ISREG(st.st_mode) &&
             (uint64_t)st.st_size >= bar_from;
  if (bar) { // at most 20 bytes, so that the line fits 80 columns: a longer name keeps its end
    const char *b = strrchr(path, '/');
    b = b && b[1] ? b + 1 : path;
    size_t n = strlen(b);
    snprintf(prog.name, sizeof prog.name, "%s%s", n > 20 ? "..." : "", n > 20 ? b + n - 17 : b);
    nd_rep_no_controls(prog.name); // a terminal line
  }
  int rc = update ? nd_trace_update(t, bar ? on_progress : NULL, &prog)
                  : nd_trace_read(t, path, bar ? on_progress : NULL, &prog);
  if (prog.last >= 0) fputs("\r\033[K", err);
  if (rc >= 0) return rc; // nd_trace_read: 0; nd_trace_update: 0 or 1 (read again)
  if (t->err_off == UINT64_MAX) fprintf(err, "ndmemreport: %s: %s\n", path, t->err);
  else
    fprintf(err, "ndmemreport: %s: %s at offset %llu\n", path, t->err,
            (unsigned long long)t->err_off);
  return -1;
}

int nd_rep_read_trace(nd_trace_t *t, const char *path, FILE *err, uint64_t bar_from) {
  return read_trace(t, path, err, bar_from, false) ? 2 : 0;
}

// ---------------------------------------------------------------- the single-trace report

// The leak verdict's "unchecked" line (see verdict).
static void unchecked_leaks(const opts_t *o, const report_t *r, FILE *err) {
  const nd_lifetimes_t *l = &r->life;
  const nd_trace_t *t = r->t;
  char b[ND_TEXT_SIZE];
  fprintf(err,
          "ndmemreport: %s: --fail-on-leak: unchecked: %llu heap %s live at exit, at most %s, "
          "had no record, so whether %s leaked is unknown",
          o->file, (unsigned long long)l->unrecorded_blocks,
          l->unrecorded_blocks == 1 ? "block" : "blocks",
          nd_text_size(b, l->unrecorded_bytes, false), l->unrecorded_blocks == 1 ? "it" : "they");
  if (t->hdr.track_min)
    fprintf(err, " (NDMEM_TRACK_MIN=%llu: smaller blocks are recorded only when sampled); "
                 "check %s with every block tracked: ndmem run --exact -- CMD "
                 "(NDMEM_TRACK_MIN=0)\n",
            (unsigned long long)t->hdr.track_min, l->unrecorded_blocks == 1 ? "it" : "them");
  else // every block was to be tracked: the shim had no room for them, or they predate it
    fputs(" (NDMEM_TRACK_MIN=0, yet the shim recorded no stack for them)\n", err);
}

// The growth verdict's "unchecked" line (see verdict): what growth sampling could hide, from
// the trace's sampling settings and its cycles (nd_life_unseen), and what checks it.
static void unchecked_growth(const opts_t *o, const report_t *r, const nd_life_unseen_t *u,
                             FILE *err) {
  const nd_life_judged_t *j = &r->life.judged;
  char under[ND_TEXT_SIZE], every[ND_TEXT_SIZE], rate[ND_TEXT_SIZE];
  nd_text_size(under, u->track_min, false);
  fprintf(err, "ndmemreport: %s: %s: unchecked: no growth found, but blocks under %s ", o->file,
          o->fail_on_growth ? "--fail-on-growth" : "--fail-on-leak", under);
  if (!u->sample) {
    fputs("had no record (NDMEM_SAMPLE=0: none is sampled), so growth in them could not be seen "
          "at any rate", err);
  } else {
    fprintf(err, "are recorded only when sampled (about 1 per %s allocated)",
            nd_text_size(every, u->sample, false));
    if (u->rate)
      // (since the first cycle, a window closes only where the cycle clock moved or after a
      // few flushes: the unit is the flush)
      fprintf(err, ", so growth in them under %s per %s, over the %llu %s, may have gone unseen",
              nd_text_size(rate, u->rate, false),
              !u->per_window ? "cycle" : u->since_steady ? "flush" : "flush window",
              (unsigned long long)u->units,
              !u->per_window      ? (u->units == 1 ? "cycle of this run" : "cycles of this run")
              : u->since_steady ? "flushes since its first cycle"
                                  : "flush windows of this run");
    else if (!j->judged)
      fprintf(err, " and a sampled site grows only by its floor, which %llu flush %s of the "
                   "steady state (%d needed) could not judge, so growth in them could not be "
                   "seen at any rate",
              (unsigned long long)j->windows, j->windows == 1 ? "window" : "windows",
              ND_LIFE_MIN_WINDOWS);
    else
      fputs(", and a quarter of this run has no flush window in the trace's timeline for a "
            "sample to show in, so growth in them could not be seen at any rate", err);
  }
  fputs("; check it with every block tracked: ndmem run --exact -- CMD (NDMEM_TRACK_MIN=0)", err);
  if (!j->judged && j->flush_ms)
    fprintf(err, " and NDMEM_FLUSH_MS=%llu", (unsigned long long)j->flush_ms);
  fputc('\n', err);
}

// The verdict. --fail-on-growth: 1 on growth, or (no normal exit, so no classes) on a site found
// growing while running. --fail-on-leak: 1 on that, or on memory live at exit that was not held
// since start-up, a bounded cache nor suppressed. Else ND_REP_UNCHECKED, each thing that could
// not be checked said in one line on `err` (what was not checked, why, and what checks it):
//   - --fail-on-leak: heap blocks live at a normal exit that have no record (under
//     NDMEM_TRACK_MIN only a sample of the blocks is recorded, with a stack): nothing tells
//     whether they are the program's leaks, and 0 would say they are not. An estimate that
//     claims some of them for a start-up or suppressed stack is a guess, not a check.
//   - either flag: growth in blocks under NDMEM_TRACK_MIN, which shows only in what the sampler
//     picked: growth under a rate (nd_life_unseen, from the sampling settings and the cycles)
//     may have gone unseen. Where every block was tracked, or growth was judged for no block,
//     nothing is said for it (the report says what was not judged).
static int verdict(const opts_t *o, const report_t *r, FILE *err) {
  const nd_lifetimes_t *l = &r->life;
  const nd_trace_t *t = r->t;
  bool known = nd_rep_leaks_known(t);
  bool growth = known ? l->entries[ND_LIFE_GROWING] || l->entries[ND_LIFE_TEARDOWN]
                      : t->ngrowth > 0;
  if (o->fail_on_growth && growth) return 1;
  if (!o->fail_on_leak && !o->fail_on_growth) return 0;
  if (o->fail_on_leak) {
    if (growth) return 1;
    for (int c = 0; known && c < ND_LIFE_CLASSES; c++)
      if (l->entries[c] && nd_life_fails(c, o->fail_on_reachable)) return 1;
  }
  if (!known) return 0;
  nd_life_unseen_t u;
  nd_life_unseen(t, l, &u);
  bool leaks = o->fail_on_leak && l->unrecorded_blocks;
  if (leaks) unchecked_leaks(o, r, err);
  if (u.unseen) unchecked_growth(o, r, &u, err);
  return leaks || u.unseen ? ND_REP_UNCHECKED : 0;
}

// The suppressions: the built-ins unless off, then each --suppressions file. NULL after an
// error, reported on `err`.
nd_supp_t *nd_rep_load_suppressions(const opts_t *o, FILE *err) {
  nd_supp_t *s = nd_supp_new();
  if (!s || (o->builtin_supp && nd_supp_builtin(s))) {
    fputs("ndmemreport: out of memory\n", err);
    nd_supp_free(s);
    return NULL;
  }
  char msg[4096 + 256];
  for (size_t i = 0; i < o->nsupp_files; i++) {
    if (nd_supp_load(s, o->supp_files[i], msg, sizeof msg)) {
      fprintf(err, "ndmemreport: %s\n", msg);
      nd_supp_free(s);
      return NULL;
    }
  }
  return s;
}

int nd_report_read(nd_trace_t *t, const char *file, bool update, FILE *err) {
  if (!update) return nd_rep_read_trace(t, file, err, ND_PROGRESS_MIN) ? -1 : 0;
  return read_trace(t, file, err, t->good_end + ND_PROGRESS_MIN, true);
}

int nd_report_render(const opts_t *o, const nd_trace_t *t, nd_sym_t *sym, nd_supp_t *supp,
                     int running, FILE *out, FILE *err) {
  report_t r = {.t = t, .o = o, .running = running, .supp = supp, .sym = sym};
  int rc = 0;
  if (nd_trace_family(t, o->file, &r.family) || nd_rep_analyse(&r)) {
    fprintf(err, "ndmemreport: %s: out of memory\n", o->file);
    rc = 2;
  } else if (o->format == ND_FMT_HTML        ? nd_rep_html_report(out, &r)
             : o->format == ND_FMT_SVG       ? nd_rep_svg_report(out, &r)
             : o->format == ND_FMT_COLLAPSED ? nd_rep_collapsed_report(out, &r)
             : o->format == ND_FMT_JSON      ? nd_rep_json_report(out, &r)
                                             : nd_rep_text_report_80(out, &r)) {
    fprintf(err, "ndmemreport: %s: out of memory\n", o->file);
    rc = 2;
  } else if (fflush(out) || ferror(out)) {
    fprintf(err, "ndmemreport: cannot write the report: %s\n", strerror(errno));
    rc = 2;
  } else {
    rc = verdict(o, &r, err);
  }
  nd_family_free(&r.family);
  nd_rep_analysis_free(&r);
  return rc;
}
