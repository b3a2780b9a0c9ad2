// SPDX-License-Identifier: MIT
// ndmemreport: reads an ndmem trace (trace_read.h), symbolizes the stacks it reports
// (symbolize.h) and prints a summary, the top allocation sites, and the blocks still live at exit
// (leaks) or, for a process that did not exit normally, the sites' live bytes at the last flush;
// for a version 2 trace with workspace records, the workspaces view (per thread and workspace:
// cycles, plan, hits, spills, escapes) and the leaked workspace pointers with their stacks; for a
// version 3 trace with limit records, the limits view (limits, totals, logged breaches, and the
// snapshots of live memory by site taken at the warning watermark and at breaches).
// Text for people, JSON (fixed key order, one document) for tools. Exit status: 0, 1 with
// --fail-on-leak when a leak was found, 2 for bad usage or a malformed trace.
#include "fmt.h"
#include "ndmemreport.h"
#include "running.h"
#include "suppress.h"
#include "symbolize.h"
#include "textwrap.h"
#include "trace_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lifetime.h"

// USAGE, on one line, follows a usage error; USAGE_HELP, the same in 80 columns, heads --help.
#define USAGE                                                                                      \
  "usage: ndmemreport [--format text|json] [--top N] [--frames N] [--fail-on-leak] "               \
  "[--fail-on-growth] [--brief] [--workspaces] [--limits] [--no-symbols] "                         \
  "[--suppressions FILE]... [--no-builtin-suppressions] FILE"
#define USAGE_HELP                                                                                 \
  "usage: ndmemreport [--format text|json] [--top N] [--frames N] [--fail-on-leak]\n"              \
  "                   [--fail-on-growth] [--brief] [--workspaces] [--limits]\n"                    \
  "                   [--no-symbols] [--suppressions FILE]...\n"                           \
  "                   [--no-builtin-suppressions] FILE"

static const char *const kind_names[ND_TRACE_KINDS] = {
    "heap",     "mmap",     "pinned",   "managed",  "device0",  "device1",  "device2",
    "device3",  "device4",  "device5",  "device6",  "device7",  "device8",  "device9",
    "device10", "device11", "device12", "device13", "device14", "device15"};
static const char *const fn_names[ND_TRACE_FNS] = {
    "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
    "valloc", "pvalloc", "free",   "free_sized",   "free_aligned_sized", "mmap", "munmap",
    "mremap"};
static const char *const fb_names[4] = {"bootstrap", "synthesized", "late-thread",
                                        "untracked-free"};
// Limits by their JavaCPP names in text, snake case in JSON; actions by NDMEM_ON_LIMIT's values.
static const char *const limit_names[ND_LIMIT_COUNT] = {"maxBytes", "maxPhysicalBytes"};
static const char *const limit_keys[ND_LIMIT_COUNT] = {"max_bytes", "max_physical_bytes"};
static const char *const action_names[3] = {"fail", "warn", "abort"};

typedef struct opts {
  bool json, brief, fail_on_leak, fail_on_growth, symbols;
  bool workspaces; // --workspaces: the summary's trace and workspaces lines, the view only
  bool limits;     // --limits: the summary's trace and limits lines, the limits view only
  size_t top, frames; // entries per list, frames per stack in text output; 0 = all
  const char *file;
  const char **supp_files; // --suppressions, in order (malloc'd; freed by nd_report_main)
  size_t nsupp_files;
  bool builtin_supp;       // the built-in suppressions (not --no-builtin-suppressions)
} opts_t;

// ---------------------------------------------------------------- formatting helpers

__extension__ typedef unsigned __int128 u128;

// Human size exactly as the shim prints it (interpose/fmt.c): "512 B", "1.50 KiB", "28.23 MiB".
static void human(char *out, size_t n, uint64_t v) {
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_ubytes(&b, v);
  snprintf(out, n, "%s", nd_buf_cstr(&b));
}

// v / limit in percent to one decimal, rounded down so that "100.0 %" means the limit was reached.
static void format_pct(char *out, size_t n, uint64_t v, uint64_t limit) {
  u128 m = (u128)v * 1000 / (limit ? limit : 1);
  if (m > (u128)UINT64_MAX) m = UINT64_MAX;
  snprintf(out, n, "%llu.%u %%", (unsigned long long)(m / 10), (unsigned)(m % 10));
}

// "28.23 MiB (29606488 B)", or "512 B" below 1 KiB; `est` prefixes both numbers with '~'.
static void print_bytes(FILE *o, uint64_t v, bool est) {
  char h[48];
  human(h, sizeof h, v);
  const char *t = est ? "~" : "";
  if (v < 1024) fprintf(o, "%s%s", t, h);
  else fprintf(o, "%s%s (%s%llu B)", t, h, t, (unsigned long long)v);
}

static void print_sbytes(FILE *o, int64_t v) {
  if (v < 0) {
    fputc('-', o);
    print_bytes(o, (uint64_t)0 - (uint64_t)v, false);
  } else {
    print_bytes(o, (uint64_t)v, false);
  }
}

// Text from the trace (paths, host names) with control bytes shown as \xNN.
static void print_text(FILE *o, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p == 0x7f) fprintf(o, "\\x%02x", *p);
    else fputc(*p, o);
  }
}

