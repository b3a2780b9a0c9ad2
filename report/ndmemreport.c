// SPDX-License-Identifier: MIT
// ndmemreport: reads an ndmem trace (trace_read.h), symbolizes the stacks it reports
// (symbolize.h) and prints a summary, the top allocation sites, and the blocks still live at exit
// (leaks) or, for a process that did not exit normally, the sites' live bytes at the last flush;
// for a version 2 trace with workspace records, the workspaces view (per thread and workspace:
// cycles, plan, hits, spills, escapes) and the leaked workspace pointers with their stacks; for a
// version 3 trace with limit records, the limits view (limits, totals, logged breaches, and the
// snapshots of live memory by site taken at the warning watermark and at breaches); for a version
// 7 trace, Python frames in the stacks and the sites by their innermost Python line.
// Text for people, JSON (fixed key order, one document) for tools. Exit status: 0, 1 with
// --fail-on-leak when a leak was found, 2 for bad usage or a malformed trace, 3 with
// --fail-on-leak when no leak was found but blocks live at exit had no record (verdict).
// The analysis is in analyse.c, the text and JSON renderers in render_text.c and render_json.c
// (the model they share: report.h); this file parses the arguments, loads the suppressions and
// the trace, and runs them.
#include "ndmemreport.h"
#include "report.h"
#include "running.h"
#include "suppress.h"
#include "symbolize.h"
#include "trace_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lifetime.h"

// USAGE, on one line, follows a usage error; USAGE_HELP heads --help, which is short (one line an
// option): ndmemreport(1), from docs/ndmemreport.1.md, has the details.
#define USAGE                                                                                      \
  "usage: ndmemreport [--format text|json|html|svg|collapsed] [--collapsed-by peak|total|live] "   \
  "[--flame-by peak|total|live] [--top N] [--frames N] [--fail-on-leak] [--fail-on-growth] "       \
  "[--brief] [--workspaces] [--limits] [--python-only] [--no-symbols] [--suppressions FILE]... "    \
  "[--no-builtin-suppressions] [--follow] [--follow-interval MS] FILE | diff [OPTIONS] A B | "      \
  "merge [OPTIONS] TRACE..."
#define USAGE_HELP                                                                                 \
  "usage: ndmemreport [OPTIONS] TRACE\n"                                                           \
  "       ndmemreport diff [OPTIONS] A B\n"                                                        \
  "       ndmemreport merge [OPTIONS] TRACE..."

// ---------------------------------------------------------------- main

// Bad usage: one line on `err`; the caller returns 2.
static int usage_error(FILE *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("ndmemreport: ", err);
  vfprintf(err, fmt, ap);
  va_end(ap);
  fputs(" (" USAGE ")\n", err);
  return 2;
}

int nd_rep_parse_count(const char *v, unsigned long long max, unsigned long long *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long n = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
  if (!end || *end || errno || n > max) return -1;
  *out = n;
  return 0;
}

static int parse_count(FILE *err, const char *opt, const char *v, size_t *out) {
  unsigned long long n;
  if (nd_rep_parse_count(v, 1000000, &n))
    return usage_error(err, "%s needs a number from 0 to 1000000, not '%s'", opt, v ? v : "");
  *out = (size_t)n;
  return 0;
}

