// SPDX-License-Identifier: MIT
// job.c: `ndmemreport merge --job MAIN TRACE...`, the view of a job of several processes that
// `ndmem run` prints after the main program's own report: one row per process, named for what it
// is to the job (main, worker N, rank R, main before exec, pid N), and each process's largest
// entries of what it held at its end (findings first: what --fail-on-leak fails on), each led by
// its Python line. A worker's blocks inherited at the fork are its parent's, counted there only.
#include "cmd/merge.h"
#include "render/render.h"

#include <stdlib.h>
#include <string.h>

// Whether a stack's innermost Python frame is the program's own (no library's, no import's).
static bool own_of(const nd_trace_t *t, nd_sym_t *sym, uint32_t stack) {
  const nd_stack_t *st = &t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(t, st);
  for (uint32_t k = 0; k < st->depth; k++) {
    if (!nd_is_pyframe(ips[k])) continue;
    const nd_frame_t *f = nd_sym_frame(sym, ips[k]);
    return f && f->python && !nd_rep_py_library(f->at.file ? f->at.file : "?");
  }
  return false;
}

// A candidate for a process's few entries: its rank (lower first), its bytes, where it came from.
typedef struct pick {
  int rank;
  uint64_t bytes;
  size_t from;
} pick_t;

// Puts c among the n best of v (at most JOB_FINDINGS, kept in order); returns the new n.
static size_t pick_put(pick_t *v, size_t n, pick_t c) {
  size_t at = n;
  while (at > 0 && (v[at - 1].rank > c.rank || (v[at - 1].rank == c.rank && v[at - 1].bytes < c.bytes)))
    at--;
  if (at >= JOB_FINDINGS) return n;
  size_t k = n < JOB_FINDINGS ? n : JOB_FINDINGS - 1;
  memmove(&v[at + 1], &v[at], (k - at) * sizeof *v);
  v[at] = c;
  return n < JOB_FINDINGS ? n + 1 : n;
}

// The aggregated site of stack `stack`'s (kind); NULL: out of memory.
static msite_t *site_at(merge_t *m, const nd_trace_t *t, nd_sym_t *sym, report_t *rep,
                        uint32_t stack, uint16_t kind) {
  uint64_t key;
  return nd_rep_stack_key(rep, stack, &key) ? NULL
         : nd_merge_site_of(m, key, kind, t, sym, &t->stacks[stack]);
}

// Trace `i` for the job view: its JOB_FINDINGS largest entries (findings first: what
// --fail-on-leak fails on, then those the program's own code made: a list the script keeps,
// before an interpreter's arena, then the rest), the largest sites the shim found growing while
// it ran, and, where its end is not judged (an exec), its largest sites at their peak. Only
// those few are named and keyed: a worker of an exact run has hundreds of thousands of sites.
// 0, or -1 out of memory.
int nd_merge_job_fold(merge_t *m, size_t i, const nd_trace_t *t, nd_sym_t *sym, report_t *rep) {
  mproc_t *p = &m->procs[i];
  pick_t v[JOB_FINDINGS];
  size_t n = 0;
  for (size_t j = 0; p->leaks_known && j < rep->life.n; j++) {
    const nd_life_t *e = &rep->life.v[j];
    if (e->cls == ND_LIFE_SUPPRESSED || e->cls == ND_LIFE_INHERITED) continue;
    p->nentries++;
    p->growth_flagged += e->flagged;
    int rank = nd_life_fails(e->cls, false) ? 0 : 2;
    // (whether the program made it, only where that could place it among the few)
    if (rank && (n < JOB_FINDINGS || v[n - 1].rank > 1 || (v[n - 1].rank == 1 && v[n - 1].bytes < e->bytes)))
      rank = own_of(t, sym, e->stack) ? 1 : 2;
    n = pick_put(v, n, (pick_t){rank, e->bytes, j});
  }
  for (size_t k = 0; k < n; k++) {
    const nd_life_t *e = &rep->life.v[v[k].from];
    msite_t *s = site_at(m, t, sym, rep, e->stack, e->kind);
    if (!s) return -1;
    p->find[p->nfind++] = (mfind_t){.site = s->id, .cls = e->cls, .bytes = e->bytes,
                                    .est = e->samples > 0, .own = v[k].rank == 1};
  }
  n = 0;
  for (size_t j = 0; j < t->ngrowth; j++) {
    const nd_rec_growth_t *g = &t->growth[j].rec;
    uint64_t rise = g->floor_bytes > g->base_bytes ? g->floor_bytes - g->base_bytes : 0;
    n = pick_put(v, n, (pick_t){0, rise, j});
  }
  for (size_t k = 0; k < n; k++) {
    const nd_growth_t *g = &t->growth[v[k].from];
    msite_t *s = site_at(m, t, sym, rep, g->stack, g->rec.kind);
    if (!s) return -1;
    p->grew[p->ngrew] = (mfind_t){.site = s->id, .cls = ND_LIFE_GROWING, .bytes = g->rec.floor_bytes,
                                  .est = (g->rec.flags & ND_SITE_SAMPLED) != 0};
    p->grew_base[p->ngrew++] = g->rec.base_bytes;
  }
  n = 0;
  for (size_t j = 0; !p->leaks_known && j < t->nsites; j++)
    n = pick_put(v, n, (pick_t){0, t->sites[j].rec.peak_live_bytes, j});
  for (size_t k = 0; k < n; k++) {
    const nd_site_t *ts = &t->sites[v[k].from];
    msite_t *s = site_at(m, t, sym, rep, ts->stack, ts->rec.kind);
    if (!s) return -1;
    s->val[i] += ts->rec.peak_live_bytes;
  }
  return 0;
}