static const char *plural(uint64_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

static void print_secs(FILE *o, uint64_t ns) {
  fprintf(o, "%llu.%03llu s", (unsigned long long)(ns / 1000000000u),
          (unsigned long long)(ns % 1000000000u / 1000000u));
}

static void format_start(char *out, size_t n, uint64_t realtime_ns) {
  time_t sec = (time_t)(realtime_ns / 1000000000u);
  struct tm tm;
  if (!gmtime_r(&sec, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
    snprintf(out, n, "?");
}

static uint64_t round_count(double x) {
  if (!(x > 0)) return 0;
  if (x >= 18446744073709549568.0) return UINT64_MAX;
  return (uint64_t)(x + 0.5);
}

// JSON string: escapes, and valid UTF-8 only (an invalid byte becomes U+FFFD).
static void json_str(FILE *o, const char *s) {
  if (!s) {
    fputs("null", o);
    return;
  }
  fputc('"', o);
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    unsigned c = *p;
    if (c == '"' || c == '\\') {
      fputc('\\', o);
      fputc((int)c, o);
      p++;
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(o, "\\u%04x", c);
      p++;
    } else if (c < 0x80) {
      fputc((int)c, o);
      p++;
    } else {
      // continuation bytes after the lead byte: 1 to 3, 0 for a byte that cannot lead
      int n = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xc2 && c <= 0xdf;
      bool ok = n > 0;
      uint32_t cp = c & (0x3fu >> n);
      for (int i = 1; ok && i <= n; i++) {
        if ((p[i] & 0xc0) != 0x80) ok = false;
        else cp = cp << 6 | (p[i] & 0x3fu);
      }
      if (ok && ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
                 (n == 3 && (cp < 0x10000 || cp > 0x10ffff))))
        ok = false;
      if (ok) {
        fwrite(p, 1, (size_t)n + 1, o);
        p += n + 1;
      } else {
        fputs("\\ufffd", o);
        p++;
      }
    }
  }
  fputc('"', o);
}

static void json_hex(FILE *o, uint64_t v) { fprintf(o, "\"0x%llx\"", (unsigned long long)v); }

// ---------------------------------------------------------------- analysis

// The leaked workspace pointers of one (workspace, stack id).
typedef struct esc_group {
  uint32_t first;         // its first escape (index into nd_trace_t.escapes): tid, name, stack
  uint64_t count, bytes;
  uint64_t born, seen;    // the earliest cycle_born and cycle_seen
} esc_group_t;

typedef struct report {
  const nd_trace_t *t;
  nd_sym_t *sym;
  const opts_t *o;
  uint32_t *by_peak, *by_total; // site indices, sorted
  uint32_t *leaks;              // leak indices, sorted by bytes
  uint32_t *live;               // (not ended) sites with live bytes, sorted by live bytes
  size_t nlive;
  uint64_t leak_bytes, leak_blocks, live_bytes;
  bool leak_est, live_est;
  uint32_t *ws;           // workspace indices by (tid, name)
  uint64_t ws_hits, ws_spills, ws_spill_bytes, ws_escapes; // over all workspaces
  esc_group_t *groups;    // escapes by (workspace, stack id)
  uint32_t *group_order;  // group indices by bytes
  size_t ngroups;
  uint64_t esc_bytes;     // over the escapes kept
  nd_lifetimes_t life;    // what was live at exit, by class (a normal exit)
  int running;            // no END record: ND_RUN_YES / _NO / _UNKNOWN (running.h)
  nd_supp_t *supp;        // leak suppressions: the built-ins (unless off), then each file's
  nd_wrap_t *wrap;        // text: the 80-column stream's state (textwrap.h), or NULL
} report_t;

static uint64_t site_live(const nd_rec_site_t *s) {
  return s->alloc_bytes > s->free_bytes ? s->alloc_bytes - s->free_bytes : 0;
}

static uint64_t leak_bytes(const nd_leak_t *l) { return l->exact_bytes + l->est_bytes; }
static uint64_t leak_blocks(const nd_leak_t *l) {
  return l->exact_blocks + round_count(l->est_blocks);
}

static int cmp_u64_desc(uint64_t a, uint64_t b) { return a > b ? -1 : a < b; }

// Ties: by stack id, then kind, so the order never depends on the trace's record order.
static int cmp_site_tie(const nd_trace_t *t, uint32_t a, uint32_t b) {
  const nd_rec_site_t *x = &t->sites[a].rec, *y = &t->sites[b].rec;
  if (x->stack_id != y->stack_id) return x->stack_id < y->stack_id ? -1 : 1;
  return (x->kind > y->kind) - (x->kind < y->kind);
}

static int by_peak(const void *a, const void *b, void *arg) {
  const nd_trace_t *t = arg;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  int c = cmp_u64_desc(t->sites[i].rec.peak_live_bytes, t->sites[j].rec.peak_live_bytes);
  return c ? c : cmp_site_tie(t, i, j);
}

static int by_total(const void *a, const void *b, void *arg) {
  const nd_trace_t *t = arg;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  int c = cmp_u64_desc(t->sites[i].rec.alloc_bytes, t->sites[j].rec.alloc_bytes);
  return c ? c : cmp_site_tie(t, i, j);
}

static int by_live(const void *a, const void *b, void *arg) {
  const nd_trace_t *t = arg;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  int c = cmp_u64_desc(site_live(&t->sites[i].rec), site_live(&t->sites[j].rec));
  return c ? c : cmp_site_tie(t, i, j);
}

static int by_leak(const void *a, const void *b, void *arg) {
  const nd_trace_t *t = arg;
  const nd_leak_t *x = &t->leaks[*(const uint32_t *)a], *y = &t->leaks[*(const uint32_t *)b];
  int c = cmp_u64_desc(leak_bytes(x), leak_bytes(y));
  if (c) return c;
  uint32_t sx = t->stacks[x->stack].id, sy = t->stacks[y->stack].id;
  if (sx != sy) return sx < sy ? -1 : 1;
  return (x->kind > y->kind) - (x->kind < y->kind);
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

// Workspaces: by thread id, then name (NUL-padded, so memcmp orders as strcmp does).
static int by_ws(const void *a, const void *b, void *arg) {
  const nd_trace_t *t = arg;
  const nd_rec_workspace_t *x = &t->ws[*(const uint32_t *)a], *y = &t->ws[*(const uint32_t *)b];
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return memcmp(x->name, y->name, sizeof x->name);
}

// Escapes by their group key (workspace, stack id), then trace order.
static int by_esc_key(const void *a, const void *b, void *arg) {
  const nd_trace_t *t = arg;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  const nd_rec_ws_escape_t *x = &t->escapes[i].rec, *y = &t->escapes[j].rec;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  int c = memcmp(x->name, y->name, sizeof x->name);
  if (c) return c;
  if (x->stack_id != y->stack_id) return x->stack_id < y->stack_id ? -1 : 1;
  return (i > j) - (i < j);
}

static int by_esc_group(const void *a, const void *b, void *arg) {
  const report_t *r = arg;
  const esc_group_t *x = &r->groups[*(const uint32_t *)a], *y = &r->groups[*(const uint32_t *)b];
  int c = cmp_u64_desc(x->bytes, y->bytes);
  if (!c) c = cmp_u64_desc(x->count, y->count);
  if (c) return c;
  uint32_t i = x->first, j = y->first; // the keys differ: by_esc_key orders them
  return by_esc_key(&i, &j, (void *)r->t);
}

// The workspace totals, the workspaces in order, and the escapes grouped by (workspace, stack).
static int analyse_ws(report_t *r) {
  const nd_trace_t *t = r->t;
  r->ws = malloc((t->nws ? t->nws : 1) * sizeof *r->ws);
  size_t ne = t->nescapes ? t->nescapes : 1;
  uint32_t *esc = malloc(ne * sizeof *esc);
  r->groups = malloc(ne * sizeof *r->groups);
  r->group_order = malloc(ne * sizeof *r->group_order);
  if (!r->ws || !esc || !r->groups || !r->group_order) {
    free(esc);
    return -1;
  }
  for (size_t i = 0; i < t->nws; i++) {
    const nd_rec_workspace_t *w = &t->ws[i];
    r->ws[i] = (uint32_t)i;
    r->ws_hits = sat_add(r->ws_hits, w->hits);
    r->ws_spills = sat_add(r->ws_spills, w->spills);
    r->ws_spill_bytes = sat_add(r->ws_spill_bytes, w->spill_bytes);
    r->ws_escapes = sat_add(r->ws_escapes, w->escapes);
  }
  qsort_r(r->ws, t->nws, sizeof *r->ws, by_ws, (void *)t);
  for (size_t i = 0; i < t->nescapes; i++) esc[i] = (uint32_t)i;
  qsort_r(esc, t->nescapes, sizeof *esc, by_esc_key, (void *)t);
  for (size_t i = 0; i < t->nescapes; i++) {
    const nd_ws_escape_t *e = &t->escapes[esc[i]];
    r->esc_bytes = sat_add(r->esc_bytes, e->rec.size);
    esc_group_t *g = r->ngroups ? &r->groups[r->ngroups - 1] : NULL;
    const nd_rec_ws_escape_t *k = g ? &t->escapes[g->first].rec : NULL;
    if (!g || k->tid != e->rec.tid || k->stack_id != e->rec.stack_id ||
        memcmp(k->name, e->rec.name, sizeof k->name)) {
      r->group_order[r->ngroups] = (uint32_t)r->ngroups;
      g = &r->groups[r->ngroups++];
      *g = (esc_group_t){.first = esc[i], .born = e->rec.cycle_born, .seen = e->rec.cycle_seen};
    }
    g->count++;
    g->bytes = sat_add(g->bytes, e->rec.size);
    if (e->rec.cycle_born < g->born) g->born = e->rec.cycle_born;
    if (e->rec.cycle_seen < g->seen) g->seen = e->rec.cycle_seen;
  }
  free(esc);
  qsort_r(r->group_order, r->ngroups, sizeof *r->group_order, by_esc_group, r);
  return 0;
}

static bool leaks_known(const nd_trace_t *t);

// The suppression rule a stack matches (nd_life_supp_fn): a built-in as "builtin:NAME", a file's
// rule as "FILE:LINE"; NULL when none does (or out of memory: then it is reported).
static const char *suppressed_by(void *ctx, uint32_t stack) {
  report_t *r = ctx;
  if (!r->supp || !nd_supp_count(r->supp)) return NULL;
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  size_t n = 0, cap = 0;
  nd_frame_view_t *v = NULL;
  for (size_t i = 0; i < s->depth; i++) {
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) break;
    size_t need = nd_supp_views(f, NULL, 0);
    if (n + need > cap) {
      size_t c = (n + need) * 2;
      nd_frame_view_t *w = realloc(v, c * sizeof *w);
      if (!w) break;
      v = w;
      cap = c;
    }
    n += nd_supp_views(f, v + n, cap - n);
  }
  const nd_supp_rule_t *rule = n ? nd_supp_match(r->supp, v, n) : NULL;
  free(v);
  if (!rule) return NULL;
  return rule->reason ? rule->text : rule->name;
}

static int analyse(report_t *r) {
  const nd_trace_t *t = r->t;
  size_t n = t->nsites ? t->nsites : 1;
  r->by_peak = malloc(n * sizeof *r->by_peak);
  r->by_total = malloc(n * sizeof *r->by_total);
  r->live = malloc(n * sizeof *r->live);
  r->leaks = malloc((t->nleaks ? t->nleaks : 1) * sizeof *r->leaks);
  if (!r->by_peak || !r->by_total || !r->live || !r->leaks) return -1;
  for (size_t i = 0; i < t->nsites; i++) {
    r->by_peak[i] = r->by_total[i] = (uint32_t)i;
    const nd_rec_site_t *s = &t->sites[i].rec;
    if (site_live(s)) {
      r->live[r->nlive++] = (uint32_t)i;
      r->live_bytes += site_live(s);
      if (s->flags & ND_SITE_SAMPLED) r->live_est = true;
    }
  }
  if (!r->o->brief) {
    qsort_r(r->by_peak, t->nsites, sizeof *r->by_peak, by_peak, (void *)t);
    qsort_r(r->by_total, t->nsites, sizeof *r->by_total, by_total, (void *)t);
  }
  qsort_r(r->live, r->nlive, sizeof *r->live, by_live, (void *)t);
  for (size_t i = 0; i < t->nleaks; i++) {
    r->leaks[i] = (uint32_t)i;
    r->leak_bytes += leak_bytes(&t->leaks[i]);
    r->leak_blocks += leak_blocks(&t->leaks[i]);
    if (t->leaks[i].sampled_blocks) r->leak_est = true;
  }
  qsort_r(r->leaks, t->nleaks, sizeof *r->leaks, by_leak, (void *)t);
  if (leaks_known(t) && nd_lifetimes(t, suppressed_by, r, &r->life)) return -1;
  return analyse_ws(r);
}

// Entries of a list shown: --top (0: all, as --frames 0 is every frame), 5 with --brief.
static size_t list_len(const report_t *r, size_t n) {
  size_t top = r->o->brief ? 5 : r->o->top;
  return top && top < n ? top : n;
}

// ---------------------------------------------------------------- text

static void text_loc(FILE *o, const nd_loc_t *l, const nd_frame_t *f) {
  if (l->function) {
    print_text(o, l->function);
    fputs(" (", o);
  }
  if (l->file) {
    print_text(o, l->file);
    fprintf(o, ":%d", l->line);
  } else {
    print_text(o, f->module);
    fprintf(o, "+0x%llx", (unsigned long long)f->offset);
  }
  if (l->function) fputc(')', o);
}

// "function (file:line)", "function (module+0xOFF)", "module+0xOFF" or "0xIP", then one line per
// function the call was inlined into.
static void text_frame(FILE *o, const nd_frame_t *f) {
  if (!f->module) {
    fprintf(o, "0x%llx", (unsigned long long)f->ip);
    return;
  }
  text_loc(o, &f->at, f);
  for (size_t i = 0; i < f->ninlined; i++) {
    fputs("\n          inlined into ", o);
    text_loc(o, &f->inlined_into[i], f);
  }
}

static int text_stack(FILE *o, report_t *r, uint32_t stack) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  size_t n = s->depth, show = r->o->frames && r->o->frames < n ? r->o->frames : n;
  if (!n) fputs("      (no frames)\n", o);
  nd_wrap_raw(o, r->wrap, true); // frames whole
  for (size_t i = 0; i < show; i++) {
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    fprintf(o, "      #%-2zu ", i);
    text_frame(o, f);
    fputc('\n', o);
  }
  nd_wrap_raw(o, r->wrap, false);
  if (show < n) fprintf(o, "      (%zu more frames)\n", n - show);
  return 0;
}

static void text_kind(FILE *o, const nd_rec_kind_totals_t *k, const char *name, const char *when,
                      const char *unit) {
  fprintf(o, "  %-10s  peak ", name);
  print_sbytes(o, k->peak_bytes);
  fprintf(o, "; live %s ", when);
  // More released than allocated: frees of blocks allocated where ndmem could not see them. A
  // negative amount of memory is never shown; the discrepancy is.
  print_sbytes(o, k->live_bytes > 0 ? k->live_bytes : 0);
  fprintf(o, " in %lld %s%s; %llu allocated, %llu released",
          (long long)(k->live_count > 0 ? k->live_count : 0), unit, k->live_count == 1 ? "" : "s",
          (unsigned long long)k->allocs,
          (unsigned long long)k->frees);
  if (k->live_count < 0 || k->live_bytes < 0)
    fprintf(o, " (%llu more released than ndmem saw allocated)",
            0ull - (unsigned long long)k->live_count);
  fputc('\n', o);
}

// Escape records seen, kept or not.
static uint64_t esc_records(const nd_trace_t *t) {
  return sat_add(t->nescapes, t->escapes_dropped);
}

// The summary's line about workspaces.
static void text_ws_line(FILE *o, const report_t *r) {
  const nd_trace_t *t = r->t;
  fprintf(o, "  %-10s  ", "workspaces");
  uint64_t outlived = 0; // automatic cycles' blocks that lived on: never counted as escapes
  for (size_t i = 0; i < t->nws; i++) outlived = sat_add(outlived, t->ws[i].outlived);
  if (t->nws) {
    fprintf(o, "%zu (hits %llu, spills %llu, escapes %llu", t->nws,
            (unsigned long long)r->ws_hits, (unsigned long long)r->ws_spills,
            (unsigned long long)r->ws_escapes);
    if (outlived) fprintf(o, ", outlived %llu", (unsigned long long)outlived);
    fputs(")\n", o);
  } else
    fprintf(o, "none recorded (%llu leaked workspace %s)\n",
            (unsigned long long)esc_records(t), plural(esc_records(t), "pointer", "pointers"));
}

// The summary's line about the file: complete or truncated.
static void text_trace_line(FILE *o, const nd_trace_t *t) {
  fprintf(o, "  %-10s  ", "trace");
  if (t->truncated)
    fprintf(o, "TRUNCATED: %llu bytes, the last record cut short at offset %llu; read the %llu "
               "whole records before it",
            (unsigned long long)t->file_size, (unsigned long long)t->good_end,
            (unsigned long long)t->records);
  else
    fprintf(o, "complete: %llu bytes, %llu records", (unsigned long long)t->file_size,
            (unsigned long long)t->records);
  if (!t->ended && t->have_flush && t->after_flush)
    fprintf(o, " (%llu after the last flush, included)", (unsigned long long)t->after_flush);
  fputc('\n', o);
}

// ---------------------------------------------------------------- limits: shared by text and JSON

// Any record of limits: the LIMITS record is written with the totals, so a trace cut short may
// hold breaches and snapshots without one.
static bool has_limits(const nd_trace_t *t) {
  return t->have_limits || t->nbreaches || t->breaches_dropped || t->snap_records;
}

// Whether what was live at the end is a leak: the program ended on its own (exit, a return from
// main, _exit). A fatal signal or NDMEM_ON_LIMIT=abort ends it before it could free anything.
static bool leaks_known(const nd_trace_t *t) {
  return t->ended &&
         !(t->have_exit && (t->exit.how == ND_EXIT_SIGNAL || t->exit.how == ND_EXIT_LIMIT_ABORT));
}

