// SPDX-License-Identifier: MIT
// diff.c: `ndmemreport diff A B`, two traces compared site by site. Sites are matched by
// (stable stack key, kind) (nd_rep_stack_key): the same code path in two runs has other stack
// ids and, under ASLR, other addresses, but the same symbolized frames. Sites of one trace with
// the same key and kind are summed. The sites that changed are listed by the absolute change of
// one measure (--by: peak live bytes, bytes allocated, live at the end), as text or JSON.
#include "cmd/cmd.h"
#include "fmt.h" // nd_parse_size: the sizes NDMEM_* variables take
#include "render/render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_USAGE                                                                                 \
  "usage: ndmemreport diff [--format text|json] [--by peak|total|live] [--top N]\n"              \
  "                        [--frames N] [--python-only] [--no-symbols]\n"                          \
  "                        [--fail-on-growth SIZE] A B"

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
  uint64_t v[2][ND_DIFF_WEIGHTS]; // per side: peak, total, live (summed)
  uint32_t stack[2];         // per side: the first site's stack
  int side;                  // while collecting: which trace
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

// The largest change of --by (`arg`) first, then of the other measures, then by key and kind.
static int by_change(const void *a, const void *b, void *arg) {
  const dent_t *x = a, *y = b;
  enum nd_weight by = *(const enum nd_weight *)arg;
  for (int i = 0; i < ND_DIFF_WEIGHTS; i++) {
    int w = (by + i) % ND_DIFF_WEIGHTS;
    uint64_t p = mag(delta(x, w)), q = mag(delta(y, w));
    if (p != q) return p > q ? -1 : 1;
  }
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static bool changed(const dent_t *e) {
  if (!e->in[0] || !e->in[1]) return true;
  for (int w = 0; w < ND_DIFF_WEIGHTS; w++)
    if (delta(e, w)) return true;
  return false;
}

static void json_vals(FILE *o, const dent_t *e, int s) {
  if (!e->in[s]) {
    fputs("null", o);
    return;
  }
  fprintf(o, "{\"peak_live_bytes\": %llu, \"alloc_bytes\": %llu, \"live_bytes\": %llu}",
          (unsigned long long)e->v[s][ND_BY_SITE_PEAK], (unsigned long long)e->v[s][ND_BY_TOTAL],
          (unsigned long long)e->v[s][ND_BY_LIVE]);
}

static const char *measure_words[ND_DIFF_WEIGHTS] = {"peak live bytes", "bytes allocated",
                                                "live bytes at the end"};

// The entry's frames (from B where it is there, else A): a malloc'd array (nd_rep_free_names).
static int names_of(side_t *sd, const dent_t *e, char ***names, size_t *n) {
  int s = e->in[1] ? 1 : 0;
  return nd_rep_frame_names(&sd[s].r, e->stack[s], names, n);
}

static int render(FILE *o, side_t *sd, const char *const *files, dent_t *v, size_t n, size_t shown,
                  const opts_t *opt, enum nd_weight sort_by, bool json, size_t only[2],
                  size_t same) {
  if (json) {
    fprintf(o, "{\n  \"ndmemreport_diff\": 1,\n  \"by\": \"%s\",\n",
            sort_by == ND_BY_SITE_PEAK ? "peak" : nd_rep_weight_names[sort_by]);
    for (int s = 0; s < 2; s++) {
      fprintf(o, "  \"%c\": {\"file\": ", "ab"[s]);
      nd_rep_json_str(o, files[s]);
      fprintf(o, ", \"pid\": %llu},\n", (unsigned long long)sd[s].t.hdr.pid);
    }
    fprintf(o, "  \"changed\": %zu,\n  \"sites\": [%s", n, shown ? "\n" : "");
  } else {
    fprintf(o, "ndmemreport diff: sites by the change of their %s\n", measure_words[sort_by]);
    for (int s = 0; s < 2; s++) {
      fprintf(o, "  %c: ", "AB"[s]);
      nd_rep_print_text(o, files[s]);
      fprintf(o, " (pid %llu)\n", (unsigned long long)sd[s].t.hdr.pid);
    }
    fprintf(o, "  %zu changed (%zu only in A, %zu only in B), %zu unchanged; %zu shown\n\n", n,
            only[0], only[1], same, shown);
    if (shown)
      fprintf(o, "%14s %14s %14s  %-8s %s\n", "change", "A", "B", "kind", "stack key");
  }
  for (size_t i = 0; i < shown; i++) {
    const dent_t *e = &v[i];
    char **names;
    size_t nn;
    if (names_of(sd, e, &names, &nn)) return -1;
    if (json) {
      fprintf(o, "    {\"stack_key\": \"%016llx\", \"kind\": \"%s\", \"a\": ",
              (unsigned long long)e->key, nd_rep_kind_names[e->kind]);
      json_vals(o, e, 0);
      fputs(", \"b\": ", o);
      json_vals(o, e, 1);
      fprintf(o, ",\n     \"delta\": {\"peak_live_bytes\": %lld, \"alloc_bytes\": %lld, "
                 "\"live_bytes\": %lld},\n     \"frames\": [",
              (long long)delta(e, ND_BY_SITE_PEAK), (long long)delta(e, ND_BY_TOTAL),
              (long long)delta(e, ND_BY_LIVE));
      for (size_t k = 0; k < nn; k++) {
        fputs(k ? ", " : "", o);
        nd_rep_json_str(o, names[k]);
      }
      fprintf(o, "]}%s\n", i + 1 < shown ? "," : "");
    } else {
      char a[24] = "-", b[24] = "-";
      if (e->in[0]) snprintf(a, sizeof a, "%llu", (unsigned long long)e->v[0][sort_by]);
      if (e->in[1]) snprintf(b, sizeof b, "%llu", (unsigned long long)e->v[1][sort_by]);
      fprintf(o, "%+14lld %14s %14s  %-8s %016llx\n", (long long)delta(e, sort_by), a, b,
              nd_rep_kind_names[e->kind], (unsigned long long)e->key);
      size_t show = opt->frames && opt->frames < nn ? opt->frames : nn;
      if (!nn) fputs("      (no frames)\n", o);
      for (size_t k = 0; k < show; k++) fprintf(o, "      #%-2zu %s\n", k, names[k]);
      if (show < nn) fprintf(o, "      (%zu more frames)\n", nn - show);
    }
    nd_rep_free_names(names, nn);
  }
  if (json)
    fprintf(o, "%s],\n  \"unchanged\": %zu,\n  \"only_in_a\": %zu,\n  \"only_in_b\": %zu\n}\n",
            shown ? "  " : "", same, only[0], only[1]);
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
  enum nd_weight sort_by = ND_BY_SITE_PEAK;
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
              "  --by WEIGHT                 order by the change of peak | total | live [peak]\n"
              "  --top N                     sites listed [10]; 0 all\n"
              "  --frames N                  frames per stack in text [3]; 0 all\n"
              "  --python-only               only the Python frames of each stack\n"
              "  --no-symbols                frames as path+offset\n"
              "  --fail-on-growth SIZE       exit 1 when a site's live bytes at the end grew\n"
              "                              by more than SIZE (bytes, or 512k, 10m, 1.5g)\n\n"
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
      int w = v && !strcmp(v, "peak") ? ND_BY_SITE_PEAK : nd_rep_parse_weight(v);
      if (w < 0 || w >= ND_DIFF_WEIGHTS)
        return diff_usage(err, "--by takes peak, total or live, not", v);
      sort_by = (enum nd_weight)w;
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
      for (int w = 0; w < ND_DIFF_WEIGHTS; w++) d->v[s][w] = nd_rep_sat_add(d->v[s][w], v[i].v[s][w]);
    } else {
      v[m++] = v[i];
    }
  }
  size_t nchanged = 0;
  bool grew = false;
  for (size_t i = 0; i < m; i++) {
    if (!v[i].in[1]) only[0]++;
    if (!v[i].in[0]) only[1]++;
    if (fail_set && delta(&v[i], ND_BY_LIVE) > 0 && (uint64_t)delta(&v[i], ND_BY_LIVE) > fail_bytes)
      grew = true;
    if (changed(&v[i])) v[nchanged++] = v[i];
    else same++;
  }
  qsort_r(v, nchanged, sizeof *v, by_change, &sort_by);
  size_t shown = o.top && o.top < nchanged ? o.top : nchanged;
  if (render(out, sd, files, v, nchanged, shown, &o, sort_by, json, only, same)) goto oom;
  if (fflush(out) || ferror(out)) {
    fprintf(err, "ndmemreport: cannot write the report: %s\n", strerror(errno));
    rc = 2;
  } else if (grew) {
    rc = 1;
  }
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
