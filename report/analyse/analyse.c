// SPDX-License-Identifier: MIT
// analyse.c: the analysis of a read trace before any rendering (nd_rep_analyse, analyse.h): the
// site, leak and workspace orderings, the escapes grouped by (workspace, stack), the suppression
// rule a leak's stack matches (suppressed_by), the sites by Python line, and what resident memory
// did beside tracked memory (retention) and what workspaces did to it (ws_effect).
#include "analyse/analyse.h"
#include "analyse/frames.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- analysis

static uint64_t round_count(double x) {
  if (!(x > 0)) return 0;
  if (x >= 18446744073709549568.0) return UINT64_MAX;
  return (uint64_t)(x + 0.5);
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
  // A mapping's untouched pages never existed: by touched bytes (version 18; the peak before).
  int c = cmp_u64_desc(nd_rep_site_peak_touched(&t->sites[i]), nd_rep_site_peak_touched(&t->sites[j]));
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

// ---------------------------------------------------------------- Python lines

// A site under one Python line: grouped by `code`:`line`, the program's innermost Python frame
// (`program`) or the innermost one where that is a library's; `other`:`other_line` the frame that
// names the site beside it (the library frame below the program's line, the program's line above
// the library's; NULL: none), which tells whether a line's sites all went one way.
typedef struct py_site {
  uint32_t site;
  uint32_t line, other_line;
  const nd_pycode_t *code, *other;
  bool program;
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

static bool py_same_other(const py_site_t *x, const py_site_t *y) {
  if (!x->other || !y->other) return !x->other && !y->other;
  return !py_key_cmp(x->other, x->other_line, y->other, y->other_line);
}

static int by_py_key(const void *a, const void *b) {
  const py_site_t *x = a, *y = b;
  if (x->program != y->program) return x->program ? -1 : 1;
  int k = py_key_cmp(x->code, x->line, y->code, y->line);
  return k ? k : (x->site > y->site) - (x->site < y->site);
}

// The program's lines first (a script's own line before autograd's backward), each group by
// bytes allocated.
static int by_py_bytes(const void *a, const void *b) {
  const py_line_t *x = a, *y = b;
  if (x->program != y->program) return x->program ? -1 : 1;
  int c = cmp_u64_desc(x->alloc_bytes, y->alloc_bytes);
  return c ? c : py_key_cmp(x->code, x->line, y->code, y->line);
}

// The sites grouped by Python line, by bytes allocated: by the program's innermost Python frame
// (what a line of the program cost, the libraries it called included), then by the innermost
// Python frame where that is a library's (the library code that allocated). A site with both
// counts in both groups. 0, or -1 (memory).
static int analyse_py_lines(report_t *r) {
  const nd_trace_t *t = r->t;
  if (!t->py_stacks) return 0;
  py_site_t *v = malloc((t->nsites ? t->nsites : 1) * 2 * sizeof *v);
  if (!v) return -1;
  size_t n = 0;
  for (size_t i = 0; i < t->nsites; i++) {
    const nd_stack_t *s = &t->stacks[t->sites[i].stack];
    long k = nd_rep_py_innermost(t, s);
    if (k < 0) continue;
    const uint64_t *ips = nd_stack_frames(t, s);
    const nd_pycode_t *c = nd_trace_pycode(t, ips[k]); // the reader made sure there is one
    if (!c) continue;
    py_site_t in = {(uint32_t)i, nd_pyframe_line(ips[k]), 0, c, NULL, false}, own = in;
    own.code = NULL;
    for (size_t j = (size_t)k; j < s->depth && !own.code; j++) { // place.h's rule
      const nd_pycode_t *d = nd_trace_is_pyframe(t, ips[j]) ? nd_trace_pycode(t, ips[j]) : NULL;
      if (d && !nd_rep_py_library(d->filename)) own.code = d, own.line = nd_pyframe_line(ips[j]);
    }
    if (own.code) {
      own.program = true;
      if (own.code != c || own.line != in.line) { // the library frame it went through
        own.other = c, own.other_line = in.line;
        in.other = own.code, in.other_line = own.line;
      }
      v[n++] = own;
    }
    if (nd_rep_py_library(c->filename)) v[n++] = in;
  }
  qsort(v, n, sizeof *v, by_py_key);
  r->py_lines = calloc(n ? n : 1, sizeof *r->py_lines);
  if (!r->py_lines) {
    free(v);
    return -1;
  }
  for (size_t i = 0, end; i < n; i = end) { // one line: v[i .. end)
    for (end = i + 1; end < n && v[end].program == v[i].program &&
                      !py_key_cmp(v[i].code, v[i].line, v[end].code, v[end].line);)
      end++;
    py_line_t *l = &r->py_lines[r->npy_lines++];
    l->code = v[i].code;
    l->line = v[i].line;
    l->program = v[i].program;
    r->npy_program += l->program;
    const py_site_t *top = &v[i];
    for (size_t j = i; j < end; j++) {
      const nd_rec_site_t *x = &t->sites[v[j].site].rec;
      if (x->alloc_bytes > t->sites[top->site].rec.alloc_bytes) top = &v[j];
      l->allocs = nd_rep_sat_add(l->allocs, x->allocs);
      l->alloc_bytes = nd_rep_sat_add(l->alloc_bytes, x->alloc_bytes);
      l->live_bytes = nd_rep_sat_add(l->live_bytes, nd_rep_site_live(x));
      l->sites++;
      l->est |= (x->flags & ND_SITE_SAMPLED) != 0;
    }
    l->top_site = top->site;
    for (size_t j = i; j < end && !l->others_differ; j++)
      l->others_differ = !py_same_other(&v[j], top);
  }
  free(v);
  qsort(r->py_lines, r->npy_lines, sizeof *r->py_lines, by_py_bytes);
  return 0;
}

size_t nd_rep_py_lines_shown(const report_t *r, size_t *program) {
  *program = nd_rep_list_len(r, r->npy_program);
  return *program + nd_rep_list_len(r, r->npy_lines - r->npy_program);
}

// ---------------------------------------------------------------- allocator retention

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
// The workspace saving (docs/resident-memory.md): how far workspaces kept the resident peak down,
// estimated from what was measured with them on. At the end of each cycle they learned, the
// cycle's blocks had come from the heap and been freed: what the allocator then held freed below
// its top (held_learning) is what it keeps from cycle to cycle without workspaces. Since arenas
// serve, the readings at flushes say what it still holds surely resident (held_serving). Without
// workspaces every resident point since they serve would stand held_learning - held_serving
// higher (the arenas take the place of the blocks that were live, not of the freed ones); the
// points before are the heap's alone and stand as measured. So the saving is
//   max(learning_peak, serving_peak + held_learning - held_serving) - max(learning_peak, serving_peak)
// and none when held_learning is not above held_serving, the allocator was not read since they
// serve, or no trim was measured just before an arena was first used: only that trim makes the
// readings since true of the freed memory (an earlier learning trim's bound on the pages given back
// outlives the later cycles that touch them again: t_ws_saving with that trim skipped read 7 MiB
// held since they serve, and workspaces had kept nothing off the peak). Not counted: fragmentation
// that would grow after the learning without workspaces.
static void ws_saving(const nd_trace_t *t, nd_ws_effect_t *e) {
  if (!t->has.ws_held || !e->served || !t->ws_served_ns) return;
  for (size_t i = 0; i < t->nws; i++) {
    const nd_rec_workspace_t *w = &t->ws[i];
    e->held_reads = nd_rep_sat_add(e->held_reads, w->learn_held_reads);
    e->plan_trims = nd_rep_sat_add(e->plan_trims, w->plan_trims);
    if (w->learn_held_max_bytes > e->held_learning) e->held_learning = w->learn_held_max_bytes;
  }
  if (!e->held_reads) return;
  e->saving_known = true;
  for (size_t i = 0; i < t->npoints; i++) {
    const nd_point_t *q = &t->series[i];
    bool serving = q->mono_ns >= t->ws_served_ns;
    if (q->resident >= 0 && (uint64_t)q->resident > (serving ? e->serving_peak : e->learning_peak))
      *(serving ? &e->serving_peak : &e->learning_peak) = (uint64_t)q->resident;
    if (q->alloc_free < 0 || q->alloc_ns < t->ws_served_ns) continue; // read before they served
    e->serving_read = true;
    int64_t held = q->alloc_free - q->alloc_top;
    if (held > 0 && (uint64_t)held > e->held_serving) e->held_serving = (uint64_t)held;
  }
  if (!e->plan_trims || !e->serving_read || e->held_learning <= e->held_serving) return;
  uint64_t now = e->learning_peak > e->serving_peak ? e->learning_peak : e->serving_peak;
  uint64_t without = nd_rep_sat_add(e->serving_peak, e->held_learning - e->held_serving);
  e->saving = without > now ? without - now : 0;
}

static void ws_effect(report_t *r) {
  const nd_trace_t *t = r->t;
  nd_ws_effect_t *e = &r->ws_effect;
  memset(e, 0, sizeof *e);
  if (!t->has.ws_served) return;
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
  ws_saving(t, e);
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