// The EXIT record in words (version 4 traces).
static void text_exit_how(FILE *o, const nd_trace_t *t) {
  const nd_rec_exit_t *e = &t->exit;
  switch (e->how) {
  case ND_EXIT_NORMAL: fputs("normal (END record)", o); break;
  case ND_EXIT_UNDERSCORE:
    fprintf(o, "_exit(%d) in thread %u: no atexit handlers or destructors ran; END record", e->code,
            e->tid);
    break;
  case ND_EXIT_SIGNAL:
    fprintf(o, "ended by signal %d (SIG%s) in thread %u; the trace was completed then (END "
               "record); what was live is not a leak",
            e->code, sigabbrev_np(e->code) ? sigabbrev_np(e->code) : "?", e->tid);
    break;
  default: fputs("stopped by NDMEM_ON_LIMIT=abort (SIGABRT); END record", o); break;
  }
}

static bool aborted(const nd_trace_t *t) {
  return t->have_limits && (t->limits.flags & ND_LIMITS_ABORTED);
}

static uint64_t breaches_total(const nd_rec_limits_t *l) {
  return sat_add(l->breaches[ND_LIMIT_BYTES], l->breaches[ND_LIMIT_PHYSICAL]);
}

// Percentages of memory ("75%") are of RAM or of the cgroup's limit, whichever is smaller.
static bool pct_of_cgroup(const nd_rec_limits_t *l) {
  return l->cgroup_bytes && (!l->ram_bytes || l->cgroup_bytes < l->ram_bytes);
}

// The limit a breach snapshot was taken for, by its threshold; -1 when it cannot be told.
static int snap_limit(const nd_trace_t *t, const nd_rec_snapshot_t *s) {
  const nd_rec_limits_t *l = &t->limits;
  if (s->reason != ND_SNAP_BREACH || !t->have_limits || !s->threshold) return -1;
  bool b = s->threshold == l->max_bytes, p = s->threshold == l->max_physical_bytes;
  return b == p ? -1 : b ? ND_LIMIT_BYTES : ND_LIMIT_PHYSICAL;
}

static uint64_t since_start(const nd_trace_t *t, uint64_t ns) {
  return ns > t->hdr.start_mono_ns ? ns - t->hdr.start_mono_ns : 0;
}

// The live bytes of a snapshot's kept sites; *est: some are estimates.
static uint64_t snap_live(const nd_snapshot_t *s, bool *est) {
  uint64_t sum = 0;
  *est = false;
  for (size_t i = 0; i < s->nsites; i++) {
    sum = sat_add(sum, s->sites[i].rec.live_bytes);
    if (s->sites[i].rec.flags & ND_SITE_SAMPLED) *est = true;
  }
  return sum;
}

// "maxBytes 64.00 MiB (peak tracked 63.99 MiB, 99.9 %)" or "maxBytes none".
static void text_limit_short(FILE *o, int id, uint64_t limit, uint64_t peak) {
  char a[48], b[48], pct[48];
  fprintf(o, "%s ", limit_names[id]);
  if (!limit) {
    fputs("none", o);
    return;
  }
  human(a, sizeof a, limit);
  human(b, sizeof b, peak);
  format_pct(pct, sizeof pct, peak, limit);
  fprintf(o, "%s (peak %s %s, %s)", a, id == ND_LIMIT_BYTES ? "tracked" : "physical", b, pct);
}

// The summary's line about limits.
static void text_limits_line(FILE *o, const nd_trace_t *t) {
  fprintf(o, "  %-10s  ", "limits");
  if (!t->have_limits) {
    uint64_t nb = sat_add(t->nbreaches, t->breaches_dropped);
    fprintf(o, "no LIMITS record; %llu logged %s, %llu %s\n",
            (unsigned long long)nb, plural(nb, "breach", "breaches"),
            (unsigned long long)t->snap_records, plural(t->snap_records, "snapshot", "snapshots"));
    return;
  }
  const nd_rec_limits_t *l = &t->limits;
  char h[48];
  text_limit_short(o, ND_LIMIT_BYTES, l->max_bytes, l->peak_tracked);
  fputs(", ", o);
  text_limit_short(o, ND_LIMIT_PHYSICAL, l->max_physical_bytes, l->peak_physical);
  human(h, sizeof h, l->warn_at);
  if (l->warn_at) fprintf(o, "; warn at %s", h);
  else fputs("; no warning watermark", o);
  fprintf(o, "; on limit %s", action_names[l->action]);
  uint64_t nb = breaches_total(l);
  if (nb)
    fprintf(o, "; %llu %s, %llu %s failed", (unsigned long long)nb,
            plural(nb, "breach", "breaches"), (unsigned long long)l->failed,
            plural(l->failed, "allocation", "allocations"));
  else
    fputs("; no breaches", o);
  if (l->flags & ND_LIMITS_ABORTED) fputs("; aborted on a breach", o);
  fputc('\n', o);
}

// ---------------------------------------------------------------- what was live at exit

static void text_bytes_blocks(FILE *o, uint64_t bytes, uint64_t blocks, bool est) {
  print_bytes(o, bytes, est);
  fprintf(o, " in %s%llu %s", est ? "~" : "", (unsigned long long)blocks,
          plural(blocks, "block", "blocks"));
}

// The summary's leaks line: one line per class present, growth first; "none" when nothing was.
static void text_life_totals(FILE *o, const nd_lifetimes_t *l) {
  bool any = false;
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    if (!l->entries[c]) continue;
    if (any) fprintf(o, "  %-10s  ", "");
    fprintf(o, "%s ", nd_life_names[c]);
    if (c == ND_LIFE_TEARDOWN) print_bytes(o, l->bytes[c], l->est[c]);
    else text_bytes_blocks(o, l->bytes[c], l->blocks[c], l->est[c]);
    fprintf(o, " (%llu %s)\n", (unsigned long long)l->entries[c],
            plural(l->entries[c], "stack", "stacks"));
    any = true;
  }
  if (l->untracked_blocks) {
    if (any) fprintf(o, "  %-10s  ", "");
    fprintf(o, "untracked %llu small %s live at exit (see below)\n",
            (unsigned long long)l->untracked_blocks, plural(l->untracked_blocks, "block", "blocks"));
    any = true;
  }
  if (!any) fputs("none\n", o);
}

static void print_pct(FILE *o, double f) { fprintf(o, "%.0f %%", f * 100); }

// The evidence line of an entry: its growth, or when its blocks were born.
// The evidence lines of an entry: its growth (growing, released at teardown), then when its
// blocks were born and whether the shim flagged it while the job ran.
static void text_life_evidence(FILE *o, const nd_life_t *e) {
  bool est = e->samples > 0;
  if (e->cls == ND_LIFE_GROWING || e->cls == ND_LIFE_TEARDOWN) {
    fputs("      +", o);
    if (e->cls == ND_LIFE_GROWING && e->per_cycles && e->grew_blocks) {
      print_bytes(o, e->grew / e->grew_blocks, est);
      if (e->per_cycles > 1) fprintf(o, " per %llu cycles", (unsigned long long)e->per_cycles);
      else fputs(" per cycle", o);
      fprintf(o, " over %llu cycles", (unsigned long long)e->cycles);
    } else if (e->cycles) {
      print_bytes(o, e->grew / e->cycles, est);
      fprintf(o, " per cycle over %llu cycles", (unsigned long long)e->cycles);
    } else if (e->cls == ND_LIFE_GROWING && e->secs > 0) {
      print_bytes(o, e->grew, est);
      fprintf(o, " over %.3f s", e->secs);
    } else {
      print_bytes(o, e->grew, est);
      fputs(" during the run", o);
    }
    fputs(e->cls == ND_LIFE_TEARDOWN ? "; freed only at exit" : "", o);
    fputs(e->cls == ND_LIFE_TEARDOWN && e->flagged ? "; flagged while running\n" : "\n", o);
  }
  if (e->cls == ND_LIFE_TEARDOWN) return;
  fputs(e->born_first == e->born_last ? "      born at " : "      births ", o);
  print_pct(o, e->born_first);
  if (e->born_first != e->born_last) {
    fputs("-", o);
    print_pct(o, e->born_last);
  }
  fputs(e->flagged ? " of the run; flagged while running\n" : " of the run\n", o);
}

static int text_life(FILE *o, report_t *r, size_t rank, const nd_life_t *e) {
  bool est = e->samples > 0;
  fprintf(o, "#%-3zu %-8s ", rank, kind_names[e->kind]);
  if (e->cls == ND_LIFE_TEARDOWN) {
    print_bytes(o, e->bytes, est);
    fputs(" at the last cycle", o);
  } else {
    text_bytes_blocks(o, e->bytes, e->blocks, est);
  }
  fprintf(o, "  [stack %u]\n", r->t->stacks[e->stack].id);
  if (e->samples)
    fprintf(o, "      estimate from %llu %s%s\n", (unsigned long long)e->samples,
            plural(e->samples, "sample", "samples"),
            e->capped ? ", lowered to what the exact counters show live" : "");
  text_life_evidence(o, e);
  return text_stack(o, r, e->stack);
}

static const char *const life_heads[ND_LIFE_CLASSES] = {
    "growing: live bytes rose across the run",
    "released at teardown: grew during the run, freed only at exit",
    "live at exit: not freed, not growing (no reachability scan: not proven lost)",
    "held since start-up", "suppressed"};

// The classes in turn: growth first, then what was merely live at exit; start-up and suppressed
// memory fold into one line each.
static int text_lifetimes(FILE *o, report_t *r) {
  const nd_lifetimes_t *l = &r->life;
  size_t at = 0, rank = 0;
  bool any = false;
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    size_t n = l->entries[c], shown = list_len(r, n);
    if (!n) {
      at += n;
      continue;
    }
    any = true;
    if (c != ND_LIFE_STARTUP && c != ND_LIFE_SUPPRESSED) fprintf(o, "\n== %s", life_heads[c]);
    else fprintf(o, "\n== %s: ", nd_life_names[c]);
    if (c == ND_LIFE_STARTUP || c == ND_LIFE_SUPPRESSED) {
      text_bytes_blocks(o, l->bytes[c], l->blocks[c], l->est[c]);
      fprintf(o, " from %zu %s\n", n, plural(n, "stack", "stacks"));
      if (c == ND_LIFE_STARTUP) {
        fputs("   born before the steady state began (the first cycle, at ", o);
        print_secs(o, l->steady_ns);
        fputs(") and kept\n", o);
      }
      // Suppressed: bytes and blocks per rule, in the order of their largest entry.
      for (size_t i = 0; c == ND_LIFE_SUPPRESSED && i < n; i++) {
        const char *rule = l->v[at + i].suppressed_by;
        bool seen = false, est = false;
        uint64_t bytes = 0, blocks = 0, stacks = 0;
        for (size_t j = 0; j < n && !seen; j++) seen = j < i && l->v[at + j].suppressed_by == rule;
        for (size_t j = i; j < n && !seen; j++) {
          const nd_life_t *e = &l->v[at + j];
          if (e->suppressed_by != rule) continue;
          bytes += e->bytes, blocks += e->blocks, stacks++, est |= e->samples > 0;
        }
        if (seen) continue;
        fprintf(o, "   %s: ", rule);
        text_bytes_blocks(o, bytes, blocks, est);
        fprintf(o, " from %llu %s\n", (unsigned long long)stacks, plural(stacks, "stack", "stacks"));
      }
      at += n;
      continue;
    }
    fputc('\n', o);
    if (shown < n) fprintf(o, "   (top %zu of %zu)\n", shown, n);
    for (size_t i = 0; i < shown; i++)
      if (text_life(o, r, ++rank, &l->v[at + i])) return -1;
    at += n;
  }
  if (l->untracked_blocks) {
    any = true;
    fprintf(o, "\n== untracked: %llu small %s live at exit\n",
            (unsigned long long)l->untracked_blocks, plural(l->untracked_blocks, "block", "blocks"));
    fputs("   are in no entry above: blocks under ", o);
    print_bytes(o, r->t->hdr.track_min, false);
    fputs(" are sampled,\n   about 1 per ", o);
    print_bytes(o, r->t->hdr.sample_interval, false);
    fputs(" allocated.\n   Run with --exact (NDMEM_TRACK_MIN=0) to list every block exactly.\n", o);
  }
  if (!any) fputs("\n== leaks at exit: none\n", o);
  return 0;
}

