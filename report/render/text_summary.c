// SPDX-License-Identifier: MIT
// text_summary.c: the text report's summary (text.h): the process and its job, how it ended, the
// trace, tracking, calls and counters by kind, then one line each about leaks, the reachability
// scan, workspaces, limits, devices, resident memory and Python. The HTML report lays the same
// lines out as a table (nd_rep_text_summary).
#include "render/text.h"

#include <stdlib.h>
#include <string.h>

// Where the figures of a trace without its END record stand: its last flush, or before any.
static void text_flush_at(FILE *o, const nd_trace_t *t) {
  if (t->have_flush) {
    fprintf(o, "#%llu at ", (unsigned long long)t->flush.seq);
    nd_rep_print_secs(o, t->flush.mono_ns > t->hdr.start_mono_ns
                             ? t->flush.mono_ns - t->hdr.start_mono_ns
                             : 0);
  }
}

// The summary's line about the file. Complete only with its END record (the shim wrote its final
// records); a running job's trace, a killed one's, is intact up to its last flush (whole batches,
// each ending in a FLUSH), or cut short inside a record (TRUNCATED).
void nd_text_trace_line(FILE *o, const nd_trace_t *t) {
  fprintf(o, "  %-10s  ", "trace");
  if (t->truncated)
    fprintf(o, "TRUNCATED: %llu bytes, the last record cut short at offset %llu; read the %llu "
               "whole records before it",
            (unsigned long long)t->file_size, (unsigned long long)t->good_end,
            (unsigned long long)t->records);
  else
    fprintf(o, "%s: %llu bytes, %llu records",
            t->ended               ? "complete"
            : nd_rep_exec_end(t)   ? "complete up to the exec (no END record: the process went on "
                                     "as another program)"
                                   : "no END record",
            (unsigned long long)t->file_size, (unsigned long long)t->records);
  if (t->compressed) // the offsets above are the decompressed stream's
    fprintf(o, " (zstd: %llu bytes stored)", (unsigned long long)t->stored_size);
  if (!t->ended && !nd_rep_exec_end(t) && t->have_flush) {
    fputs("; intact up to its last flush (", o);
    text_flush_at(o, t);
    fputc(')', o);
    if (t->after_flush)
      fprintf(o, " and %llu %s after it, included", (unsigned long long)t->after_flush,
              nd_text_plural(t->after_flush, "record", "records"));
  } else if (!t->ended && !nd_rep_exec_end(t)) {
    fputs(t->records ? "; no flush: only the records written before one" : "; its header only", o);
  }
  fputc('\n', o);
}

static void text_kind(FILE *o, const nd_rec_kind_totals_t *k, const char *name, const char *when,
                      const char *unit) {
  fprintf(o, "  %-10s  peak ", name);
  nd_text_sbytes(o, k->peak_bytes);
  fprintf(o, "; live %s ", when);
  // More released than allocated: frees of blocks allocated where ndmem could not see them. A
  // negative amount of memory is never shown; the discrepancy is.
  nd_text_sbytes(o, k->live_bytes > 0 ? k->live_bytes : 0);
  fprintf(o, " in %lld %s%s; %llu allocated, %llu released",
          (long long)(k->live_count > 0 ? k->live_count : 0), unit, k->live_count == 1 ? "" : "s",
          (unsigned long long)k->allocs,
          (unsigned long long)k->frees);
  if (k->live_count < 0 || k->live_bytes < 0)
    fprintf(o, " (%llu more released than ndmem saw allocated)",
            0ull - (unsigned long long)k->live_count);
  fputc('\n', o);
}

// ", 0.020 s after a refused request (below)": an end named with the last refused request.
static void text_after(FILE *o, const uint64_t *since) {
  if (!since) return;
  fputs(", ", o);
  nd_rep_print_secs(o, *since);
  fputs(" after a refused request (below)", o);
}

