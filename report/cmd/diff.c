// SPDX-License-Identifier: MIT
// diff.c: `ndmemreport diff A B`, two traces compared site by site. Sites are matched by
// (stable stack key, kind) (nd_rep_stack_key): the same code path in two runs has other stack
// ids and, under ASLR, other addresses, but the same symbolized frames. Sites of one trace with
// the same key and kind are summed. The sites that changed are listed by the absolute change of
// one measure (--by: peak live bytes, bytes allocated, live at the end, held before teardown), as
// text or JSON. --fail-on-growth compares what each site held at the end of its run, a
// teardown's frees not counted (nd_life_held, the rule of "released at teardown"): growth a
// program frees only at exit fails as growth it keeps does; the live bytes at the end, 0 for
// both, would pass it. The site that grew most is named on stderr in one line.
#include "cmd/cmd.h"
#include "fmt.h" // nd_parse_size: the sizes NDMEM_* variables take
#include "render/render.h"
#include "render/text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_USAGE                                                                                 \
  "usage: ndmemreport diff [--format text|json] [--by peak|total|live|held]\n"                    \
  "                        [--top N] [--frames N] [--python-only] [--no-symbols]\n"                \
  "                        [--fail-on-growth SIZE] A B"

// A site's measures: diff's three weights (enum nd_weight, ND_DIFF_WEIGHTS), then HELD, what it
// held at the end of its run, a teardown's frees not counted (nd_life_held): what
// --fail-on-growth compares.
#define HELD ND_DIFF_WEIGHTS
#define MEASURES (ND_DIFF_WEIGHTS + 1)
static const char *const by_words[MEASURES] = {"peak", "total", "live", "held"};
static const char *const measure_keys[MEASURES] = {"peak_live_bytes", "alloc_bytes", "live_bytes",
                                                   "held_bytes"};
static const char *const measure_words[MEASURES] = {
    "peak live bytes", "bytes allocated", "live bytes at the end",
    "bytes held before teardown"};

typedef struct side {
  nd_trace_t t;
  nd_sym_t *sym;
  report_t r;
  bool read;
} side_t;

typedef struct dent {
  uint64_t key;
  uint16_t kind;
  bool in[2];
  uint64_t v[2][MEASURES]; // per side: peak, total, live, held (summed)
  bool torn[2];            // per side: its held bytes include what a teardown freed
  uint32_t stack[2];       // per side: the first site's stack
  int side;                // while collecting: which trace
} dent_t;

static int by_key(const void *a, const void *b) {
  const dent_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  return x->side - y->side;
}

static int64_t delta(const dent_t *e, int w) {
  uint64_t a = e->v[0][w], b = e->v[1][w];
  if (b >= a) return b - a > INT64_MAX ? INT64_MAX : (int64_t)(b - a);
  return a - b > INT64_MAX ? INT64_MIN : -(int64_t)(a - b);
}

static uint64_t mag(int64_t d) { return d < 0 ? 0 - (uint64_t)d : (uint64_t)d; }

// The largest change of --by (`arg`) first, then of the other weights in their order from it,
// then of the held bytes (first under --by held), then by key and kind.
static int by_change(const void *a, const void *b, void *arg) {
  const dent_t *x = a, *y = b;
  int by = *(const int *)arg;
  for (int i = 0; i < MEASURES; i++) {
    int w = by == HELD              ? (i ? i - 1 : HELD)
            : i < ND_DIFF_WEIGHTS ? (by + i) % ND_DIFF_WEIGHTS
                                  : HELD;
    uint64_t p = mag(delta(x, w)), q = mag(delta(y, w));
    if (p != q) return p > q ? -1 : 1;
  }
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->kind < y->kind ? -1 : x->kind > y->kind;
}

