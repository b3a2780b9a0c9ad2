// SPDX-License-Identifier: MIT
// merge.c: `ndmemreport merge T1 T2 ...`, the traces of the processes of one job side by side: a
// table of the processes (labelled and ordered by the rank each trace's header holds, then by pid;
// a fork child of another merged trace's process is its worker), their peaks, and what was live at
// their end by the classes the single-trace report gives each (lifetime.c, through the same
// analysis), then the allocation sites aggregated across processes by (stable stack key, kind),
// the key JSON reports print as "stack_key" (nd_rep_stack_key: stack ids and addresses differ
// between processes), with per-process min / median / max and the processes far above the median
// named. A process's workers count in its column. The traces are read one at a time; only the
// aggregated sites stay in memory.
#include "cmd/merge.h"
#include "render/render.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MERGE_USAGE                                                                                \
  "usage: ndmemreport merge [--format text|json] [--job TRACE] [--top N] [--frames N] "          \
  "[--python-only] [--no-symbols] [--suppressions FILE]... [--no-builtin-suppressions] TRACE..."
#define OUTLIER_FLOOR (1ull << 20) // a process above 2x the median is named only from 1 MiB

static uint64_t hash_key(uint64_t key, uint16_t kind) {
  uint64_t h = (key ^ kind) * 0x9e3779b97f4a7c15ull; // the key is a hash already: spread it
  return h ^ h >> 29;
}

// A stack's frames as merge prints them (text and JSON "frames"), innermost first, each named as
// the single report names it (nd_rep_frame_text) with a native frame's module and file by their
// base names (paths differ between hosts) and its module before a function whose file is known
// ("libc.so.6!__libc_start_main (libc-start.c:360)"), a Python frame's after "py ". Each name
// after its kind byte ('P', 'N') and NUL-terminated (a name may hold any other byte), into `b`.
// Into `py` its Python line: the innermost Python frame, and where that is library code (np.ones
// is Python too) the program's own line that called it, " <- " between, as the shim's live lines
// name a site. False when out of memory.
static bool frame_names(const nd_trace_t *t, nd_sym_t *sym, const nd_stack_t *s, sbuf_t *b,
                        sbuf_t *py, bool *own) {
  const uint64_t *ips = nd_stack_frames(t, s);
  bool first = true, more = false; // the innermost Python frame to come; its caller sought
  sb_put(b, "", 0);
  for (uint32_t i = 0; i < s->depth; i++) {
    const nd_frame_t *f = nd_sym_frame(sym, ips[i]);
    if (!f) return false;
    sb_put(b, f->python ? "P" : "N", 1);
    nd_rep_frame_text(b, f, ND_NAME_BASE | ND_NAME_MODULE | ND_NAME_PY);
    sb_put(b, "", 1); // the name's end
    if (!f->python) continue;
    bool lib = nd_rep_py_library(f->at.file ? f->at.file : "?");
    if (first) *own = !lib;
    if (first || (more && !lib)) {
      if (!first) sb_put(py, " <- ", 4);
      nd_rep_frame_text(py, f, 0);
      more = first && lib;
      first = false;
    }
  }
  return !b->oom && !py->oom;
}

// The frame after `k` in a site's frames.
static const char *next_frame(const char *k) { return k + strlen(k) + 1; }

// The site's Python line (frame_names), or NULL.
static const char *py_line(const msite_t *s) { return s->python; }

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
msite_t *nd_merge_site_of(merge_t *m, uint64_t key, uint16_t kind, const nd_trace_t *t,
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
  sbuf_t b = {0}, py = {0};
  bool own = false;
  if (!frame_names(t, sym, st, &b, &py, &own)) {
    free(b.p), free(py.p);
    return NULL;
  }
  msite_t *s = &m->sites[m->nsites];
  *s = (msite_t){.id = m->nsites, .own = own, .key = key, .kind = kind, .frames = b.p, .nframes = st->depth, .python = py.p,
                 .val = calloc(4 * m->nprocs, sizeof *s->val)};
  if (!s->val) {
    free(b.p), free(py.p);
    return NULL;
  }
  s->leak = s->val + m->nprocs, s->startup = s->val + 2 * m->nprocs;
  s->cache = s->val + 3 * m->nprocs;
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
  else if (nd_rep_exec_end(t)) snprintf(out, n, "exec");
  else {
    int r = nd_trace_running(t, path);
    snprintf(out, n, "%s", r == ND_RUN_YES ? "running" : r == ND_RUN_NO ? "killed" : "no end");
  }
}