// 0: run; 2: bad usage (reported); -1: --help was printed.
static int parse_args(int argc, char **argv, opts_t *o, FILE *out, FILE *err) {
  *o = (opts_t){.symbols = true, .top = 10, .frames = 8, .builtin_supp = true, .follow_ms = 1000};
  bool dashdash = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (dashdash || a[0] != '-' || !a[1]) {
      if (o->file) return usage_error(err, "more than one FILE ('%s', '%s')", o->file, a);
      o->file = a;
      continue;
    }
    const char *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
#define IS(name) (len == sizeof(name) - 1 && !strncmp(a, name, len))
#define VALUE() (eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL)
    if (!strcmp(a, "--")) {
      dashdash = true;
    } else if (!strcmp(a, "--version")) {
      fprintf(out, "ndmemreport %s\n", ND_VERSION);
      return -1;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fprintf(out,
              "%s\n\n"
              "Reports what a program allocated, from the trace libndmem.so wrote.\n\n"
              "  --format FORMAT             text | json | html | svg | collapsed [text]\n"
              "  --collapsed-by WEIGHT       collapsed's weight: peak | total | live [peak]\n"
              "  --flame-by WEIGHT           svg's weight: peak | total | live [peak]\n"
              "  --top N                     entries per list [10]; 0 all\n"
              "  --frames N                  frames per stack in text [8]; 0 all\n"
              "  --brief                     summary, largest leaks, first breach\n"
              "  --workspaces                only the workspaces view\n"
              "  --limits                    only the limits view\n"
              "  --python-only               only the Python frames of each stack\n"
              "  --no-symbols                frames as path+offset\n"
              "  --fail-on-leak              exit 1 on lost memory or growth; 3 when unchecked\n"
              "  --fail-on-reachable         --fail-on-leak, and possibly lost and still\n"
              "                              reachable memory fail too\n"
              "  --fail-on-growth            exit 1 on growth\n"
              "  --suppressions FILE         leaks matching FILE's leak:PATTERN rules are\n"
              "                              not reported (repeatable)\n"
              "  --no-builtin-suppressions   report the C and C++ runtimes' blocks too\n"
              "  --follow                    report a running job's trace as it grows\n"
              "  --follow-interval MS        milliseconds between refreshes [1000]\n"
              "  --version                   the version\n\n"
              "Exit status: 0 nothing found, 1 a finding (--fail-on-leak, --fail-on-growth),\n"
              "2 bad usage or trace, 3 unchecked (--fail-on-leak: blocks live at exit had no\n"
              "record). diff --help and merge --help list their options.\n"
              "See ndmemreport(1).\n",
              USAGE_HELP);
      return -1;
    } else if (IS("--format")) {
      const char *v = VALUE();
      static const char *const formats[ND_FORMATS] = {"text", "json", "html", "collapsed", "svg"};
      int f = 0;
      while (f < ND_FORMATS && !(v && !strcmp(v, formats[f]))) f++;
      if (f < ND_FORMATS) o->format = (enum nd_format)f;
      else return usage_error(err, "--format takes text, json, html, collapsed or svg, not '%s'",
                              v ? v : "");
    } else if (IS("--collapsed-by")) {
      const char *v = VALUE();
      int w = nd_rep_parse_weight(v);
      if (w < 0) return usage_error(err, "--collapsed-by takes peak, total or live, not '%s'",
                                    v ? v : "");
      o->collapsed_by = (enum nd_weight)w;
    } else if (IS("--flame-by")) { // what --format svg's flame graph weighs (render_svg.c)
      const char *v = VALUE();
      int w = nd_rep_parse_weight(v);
      if (w < 0) return usage_error(err, "--flame-by takes peak, total or live, not '%s'",
                                    v ? v : "");
      o->flame_by = (enum nd_weight)w;
    } else if (IS("--top")) {
      if (parse_count(err, "--top", VALUE(), &o->top)) return 2;
      o->top_set = true;
    } else if (IS("--frames")) {
      if (parse_count(err, "--frames", VALUE(), &o->frames)) return 2;
    } else if (!strcmp(a, "--fail-on-leak")) {
      o->fail_on_leak = true;
    } else if (!strcmp(a, "--fail-on-growth")) {
      o->fail_on_growth = true;
    } else if (!strcmp(a, "--fail-on-reachable")) {
      o->fail_on_leak = o->fail_on_reachable = true;
    } else if (!strcmp(a, "--brief")) {
      o->brief = true;
    } else if (!strcmp(a, "--workspaces")) {
      o->workspaces = true;
    } else if (!strcmp(a, "--limits")) {
      o->limits = true;
    } else if (!strcmp(a, "--python-only")) {
      o->python_only = true;
    } else if (!strcmp(a, "--no-symbols")) {
      o->symbols = false;
    } else if (IS("--suppressions")) {
      const char *v = VALUE();
      if (!v || !*v) return usage_error(err, "--suppressions needs a FILE");
      if (!o->supp_files && !(o->supp_files = calloc((size_t)argc, sizeof *o->supp_files)))
        return usage_error(err, "out of memory");
      o->supp_files[o->nsupp_files++] = v;
    } else if (!strcmp(a, "--no-builtin-suppressions")) {
      o->builtin_supp = false;
      // ---- option: --follow (follow.c)
    } else if (!strcmp(a, "--follow")) {
      o->follow = true;
    } else if (IS("--follow-interval")) {
      if (parse_count(err, "--follow-interval", VALUE(), &o->follow_ms)) return 2;
      if (!o->follow_ms) return usage_error(err, "--follow-interval must be at least 1 (ms)");
      // ---- end option: --follow
    } else {
      return usage_error(err, "unknown option '%s'", a);
    }
#undef IS
#undef VALUE
  }
  if (!o->file) return usage_error(err, "no trace FILE given");
  return 0;
}

// ---- progress: the bar every command shows while it reads a trace (nd_rep_read_trace)

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

// ---- end progress

