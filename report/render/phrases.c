// SPDX-License-Identifier: MIT
// phrases.c: what the text and HTML reports say in the same words (render.h), each printing
// sizes its own way (nd_rep_bytes_fn): records the reader did not keep, a snapshot's sites, the
// workspace saving, the last refused request.
#include "render/render.h"

#include <string.h>

void nd_rep_not_kept(FILE *o, uint64_t dropped, unsigned max) {
  if (dropped) fprintf(o, "; %llu more not kept (over %u)", (unsigned long long)dropped, max);
}

void nd_rep_snap_sites(FILE *o, const nd_snapshot_t *s, size_t top, nd_rep_bytes_fn bytes) {
  const nd_rec_snapshot_t *x = &s->rec;
  const char *sites = x->sites == 1 ? "site" : "sites";
  if (s->read < x->sites)
    fprintf(o, "%u of %u %s (the trace ends inside the snapshot)", s->read, x->sites, sites);
  else
    fprintf(o, "%u %s", x->sites, sites);
  bool est;
  uint64_t live = nd_rep_snap_live(s, &est);
  fputs(", live ", o);
  bytes(o, live, est);
  if (s->nsites < s->read) {
    fprintf(o, " in the %zu kept", s->nsites);
    nd_rep_not_kept(o, s->read - s->nsites, ND_TRACE_MAX_SNAP_SITES);
  }
  if (top < s->nsites) fprintf(o, "; top %zu", top);
}

void nd_rep_ws_saving(FILE *o, const report_t *r, nd_rep_bytes_fn bytes) {
  const nd_ws_effect_t *e = &r->ws_effect;
  const nd_trace_t *t = r->t;
  const char *who = t->have_resident && t->resident.allocator != ND_ALLOCATOR_UNKNOWN
                        ? nd_rep_allocator_names[t->resident.allocator]
                        : "the allocator";
  if (e->saving) {
    fputs("workspaces kept ~", o);
    bytes(o, e->saving, false);
    fputs(" off the resident peak (estimated: ", o);
  } else {
    fputs("none estimated (", o);
  }
  fprintf(o, "%s held ", who);
  bytes(o, e->held_learning, false);
  fprintf(o, " freed below its top at the end of the cycles they learned (%llu read)",
          (unsigned long long)e->held_reads);
  if (!e->plan_trims) {
    fputs(", none given back just before their arenas were first used", o);
  } else if (e->serving_read) {
    fputs(" and ", o);
    bytes(o, e->held_serving, false);
    fputs(" since they serve", o);
  } else {
    fputs(", not read since they serve", o);
  }
  if (e->saving && e->learning_peak > e->serving_peak)
    fputs("; the resident peak came while they learned: only what stands above it counts", o);
  fputs(e->saving ? "; fragmentation that grows after the learning is not counted)"
                  : ")", o);
}

void nd_rep_refusal_words(FILE *o, const nd_trace_t *t, nd_rep_bytes_fn bytes) {
  const nd_rec_refusal_t *r = &t->refusal;
  bool device = r->limit == ND_LIMIT_DEVICE;
  bool growth = !device && (r->fn == 2 || r->fn == 3 || r->fn == 14); // realloc*, mremap
  fprintf(o, "%s %s", nd_rep_refusal_fn(r), growth ? "growing a block by " : "of ");
  bytes(o, r->requested, false);
  fprintf(o, " over %s ", nd_rep_limit_names[r->limit]);
  bytes(o, r->limit_bytes, false);
  if (device) fprintf(o, " of device %u", r->device);
  fprintf(o, " on thread %u at ", r->tid);
  nd_rep_print_secs(o, nd_rep_since_start(t, r->mono_ns));
}

void nd_rep_end_words(FILE *o, const nd_trace_t *t) {
  int status;
  if (nd_rep_exec_end(t)) {
    fputs("in an exec", o);
  } else if (!t->ended || !t->have_exit) {
    if (t->ended) fputs("normally", o);
  } else if (t->exit.how == ND_EXIT_SIGNAL) {
    fprintf(o, "by signal %d (SIG%s)", t->exit.code,
            sigabbrev_np(t->exit.code) ? sigabbrev_np(t->exit.code) : "?");
  } else if (t->exit.how == ND_EXIT_LIMIT_ABORT) {
    fputs("by NDMEM_ON_LIMIT's stop (SIGABRT)", o);
  } else if (t->exit.how == ND_EXIT_UNDERSCORE) {
    fprintf(o, "by _exit(%d)", t->exit.code);
  } else if (nd_rep_exit_status(t, &status) && status) {
    fprintf(o, "by exit(%d)", status);
  } else {
    fputs("normally", o);
  }
}
