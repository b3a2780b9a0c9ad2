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

// A process whose end is not judged (an exec, a crash): its largest sites at their peak.
static void print_peaks(FILE *o, const merge_t *m, size_t proc) {
  size_t top[JOB_FINDINGS], nt = 0;
  for (size_t i = 0; i < m->nsites; i++) {
    uint64_t v = m->sites[i].val[proc];
    if (!v) continue;
    size_t at = nt;
    while (at > 0 && m->sites[top[at - 1]].val[proc] < v) at--;
    if (at >= JOB_FINDINGS) continue;
    size_t k = nt < JOB_FINDINGS ? nt : JOB_FINDINGS - 1;
    memmove(&top[at + 1], &top[at], (k - at) * sizeof *top);
    top[at] = i;
    if (nt < JOB_FINDINGS) nt++;
  }
  for (size_t j = 0; j < nt; j++) {
    const msite_t *s = &m->sites[top[j]];
    char b[32];
    fprintf(o, "    %10s  at its peak", nd_merge_cell(b, sizeof b, s->val[proc], false));
    if (s->kind != 0) fprintf(o, " (%s)", nd_rep_kind_names[s->kind < ND_TRACE_KINDS ? s->kind : 0]);
    fputc('\n', o);
    if (s->python) {
      fputs("                at ", o);
      nd_merge_print_frame(o, s->python);
      fputc('\n', o);
    }
  }
}

// An entry's lines: its bytes and class, then where it was made: "at" its Python line where it
// has one, "in" the native function that asked, where the innermost frame is native.
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
  if (s->kind != 0) fprintf(o, " (%s)", nd_rep_kind_names[s->kind < ND_TRACE_KINDS ? s->kind : 0]);
  fputc('\n', o);
  // the native code that asked (the stack's innermost frame), where it is native
  const char *native = s->nframes && s->frames[0] == 'N' ? s->frames + 1 : NULL;
  if (s->python) {
    fputs("                at ", o);
    nd_merge_print_frame(o, s->python);
    fputc('\n', o);
  }
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