// The verdict. --fail-on-growth: 1 on growth, or (no normal exit, so no classes) on a site found
// growing while running. --fail-on-leak: 1 on that, or on memory live at exit that was not held
// since start-up, a bounded cache nor suppressed; else ND_REP_UNCHECKED where heap blocks live at
// a normal exit have no record (under NDMEM_TRACK_MIN only a sample of the blocks is recorded,
// with a stack): nothing tells whether they are the program's leaks, and 0 would say they are
// not. An estimate that claims some of them for a start-up or suppressed stack is a guess, not a
// check. Its one line on `err` says what was not checked, why, and what checks it.
static int verdict(const opts_t *o, const report_t *r, FILE *err) {
  const nd_lifetimes_t *l = &r->life;
  const nd_trace_t *t = r->t;
  bool known = nd_rep_leaks_known(t);
  bool growth = known ? l->entries[ND_LIFE_GROWING] || l->entries[ND_LIFE_TEARDOWN]
                      : t->ngrowth > 0;
  if (o->fail_on_growth && growth) return 1;
  if (!o->fail_on_leak) return 0;
  if (growth) return 1;
  for (int c = 0; known && c < ND_LIFE_CLASSES; c++)
    if (l->entries[c] && nd_life_fails(c, o->fail_on_reachable)) return 1;
  if (!known || !l->unrecorded_blocks) return 0;
  char h[48], b[32] = "";
  nd_rep_human(h, sizeof h, l->unrecorded_bytes);
  if (l->unrecorded_bytes >= 1024) // as the text report prints bytes: "27.48 KiB (28136 B)"
    snprintf(b, sizeof b, " (%llu B)", (unsigned long long)l->unrecorded_bytes);
  fprintf(err,
          "ndmemreport: %s: --fail-on-leak: unchecked: %llu heap %s live at exit, at most %s%s, "
          "had no record, so whether %s leaked is unknown",
          o->file, (unsigned long long)l->unrecorded_blocks,
          l->unrecorded_blocks == 1 ? "block" : "blocks", h, b,
          l->unrecorded_blocks == 1 ? "it" : "they");
  if (t->hdr.track_min)
    fprintf(err, " (NDMEM_TRACK_MIN=%llu: smaller blocks are recorded only when sampled); "
                 "check %s with every block tracked: ndmem run --exact -- CMD "
                 "(NDMEM_TRACK_MIN=0)\n",
            (unsigned long long)t->hdr.track_min, l->unrecorded_blocks == 1 ? "it" : "them");
  else // every block was to be tracked: the shim had no room for them, or they predate it
    fputs(" (NDMEM_TRACK_MIN=0, yet the shim recorded no stack for them)\n", err);
  return ND_REP_UNCHECKED;
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

void nd_rep_analysis_free(report_t *r) {
  nd_lifetimes_free(&r->life);
  free(r->by_peak);
  free(r->by_total);
  free(r->live);
  free(r->leaks);
  free(r->py_lines);
  free(r->ws);
  free(r->groups);
  free(r->group_order);
  free(r->spill_order);
  r->by_peak = r->by_total = r->live = r->leaks = r->ws = r->group_order = r->spill_order = NULL;
  r->py_lines = NULL;
  r->groups = NULL;
}

int nd_report_main(int argc, char **argv, FILE *out, FILE *err) {
  // ---- subcommands: merge (merge.c) and diff (diff.c), each with its own arguments
  if (argc >= 2 && !strcmp(argv[1], "merge")) return nd_report_merge(argc - 1, argv + 1, out, err);
  if (argc > 1 && !strcmp(argv[1], "diff")) return nd_report_diff(argc, argv, out, err);
  opts_t o;
  int rc = parse_args(argc, argv, &o, out, err);
  nd_supp_t *supp = rc ? NULL : nd_rep_load_suppressions(&o, err);
  free(o.supp_files); // only loading reads them
  o.supp_files = NULL;
  if (rc) return rc < 0 ? 0 : rc;
  if (!supp) return 2;
  // ---- --follow (follow.c): reads on as the trace grows, reporting through nd_report_render
  if (o.follow) {
    rc = nd_report_follow(&o, supp, out, err);
    nd_supp_free(supp);
    return rc;
  }
  // ---- end --follow
  nd_trace_t *t = malloc(sizeof *t);
  if (!t) {
    fprintf(err, "ndmemreport: %s: out of memory\n", o.file);
    nd_supp_free(supp);
    return 2;
  }
  rc = 2;
  if (!nd_report_read(t, o.file, false, err)) {
    nd_sym_t *sym = nd_sym_new(t, o.symbols);
    int running = t->ended ? ND_RUN_NO : nd_trace_running(t, o.file);
    if (!sym) fprintf(err, "ndmemreport: %s: out of memory\n", o.file);
    else rc = nd_report_render(&o, t, sym, supp, running, out, err);
    nd_sym_free(sym);
  }
  nd_supp_free(supp);
  nd_trace_free(t);
  free(t);
  return rc;
}

#ifndef ND_REPORT_NO_MAIN
int main(int argc, char **argv) { return nd_report_main(argc, argv, stdout, stderr); }
#endif