// The program's name: the header's path, its last component.
static const char *base(const char *path) {
  const char *s = strrchr(path, '/');
  return s && s[1] ? s + 1 : path;
}

// Where a process comes in the job view: the programs its pid ran before the main program (an
// exec chain, in turn), the main program's column (it, then its workers), then the others.
static int job_pass(const merge_t *m, const mproc_t *p) {
  const mproc_t *jp = &m->procs[m->job];
  if (p->col == jp->col) return 1;
  if (p->hdr.pid == jp->hdr.pid && !strcmp(p->host, jp->host) &&
      p->hdr.start_realtime_ns <= jp->hdr.start_realtime_ns)
    return 0;
  return 2;
}

// The processes in the job view's order (merge's within each pass: by start, then pid).
static size_t job_order(const merge_t *m, size_t *out) {
  size_t n = 0;
  for (int pass = 0; pass < 3; pass++)
    for (size_t x = 0; x < m->nprocs; x++) {
      size_t i = m->order[x];
      if (job_pass(m, &m->procs[i]) == pass) out[n++] = i;
    }
  return n;
}

// A site's kind, where it is not the heap, to end an entry's first line; then its Python line.
static void kind_and_line(FILE *o, const msite_t *s) {
  if (s->kind != 0) fprintf(o, " (%s)", nd_rep_kind_names[s->kind < ND_TRACE_KINDS ? s->kind : 0]);
  fputc('\n', o);
  if (s->python) {
    fputs("                at ", o);
    nd_merge_print_frame(o, s->python);
    fputc('\n', o);
  }
}

// A process whose end is not judged (an exec, a crash): its largest sites at their peak (the
// few nd_merge_job_fold folded for it).
static void print_peaks(FILE *o, const merge_t *m, size_t proc) {
  pick_t top[JOB_FINDINGS];
  size_t nt = 0;
  for (size_t i = 0; i < m->nsites; i++)
    if (m->sites[i].val[proc]) nt = pick_put(top, nt, (pick_t){0, m->sites[i].val[proc], i});
  for (size_t j = 0; j < nt; j++) {
    const msite_t *s = &m->sites[top[j].from];
    char b[32];
    fprintf(o, "    %10s  at its peak", nd_merge_cell(b, sizeof b, s->val[proc], false));
    kind_and_line(o, s);
  }
}

// base: a site the shim found growing while the job ran, its floor's rise from base (else -1).
static void print_find(FILE *o, const merge_t *m, const size_t *at, const mfind_t *f,
                       int64_t base) {
  const msite_t *s = &m->sites[at[f->site]];
  char b[32], c[32];
  fprintf(o, "    %10s  ", nd_merge_cell(b, sizeof b, f->bytes, f->est));
  if (base >= 0)
    fprintf(o, "found growing while it ran (its lowest from %s)",
            nd_merge_cell(c, sizeof c, (uint64_t)base, f->est));
  else
    fputs(nd_life_names[f->cls], o);
  kind_and_line(o, s);
  // the native code that asked (the stack's innermost frame), where it is native
  const char *native = s->nframes && s->frames[0] == 'N' ? s->frames + 1 : NULL;
  if (native) {
    fputs(s->python ? "                in " : "                at ", o);
    nd_merge_print_frame(o, native);
    fputc('\n', o);
  }
}