static void text_summary(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  const nd_trace_header_t *h = &t->hdr;
  char buf[64];
  fputs("== summary\n", o);
  fprintf(o, "  %-10s  pid %llu on ", "process", (unsigned long long)h->pid);
  print_text(o, t->host[0] ? t->host : "?");
  fputs(": ", o);
  print_text(o, t->exe[0] ? t->exe : "?");
  fputc('\n', o);
  format_start(buf, sizeof buf, h->start_realtime_ns);
  fprintf(o, "  %-10s  %s; duration ", "started", buf);
  print_secs(o, t->last_ns > h->start_mono_ns ? t->last_ns - h->start_mono_ns : 0);
  fputs(" (to the last record)\n", o);
  if (t->ended && t->have_exit) {
    fprintf(o, "  %-10s  ", "exit");
    text_exit_how(o, t);
    fputc('\n', o);
  } else if (t->ended) {
    fprintf(o, "  %-10s  normal (END record)\n", "exit");
  } else if (r->running == ND_RUN_YES) {
    fprintf(o, "  %-10s  none yet: the process is still running (pid %llu on this host); leaks "
               "cannot be known yet, live figures are at the last flush",
            "exit", (unsigned long long)h->pid);
    if (!t->have_flush) fputs(" (there was none yet: the trace holds its header only)", o);
  } else {
    // Version 4 writers end every trace they can (exit, _exit, fatal signals with their default
    // action): what remains is SIGKILL, the OOM killer, or a crash the shim could not see.
    fprintf(o, "  %-10s  NOT normal: ", "exit");
    if (aborted(t)) fputs("no END record (aborted on a breach of a limit)", o);
    else if (t->hdr.version < 4) fputs("no END record (killed, crashed or _exit)", o);
    else fputs("ended without an END record: killed (SIGKILL, the OOM killer) or crashed", o);
    if (r->running == ND_RUN_UNKNOWN && !aborted(t)) {
      fputs(", unless it still runs on ", o);
      print_text(o, t->host[0] ? t->host : "?");
      fputs(" (another host: not checked)", o);
    }
    fputs("; leaks cannot be known, live figures are at the last flush", o);
    if (!t->have_flush) fputs(" (there was none: the trace holds its header only)", o);
  }
  if (!t->ended && t->have_flush) {
    fprintf(o, " (#%llu at ", (unsigned long long)t->flush.seq);
    print_secs(o, t->flush.mono_ns > h->start_mono_ns ? t->flush.mono_ns - h->start_mono_ns : 0);
    fputc(')', o);
  }
  if (!t->ended) fputc('\n', o);
  text_trace_line(o, t);
  fprintf(o, "  %-10s  ", "tracking");
  char a[48], b[48];
  human(a, sizeof a, h->track_min);
  human(b, sizeof b, h->sample_interval);
  if (h->sample_interval)
    fprintf(o, "blocks of %s or more exact, smaller ones sampled every ~%s (~: estimate)", a, b);
  else if (h->track_min > 1)
    fprintf(o, "blocks of %s or more exact, smaller ones not tracked", a);
  else
    fputs("every block exact", o);
  fprintf(o, "; stack depth %u\n", h->depth);
  if (!t->have_counters) {
    fprintf(o, "  %-10s  none recorded\n", "counters");
  } else {
    const nd_rec_counters_t *c = &t->counters;
    fprintf(o, "  %-10s ", "calls");
    bool any = false;
    for (int i = 0; i < ND_TRACE_FNS; i++) {
      if (!c->calls[i]) continue;
      fprintf(o, "%s %s %llu", any ? "," : "", fn_names[i], (unsigned long long)c->calls[i]);
      any = true;
    }
    fprintf(o, "%s; threads %u\n", any ? "" : " none", c->threads);
    fprintf(o, "  %-10s ", "fallbacks");
    any = false;
    for (int i = 0; i < 4; i++) {
      if (!c->fallbacks[i]) continue;
      fprintf(o, "%s %s %llu", any ? "," : "", fb_names[i], (unsigned long long)c->fallbacks[i]);
      any = true;
    }
    fputs(any ? "\n" : " none\n", o);
    const char *when = t->ended ? "at exit" : "at last flush";
    for (int i = 0; i < ND_TRACE_KINDS; i++) {
      const nd_rec_kind_totals_t *k = &c->kind[i];
      if (i > 1 && !k->allocs && !k->frees && !k->live_bytes && !k->peak_bytes) continue;
      text_kind(o, k, kind_names[i], when, i == 1 ? "mapping" : "block");
    }
  }
  fprintf(o, "  %-10s  ", "leaks");
  if (t->ended && !leaks_known(t)) {
    fputs("none reported (the process did not end on its own); tracked sites held ", o);
    print_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " at the end in %zu %s\n", r->nlive, plural(r->nlive, "site", "sites"));
  } else if (!t->ended) {
    fputs("unknown (no normal exit); tracked sites hold ", o);
    print_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " at the last flush in %zu %s\n", r->nlive, plural(r->nlive, "site", "sites"));
  } else {
    text_life_totals(o, &r->life);
  }
  if (t->nws || t->nescapes || t->escapes_dropped) text_ws_line(o, r);
  if (has_limits(t)) text_limits_line(o, t);
}

// What a site list ranks by: its first line shows that figure, the second the others.
enum rank_by { BY_PEAK, BY_TOTAL, BY_LIVE };

static void text_allocs(FILE *o, const nd_rec_site_t *x, const char *e) {
  fprintf(o, "%s%llu %s, %s%llu freed", e, (unsigned long long)x->allocs,
          plural(x->allocs, "allocation", "allocations"), e, (unsigned long long)x->frees);
}

// `same`: the rank of this site in the by-peak list shown above (its stack is not repeated), or 0.
static int text_site(FILE *o, report_t *r, size_t rank, uint32_t si, enum rank_by by,
                     size_t same) {
  const nd_site_t *s = &r->t->sites[si];
  const nd_rec_site_t *x = &s->rec;
  bool est = x->flags & ND_SITE_SAMPLED;
  const char *e = est ? "~" : "";
  fprintf(o, "#%-3zu %-8s ", rank, kind_names[x->kind]);
  if (by == BY_PEAK) {
    fputs("peak ", o);
    print_bytes(o, x->peak_live_bytes, est);
    fprintf(o, "  [stack %u]\n      total ", x->stack_id);
    print_bytes(o, x->alloc_bytes, est);
    fputs(" in ", o);
    text_allocs(o, x, e);
    fputs("; live ", o);
    print_bytes(o, site_live(x), est);
  } else if (by == BY_TOTAL) {
    fputs("total ", o);
    print_bytes(o, x->alloc_bytes, est);
    fprintf(o, "  [stack %u]\n      ", x->stack_id);
    text_allocs(o, x, e);
    fputs("; peak ", o);
    print_bytes(o, x->peak_live_bytes, est);
    fputs(", live ", o);
    print_bytes(o, site_live(x), est);
  } else {
    fputs("live ", o);
    print_bytes(o, site_live(x), est);
    fprintf(o, "  [stack %u]\n      peak ", x->stack_id);
    print_bytes(o, x->peak_live_bytes, est);
    fputs(", total ", o);
    print_bytes(o, x->alloc_bytes, est);
    fputs(" in ", o);
    text_allocs(o, x, e);
  }
  fputc('\n', o);
  if (same) {
    fprintf(o, "      (stack as in #%zu by peak live bytes)\n", same);
    return 0;
  }
  return text_stack(o, r, s->stack);
}

// sum / peak to two decimals, rounded half up ("4.00"), or "n/a" for a zero peak.
static void format_ratio(char *out, size_t n, uint64_t sum, uint64_t peak) {
  if (!peak) {
    snprintf(out, n, "n/a");
    return;
  }
  u128 h = ((u128)sum * 100 + peak / 2) / peak;
  snprintf(out, n, "%llu.%02u", (unsigned long long)(h / 100), (unsigned)(h % 100));
}

static void text_ws_name(FILE *o, const char *name, uint32_t tid) {
  fputc('[', o);
  print_text(o, name);
  fprintf(o, "] on thread %u", tid);
}

static void text_workspace(FILE *o, size_t rank, const nd_rec_workspace_t *w) {
  char ratio[64];
  format_ratio(ratio, sizeof ratio, w->plan_sum_bytes, w->plan_peak_bytes);
  fprintf(o, "#%-3zu ", rank);
  text_ws_name(o, w->name, w->tid);
  fprintf(o,
          "\n      cycles %llu, learned cycles %llu, re-learns %llu, deviations %llu\n"
          "      arena ",
          (unsigned long long)w->cycles, (unsigned long long)w->learned_cycles,
          (unsigned long long)w->relearns, (unsigned long long)w->deviations);
  print_bytes(o, w->arena_bytes, false);
  fputs("; learned plan peak live ", o);
  print_bytes(o, w->plan_peak_bytes, false);
  fputs(", sum ", o);
  print_bytes(o, w->plan_sum_bytes, false);
  fprintf(o, "; sum/peak %s%s\n", ratio, w->plan_peak_bytes ? "x" : "");
  fprintf(o, "      hits %llu; spills %llu, ", (unsigned long long)w->hits,
          (unsigned long long)w->spills);
  print_bytes(o, w->spill_bytes, false);
  fprintf(o, "; escapes %llu\n      ND4J: allocated ", (unsigned long long)w->escapes);
  print_bytes(o, w->arena_bytes, false);
  fputs(" / external (spilled) ", o);
  print_bytes(o, w->spill_bytes, false);
  fputs(" / external (pinned) ", o);
  print_bytes(o, w->pinned_bytes, false);
  fputc('\n', o);
  if (w->outlived) // only automatic workspaces have them (and only traces of version 5)
    fprintf(o,
            "      outlived %llu (kept valid, no longer routed)\n"
            "      ndmem's misprediction of the automatic cycle, not the program's error\n",
            (unsigned long long)w->outlived);
}

static int text_esc_group(FILE *o, report_t *r, size_t rank, const esc_group_t *g) {
  const nd_ws_escape_t *e = &r->t->escapes[g->first];
  fprintf(o, "#%-3zu ", rank);
  text_ws_name(o, e->rec.name, e->rec.tid);
  fprintf(o, ": %llu %s, ", (unsigned long long)g->count, plural(g->count, "escape", "escapes"));
  print_bytes(o, g->bytes, false);
  fprintf(o, "; %sborn in cycle %llu, %sseen in cycle %llu", g->count > 1 ? "first " : "",
          (unsigned long long)g->born, g->count > 1 ? "first " : "", (unsigned long long)g->seen);
  if (e->rec.stack_id == UINT32_MAX) {
    fputs("  [stack unknown]\n      (frames unknown: the block's allocation was not tracked)\n", o);
    return 0;
  }
  fprintf(o, "  [stack %u]\n", e->rec.stack_id);
  if (e->stack == UINT32_MAX) {
    fprintf(o, "      (frames unknown: stack %u is not in the trace)\n", e->rec.stack_id);
    return 0;
  }
  return text_stack(o, r, e->stack);
}

