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
// The analysis is in analyse.h's files, the renderers in render.h's, the commands beside the
// report and what they share with it (reading a trace, the suppressions, the report run on a read
// trace) in cmd.h's; this file parses the arguments and runs the report, diff, merge or --follow.
#include "ndmemreport.h"
#include "cmd/cmd.h"
#include "analyse/frames.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int parse_count(FILE *err, const char *opt, const char *v, size_t *out) {
  unsigned long long n;
  if (nd_rep_parse_count(v, 1000000, &n))
    return usage_error(err, "%s needs a number from 0 to 1000000, not '%s'", opt, v ? v : "");
  *out = (size_t)n;
  return 0;
}

// 0: run; 2: bad usage (reported); -1: --help was printed.
static int parse_args(int argc, char **argv, opts_t *o, FILE *out, FILE *err) {
  *o = (opts_t){.symbols = true, .top = 10, .frames = 8, .builtin_supp = true, .follow_ms = 1000,
                .collapsed_by = ND_BY_PEAK, .flame_by = ND_BY_PEAK};
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
              "  --collapsed-by WEIGHT       collapsed's weight: peak (live at the process's\n"
              "                              peak) | site-peak | total | live [peak]\n"
              "  --flame-by WEIGHT           svg's weight: peak | site-peak | total | live\n"
              "                              [peak]\n"
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
              "  --fail-on-growth            exit 1 on growth; 3 when unchecked\n"
              "  --suppressions FILE         leaks matching FILE's leak:PATTERN rules are\n"
              "                              not reported (repeatable)\n"
              "  --no-builtin-suppressions   report the C and C++ runtimes' blocks too\n"
              "  --follow                    report a running job's trace as it grows\n"
              "  --follow-interval MS        milliseconds between refreshes [1000]\n"
              "  --version                   the version\n\n"
              "Exit status: 0 nothing found, 1 a finding (--fail-on-leak, --fail-on-growth),\n"
              "2 bad usage or trace, 3 unchecked (blocks live at exit had no record, or growth\n"
              "in sampled small blocks may have gone unseen; one stderr line each). diff --help\n"
              "and merge --help list their options.\n"
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
    } else if (IS("--flame-by")) { // what --format svg's flame graph weighs (render/svg.c)
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
