// SPDX-License-Identifier: MIT
// merge.c: `ndmemreport merge T1 T2 ...`, the traces of the ranks (processes) of one job side by
// side: a table of each trace (host, pid, how it ended, duration, peaks, live at end, leaks) and
// the allocation sites aggregated across traces by (stable stack key, kind), the key JSON reports
// print as "stack_key" (nd_rep_stack_key: stack ids and addresses differ between processes), with
// per-site min / median / max and the ranks far above the median named. The traces are read one
// at a time; only the aggregated sites stay in memory.
#include "ndmemreport.h"
#include "report.h"
#include "sbuf.h"
#include "running.h"
#include "symbolize.h"
#include "trace_read.h"


#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MERGE_USAGE "usage: ndmemreport merge [--format text|json] [--top N] [--no-symbols] TRACE..."
#define OUTLIER_FLOOR (1ull << 20) // a rank above 2x the median is named only from 1 MiB

// One trace's row of the table.
typedef struct mrank {
  const char *path;
  char host[sizeof(((nd_trace_t *)0)->host)];
  uint64_t pid, duration_ns;
  char ended[48];
  uint64_t peak[ND_TRACE_KINDS], live_end;
  bool leaks_known;
  uint64_t leak_bytes;
} mrank_t;

// A site aggregated over the traces: its identity (stack key, kind), its frames as the first trace
// with it names them, and each trace's peak live bytes (the sum over that trace's stacks with the
// same identity).
typedef struct msite {
  uint64_t key;  // nd_rep_stack_key
  uint16_t kind;
  char *frames;  // each frame's name NUL-terminated, one after the other, innermost first
  uint32_t nframes;
  uint64_t *val; // per rank
  uint64_t allocs, alloc_bytes; // summed over ranks
  uint64_t total, min, median, max;
  size_t in;      // ranks with the site
} msite_t;

typedef struct merge {
  size_t nranks;
  mrank_t *ranks;
  msite_t *sites;
  size_t nsites, cap;
  uint32_t *slots; // open addressing over sites (index + 1)
  size_t nslots;
} merge_t;

static uint64_t hash_key(uint64_t key, uint16_t kind) {
  uint64_t h = (key ^ kind) * 0x9e3779b97f4a7c15ull; // the key is a hash already: spread it
  return h ^ h >> 29;
}

// A stack's frames as merge prints them (text and JSON "frames"), innermost first: a Python
// frame's qualname, file and line; a native frame's module basename, function and file:line when
// known, else module basename + offset (load bases differ between processes; offsets do not); a
// frame outside every module its address. Each name NUL-terminated (a name may hold any other
// byte), into `b`; false when out of memory.
static bool frame_names(const nd_trace_t *t, nd_sym_t *sym, const nd_stack_t *s, sbuf_t *b) {
  const uint64_t *ips = nd_stack_frames(t, s);
  sb_put(b, "", 0);
  for (uint32_t i = 0; i < s->depth; i++) {
    const nd_frame_t *f = nd_sym_frame(sym, ips[i]);
    if (!f) return false;
    const char *fn = f->at.function ? f->at.function : "?", *file = f->at.file ? f->at.file : "?";
    if (f->python) {
      sb_put(b, "py ", 3);
      sb_put(b, fn, strlen(fn));
      sb_put(b, " (", 2);
      sb_put(b, file, strlen(file));
      sb_fmt(b, ":%d)", f->at.line);
    } else if (f->module && f->at.function && f->at.file) {
      const char *m = nd_rep_base_name(f->module);
      file = nd_rep_base_name(f->at.file);
      sb_put(b, m, strlen(m));
      sb_put(b, "!", 1);
      sb_put(b, fn, strlen(fn));
      sb_put(b, " (", 2);
      sb_put(b, file, strlen(file));
      sb_fmt(b, ":%d)", f->at.line);
    } else if (f->module) {
      const char *m = nd_rep_base_name(f->module);
      sb_put(b, m, strlen(m));
      sb_fmt(b, "+0x%llx", (unsigned long long)f->offset);
    } else {
      sb_fmt(b, "0x%llx", (unsigned long long)f->ip);
    }
    sb_put(b, "", 1); // the name's end
  }
  return !b->oom;
}