// The workspaces view: every workspace (unless brief), then the leaked workspace pointers.
static int text_workspaces(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!r->o->brief && t->nws) {
    fprintf(o, "\n== workspaces: %zu (per thread and name%s)\n", t->nws,
            t->ended ? "" : "; as last written, no normal exit");
    for (size_t i = 0; i < t->nws; i++) text_workspace(o, i + 1, &t->ws[r->ws[i]]);
  }
  uint64_t nrec = esc_records(t);
  if (!nrec) {
    if (!r->o->brief && t->nws) fputs("\n== leaked workspace pointers: none\n", o);
    return 0;
  }
  size_t n = list_len(r, r->ngroups);
  fprintf(o, "\n== leaked workspace pointers: %zu %s, ", t->nescapes,
          plural(t->nescapes, "block", "blocks"));
  print_bytes(o, r->esc_bytes, false);
  fprintf(o, ", from %zu (workspace, stack) %s", r->ngroups,
          plural(r->ngroups, "pair", "pairs"));
  if (t->escapes_dropped)
    fprintf(o, "; %llu more not kept (over %u)", (unsigned long long)t->escapes_dropped,
            (unsigned)ND_TRACE_MAX_ESCAPES);
  if (n < r->ngroups) fprintf(o, "; top %zu", n);
  fputc('\n', o);
  for (size_t i = 0; i < n; i++)
    if (text_esc_group(o, r, i + 1, &r->groups[r->group_order[i]])) return -1;
  return 0;
}

// "  maxBytes          64.00 MiB (67108864 B); peak tracked 63.99 MiB (67098214 B), 99.9 %"
static void text_limit_full(FILE *o, const nd_rec_limits_t *l, int id) {
  uint64_t limit = id == ND_LIMIT_BYTES ? l->max_bytes : l->max_physical_bytes;
  uint64_t peak = id == ND_LIMIT_BYTES ? l->peak_tracked : l->peak_physical;
  fprintf(o, "  %-16s  ", limit_names[id]);
  if (limit) print_bytes(o, limit, false);
  else fputs("none", o);
  fprintf(o, "; peak %s ", id == ND_LIMIT_BYTES ? "tracked" : "physical");
  if (id == ND_LIMIT_PHYSICAL && !l->physical_reads) {
    fputs("not read\n", o);
    return;
  }
  print_bytes(o, peak, false);
  if (limit) {
    char pct[48];
    format_pct(pct, sizeof pct, peak, limit);
    fprintf(o, ", %s", pct);
  }
  fputc('\n', o);
}

// The limits in force, where their percentages came from, and the totals.
static void text_limit_settings(FILE *o, const nd_trace_t *t) {
  fputs("\n== limits\n", o);
  if (!t->have_limits) {
    fputs("  (no LIMITS record: the limits in force and the totals are unknown)\n", o);
    return;
  }
  const nd_rec_limits_t *l = &t->limits;
  text_limit_full(o, l, ND_LIMIT_BYTES);
  text_limit_full(o, l, ND_LIMIT_PHYSICAL);
  fprintf(o, "  %-16s  ", "warn at");
  if (l->warn_at) {
    print_bytes(o, l->warn_at, false);
    fputs(" physical\n", o);
  } else {
    fputs("none\n", o);
  }
  fprintf(o, "  %-16s  %s\n", "on limit", action_names[l->action]);
  fprintf(o, "  %-16s  of ", "percentages");
  if (pct_of_cgroup(l)) {
    fputs("the cgroup limit ", o);
    print_bytes(o, l->cgroup_bytes, false);
    fputs(", smaller than RAM ", o);
    print_bytes(o, l->ram_bytes, false);
  } else {
    fputs("RAM ", o);
    print_bytes(o, l->ram_bytes, false);
    if (l->cgroup_bytes) {
      fputs("; cgroup limit ", o);
      print_bytes(o, l->cgroup_bytes, false);
    } else {
      fputs("; no cgroup limit", o);
    }
  }
  fprintf(o, "\n  %-16s  %s %llu, %s %llu; %llu %s failed%s\n", "breaches",
          limit_names[ND_LIMIT_BYTES], (unsigned long long)l->breaches[ND_LIMIT_BYTES],
          limit_names[ND_LIMIT_PHYSICAL], (unsigned long long)l->breaches[ND_LIMIT_PHYSICAL],
          (unsigned long long)l->failed, plural(l->failed, "allocation", "allocations"),
          l->flags & ND_LIMITS_ABORTED ? "; aborted on a breach" : "");
  fprintf(o, "  %-16s  %llu %s released ", "relief", (unsigned long long)l->reliefs,
          plural(l->reliefs, "run", "runs"));
  print_bytes(o, l->relief_bytes, false);
  fputs(" of workspace arenas\n", o);
  fprintf(o, "  %-16s  %llu\n", "physical reads", (unsigned long long)l->physical_reads);
  fprintf(o, "  %-16s  %llu taken; %llu in the trace", "snapshots",
          (unsigned long long)l->snapshots, (unsigned long long)t->snap_records);
  if (t->snap_records > t->nsnaps)
    fprintf(o, ", the first and the last %zu kept", t->nsnaps - 1);
  fprintf(o, "\n  %-16s  tracked = heap usable bytes + anonymous mmaps + workspace arenas; "
             "physical = anonymous resident memory (resident - shared)\n",
          "measures");
}

static void text_breach(FILE *o, const nd_trace_t *t, size_t rank, const nd_rec_breach_t *b) {
  fprintf(o, "#%-3zu %s breach %llu at ", rank, limit_names[b->limit],
          (unsigned long long)b->count);
  print_secs(o, since_start(t, b->mono_ns));
  fprintf(o, " on thread %u: %s ", b->tid, fn_names[b->fn]);
  bool growth = b->fn == 2 || b->fn == 3; // realloc, reallocarray: the growth is requested
  fputs(growth ? "growing a block by " : "of ", o);
  print_bytes(o, b->requested, false);
  static const char *const done[3] = {"failed", "allowed (warn)", "aborted the process"};
  fprintf(o, " -> %s\n      %s ", done[b->action],
          b->limit == ND_LIMIT_BYTES ? "tracked" : "physical");
  print_bytes(o, b->value, false);
  fputs(" before the call; limit ", o);
  print_bytes(o, b->limit_bytes, false);
  fputc('\n', o);
}

// The logged breaches; brief: the first one only.
static void text_breaches(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  uint64_t logged = sat_add(t->nbreaches, t->breaches_dropped);
  size_t n = r->o->brief ? (t->nbreaches ? 1 : 0) : list_len(r, t->nbreaches);
  if (r->o->brief && !n) return;
  if (!logged && !(t->have_limits && breaches_total(&t->limits))) {
    fputs("\n== limit breaches: none\n", o);
    return;
  }
  fputs("\n== limit breaches: ", o);
  if (t->have_limits) {
    uint64_t n_all = breaches_total(&t->limits);
    fprintf(o, "%llu %s, ", (unsigned long long)n_all, plural(n_all, "breach", "breaches"));
  }
  fprintf(o, "%llu logged (the 1st, 2nd, 4th, 8th, ... of each limit)", (unsigned long long)logged);
  if (t->breaches_dropped)
    fprintf(o, "; %llu more not kept (over %u)", (unsigned long long)t->breaches_dropped,
            (unsigned)ND_TRACE_MAX_BREACHES);
  if (n < t->nbreaches) fprintf(o, "; first %zu", n);
  fputc('\n', o);
  for (size_t i = 0; i < n; i++) text_breach(o, t, i + 1, &t->breaches[i]);
}

static int text_snapshot(FILE *o, report_t *r, const nd_snapshot_t *s) {
  const nd_trace_t *t = r->t;
  const nd_rec_snapshot_t *x = &s->rec;
  fprintf(o, "\n== snapshot %llu of %llu at ", (unsigned long long)s->seq,
          (unsigned long long)t->snap_records);
  print_secs(o, since_start(t, x->mono_ns));
  int lim = snap_limit(t, x);
  if (x->reason == ND_SNAP_WATERMARK) fputs(": the warning watermark was crossed\n", o);
  else fprintf(o, ": the first breach of %s\n", lim < 0 ? "a limit" : limit_names[lim]);
  fputs("  tracked ", o);
  print_bytes(o, x->tracked, false);
  fputs("; physical ", o);
  if (x->physical) print_bytes(o, x->physical, false);
  else fputs("not read", o);
  fprintf(o, "; %s ", x->reason == ND_SNAP_WATERMARK ? "watermark" : lim < 0 ? "limit"
                                                                          : limit_names[lim]);
  print_bytes(o, x->threshold, false);
  bool est;
  uint64_t live = snap_live(s, &est);
  size_t n = list_len(r, s->nsites);
  if (s->read < x->sites)
    fprintf(o, "\n  %u of %u %s (the trace ends inside the snapshot)", s->read, x->sites,
            plural(x->sites, "site", "sites"));
  else
    fprintf(o, "\n  %u %s", x->sites, plural(x->sites, "site", "sites"));
  fputs(", live ", o);
  print_bytes(o, live, est);
  if (s->nsites < s->read)
    fprintf(o, " in the %zu kept; %llu more not kept (over %u)", s->nsites,
            (unsigned long long)(s->read - s->nsites), (unsigned)ND_TRACE_MAX_SNAP_SITES);
  if (n < s->nsites) fprintf(o, "; top %zu", n);
  fputc('\n', o);
  for (size_t i = 0; i < n; i++) {
    const nd_snap_site_t *e = &s->sites[i];
    bool sampled = e->rec.flags & ND_SITE_SAMPLED;
    fprintf(o, "#%-3zu %-8s live ", i + 1, kind_names[e->rec.kind]);
    print_bytes(o, e->rec.live_bytes, sampled);
    fprintf(o, " in %s%llu %s  [stack %u]\n", sampled ? "~" : "",
            (unsigned long long)e->rec.live_count,
            e->rec.kind == 1 ? plural(e->rec.live_count, "mapping", "mappings")
                             : plural(e->rec.live_count, "block", "blocks"),
            e->rec.stack_id);
    if (text_stack(o, r, e->stack)) return -1;
  }
  return 0;
}

// The limits view: the limits and totals (unless only the brief report's first breach is
// wanted), the logged breaches, and the kept snapshots (unless brief).
static int text_limits(FILE *o, report_t *r, bool settings) {
  const nd_trace_t *t = r->t;
  if (settings) text_limit_settings(o, t);
  text_breaches(o, r);
  if (r->o->brief) return 0;
  if (!t->nsnaps) fputs("\n== snapshots: none\n", o);
  for (size_t i = 0; i < t->nsnaps; i++)
    if (text_snapshot(o, r, t->snaps[i])) return -1;
  return 0;
}

static int text_main(FILE *o, report_t *r);
static int text_report(FILE *o, report_t *r);

// The text report through the 80-column stream (as it is where that cannot be made).
static int text_report_80(FILE *out, report_t *r) {
  FILE *o = nd_wrap_open(out, &r->wrap);
  if (!o) return text_report(out, r);
  int rc = text_report(o, r);
  fclose(o); // a write error shows on `out`, which the caller checks
  r->wrap = NULL;
  return rc;
}

static int text_report(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (r->o->workspaces || r->o->limits) {
    fputs("== summary\n", o);
    text_trace_line(o, t);
    if (r->o->workspaces) {
      if (t->nws || esc_records(t)) text_ws_line(o, r);
      else fprintf(o, "  %-10s  none recorded\n", "workspaces");
    }
    if (r->o->limits) {
      if (has_limits(t)) text_limits_line(o, t);
      else fprintf(o, "  %-10s  none recorded\n", "limits");
    }
    if (r->o->workspaces && text_workspaces(o, r)) return -1;
    return r->o->limits && has_limits(t) ? text_limits(o, r, true) : 0;
  }
  if (text_main(o, r) || text_workspaces(o, r)) return -1;
  return has_limits(t) ? text_limits(o, r, !r->o->brief) : 0;
}