// Reads trace `i` and folds it into `m`: its row, its classes (the single-trace report's own
// analysis, nd_rep_analyse, with the same suppressions) and its sites. 0, or 2 after an error
// reported.
static int fold_trace(merge_t *m, size_t i, nd_supp_t *supp, FILE *err) {
  mproc_t *p = &m->procs[i];
  nd_trace_t *t = malloc(sizeof *t);
  if (!t) goto oom_early;
  if (nd_rep_read_trace(t, p->path, err, ND_PROGRESS_MIN)) {
    nd_trace_free(t);
    free(t);
    return 2;
  }
  snprintf(p->host, sizeof p->host, "%s", t->host);
  snprintf(p->exe, sizeof p->exe, "%s", t->exe);
  if (t->have_rss)
    p->peak_rss = t->rss.maxrss_bytes > t->rss.hwm_bytes ? t->rss.maxrss_bytes : t->rss.hwm_bytes;
  p->hdr = t->hdr;
  uint64_t last = t->ended ? t->end.mono_ns : t->last_ns;
  p->duration_ns = nd_rep_since_start(t, last);
  describe_end(t, p->path, p->ended, sizeof p->ended);
  if (t->have_counters)
    for (int k = 0; k < ND_TRACE_KINDS; k++) {
      const nd_rec_kind_totals_t *kt = &t->counters.kind[k];
      p->peak[k] = kt->peak_bytes > 0 ? (uint64_t)kt->peak_bytes : 0;
      p->live_end += kt->live_bytes > 0 ? (uint64_t)kt->live_bytes : 0;
    }
  p->leaks_known = nd_rep_leaks_known(t);
  nd_sym_t *sym = nd_sym_new(t, m->o.symbols);
  if (!sym) goto oom;
  report_t rep = {.t = t, .sym = sym, .o = &m->o, .supp = supp,
                  .running = t->ended ? ND_RUN_NO : ND_RUN_UNKNOWN};
  if (nd_rep_analyse(&rep)) {
    nd_rep_analysis_free(&rep);
    nd_sym_free(sym);
    goto oom;
  }
  for (int c = 0; p->leaks_known && c < ND_LIFE_CLASSES; c++) {
    p->life_bytes[c] = rep.life.bytes[c];
    p->life_blocks[c] = rep.life.blocks[c];
    p->life_stacks[c] = rep.life.entries[c];
    p->life_est[c] = rep.life.est[c];
    p->life_most[c] = rep.life.most_bytes[c];
  }
  // Each entry's bytes at its site: a leak, held since start-up or a bounded cache (reachable,
  // possibly lost, suppressed or inherited at fork: none; the parent's column has what a worker
  // inherited).
  if (m->job != NONE) { // the job view needs a process's few largest entries, not its sites
    int rc = nd_merge_job_fold(m, i, t, sym, &rep);
    nd_rep_analysis_free(&rep);
    nd_sym_free(sym);
    nd_trace_free(t);
    free(t);
    if (rc) goto oom_early;
    return 0;
  }
  for (size_t j = 0; p->leaks_known && j < rep.life.n; j++) {
    const nd_life_t *e = &rep.life.v[j];
    if (e->cls == ND_LIFE_SUPPRESSED || e->cls == ND_LIFE_INHERITED) continue;
    uint64_t key;
    msite_t *s = nd_rep_stack_key(&rep, e->stack, &key) ? NULL
                 : nd_merge_site_of(m, key, e->kind, t, sym, &t->stacks[e->stack]);
    if (!s) {
      nd_rep_analysis_free(&rep);
      nd_sym_free(sym);
      goto oom;
    }
    if (e->cls == ND_LIFE_STARTUP) s->startup[i] += e->bytes;
    else if (e->cls == ND_LIFE_CACHE) s->cache[i] += e->bytes;
    else if (nd_life_fails(e->cls, false)) s->leak[i] += e->bytes;
  }
  nd_rep_analysis_free(&rep);
  for (size_t j = 0; j < t->nsites; j++) {
    const nd_site_t *ts = &t->sites[j];
    uint64_t key;
    msite_t *s = nd_rep_stack_key(&rep, ts->stack, &key) ? NULL
                 : nd_merge_site_of(m, key, ts->rec.kind, t, sym, &t->stacks[ts->stack]);
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
  fprintf(err, "ndmemreport: %s: out of memory\n", p->path);
  return 2;
}

// ---------------------------------------------------------------- processes: workers and order

// The trace whose process a worker's is: on its host, the merged trace whose pid is its ppid and
// that started no later than it (a pid reused since started later); of several, the latest. A
// worker is a fork child (DataLoader's and multiprocessing's fork workers), or a program exec'd
// in a child that has its parent's rank (spawned workers inherit the environment; both may have
// none); an exec'd rank is no worker of the launcher that started it (a traced mpirun: no rank).
// NONE for any other process, or one whose parent is not among the traces.
static size_t parent_of(const merge_t *m, size_t i) {
  const mproc_t *c = &m->procs[i];
  size_t best = NONE;
  bool fork = c->hdr.origin == ND_ORIGIN_FORK;
  if ((!fork && c->hdr.origin != ND_ORIGIN_EXEC) || !c->hdr.ppid) return NONE;
  for (size_t j = 0; j < m->nprocs; j++) {
    const mproc_t *p = &m->procs[j];
    if (j == i || p->hdr.pid != c->hdr.ppid || strcmp(p->host, c->host) ||
        p->hdr.start_realtime_ns > c->hdr.start_realtime_ns ||
        (!fork && (p->hdr.rank != c->hdr.rank || p->hdr.rank_from != c->hdr.rank_from)))
      continue;
    if (best == NONE || p->hdr.start_realtime_ns > m->procs[best].hdr.start_realtime_ns) best = j;
  }
  return best;
}

// Columns in rank order (a rank's traces by pid), then the processes without a rank by pid (then
// host, then file, so that the order is total).
static int cmp_main(const void *a, const void *b, void *arg) {
  const merge_t *m = arg;
  const mproc_t *x = &m->procs[*(const size_t *)a], *y = &m->procs[*(const size_t *)b];
  bool rx = x->hdr.rank >= 0, ry = y->hdr.rank >= 0;
  if (rx != ry) return rx ? -1 : 1;
  if (rx && x->hdr.rank != y->hdr.rank) return x->hdr.rank < y->hdr.rank ? -1 : 1;
  if (x->hdr.pid != y->hdr.pid) return x->hdr.pid < y->hdr.pid ? -1 : 1;
  int c = strcmp(x->host, y->host);
  return c ? c : strcmp(x->path, y->path);
}

// A column's workers by their start, then pid.
static int cmp_worker(const void *a, const void *b, void *arg) {
  const merge_t *m = arg;
  const mproc_t *x = &m->procs[*(const size_t *)a], *y = &m->procs[*(const size_t *)b];
  if (x->hdr.start_realtime_ns != y->hdr.start_realtime_ns)
    return x->hdr.start_realtime_ns < y->hdr.start_realtime_ns ? -1 : 1;
  if (x->hdr.pid != y->hdr.pid) return x->hdr.pid < y->hdr.pid ? -1 : 1;
  return strcmp(x->path, y->path);
}

// Workers, columns and the display order. 0, or -1 out of memory.
static int arrange(merge_t *m) {
  size_t n = m->nprocs, *mains = malloc(n * sizeof *mains), *work = malloc(n * sizeof *work);
  m->order = malloc(n * sizeof *m->order);
  m->cols = calloc(n, sizeof *m->cols);
  if (!mains || !work || !m->order || !m->cols) {
    free(mains), free(work);
    return -1;
  }
  for (size_t i = 0; i < n; i++) m->procs[i].parent = parent_of(m, i);
  size_t nmain = 0;
  for (size_t i = 0; i < n; i++) {
    // A worker's worker belongs to the same column: follow parents to the first process that is
    // none's worker (at most n steps: start times only go back, so there is no cycle but among
    // equal ones, which the bound stops).
    size_t root = i;
    for (size_t k = 0; k < n && m->procs[root].parent != NONE; k++) root = m->procs[root].parent;
    if (m->procs[root].parent != NONE) m->procs[i].parent = NONE, root = i; // a cycle: none
    work[i] = root; // its column's process, until the columns are numbered
    if (root == i) mains[nmain++] = i;
  }
  for (size_t i = 0; i < n; i++) { // ranks that are none of the job's (NOT_RANK_*)
    mproc_t *p = &m->procs[i];
    if (p->hdr.rank < 0) continue;
    if (p->parent == NONE && p->hdr.origin == ND_ORIGIN_FORK) p->not_rank = NOT_RANK_ORPHAN;
    for (size_t j = 0; j < n && !p->not_rank; j++) {
      const mproc_t *c = &m->procs[j];
      if (j != i && c->hdr.origin == ND_ORIGIN_EXEC && c->hdr.ppid == p->hdr.pid &&
          !strcmp(c->host, p->host) && c->hdr.rank >= 0 && c->hdr.rank_from != p->hdr.rank_from)
        p->not_rank = NOT_RANK_LAUNCHER;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (m->procs[i].not_rank) m->procs[i].hdr.rank = -1;
  qsort_r(mains, nmain, sizeof *mains, cmp_main, m);
  for (size_t c = 0; c < nmain; c++) m->procs[mains[c]].col = c;
  for (size_t i = 0; i < n; i++) m->procs[i].col = m->procs[work[i]].col;
  size_t at = 0;
  for (size_t c = 0; c < nmain; c++) {
    const mproc_t *p = &m->procs[mains[c]];
    m->cols[c].main = mains[c];
    char *label = m->cols[c].label;
    const mproc_t *jp = m->job != NONE ? &m->procs[m->job] : NULL;
    if (p->hdr.rank >= 0) snprintf(label, sizeof m->cols[c].label, "rank %d", p->hdr.rank);
    else if (jp && p == jp) snprintf(label, sizeof m->cols[c].label, "main");
    else if (jp && p->hdr.pid == jp->hdr.pid && !strcmp(p->host, jp->host) &&
             p->hdr.start_realtime_ns <= jp->hdr.start_realtime_ns)
      snprintf(label, sizeof m->cols[c].label, "main before exec"); // an earlier image of its pid
    else snprintf(label, sizeof m->cols[c].label, "pid %llu", (unsigned long long)p->hdr.pid);
    size_t nw = 0;
    for (size_t i = 0; i < n; i++)
      if (i != mains[c] && m->procs[i].col == c) work[nw++] = i;
    qsort_r(work, nw, sizeof *work, cmp_worker, m);
    m->order[at++] = mains[c];
    for (size_t w = 0; w < nw; w++) {
      m->procs[work[w]].worker = (unsigned)w + 1;
      m->order[at++] = work[w];
    }
  }
  m->ncols = nmain;
  free(mains);
  free(work);
  return 0;
}

// A process's label: its column's, and "worker N" for a worker.
void nd_merge_label(const merge_t *m, const mproc_t *p, char *out, size_t n) {
  if (p->worker && !strcmp(m->cols[p->col].label, "main")) snprintf(out, n, "worker %u", p->worker);
  else if (p->worker) snprintf(out, n, "%s worker %u", m->cols[p->col].label, p->worker);
  else snprintf(out, n, "%s", m->cols[p->col].label);
}

// ---------------------------------------------------------------- sites

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

// Each column's value (its process's and its workers' summed), then totals and order statistics
// over the columns, a column without the site counting 0.
static int finish_sites(merge_t *m) {
  size_t nc = m->ncols;
  uint64_t *v = malloc(nc * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < m->nsites; i++) {
    msite_t *s = &m->sites[i];
    if (!(s->col = calloc(4 * nc, sizeof *s->col))) {
      free(v);
      return -1;
    }
    s->col_leak = s->col + nc, s->col_startup = s->col + 2 * nc, s->col_cache = s->col + 3 * nc;
    for (size_t p = 0; p < m->nprocs; p++) {
      s->col[m->procs[p].col] += s->val[p];
      s->col_leak[m->procs[p].col] += s->leak[p];
      s->col_startup[m->procs[p].col] += s->startup[p];
      s->col_cache[m->procs[p].col] += s->cache[p];
    }
    memcpy(v, s->col, nc * sizeof *v);
    qsort(v, nc, sizeof *v, cmp_u64);
    s->total = 0, s->in = 0;
    for (size_t c = 0; c < nc; c++) s->total += v[c], s->in += v[c] > 0;
    s->procs_in = s->procs_leak = s->procs_startup = s->procs_cache = 0;
    for (size_t p = 0; p < m->nprocs; p++) {
      s->procs_in += s->val[p] > 0;
      s->procs_leak += s->leak[p] > 0;
      s->procs_startup += s->startup[p] > 0;
      s->procs_cache += s->cache[p] > 0;
    }
    s->min = v[0], s->max = v[nc - 1];
    size_t h = nc / 2; // an even count: the mean of the middle two, rounded down
    s->median = nc % 2 ? v[h] : v[h - 1] / 2 + v[h] / 2 + (v[h - 1] % 2 + v[h] % 2) / 2;
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

// The highest device peak of a process.
static uint64_t dev_peak(const mproc_t *p) {
  uint64_t v = 0;
  for (int k = 4; k < ND_TRACE_KINDS; k++) v = p->peak[k] > v ? p->peak[k] : v;
  return v;
}

// The leaks of a process as `ndmemreport TRACE` counts them for --fail-on-leak (nd_life_fails):
// lost memory, growth (growing, released at teardown) and what was live at exit unscanned; never
// what was reachable, held since start-up, a bounded cache, suppressed or inherited.
uint64_t nd_merge_leak_bytes(const mproc_t *p) {
  uint64_t b = 0;
  for (int c = 0; c < ND_LIFE_CLASSES; c++)
    if (nd_life_fails(c, false)) b += p->life_bytes[c];
  return b;
}

// Whether a frame is shown: --python-only keeps the Python frames of a site that has one.
static bool shown(const merge_t *m, const msite_t *s, const char *k) {
  return !m->o.python_only || k[0] == 'P' || !py_line(s);
}

// ---------------------------------------------------------------- text

// A frame's name in at most FRAME_COLS columns: whole where it fits; else the start of its
// function, "..." and its location whole, where that leaves the function 20 columns
// ("at::detail::empty_generic(c10::Arr... (libtorch_cpu.so.1.13+0xd51887)"); else "..." and its
// last FRAME_COLS - 3 bytes (a long path's end names the file).
#define FRAME_COLS 68
void nd_merge_print_frame(FILE *o, const char *name) {
  size_t len = strlen(name);
  if (len <= FRAME_COLS) {
    nd_rep_print_text(o, name);
    return;
  }
  const char *at = strrchr(name, '(');
  size_t loc = at && at > name && at[-1] == ' ' ? len - (size_t)(at - name) + 1 : len;
  if (loc + 3 + 20 <= FRAME_COLS) {
    char head[FRAME_COLS + 1];
    size_t n = FRAME_COLS - loc - 3;
    memcpy(head, name, n);
    head[n] = 0;
    nd_rep_print_text(o, head);
    fputs("...", o);
    nd_rep_print_text(o, name + len - loc);
    return;
  }
  fputs("...", o);
  nd_rep_print_text(o, name + len - (FRAME_COLS - 3));
}

// A cell of bytes, "~" before an estimate (sampled blocks), as the single report marks them.
const char *nd_merge_cell(char *out, size_t n, uint64_t v, bool est) {
  char h[24];
  nd_rep_human(h, sizeof h, v);
  snprintf(out, n, "%s%s", est ? "~" : "", h);
  return out;
}

// The sum of classes `a` and `b` (b < 0: none) of a process: "~" where one is an estimate, "<="
// where every estimate among them is a bound the exact counters prove (*most: one was).
// The bytes of the classes in `mask` (bit c: class c), "<=" where all of them are bounds.
static const char *life_cell(char *out, size_t n, const mproc_t *p, unsigned mask, bool *most) {
  uint64_t v = 0;
  bool est = false, bound = true;
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    if (!(mask >> c & 1)) continue;
    v += p->life_bytes[c];
    if (!p->life_est[c]) continue;
    est = true;
    bound &= p->life_most[c];
  }
  if (!(est && bound)) return nd_merge_cell(out, n, v, est);
  char h[24];
  nd_rep_human(h, sizeof h, v);
  snprintf(out, n, "<=%s", h);
  *most = true;
  return out;
}

// The heading's counts and where the ranks came from.
static void text_heading(FILE *o, const merge_t *m) {
  size_t ranked = 0, workers = 0;
  bool from[ND_RANK_FROM_MAX + 1] = {0};
  for (size_t i = 0; i < m->nprocs; i++) {
    const mproc_t *p = &m->procs[i];
    if (p->worker) workers++;
    else if (p->hdr.rank >= 0) ranked++;
    if (!p->worker && p->hdr.rank >= 0) from[p->hdr.rank_from] = true;
  }
  fprintf(o, "== processes: %zu %s", m->nprocs, m->nprocs == 1 ? "trace" : "traces");
  const char *sep = " (";
  if (ranked) fprintf(o, "%s%zu with a rank", sep, ranked), sep = ", ";
  if (workers)
    fprintf(o, "%s%zu %s", sep, workers, workers == 1 ? "worker" : "workers"), sep = ", ";
  if (m->ncols > ranked) fprintf(o, "%s%zu without a rank", sep, m->ncols - ranked), sep = ", ";
  fputs(")\n", o);
  if (ranked) {
    fputs("   in rank order (each trace's rank from its ", o);
    bool any = false;
    for (unsigned f = 1; f <= ND_RANK_FROM_MAX; f++)
      if (from[f]) fprintf(o, "%s%s", any ? ", " : "", nd_rank_from_name(f)), any = true;
    fputs("), then by pid\n", o);
  } else {
    fputs("   by pid (no trace holds a rank)\n", o);
  }
  // Headers whose rank is none of the job's (NOT_RANK_*), said once each.
  for (size_t c = 0; c < m->ncols; c++) {
    const mproc_t *p = &m->procs[m->cols[c].main];
    if (p->not_rank == NOT_RANK_ORPHAN)
      fprintf(o, "   %s: a fork worker of pid %llu, whose trace is not given (not a rank)\n",
              m->cols[c].label, (unsigned long long)p->hdr.ppid);
    else if (p->not_rank == NOT_RANK_LAUNCHER)
      fprintf(o, "   %s: a launcher, its exec'd children's ranks read from another variable "
                 "(not a rank)\n", m->cols[c].label);
  }
  // Ranks in more than one trace (columns with a rank are in rank order: such ones are adjacent),
  // and the ranks the job's world size says exist and no trace here has.
  for (size_t c = 1; c < m->ncols; c++) {
    int32_t r = m->procs[m->cols[c].main].hdr.rank;
    bool same = r >= 0 && m->procs[m->cols[c - 1].main].hdr.rank == r;
    bool said = same && c >= 2 && m->procs[m->cols[c - 2].main].hdr.rank == r;
    if (same && !said)
      fprintf(o, "   rank %d is in more than one trace (two runs of the job?)\n", r);
  }
  int32_t world = -1;
  for (size_t c = 0; c < m->ncols; c++) {
    const mproc_t *p = &m->procs[m->cols[c].main];
    if (p->hdr.rank < 0 || p->hdr.world_size <= 0) continue;
    if (world >= 0 && p->hdr.world_size != world) {
      fputs("   the traces disagree on the world size\n", o);
      return;
    }
    world = p->hdr.world_size;
  }
  size_t missing = 0, c = 0;
  for (int32_t r = 0; r < world && missing <= 8; r++) {
    while (c < m->ncols && m->procs[m->cols[c].main].hdr.rank >= 0 &&
           m->procs[m->cols[c].main].hdr.rank < r)
      c++; // the first column of rank r or above
    if (c < m->ncols && m->procs[m->cols[c].main].hdr.rank == r) continue;
    if (!missing++) fprintf(o, "   world size %d: no trace of rank %d", world, r);
    else if (missing <= 8) fprintf(o, ", %d", r);
  }
  if (missing > 8) fputs(", ...", o);
  if (missing) fputc('\n', o);
}

static void text_report(FILE *o, const merge_t *m) {
  char a[32], b[32], c[32], d[32], e[32], f[32], lab[80];
  bool most = false; // a cell says "<=
  text_heading(o, m);
  fputs("  process       trace                host:pid            ended         duration\n", o);
  for (size_t x = 0; x < m->nprocs; x++) {
    const mproc_t *p = &m->procs[m->order[x]];
    char hp[96], f[96]; // a control byte from a hostile trace becomes '?': the columns hold
    snprintf(hp, sizeof hp, "%s:%llu", p->host, (unsigned long long)p->hdr.pid);
    snprintf(f, sizeof f, "%s", nd_rep_base_name(p->path));
    nd_rep_no_controls(hp);
    nd_rep_no_controls(f);
    if (p->worker) snprintf(lab, sizeof lab, " worker %u", p->worker);
    else snprintf(lab, sizeof lab, "%s", m->cols[p->col].label);
    fprintf(o, "  %-12.12s  %-19.19s  %-18.18s  %-11.11s  %8.3f s\n", lab, f, hp, p->ended,
            (double)p->duration_ns / 1e9);
  }
  if (m->ncols < m->nprocs)
    fputs("  (worker N: a child of the process above it, forked (DataLoader's workers) or\n"
          "  exec'd with its rank; its sites count in that process's column below)\n", o);
  fputs("\n  process         peak heap    peak mmap  peak device     live end\n", o);
  for (size_t x = 0; x < m->nprocs; x++) {
    const mproc_t *p = &m->procs[m->order[x]];
    if (p->worker) snprintf(lab, sizeof lab, " worker %u", p->worker);
    else snprintf(lab, sizeof lab, "%s", m->cols[p->col].label);
    fprintf(o, "  %-12.12s  %11s  %11s  %11s  %11s\n", lab, nd_rep_human(a, sizeof a, p->peak[0]),
            nd_rep_human(b, sizeof b, p->peak[1]), nd_rep_human(c, sizeof c, dev_peak(p)),
            nd_rep_human(d, sizeof d, p->live_end));
  }
  fputs("  (peak device: the highest of the devices)\n", o);
  fputs("\n  live at the end, as ndmemreport TRACE classes it for each trace alone\n", o);
  fputs("  process             leaks         lost      growing         kept        cache\n", o);
  for (size_t x = 0; x < m->nprocs; x++) {
    const mproc_t *p = &m->procs[m->order[x]];
    if (p->worker) snprintf(lab, sizeof lab, " worker %u", p->worker);
    else snprintf(lab, sizeof lab, "%s", m->cols[p->col].label);
    if (!p->leaks_known) {
      fprintf(o, "  %-12.12s  %11s  %11s  %11s  %11s  %11s\n", lab, "-", "-", "-", "-", "-");
      continue;
    }
    unsigned leaks = 0;
    for (int k = 0; k < ND_LIFE_CLASSES; k++) leaks |= (unsigned)nd_life_fails(k, false) << k;
    fprintf(o, "  %-12.12s  %11s  %11s  %11s  %11s  %11s\n", lab,
            life_cell(a, sizeof a, p, leaks, &most),
            life_cell(b, sizeof b, p, 1u << ND_LIFE_LOST | 1u << ND_LIFE_INDIRECT, &most),
            life_cell(c, sizeof c, p, 1u << ND_LIFE_GROWING | 1u << ND_LIFE_TEARDOWN, &most),
            life_cell(e, sizeof e, p,
                      1u << ND_LIFE_REACHABLE | 1u << ND_LIFE_POSSIBLE | 1u << ND_LIFE_STARTUP,
                      &most),
            life_cell(f, sizeof f, p, 1u << ND_LIFE_CACHE, &most));
  }
  fputs("  (leaks: what --fail-on-leak fails on: definitely and indirectly lost (lost),\n"
        "  growing and released at teardown (growing), live at exit unscanned; kept: still\n"
        "  reachable, possibly lost, held since start-up; cache: a bounded cache; suppressed\n"
        "  and inherited at fork: in none; -: no normal exit)\n", o);
  if (most) // only where one was, so that other jobs' reports stay as they were
    fputs("  (<=: at most, sampled estimates lowered to what the exact counters show)\n", o);
  size_t n = m->o.top && m->o.top < m->nsites ? m->o.top : m->nsites;
  fprintf(o, "\n== sites by peak live bytes summed over processes (%zu of %zu)\n", n, m->nsites);
  if (m->ncols == m->nprocs)
    fputs("   outliers: processes above 2x the median and 1 MiB; a process without the\n"
          "   site: 0; a process's workers add to it\n", o);
  else // "in K of N processes" counts every trace; the statistics go by column
    fprintf(o, "   min, median, max and outliers over the %zu %s that %s no worker, each\n"
               "   with its workers' bytes added; outliers: above 2x the median and 1 MiB; a\n"
               "   process without the site: 0\n",
            m->ncols, m->ncols == 1 ? "process" : "processes", m->ncols == 1 ? "is" : "are");
  for (size_t i = 0; i < n; i++) {
    const msite_t *s = &m->sites[i];
    fprintf(o, "#%-3zu %-8s total %s in %zu of %zu %s\n", i + 1, nd_rep_kind_names[s->kind],
            nd_rep_human(a, sizeof a, s->total), s->procs_in, m->nprocs,
            m->nprocs == 1 ? "process" : "processes");
    fprintf(o, "      min %s, median %s, max %s\n", nd_rep_human(a, sizeof a, s->min),
            nd_rep_human(b, sizeof b, s->median), nd_rep_human(c, sizeof c, s->max));
    bool any = false;
    for (size_t col = 0; col < m->ncols; col++) {
      if (!is_outlier(s, s->col[col])) continue;
      fprintf(o, "%s %s %s", any ? "," : "      outliers:", m->cols[col].label,
              nd_rep_human(a, sizeof a, s->col[col]));
      any = true;
    }
    if (any) fputc('\n', o);
    // What of it was live at the end, by each process's own classes
    uint64_t leak = 0, startup = 0, cache = 0;
    for (size_t col = 0; col < m->ncols; col++) {
      leak += s->col_leak[col];
      startup += s->col_startup[col];
      cache += s->col_cache[col];
    }
    if (leak)
      fprintf(o, "      leaked %s at the end in %zu of %zu (lost, growing or live at exit)\n",
              nd_rep_human(a, sizeof a, leak), s->procs_leak, m->nprocs);
    if (startup)
      fprintf(o, "      held since start-up %s at the end in %zu of %zu, not a leak\n",
              nd_rep_human(a, sizeof a, startup), s->procs_startup, m->nprocs);
    if (cache)
      fprintf(o, "      held as a bounded cache %s at the end in %zu of %zu, not a leak\n",
              nd_rep_human(a, sizeof a, cache), s->procs_cache, m->nprocs);
    const char *py = py_line(s);
    if (py) { // the site's Python line, whatever --frames shows
      fputs("      python  ", o);
      nd_rep_print_text(o, py);
      fputc('\n', o);
    }
    size_t total = 0, show, k_shown = 0;
    const char *k = s->frames;
    for (uint32_t f = 0; f < s->nframes; f++, k = next_frame(k)) total += shown(m, s, k);
    show = m->o.frames && m->o.frames < total ? m->o.frames : total;
    k = s->frames;
    for (uint32_t f = 0; f < s->nframes && k_shown < show; f++, k = next_frame(k)) {
      if (!shown(m, s, k)) continue;
      fprintf(o, "      #%-2zu ", k_shown++);
      nd_merge_print_frame(o, k + 1);
      fputc('\n', o);
    }
    if (show < total) fprintf(o, "      (%zu more frames)\n", total - show);
    if (!total) fputs("      (no frames)\n", o);
  }
}

// ---------------------------------------------------------------- JSON

// A site's value in each column, ", " between them.
static void json_cols(FILE *o, const uint64_t *v, size_t n) {
  for (size_t c = 0; c < n; c++) fprintf(o, "%s%llu", c ? ", " : "", (unsigned long long)v[c]);
}

static void json_report(FILE *o, const merge_t *m) {
  char lab[80]; // a column's label (at most 24 bytes) and " worker N"
  fputs("{\"processes\": [", o);
  for (size_t x = 0; x < m->nprocs; x++) {
    const mproc_t *p = &m->procs[m->order[x]];
    nd_merge_label(m, p, lab, sizeof lab);
    fprintf(o, "%s\n  {\"label\": ", x ? "," : "");
    nd_rep_json_str(o, lab);
    fprintf(o, ", \"column\": %zu, \"worker_of\": ", p->col);
    if (p->parent != NONE) fprintf(o, "%llu", (unsigned long long)m->procs[p->parent].hdr.pid);
    else fputs("null", o);
    fputs(", \"trace\": ", o);
    nd_rep_json_str(o, p->path);
    fputs(", \"host\": ", o);
    nd_rep_json_str(o, p->host);
    fprintf(o, ", \"pid\": %llu", (unsigned long long)p->hdr.pid);
    nd_rep_json_job(o, &p->hdr);
    fprintf(o, ",\n   \"ended\": \"%s\", \"duration_ns\": %llu, \"peak_heap\": %llu, "
               "\"peak_mmap\": %llu, \"peak_device\": [",
            p->ended, (unsigned long long)p->duration_ns, (unsigned long long)p->peak[0],
            (unsigned long long)p->peak[1]);
    int last = 3;
    for (int k = 4; k < ND_TRACE_KINDS; k++) last = p->peak[k] ? k : last;
    for (int k = 4; k <= last; k++)
      fprintf(o, "%s%llu", k > 4 ? ", " : "", (unsigned long long)p->peak[k]);
    fprintf(o, "], \"live_at_end\": %llu, \"leaks\": ", (unsigned long long)p->live_end);
    if (!p->leaks_known) {
      fputs("null, \"lifetime\": null}", o);
      continue;
    }
    fprintf(o, "%llu, \"lifetime\": {", (unsigned long long)nd_merge_leak_bytes(p));
    nd_rep_json_classes(o, p->life_bytes, p->life_blocks, p->life_stacks, p->life_est, ", ");
    fputs("}}", o);
  }
  fputs("],\n \"ranks\": [", o);
  for (size_t c = 0; c < m->ncols; c++) {
    const mproc_t *p = &m->procs[m->cols[c].main];
    fprintf(o, "%s\n  {\"label\": ", c ? "," : "");
    nd_rep_json_str(o, m->cols[c].label);
    fputs(", \"rank\": ", o);
    if (p->hdr.rank >= 0) fprintf(o, "%d", p->hdr.rank);
    else fputs("null", o);
    fprintf(o, ", \"pid\": %llu, \"processes\": [", (unsigned long long)p->hdr.pid);
    bool any = false;
    for (size_t x = 0; x < m->nprocs; x++)
      if (m->procs[m->order[x]].col == c) fprintf(o, "%s%zu", any ? ", " : "", x), any = true;
    fputs("]}", o);
  }
  size_t n = m->o.top && m->o.top < m->nsites ? m->o.top : m->nsites;
  fprintf(o, "],\n \"outlier_floor\": %llu, \"sites_total\": %zu, \"sites\": [",
          (unsigned long long)OUTLIER_FLOOR, m->nsites);
  for (size_t i = 0; i < n; i++) {
    const msite_t *s = &m->sites[i];
    fprintf(o, "%s\n  {\"stack_key\": \"%016llx\", \"kind\": \"%s\", \"total\": %llu, "
               "\"ranks_with\": %zu, \"processes_with\": %zu, \"min\": %llu, "
               "\"median\": %llu, \"max\": %llu, \"allocs\": %llu, \"alloc_bytes\": %llu,\n   \"per_rank\": [",
            i ? "," : "", (unsigned long long)s->key, nd_rep_kind_names[s->kind],
            (unsigned long long)s->total, s->in, s->procs_in, (unsigned long long)s->min,
            (unsigned long long)s->median, (unsigned long long)s->max,
            (unsigned long long)s->allocs, (unsigned long long)s->alloc_bytes);
    json_cols(o, s->col, m->ncols);
    fputs("], \"leaked_per_rank\": [", o);
    json_cols(o, s->col_leak, m->ncols);
    fputs("], \"startup_per_rank\": [", o);
    json_cols(o, s->col_startup, m->ncols);
    fputs("], \"cache_per_rank\": [", o);
    json_cols(o, s->col_cache, m->ncols);
    fputs("],\n   \"outliers\": [", o);
    bool any = false;
    for (size_t c = 0; c < m->ncols; c++) {
      if (!is_outlier(s, s->col[c])) continue;
      fprintf(o, "%s%zu", any ? ", " : "", c);
      any = true;
    }
    fputs("], \"python\": ", o);
    nd_rep_json_str(o, py_line(s));
    fputs(", \"frames\": [", o);
    const char *k = s->frames;
    any = false;
    for (uint32_t f = 0; f < s->nframes; f++, k = next_frame(k)) {
      if (!shown(m, s, k)) continue;
      if (any) fputs(", ", o);
      nd_rep_json_str(o, k + 1);
      any = true;
    }
    fputs("]}", o);
  }
  fputs("]}\n", o);
}

// ---------------------------------------------------------------- the command

static const char merge_help[] =
    "usage: ndmemreport merge [--format text|json] [--job TRACE] [--top N] [--frames N]\n"
    "                         [--python-only] [--no-symbols] [--suppressions FILE]...\n"
    "                         [--no-builtin-suppressions] TRACE...\n\n"
    "Puts the traces of one job's processes side by side: a row per process, labelled\n"
    "by its rank (a fork child as its parent's worker), what each left live at its end\n"
    "by class, and the sites aggregated across the processes.\n\n"
    "  --format FORMAT             text | json [text]\n"
    "  --job TRACE                 the job's view, as ndmem run gives it: TRACE (one of\n"
    "                              those given) is the main program's; each process\n"
    "                              named main, worker N, rank R, with its largest entries\n"
    "  --top N                     sites listed [10]; 0 all\n"
    "  --frames N                  frames per site in text [8]; 0 all\n"
    "  --python-only               a site with Python frames shows only those\n"
    "  --no-symbols                frames as module+offset\n"
    "  --suppressions FILE         as for one trace (repeatable)\n"
    "  --no-builtin-suppressions   as for one trace\n\n"
    "See ndmemreport(1).\n";

int nd_report_merge(int argc, char **argv, FILE *out, FILE *err) {
  bool json = false;
  merge_t m = {.o = {.symbols = true, .top = 10, .frames = 8, .builtin_supp = true}, .job = NONE};
  const char *job = NULL;
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  m.o.supp_files = calloc((size_t)argc + 1, sizeof *m.o.supp_files);
  if (!files || !m.o.supp_files) {
    fputs("ndmemreport: out of memory\n", err);
    free(files);
    free(m.o.supp_files);
    return 2;
  }
  int rc = 0;
  bool dashdash = false;
  for (int i = 1; i < argc && !rc; i++) {
    const char *a = argv[i];
    const char *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
#define IS(name) (len == sizeof(name) - 1 && !strncmp(a, name, len))
#define VALUE() (eq ? eq + 1 : i + 1 < argc ? argv[++i] : "")
    if (dashdash || a[0] != '-' || !a[1]) {
      files[m.nprocs++] = a;
    } else if (!strcmp(a, "--")) {
      dashdash = true;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(merge_help, out);
      free(files);
      free(m.o.supp_files);
      return 0;
    } else if (IS("--job")) {
      job = VALUE();
      if (!*job) {
        fputs("ndmemreport: --job needs the TRACE of the job's program (" MERGE_USAGE ")\n", err);
        rc = 2;
      }
    } else if (!strcmp(a, "--no-symbols")) {
      m.o.symbols = false;
    } else if (!strcmp(a, "--python-only")) {
      m.o.python_only = true;
    } else if (!strcmp(a, "--no-builtin-suppressions")) {
      m.o.builtin_supp = false;
    } else if (IS("--suppressions")) {
      const char *v = VALUE();
      if (!*v) {
        fputs("ndmemreport: --suppressions needs a FILE (" MERGE_USAGE ")\n", err);
        rc = 2;
      }
      m.o.supp_files[m.o.nsupp_files++] = v;
    } else if (IS("--format")) {
      const char *v = VALUE();
      if (strcmp(v, "text") && strcmp(v, "json")) {
        fprintf(err, "ndmemreport: --format takes text or json, not '%s' (" MERGE_USAGE ")\n", v);
        rc = 2;
      }
      json = !strcmp(v, "json");
    } else if (IS("--top") || IS("--frames")) {
      bool top = IS("--top");
      const char *v = VALUE();
      unsigned long long n;
      if (nd_rep_parse_count(v, 1000000, &n)) {
        fprintf(err, "ndmemreport: %s needs a number from 0 to 1000000, not '%s' (" MERGE_USAGE
                     ")\n", top ? "--top" : "--frames", v);
        rc = 2;
      }
      *(top ? &m.o.top : &m.o.frames) = (size_t)n;
    } else {
      fprintf(err, "ndmemreport: unknown option '%s' (" MERGE_USAGE ")\n", a);
      rc = 2;
    }
#undef IS
#undef VALUE
  }
  if (!rc && !m.nprocs) {
    fputs("ndmemreport: merge needs at least one TRACE (" MERGE_USAGE ")\n", err);
    rc = 2;
  }
  for (size_t i = 0; !rc && job && i < m.nprocs; i++)
    if (!strcmp(files[i], job)) m.job = i;
  if (!rc && job && m.job == NONE) {
    fprintf(err, "ndmemreport: --job %s: not one of the TRACEs given\n", job);
    rc = 2;
  }
  if (!rc && job && json) {
    fputs("ndmemreport: --job is a text view (merge --format json has every process)\n", err);
    rc = 2;
  }
  nd_supp_t *supp = rc ? NULL : nd_rep_load_suppressions(&m.o, err);
  if (!rc && !supp) rc = 2;
  if (!rc && !(m.procs = calloc(m.nprocs, sizeof *m.procs))) {
    fputs("ndmemreport: out of memory\n", err);
    rc = 2;
  }
  for (size_t i = 0; !rc && i < m.nprocs; i++) {
    m.procs[i].path = files[i];
    rc = fold_trace(&m, i, supp, err);
  }
  if (!rc && (arrange(&m) || finish_sites(&m))) {
    fputs("ndmemreport: out of memory\n", err);
    rc = 2;
  }
  if (!rc) {
    if (m.nsites) qsort(m.sites, m.nsites, sizeof *m.sites, cmp_site);
    if (json) json_report(out, &m);
    else if (m.job != NONE) nd_merge_job_text(out, &m);
    else text_report(out, &m);
    if (fflush(out) || ferror(out)) {
      fprintf(err, "ndmemreport: cannot write the report: %s\n", strerror(errno));
      rc = 2;
    }
  }
  for (size_t i = 0; i < m.nsites; i++)
    free(m.sites[i].frames), free(m.sites[i].python), free(m.sites[i].val), free(m.sites[i].col);
  nd_supp_free(supp);
  free(m.sites);
  free(m.slots);
  free(m.procs);
  free(m.order);
  free(m.cols);
  free(m.o.supp_files);
  free(files);
  return rc;
}
