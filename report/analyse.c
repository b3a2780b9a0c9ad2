// SPDX-License-Identifier: MIT
// analyse.c: ndmemreport's model (report.h) before rendering: the name tables, the formatting
// both renderers share (start time, ratios), the site, leak and workspace orderings
// (nd_rep_analyse), the suppression rule a leak's stack matches (suppressed_by) and the
// predicates on a trace that the text and JSON renderers both ask (leaks known, limits recorded,
// escape records, snapshots), and a stack's stable key (nd_rep_stack_key), which diff matches on.
#include "report.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const nd_rep_kind_names[ND_TRACE_KINDS] = {
    "heap",     "mmap",     "pinned",   "managed",  "device0",  "device1",  "device2",
    "device3",  "device4",  "device5",  "device6",  "device7",  "device8",  "device9",
    "device10", "device11", "device12", "device13", "device14", "device15"};
const char *const nd_rep_fn_names[ND_TRACE_FNS] = {
    "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
    "valloc", "pvalloc", "free",   "free_sized",   "free_aligned_sized", "mmap", "munmap",
    "mremap"};
const char *const nd_rep_fb_names[4] = {"bootstrap", "synthesized", "late-thread",
                                        "untracked-free"};
// Limits by their JavaCPP names in text, snake case in JSON; actions by NDMEM_ON_LIMIT's values.
const char *const nd_rep_limit_names[ND_LIMIT_DEVICE + 1] = {"maxBytes", "maxPhysicalBytes",
                                                              "maxDeviceBytes"};
const char *const nd_rep_limit_keys[ND_LIMIT_DEVICE + 1] = {"max_bytes", "max_physical_bytes",
                                                             "max_device_bytes"};