// The EXIT record in words (version 4 traces); since: from the last refused request, where the
// end is named with it (nd_rep_end_after_refusal).
static void text_exit_how(FILE *o, const nd_trace_t *t, const uint64_t *since) {
  const nd_rec_exit_t *e = &t->exit;
  int status;
  switch (e->how) {
  case ND_EXIT_NORMAL:
    if (nd_rep_exit_status(t, &status) && status)
      fprintf(o, "exit(%d) in thread %u", status, e->tid);
    else
      fputs("normal", o);
    text_after(o, since);
    fputs(" (END record)", o);
    break;
  case ND_EXIT_UNDERSCORE:
    fprintf(o, "_exit(%d) in thread %u", e->code, e->tid);
    text_after(o, since);
    fputs(": no atexit handlers or destructors ran; END record", o);
    break;
  case ND_EXIT_SIGNAL:
    fprintf(o, "ended by signal %d (SIG%s) in thread %u", e->code,
            sigabbrev_np(e->code) ? sigabbrev_np(e->code) : "?", e->tid);
    text_after(o, since);
    fputs("; the trace was completed then (END record); what was live is not a leak", o);
    break;
  default:
    if (t->have_limits && (t->limits.flags & ND_LIMITS_RETRY_LOOP))
      fputs("stopped on a retry loop under NDMEM_ON_LIMIT=fail (a thread was refused the same "
            "requests for NDMEM_LIMIT_RETRY_MS; SIGABRT)", o);
    else
      fputs("stopped by NDMEM_ON_LIMIT=abort (SIGABRT)", o);
    text_after(o, since);
    fputs("; END record", o);
    break;
  }
}

// The exec the trace ends in (version 16): the program, whether the shim followed it, and where
// the figures stand.
static void text_exec(FILE *o, const nd_trace_t *t, const uint64_t *since) {
  const nd_rec_exec_t *e = &t->exec;
  fputs("exec'd ", o);
  nd_rep_print_text(o, t->exec_path);
  fprintf(o, " in thread %u (%s)", e->tid, nd_rep_exec_why[e->follow]);
  text_after(o, since);
  fputs(": the trace ends there, with its figures at the exec (", o);
  text_flush_at(o, t);
  fputs("); the memory went with the process's image, not a leak", o);
}

// The last refused request, where the end is named with it: what, on which thread, when, and the
// program's line that asked (its place: analyse/place.h).
static int text_refused_line(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fprintf(o, "  %-10s  ", "refused");
  nd_rep_refusal_words(o, t, nd_text_bytes);
  if (t->refusal_stack < 0) {
    fputs(" (its stack was not recorded)\n", o);
    return 0;
  }
  nd_rep_place_t p;
  if (nd_rep_place(r, (uint32_t)t->refusal_stack, &p)) return -1;
  sbuf_t b = {0};
  if (nd_rep_place_text(&b, &p)) return -1;
  fputs(", at ", o);
  nd_rep_print_text(o, b.p);
  free(b.p);
  fputc('\n', o);
  return 0;
}

// The summary's line about Python (the PYTHON record, version 7).
static void text_python_line(FILE *o, const nd_trace_t *t) {
  const nd_rec_python_t *p = &t->python;
  char v[48];
  nd_rep_format_pyversion(v, sizeof v, p->version_hex);
  fprintf(o, "  %-10s  ", "python");
  switch (p->state) {
  case ND_PY_ON:
    fprintf(o, "%s: Python frames in the stacks of %llu of %llu tracked %s", v,
            (unsigned long long)p->with_python, (unsigned long long)p->stacks,
            nd_text_plural(p->stacks, "allocation", "allocations"));
    // The shim counts a frame it could not keep at every allocation whose stack had it: a sum
    // over allocations, mostly the outer frames of deep import chains while modules load
    if (p->dropped)
      fprintf(o, t->has.py_depth ? "; the outermost Python frames of stacks deeper than "
                                        "NDMEM_PY_DEPTH (or unreadable ones) not recorded: %llu, "
                                        "summed over allocations"
                                      : "; the outermost frames of stacks past the depth limit "
                                        "(or unreadable ones) not recorded: %llu, summed over "
                                        "allocations",
              (unsigned long long)p->dropped);
    break;
  case ND_PY_UNSUPPORTED: fprintf(o, "%s unsupported: native frames only", v); break;
  case ND_PY_FREE_THREADED:
    fprintf(o, "%s free-threaded build: its frames are not read, native frames only", v);
    break;
  case ND_PY_LAYOUT_DIFFERS:
    fprintf(o, "%s lays out its frames otherwise than its version's (_PyRuntime.debug_offsets): "
               "not read, native frames only", v);
    break;
  case ND_PY_OFF: fputs("off (NDMEM_PYTHON=0)", o); break;
  default: fputs("no interpreter found", o); break;
  }
  fputc('\n', o);
}