void nd_merge_job_text(FILE *o, const merge_t *m) {
  size_t *order = malloc(m->nprocs * sizeof *order), *at = malloc((m->nsites + 1) * sizeof *at);
  if (!order || !at) {
    free(order), free(at);
    fputs("ndmemreport: out of memory\n", o);
    return;
  }
  for (size_t i = 0; i < m->nsites; i++) at[m->sites[i].id] = i; // ids to the sorted sites
  size_t n = job_order(m, order), workers = 0, others = 0, before = 0;
  const mproc_t *jp = &m->procs[m->job];
  for (size_t x = 0; x < n; x++) {
    const mproc_t *p = &m->procs[order[x]];
    if (p == jp) continue;
    if (job_pass(m, p) == 1) workers++;
    else if (job_pass(m, p) == 2) others++;
    else before++;
  }
  fprintf(o, "== the job: %zu processes: the main program (pid %llu, %s)", n,
          (unsigned long long)jp->hdr.pid, base(jp->exe));
  if (before) fprintf(o, ", after %zu earlier %s of its pid", before, before == 1 ? "program" : "programs");
  if (workers) fprintf(o, ", %zu %s", workers, workers == 1 ? "worker" : "workers");
  if (others) fprintf(o, ", %zu other %s", others, others == 1 ? "process" : "processes");
  fputs("\n", o);
  char lab[80], a[32], b[32], c[32], d[32];
  fprintf(o, "  %-16s %-7s %-12s %-9s %10s %10s %10s %10s\n", "process", "pid", "program", "ended",
          "peak RSS", "peak heap", "live end", "leaks");
  for (size_t x = 0; x < n; x++) {
    const mproc_t *p = &m->procs[order[x]];
    nd_merge_label(m, p, lab, sizeof lab);
    char prog[13]; // the column's width: a longer name is cut
    const char *bn = base(p->exe);
    size_t bl = strnlen(bn, sizeof prog - 1);
    memcpy(prog, bn, bl);
    prog[bl] = 0;
    fprintf(o, "  %-16s %-7llu ", lab, (unsigned long long)p->hdr.pid);
    nd_rep_print_text(o, prog);
    fprintf(o, "%*s %-9s %10s %10s %10s %10s\n", (int)(12 - strlen(prog)), "", p->ended,
            p->peak_rss ? nd_merge_cell(a, sizeof a, p->peak_rss, false) : "-",
            nd_merge_cell(b, sizeof b, p->peak[0], false),
            nd_merge_cell(c, sizeof c, p->live_end, false),
            p->leaks_known ? nd_merge_cell(d, sizeof d, nd_merge_leak_bytes(p), false) : "-");
  }
  if (workers)
    fputs("  (a worker: a fork child of the process above it, DataLoader's workers; the blocks\n"
          "  it inherited at the fork are its parent's, counted there only)\n", o);
  if (before)
    fputs("  (main before exec: a program the main program's pid ran before it exec'd it)\n", o);
  fputs("  (peak RSS: the kernel's high-water mark of the process's resident memory, what\n"
        "  /usr/bin/time and the OOM killer go by; a worker's counts the pages it shares with\n"
        "  its parent; leaks: what --fail-on-leak fails on; -: not known)\n", o);
  fputs("\n== what each process grew and held, largest first (its own blocks)\n", o);
  for (size_t x = 0; x < n; x++) {
    const mproc_t *p = &m->procs[order[x]];
    nd_merge_label(m, p, lab, sizeof lab);
    fprintf(o, "  %s (pid %llu, ", lab, (unsigned long long)p->hdr.pid);
    nd_rep_print_text(o, base(p->exe));
    fputs(")", o);
    if (!p->leaks_known) { // what it held is not judged: its largest sites instead
      fprintf(o, ": its end not judged (%s); its largest sites\n", p->ended);
      print_peaks(o, m, order[x]);
      continue;
    }
    if (!p->nfind && !p->ngrew) {
      fputs(": nothing of its own\n", o);
      continue;
    }
    fputc('\n', o);
    // What the shim saw growing while it ran, where its end does not say so already (a site
    // whose bytes were freed at the teardown, a worker that ended)
    for (size_t j = 0; j < p->ngrew; j++) {
      bool said = false;
      for (size_t k = 0; k < p->nfind; k++)
        said |= p->find[k].site == p->grew[j].site &&
                (p->find[k].cls == ND_LIFE_GROWING || p->find[k].cls == ND_LIFE_TEARDOWN);
      if (!said) print_find(o, m, at, &p->grew[j], (int64_t)p->grew_base[j]);
    }
    for (size_t j = 0; j < p->nfind; j++) print_find(o, m, at, &p->find[j], -1);
    if (p->nentries > p->nfind)
      fprintf(o, "    (%zu more entries: ndmemreport %s)\n", p->nentries - p->nfind, p->path);
  }
  free(order);
  free(at);
}