const char *nd_rep_base_name(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

const char *const nd_rep_cuda_fn_names[ND_CUDA_FN_USED] = {ND_CUDA_FN_NAMES};
const char *const nd_rep_dev_class_names[ND_DEV_CLASSES] = {"cuMemAlloc", "stream-ordered",
                                                            "cuMemCreate"};
const char *const nd_rep_action_names[4] = {"fail", "warn", "abort", "host"};

// ---------------------------------------------------------------- formatting: both renderers

void nd_rep_format_start(char *out, size_t n, uint64_t realtime_ns) {
  time_t sec = (time_t)(realtime_ns / 1000000000u);
  struct tm tm;
  if (!gmtime_r(&sec, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
    snprintf(out, n, "?");
}

// sum / peak to two decimals, rounded half up ("4.00"), or "n/a" for a zero peak.
void nd_rep_format_pct(char *out, size_t n, uint64_t v, uint64_t limit) {
  u128 m = (u128)v * 1000 / (limit ? limit : 1);
  if (m > (u128)UINT64_MAX) m = UINT64_MAX;
  snprintf(out, n, "%llu.%u %%", (unsigned long long)(m / 10), (unsigned)(m % 10));
}

void nd_rep_print_secs(FILE *o, uint64_t ns) {
  fprintf(o, "%llu.%03llu s", (unsigned long long)(ns / 1000000000u),
          (unsigned long long)(ns % 1000000000u / 1000000u));
}

void nd_rep_format_ratio(char *out, size_t n, uint64_t sum, uint64_t peak) {
  if (!peak) {
    snprintf(out, n, "n/a");
    return;
  }
  u128 h = ((u128)sum * 100 + peak / 2) / peak;
  snprintf(out, n, "%llu.%02u", (unsigned long long)(h / 100), (unsigned)(h % 100));
}

// A frame's name: the one rule for the text report and merge (report.h, ND_NAME_*).
void nd_rep_loc_text(sbuf_t *b, const nd_frame_t *f, const nd_loc_t *l, unsigned how) {
  bool base = how & ND_NAME_BASE;
  const char *module = base ? nd_rep_base_name(f->module) : f->module;
  if (l->function && l->file && (how & ND_NAME_MODULE)) {
    sb_put(b, module, strlen(module));
    sb_put(b, "!", 1);
  }
  if (l->function) {
    sb_put(b, l->function, strlen(l->function));
    sb_put(b, " (", 2);
  }
  if (l->file) {
    const char *file = base ? nd_rep_base_name(l->file) : l->file;
    sb_put(b, file, strlen(file));
    sb_fmt(b, ":%d", l->line);
  } else {
    sb_put(b, module, strlen(module));
    sb_fmt(b, "+0x%llx", (unsigned long long)f->offset);
  }
  if (l->function) sb_put(b, ")", 1);
}

void nd_rep_frame_text(sbuf_t *b, const nd_frame_t *f, unsigned how) {
  sb_put(b, "", 0);
  if (f->python) {
    const char *fn = f->at.function && *f->at.function ? f->at.function : "?";
    const char *file = f->at.file && *f->at.file ? f->at.file : "?";
    if (how & ND_NAME_PY) sb_put(b, "py ", 3);
    sb_put(b, fn, strlen(fn));
    sb_put(b, " (", 2);
    sb_put(b, file, strlen(file));
    if (f->at.line) sb_fmt(b, ":%d", f->at.line);
    sb_put(b, ")", 1);
  } else if (f->module) {
    nd_rep_loc_text(b, f, &f->at, how);
  } else if (f->at.function) { // no module: the mark of native frames cut at NDMEM_DEPTH
    sb_put(b, f->at.function, strlen(f->at.function));
  } else {
    sb_fmt(b, "0x%llx", (unsigned long long)f->ip);
  }
}

// ---------------------------------------------------------------- analysis

static uint64_t round_count(double x) {
  if (!(x > 0)) return 0;
  if (x >= 18446744073709549568.0) return UINT64_MAX;
  return (uint64_t)(x + 0.5);
}

uint64_t nd_rep_site_live(const nd_rec_site_t *s) {
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
  int c = cmp_u64_desc(nd_rep_site_live(&t->sites[i].rec), nd_rep_site_live(&t->sites[j].rec));
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

uint64_t nd_rep_sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

uint64_t nd_rep_peak_cap(const nd_trace_t *t, uint16_t kind, uint64_t v, bool est, bool *most) {
  int64_t peak = kind < ND_TRACE_KINDS ? t->counters.kind[kind].peak_bytes : 0;
  *most = est && t->have_counters && peak >= 0 && v > (uint64_t)peak;
  return *most ? (uint64_t)peak : v;
}

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
    r->ws_hits = nd_rep_sat_add(r->ws_hits, w->hits);
    r->ws_spills = nd_rep_sat_add(r->ws_spills, w->spills);
    r->ws_spill_bytes = nd_rep_sat_add(r->ws_spill_bytes, w->spill_bytes);
    r->ws_escapes = nd_rep_sat_add(r->ws_escapes, w->escapes);
  }
  qsort_r(r->ws, t->nws, sizeof *r->ws, by_ws, (void *)t);
  for (size_t i = 0; i < t->nescapes; i++) esc[i] = (uint32_t)i;
  qsort_r(esc, t->nescapes, sizeof *esc, by_esc_key, (void *)t);
  for (size_t i = 0; i < t->nescapes; i++) {
    const nd_ws_escape_t *e = &t->escapes[esc[i]];
    r->esc_bytes = nd_rep_sat_add(r->esc_bytes, e->rec.size);
    esc_group_t *g = r->ngroups ? &r->groups[r->ngroups - 1] : NULL;
    const nd_rec_ws_escape_t *k = g ? &t->escapes[g->first].rec : NULL;
    if (!g || k->tid != e->rec.tid || k->stack_id != e->rec.stack_id ||
        memcmp(k->name, e->rec.name, sizeof k->name)) {
      r->group_order[r->ngroups] = (uint32_t)r->ngroups;
      g = &r->groups[r->ngroups++];
      *g = (esc_group_t){.first = esc[i], .born = e->rec.cycle_born, .seen = e->rec.cycle_seen};
    }
    g->count++;
    g->bytes = nd_rep_sat_add(g->bytes, e->rec.size);
    if (e->rec.cycle_born < g->born) g->born = e->rec.cycle_born;
    if (e->rec.cycle_seen < g->seen) g->seen = e->rec.cycle_seen;
  }
  free(esc);
  qsort_r(r->group_order, r->ngroups, sizeof *r->group_order, by_esc_group, r);
  return 0;
}

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

// ---------------------------------------------------------------- Python lines (version 7)

long nd_rep_py_innermost(const nd_trace_t *t, const nd_stack_t *s) {
  const uint64_t *ips = nd_stack_frames(t, s);
  for (size_t i = 0; i < s->depth; i++)
    if (nd_trace_is_pyframe(t, ips[i])) return (long)i;
  return -1;
}

bool nd_rep_py_library(const char *file) {
  return !file || !strncmp(file, "<frozen ", 8) || strstr(file, "/site-packages/") ||
         strstr(file, "/dist-packages/") || strstr(file, "/lib/python3.") ||
         strstr(file, "/lib/pypy");
}

bool nd_rep_python_only(const report_t *r, const nd_stack_t *s) {
  return r->o->python_only && nd_rep_py_innermost(r->t, s) >= 0;
}

// A site with a Python frame and its innermost one's (code, line), for grouping.
typedef struct py_site {
  uint32_t site;
  uint32_t line;
  const nd_pycode_t *code;
} py_site_t;

static int py_str_cmp(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

// By (file, line, function): the key of a Python line. Code objects are compared by their
// strings, not their ids: one function's code object re-created (a reloaded module, a code object
// freed and its address reused) is a new id at the same line.
static int py_key_cmp(const nd_pycode_t *c, uint32_t line, const nd_pycode_t *d, uint32_t dline) {
  int k = py_str_cmp(c->filename, d->filename);
  if (k) return k;
  if (line != dline) return line < dline ? -1 : 1;
  return py_str_cmp(c->qualname, d->qualname);
}

static int by_py_key(const void *a, const void *b) {
  const py_site_t *x = a, *y = b;
  int k = py_key_cmp(x->code, x->line, y->code, y->line);
  return k ? k : (x->site > y->site) - (x->site < y->site);
}

static int by_py_bytes(const void *a, const void *b) {
  const py_line_t *x = a, *y = b;
  int c = cmp_u64_desc(x->alloc_bytes, y->alloc_bytes);
  return c ? c : py_key_cmp(x->code, x->line, y->code, y->line);
}

// The sites grouped by their innermost Python frame, by bytes allocated. 0, or -1 (memory).
static int analyse_py_lines(report_t *r) {
  const nd_trace_t *t = r->t;
  if (!t->py_stacks) return 0;
  py_site_t *v = malloc((t->nsites ? t->nsites : 1) * sizeof *v);
  if (!v) return -1;
  size_t n = 0;
  for (size_t i = 0; i < t->nsites; i++) {
    const nd_stack_t *s = &t->stacks[t->sites[i].stack];
    long k = nd_rep_py_innermost(t, s);
    if (k < 0) continue;
    uint64_t ip = nd_stack_frames(t, s)[k];
    const nd_pycode_t *c = nd_trace_pycode(t, ip); // the reader made sure there is one
    if (c) v[n++] = (py_site_t){(uint32_t)i, nd_pyframe_line(ip), c};
  }
  qsort(v, n, sizeof *v, by_py_key);
  r->py_lines = calloc(n ? n : 1, sizeof *r->py_lines);
  if (!r->py_lines) {
    free(v);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    py_line_t *l = r->npy_lines ? &r->py_lines[r->npy_lines - 1] : NULL;
    if (!l || py_key_cmp(l->code, l->line, v[i].code, v[i].line)) {
      l = &r->py_lines[r->npy_lines++];
      l->code = v[i].code;
      l->line = v[i].line;
    }
    const nd_rec_site_t *x = &t->sites[v[i].site].rec;
    l->allocs = nd_rep_sat_add(l->allocs, x->allocs);
    l->alloc_bytes = nd_rep_sat_add(l->alloc_bytes, x->alloc_bytes);
    l->live_bytes = nd_rep_sat_add(l->live_bytes, nd_rep_site_live(x));
    l->sites++;
    l->est |= (x->flags & ND_SITE_SAMPLED) != 0;
  }
  free(v);
  qsort(r->py_lines, r->npy_lines, sizeof *r->py_lines, by_py_bytes);
  return 0;
}

// ---------------------------------------------------------------- allocator retention

const char *const nd_rep_allocator_names[ND_ALLOCATOR_MAX + 1] = {"an unknown allocator",
                                                                  "glibc malloc", "jemalloc"};
const char *const nd_rep_allocator_keys[ND_ALLOCATOR_MAX + 1] = {"unknown", "glibc", "jemalloc"};

// Resident growth worth naming: 64 MiB (ND_RETAIN_MIN_BYTES, trace_format.h), and a quarter of
// the resident memory at the reference keeps a large job's noise out. Tracked memory "stayed
// flat" when it changed by at most a quarter of that growth (the rest is then not the program's
// live memory), and the allocator "accounts for" the growth when its own free bytes grew by at
// least half of it.
#define RETAIN_MIN_BYTES ND_RETAIN_MIN_BYTES
#define RETAIN_MIN_PCT 25     // of the resident memory at the reference
#define RETAIN_FLAT_DIV 4     // |tracked change| <= growth / 4
#define RETAIN_EXPLAIN_DIV 2  // allocator free growth >= growth / 2
#define RETAIN_NEAR_DIV 16    // a point within 1/16 of the highest growth stands as high

// Host memory ndmem tracks at a point: heap, mmap, pinned and managed (the kinds before device0).
__extension__ typedef __int128 i128;

// Sums and differences of a trace's values are taken in 128 bits (a garbled trace may hold any
// 64-bit value) and clamped on the way out.
static i128 point_tracked(const nd_point_t *q) {
  i128 v = 0;
  for (int k = 0; k < 4; k++) v += q->live[k];
  return v;
}
static i128 abs128(i128 v) { return v < 0 ? -v : v; }
static int64_t clamp64(i128 v) {
  return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

// The reference is the steady state's start, but not before a third of the run: memory a job
// takes while it warms up (libraries, first batches, caches) is not retention. Readings of the
// allocator are sparse (allocstat.c asks only when the gap moved, and a flush repeats the last):
// at the reference the reading its point carries, else the first one after (the smaller growth,
// never the larger); at the point compared, the one it carries. The free bytes counted are those
// surely resident (less those a malloc_trim may have given back), and they must have *grown*:
// free bytes the allocator already held at the reference explain nothing.
static void retention(const nd_trace_t *t, nd_retention_t *out) {
  memset(out, 0, sizeof *out);
  out->allocator = t->resident.allocator;
  if (!t->have_resident || t->npoints < 2) return;
  uint64_t start = t->hdr.start_mono_ns, end = t->last_ns > start ? t->last_ns : start;
  uint64_t ref_ns = start + (end - start) / 3;
  if (t->flush.steady_ns > ref_ns) ref_ns = t->flush.steady_ns;
  size_t ref = t->npoints;
  for (size_t i = 0; i < t->npoints; i++)
    if (t->series[i].mono_ns >= ref_ns && t->series[i].resident >= 0) {
      ref = i;
      break;
    }
  if (ref == t->npoints) return;
  // The point compared with it: where resident memory stands highest above the reference beyond
  // the tracked bytes' change (a spike of live memory, freed, then held: after the spike, not at
  // its top; a process that gave the memory back at exit: before that). The last point within
  // 1/RETAIN_NEAR_DIV of that height: the allocator's reading, which may lag a flush or more
  // behind (allocstat.c), has caught up with a plateau by its end.
  const nd_point_t *a = &t->series[ref];
  size_t peak = ref;
  i128 best = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = ref + 1; i < t->npoints; i++) {
      const nd_point_t *q = &t->series[i];
      if (q->resident < 0) continue;
      i128 v = (i128)q->resident - a->resident - abs128(point_tracked(q) - point_tracked(a));
      if (pass == 0 && v > best) best = v;
      if (pass == 1 && best > 0 && v >= best - best / RETAIN_NEAR_DIV) peak = i;
    }
  const nd_point_t *b = &t->series[peak];
  out->known = true;
  out->resident_from = (uint64_t)a->resident;
  out->resident_to = (uint64_t)b->resident; // >= resident_from: best > 0, or the same point
  // Workspace arenas are ndmem's own mappings; the trace has their size at the end only, so they
  // count at both points (the change is the heap's and mmaps'), and growth that they could
  // explain is never called untracked below.
  uint64_t arenas = 0;
  for (size_t i = 0; i < t->nws; i++) arenas = nd_rep_sat_add(arenas, t->ws[i].arena_bytes);
  i128 dt = point_tracked(b) - point_tracked(a);
  out->tracked_to = clamp64(point_tracked(b) + arenas);
  out->tracked_change = clamp64(dt);
  // Each point carries the reading its flush had: the latest answer, or none (before the first,
  // or after a trim until the next: allocstat.c). At the point compared, that one, and none is
  // none (an earlier answer may predate a trim); at the reference, the first one from it on.
  int64_t free_from = -1, free_to = t->series[peak].alloc_free;
  for (size_t i = ref; i <= peak && free_from < 0; i++) free_from = t->series[i].alloc_free;
  if (free_to >= 0 && free_from >= 0) {
    out->have_free = true;
    out->free_bytes = (uint64_t)free_to;
    out->free_growth = free_to - free_from; // both >= 0
    int64_t tb = t->series[peak].alloc_trimmed;
    out->trimmed_bytes = tb > 0 ? (uint64_t)tb : 0;
  }

  uint64_t growth = out->resident_to - out->resident_from;
  if (growth < RETAIN_MIN_BYTES || (u128)growth * 100 < (u128)out->resident_from * RETAIN_MIN_PCT)
    return; // (a) no material growth
  if (abs128(dt) > growth / RETAIN_FLAT_DIV) return; // (b) the program's live memory grew with it
  if (out->allocator != ND_ALLOCATOR_UNKNOWN && out->have_free && out->free_growth > 0 &&
      (uint64_t)out->free_growth >= growth / RETAIN_EXPLAIN_DIV)
    out->cls = ND_RET_ALLOCATOR; // (c) the allocator's own account holds most of it
  else if (growth - (arenas < growth ? arenas : growth) >= RETAIN_MIN_BYTES)
    out->cls = ND_RET_UNTRACKED;
}

// What workspaces did to resident memory (version 10), over every workspace: their arenas served
// blocks the allocator never held, and resident memory fell across ndmem's malloc_trim while they
// learned (interpose/ws/trim.c measures each trim). Said as the shim's summary says it, on the same
// threshold: `held` when the fall across one trim reached ND_RETAIN_MIN_BYTES, freed memory the
// allocator held at once. The falls' sum is only shown: a range given back, reused and freed again
// is in every trim that gives it back. Where workspaces served the job and resident memory did not
// grow, that is the retention verdict: prevented by workspaces. Growth the analysis above found
// in the memory they did not serve keeps its verdict; the two are said together then.
static void ws_effect(report_t *r) {
  const nd_trace_t *t = r->t;
  nd_ws_effect_t *e = &r->ws_effect;
  memset(e, 0, sizeof *e);
  if (t->hdr.version < 10) return;
  e->known = true;
  for (size_t i = 0; i < t->nws; i++) {
    const nd_rec_workspace_t *w = &t->ws[i];
    e->hits = nd_rep_sat_add(e->hits, w->hits);
    e->hit_bytes = nd_rep_sat_add(e->hit_bytes, w->hit_bytes);
    e->arena_bytes = nd_rep_sat_add(e->arena_bytes, w->arena_bytes);
    e->trims = nd_rep_sat_add(e->trims, w->learn_trims);
    e->trim_bytes = nd_rep_sat_add(e->trim_bytes, w->learn_trim_bytes);
    if (w->learn_trim_max_bytes > e->trim_max) e->trim_max = w->learn_trim_max_bytes;
  }
  e->served = e->hits != 0;
  e->held = e->trim_max >= ND_RETAIN_MIN_BYTES;
  if (e->served && e->held && r->retention.cls == ND_RET_NONE) r->retention.cls = ND_RET_PREVENTED;
}

static int by_spill(const void *a, const void *b, void *ctx) {
  const nd_trace_t *t = ctx;
  const nd_rec_device_spill_t *x = &t->spills[*(const uint32_t *)a].rec,
                              *y = &t->spills[*(const uint32_t *)b].rec;
  if (x->alloc_bytes != y->alloc_bytes) return x->alloc_bytes < y->alloc_bytes ? 1 : -1;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

int nd_rep_analyse(report_t *r) {
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
    if (nd_rep_site_live(s)) {
      r->live[r->nlive++] = (uint32_t)i;
      r->live_bytes += nd_rep_site_live(s);
      if (s->flags & ND_SITE_SAMPLED) r->live_est = true;
    }
  }
  if (!r->o->brief) {
    qsort_r(r->by_peak, t->nsites, sizeof *r->by_peak, by_peak, (void *)t);
    qsort_r(r->by_total, t->nsites, sizeof *r->by_total, by_total, (void *)t);
    if (analyse_py_lines(r)) return -1;
  }
  qsort_r(r->live, r->nlive, sizeof *r->live, by_live, (void *)t);
  for (size_t i = 0; i < t->nleaks; i++) {
    r->leaks[i] = (uint32_t)i;
    r->leak_bytes += leak_bytes(&t->leaks[i]);
    r->leak_blocks += leak_blocks(&t->leaks[i]);
    if (t->leaks[i].sampled_blocks) r->leak_est = true;
  }
  qsort_r(r->leaks, t->nleaks, sizeof *r->leaks, by_leak, (void *)t);
  if (nd_rep_leaks_known(t)) {
    if (nd_lifetimes(t, suppressed_by, r, &r->life)) return -1;
    // The blocks live at exit as the classes count them: estimates capped by the counters
    r->leak_bytes = r->leak_blocks = 0;
    for (size_t i = 0; i < r->life.n; i++) {
      const nd_life_t *e = &r->life.v[i];
      if (e->leak < 0) continue; // a teardown's floor: not live at exit
      r->leak_bytes = nd_rep_sat_add(r->leak_bytes, e->bytes);
      r->leak_blocks = nd_rep_sat_add(r->leak_blocks, e->blocks);
    }
  }
  retention(t, &r->retention);
  if (analyse_ws(r)) return -1;
  ws_effect(r);
  r->spill_order = malloc((t->nspills ? t->nspills : 1) * sizeof *r->spill_order);
  if (!r->spill_order) return -1;
  for (size_t i = 0; i < t->nspills; i++) r->spill_order[i] = (uint32_t)i;
  qsort_r(r->spill_order, t->nspills, sizeof *r->spill_order, by_spill, (void *)t);
  return 0;
}

// ---------------------------------------------------------------- stable stack identity

// FNV-1a 64 over what a frame is, never its address: a trace's stack ids and its modules' load
// addresses change from run to run (ASLR), the symbolized frames do not. Every field ends in a
// byte no string holds (0) so that ("ab", "c") and ("a", "bc") differ.
#define FNV_OFF 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * FNV_PRIME;
  return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) {
  if (s) h = fnv_bytes(h, s, strlen(s) + 1);
  else h = fnv_bytes(h, "\1", 2); // NULL: unknown, unlike ""
  return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i)); // little-endian everywhere
  return fnv_bytes(h, b, sizeof b);
}

