// SPDX-License-Identifier: MIT
// supp_stacks: for each stack with blocks live at exit in a trace, the suppression rule that
// matches it (report/analyse/suppress.c: the built-ins, and the files given), or "-" and its innermost
// frame with a name ("function (file:line)", the file's folder left out); sorted and unique.
// It does what the report's leak section (analyse.c, suppressed_by) does with the rules, for
// t_suppress.sh.
// usage: supp_stacks TRACE [SUPPRESSIONS...]
#include "analyse/suppress.h"
#include "analyse/symbolize.h"
#include "read/trace_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs("usage: supp_stacks TRACE [SUPPRESSIONS...]\n", stderr);
    return 2;
  }
  static nd_trace_t t;
  if (nd_trace_read(&t, argv[1], NULL, NULL)) {
    fprintf(stderr, "supp_stacks: %s: %s\n", argv[1], t.err);
    return 2;
  }
  nd_supp_t *s = nd_supp_new();
  char err[512];
  if (!s || nd_supp_builtin(s)) return 2;
  for (int i = 2; i < argc; i++) {
    if (nd_supp_load(s, argv[i], err, sizeof err)) {
      fprintf(stderr, "supp_stacks: %s\n", err);
      return 2;
    }
  }
  nd_sym_t *sym = nd_sym_new(&t, true);
  char **lines = calloc(t.nleaks + 1, sizeof *lines);
  if (!sym || !lines) return 2;
  for (size_t i = 0; i < t.nleaks; i++) {
    const nd_stack_t *st = &t.stacks[t.leaks[i].stack];
    const uint64_t *ips = nd_stack_frames(&t, st);
    nd_frame_view_t v[ND_TRACE_MAX_STACK * 8];
    size_t n = 0;
    for (size_t k = 0; k < st->depth; k++) {
      const nd_frame_t *f = nd_sym_frame(sym, ips[k]);
      if (!f) return 2;
      size_t m = nd_supp_views(f, v + n, sizeof v / sizeof *v - n);
      n += m < sizeof v / sizeof *v - n ? m : sizeof v / sizeof *v - n;
    }
    const nd_supp_rule_t *r = nd_supp_match(s, v, n);
    char buf[1024];
    if (r) {
      snprintf(buf, sizeof buf, "%s", r->name);
    } else {
      size_t k = 0;
      while (k < n && !v[k].function) k++;
      const char *file = k < n && v[k].file ? strrchr(v[k].file, '/') : NULL;
      file = file ? file + 1 : k < n && v[k].file ? v[k].file : "?";
      int line = 0;
      // the line of the call in that frame: the matching nd_loc_t is not kept in the view
      for (size_t j = 0, c = 0; j < st->depth && !line; j++) {
        const nd_frame_t *f = nd_sym_frame(sym, ips[j]);
        for (size_t q = 0; q <= f->ninlined && !line; q++, c++)
          if (c == k) line = q ? f->inlined_into[q - 1].line : f->at.line;
      }
      snprintf(buf, sizeof buf, "- %s (%s:%d)", k < n ? v[k].function : "?", file, line);
    }
    lines[i] = strdup(buf);
  }
  qsort(lines, t.nleaks, sizeof *lines, cmp);
  for (size_t i = 0; i < t.nleaks; i++)
    if (!i || strcmp(lines[i], lines[i - 1])) puts(lines[i]);
  for (size_t i = 0; i < t.nleaks; i++) free(lines[i]);
  free(lines);
  nd_sym_free(sym);
  nd_supp_free(s);
  nd_trace_free(&t);
  return 0;
}