// The summary, the site lists (unless brief), and the leaks or, without a normal exit, the sites
// live at the last flush.
// The sites the shim named growing while the job ran (GROWTH records): the evidence that remains
// when the job did not end normally, and a note of growth that was later released.
static int text_growth(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  size_t n = list_len(r, t->ngrowth);
  uint64_t all = t->ngrowth + t->growth_dropped;
  fprintf(o, "\n== found growing while the job ran: %llu %s\n", (unsigned long long)all,
          plural(all, "site", "sites"));
  for (size_t i = 0; i < n; i++) {
    const nd_rec_growth_t *g = &t->growth[i].rec;
    bool est = g->flags & ND_SITE_SAMPLED;
    fprintf(o, "#%-3zu %-8s ", i + 1, kind_names[g->kind]);
    print_bytes(o, g->base_bytes, est);
    fputs(" -> ", o);
    print_bytes(o, g->floor_bytes, est);
    fprintf(o, " at its lowest  [stack %u]\n      ", g->stack_id);
    if (g->cycle > g->base_cycle)
      fprintf(o, "cycles %llu to %llu", (unsigned long long)g->base_cycle,
              (unsigned long long)g->cycle);
    else
      fputs("no cycles", o);
    fputs(", named at ", o);
    print_secs(o, since_start(t, g->mono_ns));
    fprintf(o, "; rose in %llu flush windows\n", (unsigned long long)g->rises);
    if (text_stack(o, r, t->growth[i].stack)) return -1;
  }
  return 0;
}

static int text_main(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  text_summary(o, r);
  if (!r->o->brief) {
    size_t n = list_len(r, t->nsites);
    fprintf(o, "\n== top %zu allocation sites by peak live bytes (of %zu sites)\n", n, t->nsites);
    for (size_t i = 0; i < n; i++)
      if (text_site(o, r, i + 1, r->by_peak[i], BY_PEAK, 0)) return -1;
    fprintf(o, "\n== top %zu allocation sites by total bytes (of %zu sites)\n", n, t->nsites);
    uint32_t *peak_rank = calloc(t->nsites ? t->nsites : 1, sizeof *peak_rank);
    if (!peak_rank) return -1;
    for (size_t i = 0; i < n; i++) peak_rank[r->by_peak[i]] = (uint32_t)i + 1;
    for (size_t i = 0; i < n; i++) {
      if (text_site(o, r, i + 1, r->by_total[i], BY_TOTAL, peak_rank[r->by_total[i]])) {
        free(peak_rank);
        return -1;
      }
    }
    free(peak_rank);
  }
  if (t->ngrowth && text_growth(o, r)) return -1;
  if (leaks_known(t)) {
    return text_lifetimes(o, r);
  } else {
    size_t n = list_len(r, r->nlive);
    fputs("\n== live at the last flush (no normal exit, so leaks are unknown): ", o);
    print_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " in %zu %s", r->nlive, plural(r->nlive, "site", "sites"));
    if (n < r->nlive) fprintf(o, "; top %zu", n);
    fputc('\n', o);
    for (size_t i = 0; i < n; i++)
      if (text_site(o, r, i + 1, r->live[i], BY_LIVE, 0)) return -1;
  }
  return 0;
}

// ---------------------------------------------------------------- JSON

static void json_loc(FILE *o, const nd_loc_t *l) {
  fputs("\"function\": ", o);
  json_str(o, l->function);
  fputs(", \"file\": ", o);
  json_str(o, l->file);
  if (l->file) fprintf(o, ", \"line\": %d", l->line);
  else fputs(", \"line\": null", o);
}

static int json_stack(FILE *o, report_t *r, uint32_t stack, const char *ind) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  fputs("\"frames\": [", o);
  for (size_t i = 0; i < s->depth; i++) {
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    fprintf(o, "%s\n%s  {\"ip\": ", i ? "," : "", ind);
    json_hex(o, f->ip);
    fputs(", \"module\": ", o);
    json_str(o, f->module);
    fputs(", \"offset\": ", o);
    if (f->module) json_hex(o, f->offset);
    else fputs("null", o);
    fputs(", ", o);
    json_loc(o, &f->at);
    fputs(", \"inlined_into\": [", o);
    for (size_t k = 0; k < f->ninlined; k++) {
      fputs(k ? ", {" : "{", o);
      json_loc(o, &f->inlined_into[k]);
      fputc('}', o);
    }
    fputs("]}", o);
  }
  fprintf(o, s->depth ? "\n%s]" : "]", ind);
  return 0;
}

static int json_site(FILE *o, report_t *r, uint32_t si, bool more) {
  const nd_site_t *s = &r->t->sites[si];
  const nd_rec_site_t *x = &s->rec;
  fprintf(o,
          "      {\"stack_id\": %u, \"kind\": \"%s\", \"sampled\": %s, \"allocs\": %llu, "
          "\"frees\": %llu, \"alloc_bytes\": %llu, \"free_bytes\": %llu, \"live_bytes\": %llu, "
          "\"peak_live_bytes\": %llu,\n       ",
          x->stack_id, kind_names[x->kind], x->flags & ND_SITE_SAMPLED ? "true" : "false",
          (unsigned long long)x->allocs, (unsigned long long)x->frees,
          (unsigned long long)x->alloc_bytes, (unsigned long long)x->free_bytes,
          (unsigned long long)site_live(x), (unsigned long long)x->peak_live_bytes);
  if (json_stack(o, r, s->stack, "       ")) return -1;
  fputs(more ? "},\n" : "}\n", o);
  return 0;
}

static int json_sites(FILE *o, report_t *r, const char *key, const uint32_t *idx, size_t n,
                      bool last) {
  fprintf(o, "    \"%s\": [%s", key, n ? "\n" : "");
  for (size_t i = 0; i < n; i++)
    if (json_site(o, r, idx[i], i + 1 < n)) return -1;
  fprintf(o, "%s]%s\n", n ? "    " : "", last ? "" : ",");
  return 0;
}

static void json_kind(FILE *o, const nd_rec_kind_totals_t *k, int i, bool more) {
  fprintf(o,
          "      {\"kind\": \"%s\", \"peak_bytes\": %lld, \"live_bytes\": %lld, "
          "\"live_count\": %lld, \"allocs\": %llu, \"frees\": %llu}%s\n",
          kind_names[i], (long long)k->peak_bytes, (long long)k->live_bytes,
          (long long)k->live_count, (unsigned long long)k->allocs, (unsigned long long)k->frees,
          more ? "," : "");
}

static void json_u64(FILE *o, const char *key, uint64_t v, bool more) {
  fprintf(o, "\"%s\": %llu%s", key, (unsigned long long)v, more ? ", " : "");
}

static void json_workspace(FILE *o, const nd_rec_workspace_t *w, bool more) {
  char ratio[64];
  format_ratio(ratio, sizeof ratio, w->plan_sum_bytes, w->plan_peak_bytes);
  fprintf(o, "      {\"tid\": %u, \"name\": ", w->tid);
  json_str(o, w->name);
  fputs(", ", o);
  json_u64(o, "cycles", w->cycles, true);
  json_u64(o, "learned_cycles", w->learned_cycles, true);
  json_u64(o, "arena_bytes", w->arena_bytes, true);
  json_u64(o, "plan_peak_bytes", w->plan_peak_bytes, true);
  json_u64(o, "plan_sum_bytes", w->plan_sum_bytes, true);
  fprintf(o, "\"sum_over_peak\": %s,\n       ", w->plan_peak_bytes ? ratio : "null");
  json_u64(o, "hits", w->hits, true);
  json_u64(o, "spills", w->spills, true);
  json_u64(o, "spill_bytes", w->spill_bytes, true);
  json_u64(o, "escapes", w->escapes, true);
  json_u64(o, "outlived", w->outlived, true);
  json_u64(o, "relearns", w->relearns, true);
  json_u64(o, "deviations", w->deviations, true);
  json_u64(o, "pinned_bytes", w->pinned_bytes, false);
  fputs(",\n       \"nd4j\": {", o);
  json_u64(o, "allocated", w->arena_bytes, true);
  json_u64(o, "external_spilled", w->spill_bytes, true);
  json_u64(o, "external_pinned", w->pinned_bytes, false);
  fprintf(o, "}}%s\n", more ? "," : "");
}

// "workspaces" and "leaked_workspace_pointers"; `last`: no key follows.
static int json_ws(FILE *o, report_t *r, bool last) {
  const nd_trace_t *t = r->t;
  fprintf(o, "  \"workspaces\": {\"count\": %zu, ", t->nws);
  json_u64(o, "hits", r->ws_hits, true);
  json_u64(o, "spills", r->ws_spills, true);
  json_u64(o, "spill_bytes", r->ws_spill_bytes, true);
  json_u64(o, "escapes", r->ws_escapes, !r->o->brief);
  if (!r->o->brief) {
    fprintf(o, "\"list\": [%s", t->nws ? "\n" : "");
    for (size_t i = 0; i < t->nws; i++) json_workspace(o, &t->ws[r->ws[i]], i + 1 < t->nws);
    fputs(t->nws ? "    ]" : "]", o);
  }
  fputs("},\n  \"leaked_workspace_pointers\": {", o);
  size_t n = list_len(r, r->ngroups);
  json_u64(o, "records", esc_records(t), true);
  json_u64(o, "not_kept", t->escapes_dropped, true);
  json_u64(o, "bytes", r->esc_bytes, true);
  fprintf(o, "\"pairs\": %zu, \"groups\": [%s", r->ngroups, n ? "\n" : "");
  for (size_t i = 0; i < n; i++) {
    const esc_group_t *g = &r->groups[r->group_order[i]];
    const nd_ws_escape_t *e = &t->escapes[g->first];
    fprintf(o, "    {\"tid\": %u, \"workspace\": ", e->rec.tid);
    json_str(o, e->rec.name);
    if (e->rec.stack_id == UINT32_MAX) fputs(", \"stack_id\": null, ", o);
    else fprintf(o, ", \"stack_id\": %u, ", e->rec.stack_id);
    json_u64(o, "count", g->count, true);
    json_u64(o, "bytes", g->bytes, true);
    json_u64(o, "first_cycle_born", g->born, true);
    json_u64(o, "first_cycle_seen", g->seen, false);
    fputs(",\n     ", o);
    if (e->stack == UINT32_MAX) fputs("\"frames\": null", o);
    else if (json_stack(o, r, e->stack, "     ")) return -1;
    fputs(i + 1 < n ? "},\n" : "}\n", o);
  }
  fprintf(o, "%s]}%s\n", n ? "  " : "", last ? "" : ",");
  return 0;
}