// A native position: its function, then file:line when known, else the module offset.
static uint64_t key_loc(uint64_t h, const nd_loc_t *l, uint64_t offset) {
  h = fnv_str(h, l->function);
  if (l->file) return fnv_u64(fnv_str(fnv_bytes(h, "L", 1), l->file), (uint64_t)l->line);
  return fnv_u64(fnv_bytes(h, "O", 1), offset);
}

int nd_rep_stack_key(report_t *r, uint32_t stack, uint64_t *key) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  uint64_t h = FNV_OFF;
  for (size_t i = 0; i < s->depth; i++) {
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    if (f->python) { // qualname, file (as a path, normalised), line
      char file[4096];
      h = fnv_str(fnv_bytes(h, "P", 1), f->at.function);
      h = fnv_str(h, f->at.file ? nd_sym_path_norm(file, sizeof file, f->at.file) : NULL);
      h = fnv_u64(h, (uint64_t)f->at.line);
    } else if (!f->module) { // outside every module: only the address is known (not stable)
      h = fnv_u64(fnv_bytes(h, "A", 1), f->ip);
    } else {
      h = fnv_str(fnv_bytes(h, "N", 1), nd_rep_base_name(f->module));
      h = key_loc(h, &f->at, f->offset);
      for (size_t k = 0; k < f->ninlined; k++) h = key_loc(h, &f->inlined_into[k], f->offset);
    }
  }
  *key = fnv_u64(h, s->depth);
  return 0;
}