// Resident growth beside flat tracked memory (analyse.c decides), in the user's words. Named
// retention/fragmentation only on the allocator's own account; without it, only what is known:
// the growth is outside what ndmem tracks. Never a leak: nothing says the memory is unreachable.
static void text_retention_line(FILE *o, const nd_retention_t *x) {
  if (x->cls == ND_RET_NONE || x->cls == ND_RET_PREVENTED) return; // the latter: below
  char g[48], k[48], f[48];
  nd_rep_human(g, sizeof g, x->resident_to - x->resident_from);
  nd_rep_human(k, sizeof k, x->tracked_to > 0 ? (uint64_t)x->tracked_to : 0);
  // Live host memory, not maxBytes' `tracked` (which leaves untouched pages of large mappings
  // out): the two are named apart so that a report never shows two `tracked` figures.
  fprintf(o, "  %-10s  resident grew %s while live host memory (heap, mappings, arenas) stayed "
             "at %s: ", "retention", g, k);
  const char *who = nd_rep_allocator_names[x->allocator];
  if (x->cls == ND_RET_ALLOCATOR) {
    nd_rep_human(f, sizeof f, x->free_bytes);
    fprintf(o, "%s holds %s freed memory (allocator retention/fragmentation, not a leak)\n", who,
            f);
    return;
  }
  if (x->allocator == ND_ALLOCATOR_UNKNOWN || !x->have_free) {
    fprintf(o, "the growth is outside the memory ndmem tracks (not allocated through the hooked "
               "functions, or kept by %s whose own account %s)\n",
            x->allocator == ND_ALLOCATOR_UNKNOWN ? "an allocator" : who,
            x->allocator == ND_ALLOCATOR_UNKNOWN ? "is unknown" : "was not read");
    return;
  }
  nd_rep_human(f, sizeof f, x->free_growth > 0 ? (uint64_t)x->free_growth : 0);
  if (x->trimmed_bytes) { // glibc's free bytes since a trim: resident or not, it cannot say
    fprintf(o, "%s's free memory grew only %s beyond what a malloc_trim may have given back, so "
               "the growth is outside the memory ndmem tracks, or freed memory %s holds again "
               "since that trim (its account cannot tell which)\n", who, f, who);
    return;
  }
  fprintf(o, "%s's free memory grew only %s, so the growth is outside the memory ndmem tracks "
             "(not allocated through the hooked functions)\n", who, f);
}

// The traces of the process's descendants that lie beside this one (an exec'd program behind a
// wrapper that took a fixed NDMEM_OUTPUT first, fork workers), and the command that reads them
// all: no trace of the job goes unnamed where its first one is read.
#define FAMILY_SHOWN 8
static void text_family(FILE *o, const report_t *r) {
  const nd_family_t *f = &r->family;
  if (!f->n) return;
  fprintf(o, "  %-10s  %zu more %s, of its descendants, beside this one:\n", "traces", f->n,
          f->n == 1 ? "trace" : "traces");
  for (size_t i = 0; i < f->n && i < FAMILY_SHOWN; i++) {
    const nd_kin_t *k = &f->v[i];
    fprintf(o, "  %-10s  ", "");
    nd_rep_print_text(o, k->path);
    fprintf(o, ": pid %llu, ", (unsigned long long)k->pid);
    nd_rep_print_text(o, k->exe[0] ? k->exe : "?");
    fprintf(o, ", %s %llu\n", k->origin == ND_ORIGIN_FORK ? "fork child of" : "exec'd by",
            (unsigned long long)k->ppid);
  }
  if (f->n > FAMILY_SHOWN) fprintf(o, "  %-10s  and %zu more\n", "", f->n - FAMILY_SHOWN);
  fprintf(o, "  %-10s  read them together: ndmemreport merge ", "");
  nd_rep_print_text(o, r->o->file);
  for (size_t i = 0; i < f->n; i++) {
    fputc(' ', o);
    nd_rep_print_text(o, f->v[i].path);
  }
  fputc('\n', o);
}