static int grow_slots(merge_t *m) {
  size_t n = m->nslots ? m->nslots * 2 : 256;
  uint32_t *slots = calloc(n, sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < m->nsites; i++) {
    size_t j = hash_key(m->sites[i].key, m->sites[i].kind) & (n - 1);
    while (slots[j]) j = (j + 1) & (n - 1);
    slots[j] = (uint32_t)i + 1;
  }
  free(m->slots);
  m->slots = slots, m->nslots = n;
  return 0;
}

// The aggregated site of (key, kind), created if new with the frames of stack `st`; NULL: OOM.
static msite_t *site_of(merge_t *m, uint64_t key, uint16_t kind, const nd_trace_t *t,
                        nd_sym_t *sym, const nd_stack_t *st) {
  if ((m->nsites + 1) * 2 > m->nslots && grow_slots(m)) return NULL;
  size_t j = hash_key(key, kind) & (m->nslots - 1);
  for (; m->slots[j]; j = (j + 1) & (m->nslots - 1)) {
    msite_t *s = &m->sites[m->slots[j] - 1];
    if (s->kind == kind && s->key == key) return s;
  }
  if (m->nsites == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    msite_t *p = realloc(m->sites, cap * sizeof *p);
    if (!p) return NULL;
    m->sites = p, m->cap = cap;
  }
  sbuf_t b = {0};
  if (!frame_names(t, sym, st, &b)) {
    free(b.p);
    return NULL;
  }
  msite_t *s = &m->sites[m->nsites];
  *s = (msite_t){.key = key, .kind = kind, .frames = b.p, .nframes = st->depth,
                 .val = calloc(m->nranks, sizeof *s->val)};
  if (!s->val) {
    free(b.p);
    return NULL;
  }
  m->slots[j] = (uint32_t)++m->nsites;
  return s;
}

// The frames merge's symbolizer caches at most (about 25 MiB): a job's code has far fewer distinct
// return addresses, so this only bounds traces with millions of them.
#define MERGE_SYM_FRAMES (256u << 10)

static void describe_end(const nd_trace_t *t, const char *path, char *out, size_t n) {
  if (t->have_exit) {
    switch (t->exit.how) {
    case ND_EXIT_NORMAL: snprintf(out, n, "exit %d", t->exit.code); return;
    case ND_EXIT_UNDERSCORE: snprintf(out, n, "_exit %d", t->exit.code); return;
    case ND_EXIT_SIGNAL: snprintf(out, n, "signal %d", t->exit.code); return;
    default: snprintf(out, n, "limit abort"); return;
    }
  }
  if (t->ended) snprintf(out, n, "ended");
  else {
    int r = nd_trace_running(t, path);
    snprintf(out, n, "%s", r == ND_RUN_YES ? "running" : r == ND_RUN_NO ? "killed" : "no end");
  }
}