// Entries of a list shown: --top (0: all, as --frames 0 is every frame), 5 with --brief.
size_t nd_rep_list_len(const report_t *r, size_t n) {
  size_t top = r->o->brief ? 5 : r->o->top;
  return top && top < n ? top : n;
}

// Escape records seen, kept or not.
uint64_t nd_rep_esc_records(const nd_trace_t *t) {
  return nd_rep_sat_add(t->nescapes, t->escapes_dropped);
}

// ---------------------------------------------------------------- Python: shared by text and JSON

const char *const nd_rep_py_states[ND_PY_LAYOUT_DIFFERS + 1] = {"none", "on", "unsupported", "off",
                                                                 "free-threaded", "layout-differs"};

// PY_VERSION_HEX: major, minor, micro, then the release level (0xA alpha, 0xB beta, 0xC release
// candidate, 0xF final) and serial in the low byte.
void nd_rep_format_pyversion(char *out, size_t n, uint32_t hex) {
  if (!hex) {
    snprintf(out, n, "?");
    return;
  }
  unsigned level = hex >> 4 & 0xf, serial = hex & 0xf;
  const char *tag = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : NULL;
  int k = snprintf(out, n, "%u.%u.%u", hex >> 24, hex >> 16 & 0xff, hex >> 8 & 0xff);
  if (tag && k >= 0 && (size_t)k < n) snprintf(out + k, n - (size_t)k, "%s%u", tag, serial);
}