// The summary's parent and rank lines (version 12 headers): where the process stands in its job,
// as far as the header knows it.
static void text_job_lines(FILE *o, const nd_trace_header_t *h) {
  if (h->ppid) {
    fprintf(o, "  %-10s  pid %llu", "parent", (unsigned long long)h->ppid);
    if (h->origin == ND_ORIGIN_FORK)
      fputs(", traced too: this process is its fork child (a worker)", o);
    else if (h->origin == ND_ORIGIN_EXEC)
      fputs(", traced too: this program was exec'd in its child", o);
    fputc('\n', o);
  }
  const char *var = nd_rank_from_name(h->rank_from);
  if (!var) return; // no launcher's variable: no rank to speak of
  fprintf(o, "  %-10s  ", "rank");
  if (h->rank < 0) {
    fprintf(o, "unknown: %s is not a plain non-negative integer", var);
    if (h->world_size > 0) fprintf(o, "; world size %d", h->world_size);
    fputc('\n', o);
    return;
  }
  fprintf(o, "%d", h->rank);
  if (h->world_size > 0) fprintf(o, " of %d", h->world_size);
  fprintf(o, " (%s)", var);
  if (h->local_rank >= 0) {
    fprintf(o, "; local rank %d", h->local_rank);
    if (h->local_world_size > 0) fprintf(o, " of %d", h->local_world_size);
  }
  fputc('\n', o);
}