// --fail-on-growth's findings: the growth of the held bytes, largest first.
static int by_growth(const void *a, const void *b) {
  const dent_t *x = *(const dent_t *const *)a, *y = *(const dent_t *const *)b;
  int64_t p = delta(x, HELD), q = delta(y, HELD);
  if (p != q) return p > q ? -1 : 1;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static bool changed(const dent_t *e) {
  if (!e->in[0] || !e->in[1]) return true;
  for (int w = 0; w < MEASURES; w++)
    if (delta(e, w)) return true;
  return false;
}

static void json_vals(FILE *o, const dent_t *e, int s) {
  if (!e->in[s]) {
    fputs("null", o);
    return;
  }
  fputc('{', o);
  for (int w = 0; w < MEASURES; w++)
    fprintf(o, "\"%s\": %llu, ", measure_keys[w], (unsigned long long)e->v[s][w]);
  fprintf(o, "\"freed_at_teardown\": %s}", e->torn[s] ? "true" : "false");
}

// The entry's frames (from B where it is there, else A): a malloc'd array (nd_rep_free_names).
static int names_of(side_t *sd, const dent_t *e, char ***names, size_t *n) {
  int s = e->in[1] ? 1 : 0;
  return nd_rep_frame_names(&sd[s].r, e->stack[s], names, n);
}

// What render shows: the changed sites v[0..n) by their change, `shown` of them; --fail-on-growth
// (fail_set, its bytes) and its findings, largest first.
typedef struct view {
  dent_t *v;
  size_t n, shown, only[2], same;
  int sort_by;
  bool json, fail_set;
  uint64_t fail_bytes;
  dent_t **grew;
  size_t ngrew;
} view_t;

static int render(FILE *o, side_t *sd, const char *const *files, const view_t *w,
                  const opts_t *opt) {
  char size[ND_TEXT_SIZE];
  if (w->json) {
    fprintf(o, "{\n  \"ndmemreport_diff\": 1,\n  \"by\": \"%s\",\n", by_words[w->sort_by]);
    for (int s = 0; s < 2; s++) {
      fprintf(o, "  \"%c\": {\"file\": ", "ab"[s]);
      nd_rep_json_str(o, files[s]);
      fprintf(o, ", \"pid\": %llu},\n", (unsigned long long)sd[s].t.hdr.pid);
    }
    fprintf(o, "  \"changed\": %zu,\n  \"sites\": [%s", w->n, w->shown ? "\n" : "");
  } else {
    fprintf(o, "ndmemreport diff: sites by the change of their %s\n", measure_words[w->sort_by]);
    for (int s = 0; s < 2; s++) {
      fprintf(o, "  %c: ", "AB"[s]);
      nd_rep_print_text(o, files[s]);
      fprintf(o, " (pid %llu)\n", (unsigned long long)sd[s].t.hdr.pid);
    }
    fprintf(o, "  %zu changed (%zu only in A, %zu only in B), %zu unchanged; %zu shown\n", w->n,
            w->only[0], w->only[1], w->same, w->shown);
    if (w->fail_set) {
      fprintf(o, "  --fail-on-growth %s, on the bytes each site held\n"
                 "  at the end of its run, before teardown: ",
              nd_text_size(size, w->fail_bytes, false));
      if (w->ngrew) fprintf(o, "%zu %s grew by more\n", w->ngrew, w->ngrew == 1 ? "site" : "sites");
      else fputs("no site grew by more\n", o);
    }
    fputc('\n', o);
    if (w->shown)
      fprintf(o, "%14s %14s %14s  %-8s %s\n", "change", "A", "B", "kind", "stack key");
  }
  for (size_t i = 0; i < w->shown; i++) {
    const dent_t *e = &w->v[i];
    char **names;
    size_t nn;
    if (names_of(sd, e, &names, &nn)) return -1;
    if (w->json) {
      fprintf(o, "    {\"stack_key\": \"%016llx\", \"kind\": \"%s\", \"a\": ",
              (unsigned long long)e->key, nd_rep_kind_names[e->kind]);
      json_vals(o, e, 0);
      fputs(", \"b\": ", o);
      json_vals(o, e, 1);
      fputs(",\n     \"delta\": {", o);
      for (int m = 0; m < MEASURES; m++)
        fprintf(o, "%s\"%s\": %lld", m ? ", " : "", measure_keys[m], (long long)delta(e, m));
      fputs("},\n     \"frames\": [", o);
      for (size_t k = 0; k < nn; k++) {
        fputs(k ? ", " : "", o);
        nd_rep_json_str(o, names[k]);
      }
      fprintf(o, "]}%s\n", i + 1 < w->shown ? "," : "");
    } else {
      char a[24] = "-", b[24] = "-";
      if (e->in[0]) snprintf(a, sizeof a, "%llu", (unsigned long long)e->v[0][w->sort_by]);
      if (e->in[1]) snprintf(b, sizeof b, "%llu", (unsigned long long)e->v[1][w->sort_by]);
      fprintf(o, "%+14lld %14s %14s  %-8s %016llx\n", (long long)delta(e, w->sort_by), a, b,
              nd_rep_kind_names[e->kind], (unsigned long long)e->key);
      size_t show = opt->frames && opt->frames < nn ? opt->frames : nn;
      if (!nn) fputs("      (no frames)\n", o);
      for (size_t k = 0; k < show; k++) fprintf(o, "      #%-2zu %s\n", k, names[k]);
      if (show < nn) fprintf(o, "      (%zu more frames)\n", nn - show);
    }
    nd_rep_free_names(names, nn);
  }
  if (w->json) {
    fprintf(o, "%s],\n  \"unchanged\": %zu,\n  \"only_in_a\": %zu,\n  \"only_in_b\": %zu,\n",
            w->shown ? "  " : "", w->same, w->only[0], w->only[1]);
    fputs("  \"fail_on_growth\": ", o);
    if (!w->fail_set) {
      fputs("null\n}\n", o);
    } else {
      fprintf(o, "{\"bytes\": %llu, \"measure\": \"held_bytes\", \"grew\": [",
              (unsigned long long)w->fail_bytes);
      for (size_t i = 0; i < w->ngrew; i++)
        fprintf(o, "%s{\"stack_key\": \"%016llx\", \"kind\": \"%s\", \"held_bytes\": %lld}",
                i ? ", " : "", (unsigned long long)w->grew[i]->key,
                nd_rep_kind_names[w->grew[i]->kind], (long long)delta(w->grew[i], HELD));
      fputs("]}\n}\n", o);
    }
  }
  return 0;
}

// --fail-on-growth's finding, on `err` in one line: the site that grew most, its frames as the
// text shows them (--frames, --python-only) joined innermost first as the shim's live lines
// join them, and how many more grew.
static int say_growth(FILE *err, side_t *sd, const view_t *w, const opts_t *opt) {
  const dent_t *e = w->grew[0];
  char size[ND_TEXT_SIZE], grew[ND_TEXT_SIZE], a[48], b[48];
  char **names;
  size_t nn;
  if (names_of(sd, e, &names, &nn)) return -1;
  nd_rep_human(a, sizeof a, e->in[0] ? e->v[0][HELD] : 0);
  nd_rep_human(b, sizeof b, e->v[1][HELD]);
  fprintf(err,
          "ndmemreport diff: --fail-on-growth %s: %s site %016llx held %s more in B than in A "
          "at the end of its run: %s in A%s, %s in B%s: ",
          nd_text_size(size, w->fail_bytes, false), nd_rep_kind_names[e->kind],
          (unsigned long long)e->key, nd_text_size(grew, (uint64_t)delta(e, HELD), false),
          e->in[0] ? a : "none", e->torn[0] ? " (before teardown)" : "", b,
          e->torn[1] ? " (before teardown)" : "");
  size_t show = opt->frames && opt->frames < nn ? opt->frames : nn;
  if (!nn) fputs("(no frames)", err);
  for (size_t k = 0; k < show; k++) fprintf(err, "%s%s", k ? " <- " : "", names[k]);
  if (show < nn) fputs(" <- ...", err);
  if (w->ngrew > 1)
    fprintf(err, "; %zu more %s grew by more", w->ngrew - 1, w->ngrew == 2 ? "site" : "sites");
  fputc('\n', err);
  nd_rep_free_names(names, nn);
  return 0;
}

static int diff_usage(FILE *err, const char *what, const char *v) {
  fprintf(err, "ndmemreport diff: %s '%s'\n%s\n", what, v ? v : "", DIFF_USAGE);
  return 2;
}

int nd_report_diff(int argc, char **argv, FILE *out, FILE *err) {
  opts_t o = {.symbols = true, .top = 10, .frames = 3, .builtin_supp = true};
  const char *files[2] = {NULL, NULL};
  size_t nfiles = 0;
  bool json = false, fail_set = false;
  unsigned long long fail_bytes = 0, n = 0;
  int sort_by = ND_BY_SITE_PEAK;
  for (int i = 2; i < argc; i++) { // argv[1] is "diff"
    const char *a = argv[i], *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
#define IS(name) (len == sizeof(name) - 1 && !strncmp(a, name, len))
#define VALUE() (eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL)
    if (a[0] != '-' || !a[1]) {
      if (nfiles == 2) return diff_usage(err, "more than two traces:", a);
      files[nfiles++] = a;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fprintf(out,
              "%s\n\n"
              "Compares trace B with trace A site by site, matched by their stable stack\n"
              "keys (the symbolized frames) and kinds.\n\n"
              "  --format FORMAT             text | json [text]\n"
              "  --by WEIGHT                 order by the change of peak | total | live |\n"
              "                              held [peak]\n"
              "  --top N                     sites listed [10]; 0 all\n"
              "  --frames N                  frames per stack in text [3]; 0 all\n"
              "  --python-only               only the Python frames of each stack\n"
              "  --no-symbols                frames as path+offset\n"
              "  --fail-on-growth SIZE       exit 1 when a site held more than SIZE more at\n"
              "                              the end of its run in B than in A, what a\n"
              "                              teardown freed counted as held (--by held);\n"
              "                              SIZE: bytes, or 512k, 10m, 1.5g\n\n"
              "Exit status: 0, 1 (--fail-on-growth and a finding), 2 (bad usage or trace).\n"
              "See ndmemreport(1).\n",
              DIFF_USAGE);
      return 0;
    } else if (IS("--format")) {
      const char *v = VALUE();
      if (v && !strcmp(v, "json")) json = true;
      else if (v && !strcmp(v, "text")) json = false;
      else return diff_usage(err, "--format takes text or json, not", v);
    } else if (IS("--by")) {
      const char *v = VALUE();
      // A site's own peak: diff's "peak" (a moment of one trace is not one of the other).
      int w = v && !strcmp(v, "peak")   ? ND_BY_SITE_PEAK
              : v && !strcmp(v, "held") ? HELD
                                        : nd_rep_parse_weight(v);
      if (w < 0 || w >= MEASURES)
        return diff_usage(err, "--by takes peak, total, live or held, not", v);
      sort_by = w;
    } else if (IS("--top") || IS("--frames")) {
      bool top = IS("--top");
      const char *v = VALUE();
      if (nd_rep_parse_count(v, 1000000, &n))
        return diff_usage(err, "--top and --frames need a number from 0 to 1000000, not", v);
      *(top ? &o.top : &o.frames) = (size_t)n;
    } else if (IS("--fail-on-growth")) {
      // A size as every size setting takes it (NDMEM_MAX_BYTES, ndmem run --max-bytes): bytes,
      // or binary units (k, KB, KiB = 1024; m, g, t), a fraction rounded down to a byte.
      const char *v = VALUE();
      int64_t b;
      if (!v || nd_parse_size(v, 0, &b)) {
        fprintf(err, "ndmemreport diff: --fail-on-growth takes a size (bytes, or 512k, 10m, "
                     "10MiB, 1.5g: k = 1024), not '%s'\n", v ? v : "");
        return 2;
      }
      fail_bytes = (unsigned long long)b;
      fail_set = true;
    } else if (!strcmp(a, "--python-only")) {
      o.python_only = true;
    } else if (!strcmp(a, "--no-symbols")) {
      o.symbols = false;
    } else {
      return diff_usage(err, "unknown option", a);
    }
#undef IS
#undef VALUE
  }
  if (nfiles != 2) return diff_usage(err, "needs two traces, A and B; got", nfiles ? files[0] : "");

  side_t *sd = calloc(2, sizeof *sd);
  dent_t *v = NULL;
  size_t total = 0;
  int rc = 0;
  if (!sd) goto oom;
  // One trace at a time: its sites keyed, then its symbolizer's cache (a frame per distinct
  // return address: the most memory a large trace costs) dropped for a fresh one, which resolves
  // only the frames of the sites shown. So two traces' caches are never held at once.
  for (int s = 0; s < 2; s++) {
    nd_trace_t *t = &sd[s].t;
    if (nd_rep_read_trace(t, files[s], err, ND_PROGRESS_MIN)) {
      sd[s].read = true;
      rc = 2;
      goto done;
    }
    sd[s].read = true;
    if (!(sd[s].sym = nd_sym_new(t, o.symbols))) goto oom;
    sd[s].r = (report_t){.t = t, .sym = sd[s].sym, .o = &o};
    dent_t *nv = realloc(v, (total + t->nsites + 1) * sizeof *v);
    if (!nv) goto oom;
    v = nv;
    for (size_t i = 0; i < t->nsites; i++, total++) {
      const nd_site_t *x = &t->sites[i];
      dent_t *e = &v[total];
      *e = (dent_t){.kind = x->rec.kind, .side = s};
      if (nd_rep_stack_key(&sd[s].r, x->stack, &e->key)) goto oom;
      e->in[s] = true;
      e->stack[s] = x->stack;
      for (int w = 0; w < ND_DIFF_WEIGHTS; w++)
        e->v[s][w] = nd_rep_site_weight(t, x, (enum nd_weight)w);
      e->v[s][HELD] = nd_life_held(t, x, &e->torn[s]);
    }
    nd_sym_free(sd[s].sym);
    if (!(sd[s].sym = nd_sym_new(t, o.symbols))) goto oom;
    sd[s].r.sym = sd[s].sym;
  }
  qsort(v, total, sizeof *v, by_key);
  // Fold each (key, kind) into its first entry: A's sites come before B's.
  size_t m = 0, only[2] = {0, 0}, same = 0;
  for (size_t i = 0; i < total; i++) {
    if (m && v[m - 1].key == v[i].key && v[m - 1].kind == v[i].kind) {
      dent_t *d = &v[m - 1];
      int s = v[i].side;
      if (!d->in[s]) d->stack[s] = v[i].stack[s];
      d->in[s] = true;
      d->torn[s] |= v[i].torn[s];
      for (int w = 0; w < MEASURES; w++) d->v[s][w] = nd_rep_sat_add(d->v[s][w], v[i].v[s][w]);
    } else {
      v[m++] = v[i];
    }
  }
  size_t nchanged = 0;
  for (size_t i = 0; i < m; i++) {
    if (!v[i].in[1]) only[0]++;
    if (!v[i].in[0]) only[1]++;
    if (changed(&v[i])) v[nchanged++] = v[i];
    else same++;
  }
  qsort_r(v, nchanged, sizeof *v, by_change, &sort_by);
  // --fail-on-growth: a site that held more than fail_bytes more in B (an unchanged one did not)
  view_t w = {.v = v, .n = nchanged, .only = {only[0], only[1]}, .same = same, .sort_by = sort_by,
              .json = json, .fail_set = fail_set, .fail_bytes = fail_bytes};
  w.shown = o.top && o.top < nchanged ? o.top : nchanged;
  if (fail_set && !(w.grew = malloc((nchanged + 1) * sizeof *w.grew))) goto oom;
  for (size_t i = 0; fail_set && i < nchanged; i++) {
    int64_t d = delta(&v[i], HELD);
    if (d > 0 && (uint64_t)d > fail_bytes) w.grew[w.ngrew++] = &v[i];
  }
  if (w.ngrew) qsort(w.grew, w.ngrew, sizeof *w.grew, by_growth);
  if (render(out, sd, files, &w, &o)) {
    free(w.grew);
    goto oom;
  }
  if (fflush(out) || ferror(out)) {
    fprintf(err, "ndmemreport: cannot write the report: %s\n", strerror(errno));
    rc = 2;
  } else if (w.ngrew) {
    rc = say_growth(err, sd, &w, &o) ? 2 : 1;
    if (rc == 2) fputs("ndmemreport diff: out of memory\n", err);
  }
  free(w.grew);
  goto done;
oom:
  fputs("ndmemreport diff: out of memory\n", err);
  rc = 2;
done:
  free(v);
  for (int s = 0; sd && s < 2; s++) {
    nd_sym_free(sd[s].sym);
    if (sd[s].read) nd_trace_free(&sd[s].t);
  }
  free(sd);
  return rc;
}