// ---------------------------------------------------------------- limits: shared by text and JSON

// Any record of limits: the LIMITS record is written with the totals, so a trace cut short may
// hold breaches and snapshots without one.
bool nd_rep_has_limits(const nd_trace_t *t) {
  return t->have_limits || t->nbreaches || t->breaches_dropped || t->snap_records;
}

const char *nd_rep_breach_fn(const nd_rec_breach_t *b) {
  return b->limit == ND_LIMIT_DEVICE ? nd_rep_cuda_fn_names[b->fn] : nd_rep_fn_names[b->fn];
}

// A device whose limit is `bytes`, or -1.
static int device_limited_at(const nd_trace_t *t, uint64_t bytes) {
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++)
    if ((t->have_device >> d & 1) && t->devices[d].limit_bytes == bytes) return d;
  return -1;
}

bool nd_rep_has_devices(const nd_trace_t *t) { return t->have_device || t->have_cuda; }

const char *const nd_rep_dws_modes[5] = {ND_DWS_MODE_NAMES};
const char *const nd_rep_dws_syncs[2] = {"free", "ordered"};
const char *const nd_rep_dws_streams[3] = {"one stream", "several streams", "non-blocking streams"};

// PyTorch's CUDA library among the modules: the job used PyTorch on a GPU.
static bool torch_cuda_loaded(const nd_trace_t *t) {
  for (size_t i = 0; i < t->nmods; i++)
    if (t->mods[i].path && strstr(t->mods[i].path, "libtorch_cuda")) return true;
  return false;
}