// "limits": null when the trace has no record of limits; else the LIMITS record's limits and
// totals (null without one), what the reader kept, the logged breaches and the kept snapshots
// with their top sites (brief: the first breach, no snapshots). `last`: no key follows.
static int json_limits(FILE *o, report_t *r, bool last) {
  const nd_trace_t *t = r->t;
  const char *end = last ? "\n" : ",\n";
  if (!has_limits(t)) {
    fprintf(o, "  \"limits\": null%s", end);
    return 0;
  }
  fputs("  \"limits\": {\n    \"limits\": ", o);
  if (t->have_limits) {
    const nd_rec_limits_t *l = &t->limits;
    fputc('{', o);
    json_u64(o, "max_bytes", l->max_bytes, true);
    json_u64(o, "max_physical_bytes", l->max_physical_bytes, true);
    json_u64(o, "warn_at", l->warn_at, true);
    fprintf(o, "\"on_limit\": \"%s\", ", action_names[l->action]);
    json_u64(o, "ram_bytes", l->ram_bytes, true);
    json_u64(o, "cgroup_bytes", l->cgroup_bytes, true);
    fprintf(o, "\"percent_of\": \"%s\", \"aborted\": %s},\n    \"totals\": {\"breaches\": {",
            pct_of_cgroup(l) ? "cgroup" : "ram",
            l->flags & ND_LIMITS_ABORTED ? "true" : "false");
    json_u64(o, limit_keys[ND_LIMIT_BYTES], l->breaches[ND_LIMIT_BYTES], true);
    json_u64(o, limit_keys[ND_LIMIT_PHYSICAL], l->breaches[ND_LIMIT_PHYSICAL], false);
    fputs("}, ", o);
    json_u64(o, "failed", l->failed, true);
    json_u64(o, "reliefs", l->reliefs, true);
    json_u64(o, "relief_bytes", l->relief_bytes, true);
    json_u64(o, "peak_tracked", l->peak_tracked, true);
    json_u64(o, "peak_physical", l->peak_physical, true);
    json_u64(o, "physical_reads", l->physical_reads, true);
    json_u64(o, "snapshots", l->snapshots, false);
    fputs("},\n", o);
  } else {
    fputs("null,\n    \"totals\": null,\n", o);
  }
  fputs("    \"records\": {", o);
  json_u64(o, "breaches", sat_add(t->nbreaches, t->breaches_dropped), true);
  json_u64(o, "breaches_kept", t->nbreaches, true);
  json_u64(o, "snapshots", t->snap_records, true);
  json_u64(o, "snapshots_kept", t->nsnaps, false);
  size_t n = r->o->brief ? (t->nbreaches ? 1 : 0) : list_len(r, t->nbreaches);
  fprintf(o, "},\n    \"breaches\": [%s", n ? "\n" : "");
  for (size_t i = 0; i < n; i++) {
    const nd_rec_breach_t *b = &t->breaches[i];
    fputs("      {", o);
    json_u64(o, "mono_ns", b->mono_ns, true);
    json_u64(o, "since_start_ns", since_start(t, b->mono_ns), true);
    fprintf(o, "\"tid\": %u, \"limit\": \"%s\", \"action\": \"%s\", \"function\": \"%s\", ",
            b->tid, limit_keys[b->limit], action_names[b->action], fn_names[b->fn]);
    json_u64(o, "requested", b->requested, true);
    json_u64(o, "value", b->value, true);
    json_u64(o, "limit_bytes", b->limit_bytes, true);
    json_u64(o, "count", b->count, false);
    fputs(i + 1 < n ? "},\n" : "}\n", o);
  }
  fprintf(o, "%s]", n ? "    " : "");
  if (r->o->brief) {
    fprintf(o, "\n  }%s", end);
    return 0;
  }
  fprintf(o, ",\n    \"snapshots\": [%s", t->nsnaps ? "\n" : "");
  for (size_t i = 0; i < t->nsnaps; i++) {
    const nd_snapshot_t *s = t->snaps[i];
    const nd_rec_snapshot_t *x = &s->rec;
    int lim = snap_limit(t, x);
    bool est;
    uint64_t live = snap_live(s, &est);
    fputs("      {", o);
    json_u64(o, "seq", s->seq, true);
    json_u64(o, "mono_ns", x->mono_ns, true);
    json_u64(o, "since_start_ns", since_start(t, x->mono_ns), true);
    fprintf(o, "\"reason\": \"%s\", \"limit\": ",
            x->reason == ND_SNAP_WATERMARK ? "watermark" : "breach");
    if (lim < 0) fputs("null, ", o);
    else fprintf(o, "\"%s\", ", limit_keys[lim]);
    json_u64(o, "tracked", x->tracked, true);
    if (x->physical) json_u64(o, "physical", x->physical, true);
    else fputs("\"physical\": null, ", o);
    json_u64(o, "threshold", x->threshold, false);
    fputs(",\n       ", o);
    json_u64(o, "sites", x->sites, true);
    json_u64(o, "sites_read", s->read, true);
    json_u64(o, "sites_not_kept", s->read - s->nsites, true);
    fprintf(o, "\"complete\": %s, ", s->read < x->sites ? "false" : "true");
    json_u64(o, "live_bytes", live, true);
    size_t k = list_len(r, s->nsites);
    fprintf(o, "\"estimated\": %s, \"top\": [%s", est ? "true" : "false", k ? "\n" : "");
    for (size_t j = 0; j < k; j++) {
      const nd_snap_site_t *e = &s->sites[j];
      fprintf(o, "        {\"stack_id\": %u, \"kind\": \"%s\", \"sampled\": %s, ",
              e->rec.stack_id, kind_names[e->rec.kind],
              e->rec.flags & ND_SITE_SAMPLED ? "true" : "false");
      json_u64(o, "live_bytes", e->rec.live_bytes, true);
      json_u64(o, "live_count", e->rec.live_count, false);
      fputs(",\n         ", o);
      if (json_stack(o, r, e->stack, "         ")) return -1;
      fputs(j + 1 < k ? "},\n" : "}\n", o);
    }
    fprintf(o, "%s]}%s\n", k ? "      " : "", i + 1 < t->nsnaps ? "," : "");
  }
  fprintf(o, "%s]\n  }%s", t->nsnaps ? "    " : "", end);
  return 0;
}

// Sites the shim found growing while the job ran (GROWTH records, version 5).
static int json_growth(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  size_t n = list_len(r, t->ngrowth);
  fprintf(o, "  \"growth_while_running\": {\"count\": %llu, \"sites\": [%s",
          (unsigned long long)(t->ngrowth + t->growth_dropped), n ? "\n" : "");
  for (size_t i = 0; i < n; i++) {
    const nd_rec_growth_t *g = &t->growth[i].rec;
    fprintf(o,
            "    {\"stack_id\": %u, \"kind\": \"%s\", \"estimated\": %s, \"at_ns\": %llu, "
            "\"cycle\": %llu, \"base_cycle\": %llu, \"base_ns\": %llu, \"base_bytes\": %llu, "
            "\"floor_bytes\": %llu, \"rises\": %llu,\n     ",
            g->stack_id, kind_names[g->kind], g->flags & ND_SITE_SAMPLED ? "true" : "false",
            (unsigned long long)since_start(t, g->mono_ns), (unsigned long long)g->cycle,
            (unsigned long long)g->base_cycle, (unsigned long long)since_start(t, g->base_ns),
            (unsigned long long)g->base_bytes, (unsigned long long)g->floor_bytes,
            (unsigned long long)g->rises);
    if (json_stack(o, r, t->growth[i].stack, "     ")) return -1;
    fputs(i + 1 < n ? "},\n" : "}\n", o);
  }
  fprintf(o, "%s]},\n", n ? "  " : "");
  return 0;
}

// What was live at exit, by class: totals per class, then the entries (each class's first --top).
static int json_lifetimes(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  const nd_lifetimes_t *l = &r->life;
  fprintf(o,
          "  \"leaks\": {\"known\": true, \"bytes\": %llu, \"blocks\": %llu, \"estimated\": %s, "
          "\"stacks\": %zu, \"steady_state\": ",
          (unsigned long long)r->leak_bytes, (unsigned long long)r->leak_blocks,
          r->leak_est ? "true" : "false", t->nleaks);
  if (l->steady)
    fprintf(o, "{\"start_ns\": %llu, \"cycles\": %llu}", (unsigned long long)l->steady_ns,
            (unsigned long long)l->cycles);
  else fputs("null", o);
  fprintf(o, ", \"untracked_blocks\": %llu,\n   \"classes\": {",
          (unsigned long long)l->untracked_blocks);
  for (int c = 0; c < ND_LIFE_CLASSES; c++)
    fprintf(o, "%s\"%s\": {\"bytes\": %llu, \"blocks\": %llu, \"stacks\": %llu, "
               "\"estimated\": %s}",
            c ? ",\n               " : "", nd_life_keys[c], (unsigned long long)l->bytes[c],
            (unsigned long long)l->blocks[c], (unsigned long long)l->entries[c],
            l->est[c] ? "true" : "false");
  fputs("},\n   \"groups\": [", o);
  size_t at = 0;
  bool first = true;
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    size_t n = l->entries[c], shown = list_len(r, n);
    for (size_t i = 0; i < shown; i++) {
      const nd_life_t *e = &l->v[at + i];
      const nd_leak_t *k = e->leak >= 0 ? &t->leaks[e->leak] : NULL;
      fprintf(o,
              "%s    {\"class\": \"%s\", \"stack_id\": %u, \"kind\": \"%s\", \"bytes\": %llu, "
              "\"blocks\": %llu, \"estimated\": %s, \"capped\": %s, \"exact_bytes\": %llu, "
              "\"exact_blocks\": %llu, \"sampled_blocks\": %llu, \"estimated_bytes\": %llu,\n"
              "     \"births\": ",
              first ? "\n" : ",\n", nd_life_keys[e->cls], t->stacks[e->stack].id,
              kind_names[e->kind], (unsigned long long)e->bytes, (unsigned long long)e->blocks,
              e->samples ? "true" : "false", e->capped ? "true" : "false",
              (unsigned long long)(k ? k->exact_bytes : 0),
              (unsigned long long)(k ? k->exact_blocks : 0), (unsigned long long)e->samples,
              (unsigned long long)(e->bytes - (k ? k->exact_bytes : 0)));
      if (k) fprintf(o, "{\"first\": %.4f, \"last\": %.4f}", e->born_first, e->born_last);
      else fputs("null", o);
      fputs(", \"growth\": ", o);
      if (e->cls == ND_LIFE_GROWING || e->cls == ND_LIFE_TEARDOWN)
        fprintf(o, "{\"bytes\": %llu, \"blocks\": %llu, \"cycles\": %llu, "
                   "\"cycles_per_block\": %llu, \"seconds\": %.6f}",
                (unsigned long long)e->grew, (unsigned long long)e->grew_blocks,
                (unsigned long long)e->cycles, (unsigned long long)e->per_cycles, e->secs);
      else fputs("null", o);
      fprintf(o, ", \"flagged_while_running\": %s, \"suppressed_by\": ",
              e->flagged ? "true" : "false");
      if (e->suppressed_by) json_str(o, e->suppressed_by);
      else fputs("null", o);
      fputs(",\n     ", o);
      if (json_stack(o, r, e->stack, "     ")) return -1;
      fputs("}", o);
      first = false;
    }
    at += n;
  }
  fprintf(o, "%s]}", first ? "" : "\n  ");
  return 0;
}