// Reads trace `i` and folds it into `m`: its row and its sites. 0, or 2 after an error reported.
static int fold_trace(merge_t *m, size_t i, bool symbols, FILE *err) {
  mrank_t *r = &m->ranks[i];
  nd_trace_t *t = malloc(sizeof *t);
  if (!t) goto oom_early;
  if (nd_rep_read_trace(t, r->path, err, ND_PROGRESS_MIN)) {
    nd_trace_free(t);
    free(t);
    return 2;
  }
  snprintf(r->host, sizeof r->host, "%s", t->host);
  r->pid = t->hdr.pid;
  uint64_t last = t->ended ? t->end.mono_ns : t->last_ns;
  r->duration_ns = nd_rep_since_start(t, last);
  describe_end(t, r->path, r->ended, sizeof r->ended);
  if (t->have_counters)
    for (int k = 0; k < ND_TRACE_KINDS; k++) {
      const nd_rec_kind_totals_t *kt = &t->counters.kind[k];
      r->peak[k] = kt->peak_bytes > 0 ? (uint64_t)kt->peak_bytes : 0;
      r->live_end += kt->live_bytes > 0 ? (uint64_t)kt->live_bytes : 0;
    }
  r->leaks_known = nd_rep_leaks_known(t);
  for (size_t l = 0; l < t->nleaks; l++)
    r->leak_bytes += t->leaks[l].exact_bytes + t->leaks[l].est_bytes;
  nd_sym_t *sym = nd_sym_new(t, symbols);
  if (!sym) goto oom;
  opts_t o = {.symbols = symbols};
  report_t rep = {.t = t, .sym = sym, .o = &o};
  for (size_t j = 0; j < t->nsites; j++) {
    const nd_site_t *ts = &t->sites[j];
    uint64_t key;
    msite_t *s = nd_rep_stack_key(&rep, ts->stack, &key) ? NULL
                 : site_of(m, key, ts->rec.kind, t, sym, &t->stacks[ts->stack]);
    if (!s) {
      nd_sym_free(sym);
      goto oom;
    }
    s->val[i] += ts->rec.peak_live_bytes;
    s->allocs += ts->rec.allocs;
    s->alloc_bytes += ts->rec.alloc_bytes;
    nd_sym_trim(sym, MERGE_SYM_FRAMES); // a site's frames are named and keyed: done with them
  }
  nd_sym_free(sym);
  nd_trace_free(t);
  free(t);
  return 0;
oom:
  nd_trace_free(t);
  free(t);
oom_early:
  fprintf(err, "ndmemreport: %s: out of memory\n", r->path);
  return 2;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

// Totals and order statistics over all ranks, a rank without the site counting 0.
static int finish_sites(merge_t *m) {
  uint64_t *v = malloc(m->nranks * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < m->nsites; i++) {
    msite_t *s = &m->sites[i];
    memcpy(v, s->val, m->nranks * sizeof *v);
    qsort(v, m->nranks, sizeof *v, cmp_u64);
    s->total = 0, s->in = 0;
    for (size_t r = 0; r < m->nranks; r++) s->total += v[r], s->in += v[r] > 0;
    s->min = v[0], s->max = v[m->nranks - 1];
    size_t h = m->nranks / 2; // an even count: the mean of the middle two, rounded down
    s->median = m->nranks % 2 ? v[h] : v[h - 1] / 2 + v[h] / 2 + (v[h - 1] % 2 + v[h] % 2) / 2;
  }
  free(v);
  return 0;
}

static bool is_outlier(const msite_t *s, uint64_t v) {
  return v >= OUTLIER_FLOOR && (s->median == 0 || v / 2 > s->median ||
                                (v / 2 == s->median && v % 2));
}

static int cmp_site(const void *a, const void *b) {
  const msite_t *x = a, *y = b;
  if (x->total != y->total) return x->total > y->total ? -1 : 1;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  return x->key < y->key ? -1 : x->key > y->key;
}


// The highest device peak of a rank, and whether it has any device memory.
static uint64_t dev_peak(const mrank_t *r) {
  uint64_t p = 0;
  for (int k = 4; k < ND_TRACE_KINDS; k++) p = r->peak[k] > p ? r->peak[k] : p;
  return p;
}

static void text_report(FILE *o, const merge_t *m, size_t top) {
  char a[24], b[24], c[24], d[24], e[24];
  fprintf(o, "== ranks: %zu traces, numbered in the order given (a trace holds no rank)\n",
          m->nranks);
  fputs("  #  trace                     host:pid                  ended        duration\n", o);
  for (size_t i = 0; i < m->nranks; i++) {
    const mrank_t *r = &m->ranks[i];
    char hp[96], p[96]; // a control byte from a hostile trace becomes '?': the columns hold
    snprintf(hp, sizeof hp, "%s:%llu", r->host, (unsigned long long)r->pid);
    snprintf(p, sizeof p, "%s", nd_rep_base_name(r->path));
    nd_rep_no_controls(hp);
    nd_rep_no_controls(p);
    fprintf(o, "%3zu  %-24.24s  %-24.24s  %-11.11s  %8.3f s\n", i, p, hp, r->ended,
            (double)r->duration_ns / 1e9);
  }
  fputs("\n  #    peak heap    peak mmap  peak device     live end        leaks\n", o);
  for (size_t i = 0; i < m->nranks; i++) {
    const mrank_t *r = &m->ranks[i];
    fprintf(o, "%3zu  %11s  %11s  %11s  %11s  %11s\n", i, nd_rep_human(a, sizeof a, r->peak[0]),
            nd_rep_human(b, sizeof b, r->peak[1]), nd_rep_human(c, sizeof c, dev_peak(r)), nd_rep_human(d, sizeof d, r->live_end),
            r->leaks_known ? nd_rep_human(e, sizeof e, r->leak_bytes) : "-");
  }
  fputs("  (peak device: the highest of the devices; leaks: - without a normal exit)\n", o);
  size_t n = top && top < m->nsites ? top : m->nsites;
  fprintf(o, "\n== sites by peak live bytes summed over ranks (%zu of %zu)\n", n, m->nsites);
  fputs("   outliers: ranks above 2x the median and 1 MiB; a rank without the site: 0\n", o);
  for (size_t i = 0; i < n; i++) {
    const msite_t *s = &m->sites[i];
    fprintf(o, "#%-3zu %-8s total %s in %zu of %zu ranks\n", i + 1, nd_rep_kind_names[s->kind],
            nd_rep_human(a, sizeof a, s->total), s->in, m->nranks);
    fprintf(o, "      min %s, median %s, max %s\n", nd_rep_human(a, sizeof a, s->min), nd_rep_human(b, sizeof b, s->median),
            nd_rep_human(c, sizeof c, s->max));
    bool any = false;
    for (size_t r = 0; r < m->nranks; r++) {
      if (!is_outlier(s, s->val[r])) continue;
      fprintf(o, "%s #%zu %s", any ? "," : "      outliers:", r, nd_rep_human(a, sizeof a, s->val[r]));
      any = true;
    }
    if (any) fputc('\n', o);
    const char *k = s->frames;
    for (uint32_t f = 0; f < s->nframes && f < 8; f++) {
      size_t len = strlen(k);
      fprintf(o, "      #%u  %s", f, len > 68 ? "..." : "");
      nd_rep_print_text(o, len > 68 ? k + len - 65 : k);
      fputc('\n', o);
      k += len + 1;
    }
    if (!s->nframes) fputs("      (no frames)\n", o);
  }
}

static void json_report(FILE *o, const merge_t *m, size_t top) {
  fputs("{\"ranks\": [", o);
  for (size_t i = 0; i < m->nranks; i++) {
    const mrank_t *r = &m->ranks[i];
    fprintf(o, "%s\n  {\"rank\": %zu, \"trace\": ", i ? "," : "", i);
    nd_rep_json_str(o, r->path);
    fputs(", \"host\": ", o);
    nd_rep_json_str(o, r->host);
    fprintf(o, ", \"pid\": %llu, \"ended\": \"%s\", \"duration_ns\": %llu, \"peak_heap\": %llu, "
               "\"peak_mmap\": %llu, \"peak_device\": [",
            (unsigned long long)r->pid, r->ended, (unsigned long long)r->duration_ns,
            (unsigned long long)r->peak[0], (unsigned long long)r->peak[1]);
    int last = 3;
    for (int k = 4; k < ND_TRACE_KINDS; k++) last = r->peak[k] ? k : last;
    for (int k = 4; k <= last; k++)
      fprintf(o, "%s%llu", k > 4 ? ", " : "", (unsigned long long)r->peak[k]);
    fprintf(o, "], \"live_at_end\": %llu, \"leaks\": ", (unsigned long long)r->live_end);
    if (r->leaks_known) fprintf(o, "%llu}", (unsigned long long)r->leak_bytes);
    else fputs("null}", o);
  }
  size_t n = top && top < m->nsites ? top : m->nsites;
  fprintf(o, "],\n \"outlier_floor\": %llu, \"sites_total\": %zu, \"sites\": [",
          (unsigned long long)OUTLIER_FLOOR, m->nsites);
  for (size_t i = 0; i < n; i++) {
    const msite_t *s = &m->sites[i];
    fprintf(o, "%s\n  {\"stack_key\": \"%016llx\", \"kind\": \"%s\", \"total\": %llu, "
               "\"ranks_with\": %zu, \"min\": %llu, \"median\": %llu, \"max\": %llu, "
               "\"allocs\": %llu, \"alloc_bytes\": %llu,\n   \"per_rank\": [",
            i ? "," : "", (unsigned long long)s->key, nd_rep_kind_names[s->kind],
            (unsigned long long)s->total, s->in, (unsigned long long)s->min,
            (unsigned long long)s->median, (unsigned long long)s->max,
            (unsigned long long)s->allocs, (unsigned long long)s->alloc_bytes);
    for (size_t r = 0; r < m->nranks; r++)
      fprintf(o, "%s%llu", r ? ", " : "", (unsigned long long)s->val[r]);
    fputs("], \"outliers\": [", o);
    bool any = false;
    for (size_t r = 0; r < m->nranks; r++) {
      if (!is_outlier(s, s->val[r])) continue;
      fprintf(o, "%s%zu", any ? ", " : "", r);
      any = true;
    }
    fputs("],\n   \"frames\": [", o);
    const char *k = s->frames;
    for (uint32_t f = 0; f < s->nframes; f++) {
      if (f) fputs(", ", o);
      nd_rep_json_str(o, k);
      k += strlen(k) + 1;
    }
    fputs("]}", o);
  }
  fputs("]}\n", o);
}

int nd_report_merge(int argc, char **argv, FILE *out, FILE *err) {
  bool json = false, symbols = true;
  size_t top = 10;
  merge_t m = {0};
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  if (!files) {
    fputs("ndmemreport: out of memory\n", err);
    return 2;
  }
  int rc = 0;
  bool dashdash = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (dashdash || a[0] != '-' || !a[1]) {
      files[m.nranks++] = a;
    } else if (!strcmp(a, "--")) {
      dashdash = true;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs("usage: ndmemreport merge [--format text|json] [--top N] [--no-symbols]\n"
            "                         TRACE...\n\n"
            "Reads the traces of the processes (ranks) of one job, one at a time, and prints\n"
            "a row per trace (host, pid, how it ended, duration, peaks, live at end, leaks)\n"
            "and the sites aggregated over the traces by their stable stack key (from the\n"
            "symbolized frames, as JSON reports' \"stack_key\") and kind: the sum of their\n"
            "peak live bytes, min / median / max per rank, and the ranks above twice the\n"
            "median and 1 MiB (outliers). Ranks are numbered in the order given.\n"
            "  --format text|json  output format (default text)\n"
            "  --top N             sites listed (default 10, 0 = all)\n"
            "  --no-symbols        do not open modules: frames are module+offset\n",
            out);
      free(files);
      return 0;
    } else if (!strcmp(a, "--no-symbols")) {
      symbols = false;
    } else if (!strncmp(a, "--format", 8) && (!a[8] || a[8] == '=')) {
      const char *v = a[8] ? a + 9 : i + 1 < argc ? argv[++i] : "";
      if (strcmp(v, "text") && strcmp(v, "json")) {
        fprintf(err, "ndmemreport: --format takes text or json, not '%s' (" MERGE_USAGE ")\n", v);
        rc = 2;
        break;
      }
      json = !strcmp(v, "json");
    } else if (!strncmp(a, "--top", 5) && (!a[5] || a[5] == '=')) {
      const char *v = a[5] ? a + 6 : i + 1 < argc ? argv[++i] : "";
      unsigned long long n;
      if (nd_rep_parse_count(v, 1000000, &n)) {
        fprintf(err, "ndmemreport: --top needs a number from 0 to 1000000, not '%s' (" MERGE_USAGE
                     ")\n", v);
        rc = 2;
        break;
      }
      top = (size_t)n;
    } else {
      fprintf(err, "ndmemreport: unknown option '%s' (" MERGE_USAGE ")\n", a);
      rc = 2;
      break;
    }
  }
  if (!rc && !m.nranks) {
    fputs("ndmemreport: merge needs at least one TRACE (" MERGE_USAGE ")\n", err);
    rc = 2;
  }
  if (!rc && !(m.ranks = calloc(m.nranks, sizeof *m.ranks))) {
    fputs("ndmemreport: out of memory\n", err);
    rc = 2;
  }
  for (size_t i = 0; !rc && i < m.nranks; i++) {
    m.ranks[i].path = files[i];
    rc = fold_trace(&m, i, symbols, err);
  }
  if (!rc && finish_sites(&m)) {
    fputs("ndmemreport: out of memory\n", err);
    rc = 2;
  }
  if (!rc) {
    if (m.nsites) qsort(m.sites, m.nsites, sizeof *m.sites, cmp_site);
    if (json) json_report(out, &m, top);
    else text_report(out, &m, top);
    if (fflush(out) || ferror(out)) {
      fprintf(err, "ndmemreport: cannot write the report: %s\n", strerror(errno));
      rc = 2;
    }
  }
  for (size_t i = 0; i < m.nsites; i++) free(m.sites[i].frames), free(m.sites[i].val);
  free(m.sites);
  free(m.slots);
  free(m.ranks);
  free(files);
  return rc;
}