int nd_rep_torch(const nd_trace_t *t) {
  if (!t->have_cuda || t->hdr.version < 11) return ND_REP_TORCH_NONE;
  uint64_t c = t->cuda.torch_conf;
  if (c & ND_TORCH_CONF_ASYNC) return ND_REP_TORCH_ASYNC;
  return (c & ND_TORCH_CONF_SET) || torch_cuda_loaded(t) ? ND_REP_TORCH_NATIVE : ND_REP_TORCH_NONE;
}

const char *nd_rep_torch_text(const nd_trace_t *t) {
  uint64_t c = t->have_cuda ? t->cuda.torch_conf : 0;
  switch (nd_rep_torch(t)) {
  case ND_REP_TORCH_ASYNC:
    return c & ND_TORCH_CONF_BY_NDMEM
               ? "PyTorch: backend:cudaMallocAsync (set by ndmem run --torch-tensors): device "
                 "sites are its tensors by Python line"
               : "PyTorch: backend:cudaMallocAsync (PYTORCH_CUDA_ALLOC_CONF): device sites are "
                 "its tensors by Python line";
  case ND_REP_TORCH_NATIVE:
    return c & ND_TORCH_CONF_EXPANDABLE
               ? "PyTorch: its caching allocator, expandable segments: device sites are its "
                 "segments, not tensors (ndmem run --torch-tensors shows tensors)"
               : "PyTorch: its caching allocator: device sites are its segments, not tensors "
                 "(ndmem run --torch-tensors shows tensors)";
  default: return NULL;
  }
}