static int json_report(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  const nd_trace_header_t *h = &t->hdr;
  char start[64];
  format_start(start, sizeof start, h->start_realtime_ns);
  fputs("{\n  \"ndmemreport\": 1,\n  \"file\": ", o);
  json_str(o, t->path);
  fprintf(o,
          ",\n  \"trace\": {\"version\": %u, \"bytes\": %llu, \"records\": %llu, "
          "\"complete\": %s, \"read_to\": %llu, ",
          h->version, (unsigned long long)t->file_size, (unsigned long long)t->records,
          t->truncated ? "false" : "true", (unsigned long long)t->good_end);
  if (t->have_flush)
    fprintf(o, "\"last_flush\": {\"seq\": %llu, \"mono_ns\": %llu, \"records_after\": %llu}},\n",
            (unsigned long long)t->flush.seq, (unsigned long long)t->flush.mono_ns,
            (unsigned long long)t->after_flush);
  else
    fputs("\"last_flush\": null},\n", o);
  if (r->o->workspaces || r->o->limits) {
    if ((r->o->workspaces && json_ws(o, r, !r->o->limits)) ||
        (r->o->limits && json_limits(o, r, true)))
      return -1;
    fputs("}\n", o);
    return 0;
  }
  fprintf(o, "  \"process\": {\"pid\": %llu, \"exe\": ", (unsigned long long)h->pid);
  json_str(o, t->exe);
  fputs(", \"host\": ", o);
  json_str(o, t->host);
  fprintf(o,
          ", \"start_realtime_ns\": %llu, \"start\": \"%s\", \"duration_ns\": %llu, "
          "\"exited_normally\": %s, \"running\": %s",
          (unsigned long long)h->start_realtime_ns, start,
          (unsigned long long)(t->last_ns > h->start_mono_ns ? t->last_ns - h->start_mono_ns : 0),
          leaks_known(t) ? "true" : "false",
          t->ended || r->running == ND_RUN_NO    ? "false"
          : r->running == ND_RUN_YES             ? "true"
                                                 : "null");
  if (t->have_exit) {
    static const char *const how[] = {"exit", "_exit", "signal", "limit_abort"};
    fprintf(o, ", \"exit\": {\"how\": \"%s\", \"code\": %d, \"tid\": %u}", how[t->exit.how],
            t->exit.code, t->exit.tid);
  }
  fputs("},\n", o);
  fprintf(o,
          "  \"tracking\": {\"sample_interval\": %llu, \"track_min\": %llu, \"stack_depth\": %u, "
          "\"page_size\": %u},\n",
          (unsigned long long)h->sample_interval, (unsigned long long)h->track_min, h->depth,
          h->page_size);
  if (!t->have_counters) {
    fputs("  \"counters\": null,\n", o);
  } else {
    const nd_rec_counters_t *c = &t->counters;
    fprintf(o, "  \"counters\": {\n    \"mono_ns\": %llu,\n    \"threads\": %u,\n    \"calls\": {",
            (unsigned long long)c->mono_ns, c->threads);
    for (int i = 0; i < ND_TRACE_FNS; i++)
      fprintf(o, "%s\"%s\": %llu", i ? ", " : "", fn_names[i], (unsigned long long)c->calls[i]);
    fputs("},\n    \"fallbacks\": {", o);
    for (int i = 0; i < 4; i++)
      fprintf(o, "%s\"%s\": %llu", i ? ", " : "", fb_names[i],
              (unsigned long long)c->fallbacks[i]);
    fputs("},\n    \"kinds\": [\n", o);
    int last = 1;
    for (int i = 2; i < ND_TRACE_KINDS; i++) {
      const nd_rec_kind_totals_t *k = &c->kind[i];
      if (k->allocs || k->frees || k->live_bytes || k->peak_bytes) last = i;
    }
    for (int i = 0; i <= last; i++) {
      const nd_rec_kind_totals_t *k = &c->kind[i];
      if (i > 1 && !k->allocs && !k->frees && !k->live_bytes && !k->peak_bytes) continue;
      json_kind(o, k, i, i < last);
    }
    fputs("    ]\n  },\n", o);
  }
  if (h->version >= 2 && json_ws(o, r, false)) return -1; // absent from version 1 reports
  if (h->version >= 3 && json_limits(o, r, false)) return -1; // and from version 2 reports
  if (!r->o->brief) {
    size_t n = list_len(r, t->nsites);
    fprintf(o, "  \"sites\": {\n    \"count\": %zu,\n", t->nsites);
    if (json_sites(o, r, "by_peak", r->by_peak, n, false) ||
        json_sites(o, r, "by_total", r->by_total, n, true))
      return -1;
    fputs("  },\n", o);
  }
  if (json_growth(o, r)) return -1;
  if (leaks_known(t)) {
    if (json_lifetimes(o, r)) return -1;
    fputs(",\n  \"live_at_last_flush\": null\n}\n", o);
  } else {
    size_t n = list_len(r, r->nlive);
    fprintf(o, "  \"leaks\": {\"known\": false},\n");
    fprintf(o,
            "  \"live_at_last_flush\": {\"bytes\": %llu, \"estimated\": %s, \"sites\": %zu, "
            "\"top\": [%s",
            (unsigned long long)r->live_bytes, r->live_est ? "true" : "false", r->nlive,
            n ? "\n" : "");
    for (size_t i = 0; i < n; i++)
      if (json_site(o, r, r->live[i], i + 1 < n)) return -1;
    fprintf(o, "%s]}\n}\n", n ? "  " : "");
  }
  return 0;
}

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
  char *end = NULL;
  errno = 0;
  unsigned long long n = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
  if (!end || *end || errno || n > 1000000)
    return usage_error(err, "%s needs a number from 0 to 1000000, not '%s'", opt, v ? v : "");
  *out = (size_t)n;
  return 0;
}

// 0: run; 2: bad usage (reported); -1: --help was printed.
static int parse_args(int argc, char **argv, opts_t *o, FILE *out, FILE *err) {
  *o = (opts_t){.symbols = true, .top = 10, .frames = 8, .builtin_supp = true};
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
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fprintf(out,
              "%s\n\n"
              "Reads a trace written by libndmem.so and reports what it allocated.\n"
              "  --format text|json  output format (default text)\n"
              "  --top N             sites, leaks, leaked workspace pointers, breaches and\n"
              "                      each snapshot's sites listed (default 10, 0 = all)\n"
              "  --frames N          frames shown per stack in text (default 8, 0 = all)\n"
              "  --brief             summary, the 5 largest leaks and leaked workspace\n"
              "                      pointers, and the first breach of a limit only\n"
              "  --fail-on-leak      exit 1 on growth, or on memory live at a normal exit\n"
              "                      that was not held since start-up nor suppressed\n"
              "  --fail-on-growth    exit 1 on growth only (growing, released at teardown,\n"
              "                      or, without a normal exit, found growing while running)\n"
              "  --workspaces        only the summary's trace and workspaces lines, then per\n"
              "                      workspace its cycles, plan, hits, spills and escapes,\n"
              "                      and the leaked workspace pointers with their stacks\n"
              "  --limits            only the summary's trace and limits lines, then the\n"
              "                      limits and their totals, the logged breaches, and the\n"
              "                      snapshots of live memory with their top sites' stacks\n"
              "  --no-symbols        do not open modules: frames print as path+offset\n"
              "  --suppressions FILE\n"
              "                      leaks whose stack matches a rule of FILE are not\n"
              "                      reported: LeakSanitizer's format, one leak:PATTERN a\n"
              "                      line (* wildcards, ^ and $ anchors; against each\n"
              "                      frame's function, source file and module), # comments;\n"
              "                      may be given more than once\n"
              "  --no-builtin-suppressions\n"
              "                      report the C and C++ runtimes' lifetime allocations\n"
              "                      too (libstdc++'s exception pool, stdio buffers, the\n"
              "                      loader's and the locale's state, ...)\n"
              "Exit status: 0, 1 (--fail-on-leak or --fail-on-growth and a finding),\n"
              "2 (bad usage or trace).\n",
              USAGE_HELP);
      return -1;
    } else if (IS("--format")) {
      const char *v = VALUE();
      if (v && !strcmp(v, "text")) o->json = false;
      else if (v && !strcmp(v, "json")) o->json = true;
      else return usage_error(err, "--format takes text or json, not '%s'", v ? v : "");
    } else if (IS("--top")) {
      if (parse_count(err, "--top", VALUE(), &o->top)) return 2;
    } else if (IS("--frames")) {
      if (parse_count(err, "--frames", VALUE(), &o->frames)) return 2;
    } else if (!strcmp(a, "--fail-on-leak")) {
      o->fail_on_leak = true;
    } else if (!strcmp(a, "--fail-on-growth")) {
      o->fail_on_growth = true;
    } else if (!strcmp(a, "--brief")) {
      o->brief = true;
    } else if (!strcmp(a, "--workspaces")) {
      o->workspaces = true;
    } else if (!strcmp(a, "--limits")) {
      o->limits = true;
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
    } else {
      return usage_error(err, "unknown option '%s'", a);
    }
#undef IS
#undef VALUE
  }
  if (!o->file) return usage_error(err, "no trace FILE given");
  return 0;
}

#define PROGRESS_MIN (256 << 20) // a progress bar (stderr a tty) for traces of this size or more

typedef struct progress {
  FILE *err;
  int last; // percent shown, -1 none
} progress_t;

static void on_progress(void *arg, uint64_t done, uint64_t total) {
  progress_t *p = arg;
  if (!total) return;
  int pct = done >= total ? 100 : (int)(done * 100 / total);
  if (pct == p->last) return;
  p->last = pct;
  char bar[41];
  int fill = pct * 40 / 100;
  memset(bar, '#', (size_t)fill);
  memset(bar + fill, '.', (size_t)(40 - fill));
  bar[40] = 0;
  fprintf(p->err, "\rndmemreport: reading [%s] %3d%%", bar, pct);
  fflush(p->err);
}

// --fail-on-growth: growth, or (no normal exit, so no classes) a site found growing while running;
// --fail-on-leak: that, or memory live at exit that was not held since start-up nor suppressed.
static bool failed(const opts_t *o, const report_t *r) {
  const nd_lifetimes_t *l = &r->life;
  bool known = leaks_known(r->t);
  bool growth = known ? l->entries[ND_LIFE_GROWING] || l->entries[ND_LIFE_TEARDOWN]
                      : r->t->ngrowth > 0;
  if (o->fail_on_growth && growth) return true;
  return o->fail_on_leak && (growth || (known && l->entries[ND_LIFE_LIVE]));
}

// The suppressions: the built-ins unless off, then each --suppressions file. NULL after an
// error, reported on `err`.
static nd_supp_t *load_suppressions(const opts_t *o, FILE *err) {
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

int nd_report_main(int argc, char **argv, FILE *out, FILE *err) {
  opts_t o;
  int rc = parse_args(argc, argv, &o, out, err);
  nd_supp_t *supp = rc ? NULL : load_suppressions(&o, err);
  free(o.supp_files); // only loading reads them
  o.supp_files = NULL;
  if (rc) return rc < 0 ? 0 : rc;
  if (!supp) return 2;
  nd_trace_t *t = malloc(sizeof *t);
  if (!t) {
    fprintf(err, "ndmemreport: %s: out of memory\n", o.file);
    nd_supp_free(supp);
    return 2;
  }
  progress_t prog = {.err = err, .last = -1};
  struct stat st;
  bool show_progress = isatty(fileno(err)) && !stat(o.file, &st) && S_ISREG(st.st_mode) &&
                       st.st_size >= PROGRESS_MIN;
  rc = nd_trace_read(t, o.file, show_progress ? on_progress : NULL, &prog);
  if (prog.last >= 0) fputs("\r\033[K", err);
  if (rc) {
    if (t->err_off == UINT64_MAX) fprintf(err, "ndmemreport: %s: %s\n", o.file, t->err);
    else
      fprintf(err, "ndmemreport: %s: %s at offset %llu\n", o.file, t->err,
              (unsigned long long)t->err_off);
    nd_trace_free(t);
    free(t);
    nd_supp_free(supp);
    return 2;
  }
  report_t r = {.t = t, .o = &o, .running = ND_RUN_NO, .supp = supp};
  if (!t->ended) r.running = nd_trace_running(t, o.file);
  r.sym = nd_sym_new(t, o.symbols);
  rc = 0;
  if (!r.sym || analyse(&r)) {
    fprintf(err, "ndmemreport: %s: out of memory\n", o.file);
    rc = 2;
  } else if (o.json ? json_report(out, &r) : text_report_80(out, &r)) {
    fprintf(err, "ndmemreport: %s: out of memory\n", o.file);
    rc = 2;
  } else if (fflush(out) || ferror(out)) {
    fprintf(err, "ndmemreport: cannot write the report: %s\n", strerror(errno));
    rc = 2;
  } else if (failed(&o, &r)) {
    rc = 1;
  }
  nd_lifetimes_free(&r.life);
  free(r.by_peak);
  free(r.by_total);
  free(r.live);
  free(r.leaks);
  free(r.ws);
  free(r.groups);
  free(r.group_order);
  nd_sym_free(r.sym);
  nd_supp_free(r.supp);
  nd_trace_free(t);
  free(t);
  return rc;
}

#ifndef ND_REPORT_NO_MAIN
int main(int argc, char **argv) { return nd_report_main(argc, argv, stdout, stderr); }
#endif