int nd_rep_text_summary(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  const nd_trace_header_t *h = &t->hdr;
  char buf[64];
  fputs("== summary\n", o);
  nd_text_peak_lines(o, t); // the headline: the kernel's peak (version 18)
  fprintf(o, "  %-10s  pid %llu on ", "process", (unsigned long long)h->pid);
  nd_rep_print_text(o, t->host[0] ? t->host : "?");
  fputs(": ", o);
  nd_rep_print_text(o, t->exe[0] ? t->exe : "?");
  fputc('\n', o);
  text_job_lines(o, h);
  text_family(o, r);
  nd_rep_format_start(buf, sizeof buf, h->start_realtime_ns);
  fprintf(o, "  %-10s  %s; duration ", "started", buf);
  nd_rep_print_secs(o, t->last_ns > h->start_mono_ns ? t->last_ns - h->start_mono_ns : 0);
  fputs(" (to the last record)\n", o);
  uint64_t since;
  bool after = nd_rep_end_after_refusal(t, &since);
  if (t->ended && t->have_exit) {
    fprintf(o, "  %-10s  ", "exit");
    text_exit_how(o, t, after ? &since : NULL);
    fputc('\n', o);
  } else if (t->ended) {
    fprintf(o, "  %-10s  normal (END record)\n", "exit");
  } else if (nd_rep_exec_end(t)) {
    fprintf(o, "  %-10s  ", "exit");
    text_exec(o, t, after ? &since : NULL);
    fputc('\n', o);
  } else if (r->running == ND_RUN_YES) {
    fprintf(o, "  %-10s  none yet: the process is still running (pid %llu on this host); leaks "
               "cannot be known yet, ",
            "exit", (unsigned long long)h->pid);
  } else {
    // Version 4 writers end every trace they can (exit, _exit, fatal signals with their default
    // action): what remains is SIGKILL, the OOM killer, or a crash the shim could not see.
    fprintf(o, "  %-10s  NOT normal: ", "exit");
    if (nd_rep_aborted(t)) fputs("no END record (aborted on a breach of a limit)", o);
    else if (!t->has.exit_record) fputs("no END record (killed, crashed or _exit)", o);
    else fputs("ended without an END record: killed (SIGKILL, the OOM killer) or crashed", o);
    if (r->running == ND_RUN_UNKNOWN && !nd_rep_aborted(t)) {
      fputs(", unless it still runs on ", o);
      nd_rep_print_text(o, t->host[0] ? t->host : "?");
      fputs(" (another host: not checked)", o);
    }
    fputs("; leaks cannot be known, ", o);
  }
  if (after && text_refused_line(o, r)) return -1;
  if (!t->ended && !nd_rep_exec_end(t)) { // where the live figures stand (the trace line says
                                          // how intact it is)
    if (t->have_flush) {
      fputs("live figures are at the last flush (", o);
      text_flush_at(o, t);
      fputc(')', o);
    } else if (t->records) {
      fprintf(o, "and there was no flush%s: live figures are those of the %llu records read",
              r->running == ND_RUN_YES ? " yet" : "", (unsigned long long)t->records);
    } else {
      fputs("and the trace holds its header only", o);
    }
    fputc('\n', o);
  }
  nd_text_trace_line(o, t);
  fprintf(o, "  %-10s  ", "tracking");
  char a[48], b[48];
  nd_rep_human(a, sizeof a, h->track_min);
  nd_rep_human(b, sizeof b, h->sample_interval);
  // NDMEM_TRACK_MIN=0 (or 1) leaves nothing smaller to sample, whatever NDMEM_SAMPLE says.
  if (h->sample_interval && h->track_min > 1)
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
      fprintf(o, "%s %s %llu", any ? "," : "", nd_rep_fn_names[i], (unsigned long long)c->calls[i]);
      any = true;
    }
    fprintf(o, "%s; threads %u\n", any ? "" : " none", c->threads);
    fprintf(o, "  %-10s ", "fallbacks");
    any = false;
    for (int i = 0; i < 4; i++) {
      if (!c->fallbacks[i]) continue;
      fprintf(o, "%s %s %llu", any ? "," : "", nd_rep_fb_names[i],
              (unsigned long long)c->fallbacks[i]);
      any = true;
    }
    fputs(any ? "\n" : " none\n", o);
    const char *when = t->ended ? "at exit" : "at last flush";
    for (int i = 0; i < ND_TRACE_KINDS; i++) {
      const nd_rec_kind_totals_t *k = &c->kind[i];
      if (i > 1 && !k->allocs && !k->frees && !k->live_bytes && !k->peak_bytes) continue;
      text_kind(o, k, nd_rep_kind_names[i], when, i == 1 ? "mapping" : "block");
    }
  }
  fprintf(o, "  %-10s  ", "leaks");
  if (nd_rep_exec_end(t)) {
    fputs("not judged (the process exec'd another program); tracked sites held ", o);
    nd_text_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " at the exec in %zu %s\n", r->nlive, nd_text_plural(r->nlive, "site", "sites"));
  } else if (t->ended && !nd_rep_leaks_known(t)) {
    fputs("none reported (the process did not end on its own); tracked sites held ", o);
    nd_text_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " at the end in %zu %s\n", r->nlive, nd_text_plural(r->nlive, "site", "sites"));
  } else if (!t->ended) {
    fputs("unknown (no normal exit); tracked sites hold ", o);
    nd_text_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " at the last flush in %zu %s\n", r->nlive,
            nd_text_plural(r->nlive, "site", "sites"));
  } else {
    nd_text_life_totals(o, &r->life);
    nd_text_judged_line(o, &r->life);
  }
  nd_scan_text(o, t);
  if (t->nws || t->nescapes || t->escapes_dropped) nd_text_ws_line(o, r);
  if (nd_rep_has_limits(t)) nd_text_limits_line(o, t);
  if (nd_rep_has_devices(t)) nd_text_devices_line(o, t);
  if (t->have_resident) { // version 8: what the process holds, beside what ndmem tracks
    fprintf(o, "  %-10s  anonymous resident memory, read at each flush: highest ", "resident");
    nd_text_bytes(o, t->resident_peak, false);
    fputs(", at the last ", o);
    nd_text_bytes(o, t->resident.anon_bytes, false);
    fputc('\n', o);
    nd_text_ws_effect_line(o, r, "");
    text_retention_line(o, &r->retention);
  } else {
    nd_text_ws_effect_line(o, r, "resident");
  }
  nd_text_ws_retention_line(
      o, r, r->retention.cls == ND_RET_NONE || r->retention.cls == ND_RET_PREVENTED);
  nd_text_ws_saving_line(o, r);
  if (t->have_python) text_python_line(o, t);
  return 0;
}