bool nd_rep_device_limited(const nd_trace_t *t) {
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++)
    if ((t->have_device >> d & 1) && (t->devices[d].limit_bytes || t->devices[d].breaches)) return true;
  return false;
}

// Whether what was live at the end is a leak: the program ended on its own (exit, a return from
// main, _exit). A fatal signal or NDMEM_ON_LIMIT=abort ends it before it could free anything.
bool nd_rep_leaks_known(const nd_trace_t *t) {
  return t->ended &&
         !(t->have_exit && (t->exit.how == ND_EXIT_SIGNAL || t->exit.how == ND_EXIT_LIMIT_ABORT));
}

bool nd_rep_aborted(const nd_trace_t *t) {
  return t->have_limits && (t->limits.flags & ND_LIMITS_ABORTED);
}

// Percentages of memory ("75%") are of RAM or of the cgroup's limit, whichever is smaller.
bool nd_rep_pct_of_cgroup(const nd_rec_limits_t *l) {
  return l->cgroup_bytes && (!l->ram_bytes || l->cgroup_bytes < l->ram_bytes);
}

// The limit a breach snapshot was taken for, by its threshold; -1 when it cannot be told.
int nd_rep_snap_limit(const nd_trace_t *t, const nd_rec_snapshot_t *s) {
  const nd_rec_limits_t *l = &t->limits;
  if (s->reason != ND_SNAP_BREACH || !s->threshold) return -1;
  bool b = t->have_limits && s->threshold == l->max_bytes;
  bool p = t->have_limits && s->threshold == l->max_physical_bytes;
  bool d = device_limited_at(t, s->threshold) >= 0;
  if (b + p + d != 1) return -1;
  return b ? ND_LIMIT_BYTES : p ? ND_LIMIT_PHYSICAL : ND_LIMIT_DEVICE;
}

uint64_t nd_rep_since_start(const nd_trace_t *t, uint64_t ns) {
  return ns > t->hdr.start_mono_ns ? ns - t->hdr.start_mono_ns : 0;
}

// The live bytes of a snapshot's kept sites; *est: some are estimates.
uint64_t nd_rep_snap_live(const nd_snapshot_t *s, bool *est) {
  uint64_t sum = 0;
  *est = false;
  for (size_t i = 0; i < s->nsites; i++) {
    sum = nd_rep_sat_add(sum, s->sites[i].rec.live_bytes);
    if (s->sites[i].rec.flags & ND_SITE_SAMPLED) *est = true;
  }
  return sum;
}

// CUPTI's records against the hooks': cuMemAlloc/cuMemAllocPitch against CUPTI's device memory
// outside pools (with cuMemCreate's physical allocations too, where CUPTI's records include
// them: whether they do is the driver's choice), stream-ordered allocations against pool-served
// ones.
static bool same_class(const nd_rec_dev_class_t *a, const nd_rec_dev_class_t *b) {
  return a->allocs == b->allocs && a->alloc_bytes == b->alloc_bytes && a->frees == b->frees &&
         a->free_bytes == b->free_bytes;
}

bool nd_rep_cupti_differs(const nd_rec_device_t *d, char *why, size_t n) {
  if (!(d->flags & ND_DEV_CUPTI)) return false;
  const nd_rec_dev_class_t *h = &d->cls[ND_DEV_PLAIN], *a = &d->cls[ND_DEV_ASYNC];
  const nd_rec_dev_class_t *v = &d->cls[ND_DEV_VMM];
  const nd_rec_dev_class_t *c = &d->cupti, *p = &d->cupti_pool;
  nd_rec_dev_class_t hv = {h->allocs + v->allocs, h->frees + v->frees,
                           h->alloc_bytes + v->alloc_bytes, h->free_bytes + v->free_bytes};
  if (!same_class(h, c) && !same_class(&hv, c)) {
    snprintf(why, n,
             "device memory: hooks %llu allocations of %llu B, %llu frees of %llu B; CUPTI %llu of "
             "%llu B, %llu of %llu B",
             (unsigned long long)h->allocs, (unsigned long long)h->alloc_bytes,
             (unsigned long long)h->frees, (unsigned long long)h->free_bytes,
             (unsigned long long)c->allocs, (unsigned long long)c->alloc_bytes,
             (unsigned long long)c->frees, (unsigned long long)c->free_bytes);
    return true;
  }
  if (a->allocs != p->allocs || a->alloc_bytes != p->alloc_bytes) {
    snprintf(why, n,
             "stream-ordered: hooks %llu allocations of %llu B; CUPTI %llu of %llu B",
             (unsigned long long)a->allocs, (unsigned long long)a->alloc_bytes,
             (unsigned long long)p->allocs, (unsigned long long)p->alloc_bytes);
    return true;
  }
  return false;
}
