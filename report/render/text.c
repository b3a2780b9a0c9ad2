// SPDX-License-Identifier: MIT
// text.c: ndmemreport's text report (nd_rep_text_report_80, render.h): the summary, the
// site lists, what was live at exit by class, the workspaces and limits views, through the
// 80-column stream (textwrap.h); and the helpers only text uses (human sizes, plural, seconds).
#include "render/render.h"
#include "render/textwrap.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- formatting helpers

// "28.23 MiB (29606488 B)", or "512 B" below 1 KiB; `est` prefixes both numbers with '~'.
static void print_bytes(FILE *o, uint64_t v, bool est) {
  char h[48];
  nd_rep_human(h, sizeof h, v);
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

static const char *plural(uint64_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

// ---------------------------------------------------------------- text

// A Python line: "qualname (file.py:LINE)", "qualname (file.py)" for line 0.
static void text_pyloc(FILE *o, const char *function, const char *file, uint32_t line) {
  nd_rep_print_text(o, function && *function ? function : "?");
  fputs(" (", o);
  nd_rep_print_text(o, file && *file ? file : "?");
  if (line) fprintf(o, ":%u", line);
  fputc(')', o);
}

// A frame as nd_rep_frame_text names it (merge names frames by the same rule), then one line per
// function the call was inlined into; `b` is scratch. -1 when out of memory.
static int text_frame(FILE *o, const nd_frame_t *f, sbuf_t *b) {
  b->len = 0;
  nd_rep_frame_text(b, f, 0);
  if (b->oom) return -1;
  nd_rep_print_text(o, b->p);
  for (size_t i = 0; !f->python && f->module && i < f->ninlined; i++) {
    b->len = 0;
    nd_rep_loc_text(b, f, &f->inlined_into[i], 0);
    if (b->oom) return -1;
    fputs("\n          inlined into ", o);
    nd_rep_print_text(o, b->p);
  }
  return 0;
}

// The frames of a stack, --frames of them; --python-only: only the Python frames of a stack that
// has one, numbered as shown.
static int text_stack(FILE *o, report_t *r, uint32_t stack) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only = nd_rep_python_only(r, s);
  size_t n = 0;
  for (size_t i = 0; i < s->depth; i++) n += !py_only || nd_trace_is_pyframe(r->t, ips[i]);
  size_t show = r->o->frames && r->o->frames < n ? r->o->frames : n;
  if (!n) fputs("      (no frames)\n", o);
  nd_wrap_raw(o, r->wrap, true); // frames whole
  sbuf_t b = {0};
  for (size_t i = 0, k = 0; k < show; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    fprintf(o, "      #%-2zu ", k++);
    if (!f || text_frame(o, f, &b)) {
      free(b.p);
      return -1;
    }
    fputc('\n', o);
  }
  free(b.p);
  nd_wrap_raw(o, r->wrap, false);
  if (show < n) {
    // The program's own Python line, where the frames shown stop short of it (a tensor kept by
    // train.py under ten frames of torch's): the first Python frame outside the libraries.
    const nd_frame_t *own = NULL;
    for (size_t i = 0, k = 0; i < s->depth; i++) { // k: the frame's number as shown
      bool py = nd_trace_is_pyframe(r->t, ips[i]);
      if (py) {
        const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
        if (!f) return -1;
        if (!nd_rep_py_library(f->at.file)) {
          if (k >= show) own = f; // shown already: nothing to add
          break;
        }
      }
      k += py || !py_only;
    }
    fprintf(o, "      (%zu more frames%s", n - show, own ? "; the program's: " : "");
    if (own) text_pyloc(o, own->at.function, own->at.file, (uint32_t)own->at.line);
    fputs(")\n", o);
  }
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

// The summary's line about workspaces.
static void text_ws_line(FILE *o, const report_t *r) {
  const nd_trace_t *t = r->t;
  fprintf(o, "  %-10s  ", "workspaces");
  uint64_t outlived = 0; // automatic cycles' blocks that lived on: never counted as escapes
  for (size_t i = 0; i < t->nws; i++) outlived = nd_rep_sat_add(outlived, t->ws[i].outlived);
  if (t->nws) {
    fprintf(o, "%zu (hits %llu, spills %llu, escapes %llu", t->nws,
            (unsigned long long)r->ws_hits, (unsigned long long)r->ws_spills,
            (unsigned long long)r->ws_escapes);
    if (outlived) fprintf(o, ", outlived %llu", (unsigned long long)outlived);
    fputs(")\n", o);
  } else
    fprintf(o, "none recorded (%llu leaked workspace %s)\n",
            (unsigned long long)nd_rep_esc_records(t),
            plural(nd_rep_esc_records(t), "pointer", "pointers"));
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
  if (t->compressed) // the offsets above are the decompressed stream's
    fprintf(o, " (zstd: %llu bytes stored)", (unsigned long long)t->stored_size);
  if (!t->ended && t->have_flush && t->after_flush)
    fprintf(o, " (%llu after the last flush, included)", (unsigned long long)t->after_flush);
  fputc('\n', o);
}

// ---------------------------------------------------------------- exit and limits: summary lines

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
  default:
    if (t->have_limits && (t->limits.flags & ND_LIMITS_RETRY_LOOP))
      fputs("stopped on a retry loop under NDMEM_ON_LIMIT=fail (a thread was refused the same "
            "requests for NDMEM_LIMIT_RETRY_MS; SIGABRT); END record", o);
    else
      fputs("stopped by NDMEM_ON_LIMIT=abort (SIGABRT); END record", o);
    break;
  }
}

// How a process was stopped on a limit, after "; " (version 10: a retry loop).
static const char *stopped_how(const nd_rec_limits_t *l) {
  return l->flags & ND_LIMITS_RETRY_LOOP ? "stopped on a retry loop" : "aborted on a breach";
}

// A limit asked for with a value that was not one (version 10): the process ran without it.
static bool unread_limit(const nd_rec_limits_t *l, int id) {
  return l->flags & (id == ND_LIMIT_BYTES ? ND_LIMITS_UNREAD_BYTES : ND_LIMITS_UNREAD_PHYSICAL);
}

static uint64_t breaches_total(const nd_rec_limits_t *l) {
  return nd_rep_sat_add(l->breaches[ND_LIMIT_BYTES], l->breaches[ND_LIMIT_PHYSICAL]);
}

// "maxBytes 64.00 MiB (peak tracked 63.99 MiB, 99.9 %)" or "maxBytes none".
static void text_limit_short(FILE *o, int id, uint64_t limit, uint64_t peak) {
  char a[48], b[48], pct[48];
  fprintf(o, "%s ", nd_rep_limit_names[id]);
  if (!limit) {
    fputs("none", o);
    return;
  }
  nd_rep_human(a, sizeof a, limit);
  nd_rep_human(b, sizeof b, peak);
  nd_rep_format_pct(pct, sizeof pct, peak, limit);
  fprintf(o, "%s (peak %s %s, %s)", a, id == ND_LIMIT_BYTES ? "tracked" : "physical", b, pct);
}

// The summary's line about limits.
static void text_limits_line(FILE *o, const nd_trace_t *t) {
  fprintf(o, "  %-10s  ", "limits");
  if (!t->have_limits) {
    uint64_t nb = nd_rep_sat_add(t->nbreaches, t->breaches_dropped);
    fprintf(o, "%s; %llu logged %s, %llu %s\n",
            nd_rep_device_limited(t) ? "device limits only" : "no LIMITS record",
            (unsigned long long)nb, plural(nb, "breach", "breaches"),
            (unsigned long long)t->snap_records, plural(t->snap_records, "snapshot", "snapshots"));
    return;
  }
  const nd_rec_limits_t *l = &t->limits;
  char h[48];
  text_limit_short(o, ND_LIMIT_BYTES, l->max_bytes, l->peak_tracked);
  if (unread_limit(l, ND_LIMIT_BYTES)) fputs(" (its value could not be read)", o);
  if (l->max_bytes && l->untouched) {
    nd_rep_human(h, sizeof h, l->untouched);
    fprintf(o, " (untouched mappings not counted: %s)", h);
  }
  fputs(", ", o);
  text_limit_short(o, ND_LIMIT_PHYSICAL, l->max_physical_bytes, l->peak_physical);
  if (unread_limit(l, ND_LIMIT_PHYSICAL)) fputs(" (its value could not be read)", o);
  nd_rep_human(h, sizeof h, l->warn_at);
  if (l->warn_at) fprintf(o, "; warn at %s", h);
  else fputs("; no warning watermark", o);
  fprintf(o, "; on limit %s", nd_rep_action_names[l->action]);
  uint64_t nb = breaches_total(l);
  if (nb)
    fprintf(o, "; %llu %s, %llu %s failed", (unsigned long long)nb,
            plural(nb, "breach", "breaches"), (unsigned long long)l->failed,
            plural(l->failed, "allocation", "allocations"));
  else
    fputs("; no breaches", o);
  if (l->flags & ND_LIMITS_ABORTED) fprintf(o, "; %s", stopped_how(l));
  fputc('\n', o);
}

// ---------------------------------------------------------------- what was live at exit

// An estimate the exact counters capped at a bound they prove (lifetime.h): "at most", exact
// digits, as the bound is; else an estimate's "~" or an exact figure.
static void print_amount(FILE *o, uint64_t v, bool est, bool most) {
  if (most) fputs("at most ", o);
  print_bytes(o, v, est && !most);
}

static void text_bytes_blocks(FILE *o, uint64_t bytes, uint64_t blocks, bool est, bool most_bytes,
                              bool most_blocks) {
  print_amount(o, bytes, est, est && most_bytes);
  fprintf(o, " in %s%llu %s", est && most_blocks ? "at most " : est ? "~" : "",
          (unsigned long long)blocks, plural(blocks, "block", "blocks"));
}

// The summary's leaks line: one line per class present, growth first; "none" when nothing was.
static void text_life_totals(FILE *o, const nd_lifetimes_t *l) {
  bool any = false;
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    if (!l->entries[c]) continue;
    if (any) fprintf(o, "  %-10s  ", "");
    fprintf(o, "%s ", nd_life_names[c]);
    if (c == ND_LIFE_TEARDOWN) print_amount(o, l->bytes[c], l->est[c], l->most_bytes[c]);
    else text_bytes_blocks(o, l->bytes[c], l->blocks[c], l->est[c], l->most_bytes[c],
                           l->most_blocks[c]);
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

// The summary's growth line where the trace held too few flush windows to judge growth
// (lifetime.h): what could not be judged, the windows and the span they had, and the setting
// that would judge it. A report that lists no growth must not read as "no growth" then.
static void text_judged_line(FILE *o, const nd_lifetimes_t *l) {
  const nd_life_judged_t *j = &l->judged;
  if (!j->known || j->judged) return;
  bool part = !strcmp(nd_life_judged_key(l), "part");
  fprintf(o, "  %-10s  %s", "growth", part ? "judged in part" : "not judged");
  if (j->by_births) fputs(" (blocks live at exit, by their births)", o);
  fprintf(o, ": only %llu flush %s in the ", (unsigned long long)j->windows,
          plural(j->windows, "window", "windows"));
  if (!j->cycles) fputs("last quarter (", o);
  nd_rep_print_secs(o, j->span_ns);
  fputs(j->cycles ? " of the steady state" : ") of a run without cycles", o);
  fprintf(o, ", %d needed%s; ", ND_LIFE_MIN_WINDOWS,
          part ? " for memory freed before exit and sites that also free" : "");
  if (j->flush_ms)
    fprintf(o, "run with NDMEM_FLUSH_MS=%llu to judge %s\n", (unsigned long long)j->flush_ms,
            part ? "them" : "it");
  else if (j->few_cycles)
    fprintf(o, "%llu %s: too few for any NDMEM_FLUSH_MS\n", (unsigned long long)j->cycles,
            plural(j->cycles, "cycle", "cycles"));
  else
    fputs("too short for any NDMEM_FLUSH_MS (10 ms at the least)\n", o);
}

static void print_pct(FILE *o, double f) { fprintf(o, "%.0f %%", f * 100); }

// The evidence lines of an entry: its growth (growing, released at teardown) or its plateau (a
// bounded cache, of the run's `cycles`), then when its blocks were born and whether the shim
// flagged it while the job ran.
static void text_life_evidence(FILE *o, const nd_life_t *e, uint64_t cycles) {
  bool est = e->samples > 0, most = est && e->most_grew; // growth is capped with the bytes
  if (e->cls == ND_LIFE_CACHE) {
    fputs("      reached ", o);
    print_bytes(o, e->flat_bytes, false);
    fprintf(o, " by cycle %llu of %llu (%.0f %%), flat since: %llu cycles",
            (unsigned long long)e->flat_from, (unsigned long long)cycles,
            100.0 * (double)e->flat_from / (double)cycles, (unsigned long long)e->flat_cycles);
    if (e->flat_windows)
      fprintf(o, ", %llu flush windows\n", (unsigned long long)e->flat_windows);
    else
      fputs(" (by its births)\n", o);
  }
  if (e->cls == ND_LIFE_GROWING || e->cls == ND_LIFE_TEARDOWN) {
    fputs("      +", o);
    if (e->per_cycles && e->grew_blocks) { // blocks: born, or kept until the teardown (exact)
      print_bytes(o, e->grew / e->grew_blocks, est);
      if (e->per_cycles > 1) fprintf(o, " per %llu cycles", (unsigned long long)e->per_cycles);
      else fputs(" per cycle", o);
      fprintf(o, " over %llu cycles", (unsigned long long)e->cycles);
    } else if (e->cycles) {
      print_amount(o, e->grew / e->cycles, est, most);
      fprintf(o, " per cycle over %llu cycles", (unsigned long long)e->cycles);
    } else if (e->cls == ND_LIFE_GROWING && e->secs > 0) {
      print_amount(o, e->grew, est, most);
      fprintf(o, " over %.3f s", e->secs);
    } else {
      print_amount(o, e->grew, est, most);
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
  fprintf(o, "#%-3zu %-8s ", rank, nd_rep_kind_names[e->kind]);
  if (e->cls == ND_LIFE_TEARDOWN) {
    print_amount(o, e->bytes, est, est && e->most_bytes);
    fputs(r->life.cycles ? " at the last cycle" : " before its teardown", o); // (no cycles)
  } else {
    text_bytes_blocks(o, e->bytes, e->blocks, est, e->most_bytes, e->most_blocks);
  }
  fprintf(o, "  [stack %u]\n", r->t->stacks[e->stack].id);
  if (e->samples)
    fprintf(o, "      estimate from %llu %s%s\n", (unsigned long long)e->samples,
            plural(e->samples, "sample", "samples"),
            !e->capped                  ? ""
            : e->cls == ND_LIFE_TEARDOWN ? ", lowered to the peak the exact counters show"
                                         : ", lowered to what the exact counters show live");
  text_life_evidence(o, e, r->life.cycles);
  return text_stack(o, r, e->stack);
}

static const char *const life_heads[ND_LIFE_CLASSES] = {
    "definitely lost: no pointer to it was left at exit",
    "indirectly lost: reached only from lost blocks",
    "growing: live bytes rose across the run",
    "released at teardown: grew during the run, freed only at exit",
    "live at exit: not freed, not growing (no reachability scan: not proven lost)",
    "bounded cache: grew, then held flat to the end (no finding)",
    "possibly lost", "still reachable", "held since start-up", "suppressed", "inherited at fork"};

// The classes in turn: growth first, then what was merely live at exit; start-up and suppressed
// memory fold into one line each.
static int text_lifetimes(FILE *o, report_t *r) {
  const nd_lifetimes_t *l = &r->life;
  size_t at = 0, rank = 0;
  bool any = false;
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    size_t n = l->entries[c], shown = nd_rep_list_len(r, n);
    if (!n) {
      at += n;
      continue;
    }
    any = true;
    if (!nd_life_folded(c)) fprintf(o, "\n== %s", life_heads[c]);
    else fprintf(o, "\n== %s: ", nd_life_names[c]);
    if (nd_life_folded(c)) {
      text_bytes_blocks(o, l->bytes[c], l->blocks[c], l->est[c], l->most_bytes[c],
                        l->most_blocks[c]);
      fprintf(o, " from %zu %s\n", n, plural(n, "stack", "stacks"));
      if (c == ND_LIFE_STARTUP) {
        fputs("   born before the steady state began (the first cycle, at ", o);
        nd_rep_print_secs(o, l->steady_ns);
        fputs(") and kept\n", o);
      }
      if (c == ND_LIFE_POSSIBLE)
        fputs("   reached only through pointers into blocks' middles (memcheck's possibly lost;\n"
              "   an object behind a header, as CPython's garbage-collected ones)\n", o);
      if (c == ND_LIFE_REACHABLE)
        fputs("   a pointer chain from the program's data, stacks or registers led to it at exit\n",
              o);
      if (c == ND_LIFE_INHERITED)
        fprintf(o, "   born in the parent (pid %llu) before the fork: its memory, not this "
                   "process's\n",
                (unsigned long long)r->t->hdr.ppid);
      // Suppressed: bytes and blocks per rule, in the order of their largest entry.
      for (size_t i = 0; c == ND_LIFE_SUPPRESSED && i < n; i++) {
        const char *rule = l->v[at + i].suppressed_by;
        bool seen = false, est = false, most_b = true, most_n = true;
        for (size_t j = 0; j < i && !seen; j++) seen = l->v[at + j].suppressed_by == rule;
        if (seen) continue; // its line came with its first entry
        uint64_t bytes = 0, blocks = 0, stacks = 0;
        for (size_t j = i; j < n; j++) {
          const nd_life_t *e = &l->v[at + j];
          if (e->suppressed_by != rule) continue;
          bytes += e->bytes, blocks += e->blocks, stacks++, est |= e->samples > 0;
          if (e->samples) most_b &= e->most_bytes, most_n &= e->most_blocks;
        }
        fprintf(o, "   %s: ", rule);
        text_bytes_blocks(o, bytes, blocks, est, most_b, most_n);
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
  // What the counters show live beyond the entries, and beyond every record: the blocks
  // --fail-on-leak cannot check (the figures of its stderr line, load.c)
  if (l->untracked_blocks || l->unrecorded_blocks) {
    const nd_trace_header_t *h = &r->t->hdr;
    any = true;
    if (l->untracked_blocks)
      fprintf(o, "\n== untracked: %llu small %s live at exit\n   are in no entry above: ",
              (unsigned long long)l->untracked_blocks,
              plural(l->untracked_blocks, "block", "blocks"));
    else
      fputs("\n== untracked: none beyond the estimates above\n   ", o);
    if (h->track_min) {
      fputs("blocks under ", o);
      print_bytes(o, h->track_min, false);
      fputs(" are sampled,\n   about 1 per ", o);
      print_bytes(o, h->sample_interval, false);
      fputs(" allocated.\n", o);
    } else {
      fputs("every block was to be tracked (NDMEM_TRACK_MIN=0).\n", o);
    }
    if (l->unrecorded_blocks) {
      fprintf(o, "   %llu heap %s live at exit, at most ", (unsigned long long)l->unrecorded_blocks,
              plural(l->unrecorded_blocks, "block", "blocks"));
      print_bytes(o, l->unrecorded_bytes, false);
      fprintf(o, ",\n   had no record: --fail-on-leak cannot check %s (exit status 3).\n",
              l->unrecorded_blocks == 1 ? "it" : "them");
    }
    if (h->track_min)
      fputs("   Run with --exact (NDMEM_TRACK_MIN=0) to list every block exactly.\n", o);
  }
  if (!any) fputs("\n== leaks at exit: none\n", o);
  return 0;
}

static void text_devices_line(FILE *o, const nd_trace_t *t);

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
            plural(p->stacks, "allocation", "allocations"));
    if (p->dropped)
      fprintf(o, t->has.py_depth ? "; %llu Python %s left out (past NDMEM_PY_DEPTH, or "
                                        "unreadable)"
                                      : "; %llu %s left out (the depth limit, or unreadable)",
              (unsigned long long)p->dropped, plural(p->dropped, "frame", "frames"));
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

static void text_summary(FILE *o, report_t *r);
void nd_rep_text_summary(FILE *o, report_t *r) { text_summary(o, r); }

// Resident growth beside flat tracked memory (analyse.c decides), in the user's words. Named
// retention/fragmentation only on the allocator's own account; without it, only what is known:
// the growth is outside what ndmem tracks. Never a leak: nothing says the memory is unreachable.
static void text_retention_line(FILE *o, const nd_retention_t *x) {
  if (x->cls == ND_RET_NONE || x->cls == ND_RET_PREVENTED) return; // the latter: below
  char g[48], k[48], f[48];
  nd_rep_human(g, sizeof g, x->resident_to - x->resident_from);
  nd_rep_human(k, sizeof k, x->tracked_to > 0 ? (uint64_t)x->tracked_to : 0);
  fprintf(o, "  %-10s  resident grew %s while tracked memory stayed at %s: ", "retention", g, k);
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

// The allocator that would have held what workspaces served, as the RESIDENT records name it.
static const char *effect_allocator(const nd_trace_t *t) {
  return t->have_resident && t->resident.allocator != ND_ALLOCATOR_UNKNOWN
             ? nd_rep_allocator_names[t->resident.allocator]
             : "the allocator";
}

// Version 10: what workspaces did to resident memory (analyse.c), beside the resident line it
// qualifies (`label`: "resident" when there is none).
static void text_ws_effect_line(FILE *o, const report_t *r, const char *label) {
  const nd_ws_effect_t *e = &r->ws_effect;
  if (!e->served && !e->held) return;
  char h[48], a[48];
  fprintf(o, "  %-10s  not the job's own: ", label);
  if (e->served) {
    nd_rep_human(h, sizeof h, e->hit_bytes);
    nd_rep_human(a, sizeof a, e->arena_bytes);
    fprintf(o, "%s never held the %llu %s (%s) that workspaces served from arenas of %s",
            effect_allocator(r->t), (unsigned long long)e->hits,
            plural(e->hits, "allocation", "allocations"), h, a);
  } else {
    fputs("workspaces served nothing, but ndmem's malloc_trim gave back freed memory while they "
          "looked for a cycle", o);
  }
  fputs(" (the job without them: ndmem run --no-workspaces)\n", o);
}

// Version 10: the job's own retention, measured with workspaces on: the largest fall of resident
// memory across one of ndmem's learning trims (the sum over them is only shown: analyse.c). Where
// workspaces then served the job, they prevented it (the verdict when resident memory did not
// grow, ND_RET_PREVENTED; said under the growth's verdict otherwise). `first`: no retention line
// above it (else it continues that one).
static void text_ws_retention_line(FILE *o, const report_t *r, bool first) {
  const nd_ws_effect_t *e = &r->ws_effect;
  if (!e->held) return;
  char s[48], m[48];
  nd_rep_human(s, sizeof s, e->trim_bytes);
  nd_rep_human(m, sizeof m, e->trim_max);
  const char *who = effect_allocator(r->t);
  fprintf(o, "  %-10s  ", first ? "retention" : "");
  if (e->served)
    fputs(first ? "prevented by workspaces: while they learned, "
                : "and prevented by workspaces in what they served: while they learned, ", o);
  fprintf(o, "%s held %s%s freed memory%s", who, e->trims > 1 ? "up to " : "", m,
          e->trims > 1 ? " at once" : "");
  if (!e->served) fputs(" while workspaces looked for a cycle", o);
  fputs(" (resident memory fell by that much across ndmem's malloc_trim", o);
  if (e->trims > 1) fprintf(o, "; %s in %llu trims", s, (unsigned long long)e->trims);
  fputs(e->served ? "); without ndmem expect allocator retention" : "): allocator retention, not a leak", o);
  fputs(" (ndmem run --no-workspaces measures it)\n", o);
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

static void text_summary(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  const nd_trace_header_t *h = &t->hdr;
  char buf[64];
  fputs("== summary\n", o);
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
    if (nd_rep_aborted(t)) fputs("no END record (aborted on a breach of a limit)", o);
    else if (!t->has.exit_record) fputs("no END record (killed, crashed or _exit)", o);
    else fputs("ended without an END record: killed (SIGKILL, the OOM killer) or crashed", o);
    if (r->running == ND_RUN_UNKNOWN && !nd_rep_aborted(t)) {
      fputs(", unless it still runs on ", o);
      nd_rep_print_text(o, t->host[0] ? t->host : "?");
      fputs(" (another host: not checked)", o);
    }
    fputs("; leaks cannot be known, live figures are at the last flush", o);
    if (!t->have_flush) fputs(" (there was none: the trace holds its header only)", o);
  }
  if (!t->ended && t->have_flush) {
    fprintf(o, " (#%llu at ", (unsigned long long)t->flush.seq);
    nd_rep_print_secs(o, t->flush.mono_ns > h->start_mono_ns ? t->flush.mono_ns - h->start_mono_ns : 0);
    fputc(')', o);
  }
  if (!t->ended) fputc('\n', o);
  text_trace_line(o, t);
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
  if (t->ended && !nd_rep_leaks_known(t)) {
    fputs("none reported (the process did not end on its own); tracked sites held ", o);
    print_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " at the end in %zu %s\n", r->nlive, plural(r->nlive, "site", "sites"));
  } else if (!t->ended) {
    fputs("unknown (no normal exit); tracked sites hold ", o);
    print_bytes(o, r->live_bytes, r->live_est);
    fprintf(o, " at the last flush in %zu %s\n", r->nlive, plural(r->nlive, "site", "sites"));
  } else {
    text_life_totals(o, &r->life);
    text_judged_line(o, &r->life);
  }
  nd_scan_text(o, t);
  if (t->nws || t->nescapes || t->escapes_dropped) text_ws_line(o, r);
  if (nd_rep_has_limits(t)) text_limits_line(o, t);
  if (nd_rep_has_devices(t)) text_devices_line(o, t);
  if (t->have_resident) { // version 8: what the process holds, beside what ndmem tracks
    fprintf(o, "  %-10s  anonymous resident memory: peak ", "resident");
    print_bytes(o, t->resident_peak, false);
    fputs(", at the last flush ", o);
    print_bytes(o, t->resident.anon_bytes, false);
    fputc('\n', o);
    text_ws_effect_line(o, r, "");
    text_retention_line(o, &r->retention);
  } else {
    text_ws_effect_line(o, r, "resident");
  }
  text_ws_retention_line(o, r, r->retention.cls == ND_RET_NONE || r->retention.cls == ND_RET_PREVENTED);
  if (t->have_python) text_python_line(o, t);
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
  fprintf(o, "#%-3zu %-8s ", rank, nd_rep_kind_names[x->kind]);
  if (by == BY_PEAK) {
    fputs("peak ", o);
    print_bytes(o, x->peak_live_bytes, est);
    fprintf(o, "  [stack %u]\n      total ", x->stack_id);
    print_bytes(o, x->alloc_bytes, est);
    fputs(" in ", o);
    text_allocs(o, x, e);
    fputs("; live ", o);
    print_bytes(o, nd_rep_site_live(x), est);
  } else if (by == BY_TOTAL) {
    fputs("total ", o);
    print_bytes(o, x->alloc_bytes, est);
    fprintf(o, "  [stack %u]\n      ", x->stack_id);
    text_allocs(o, x, e);
    fputs("; peak ", o);
    print_bytes(o, x->peak_live_bytes, est);
    fputs(", live ", o);
    print_bytes(o, nd_rep_site_live(x), est);
  } else {
    fputs("live ", o);
    print_bytes(o, nd_rep_site_live(x), est);
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

static void text_ws_name(FILE *o, const char *name, uint32_t tid) {
  fputc('[', o);
  nd_rep_print_text(o, name);
  fprintf(o, "] on thread %u", tid);
}

static void text_workspace(FILE *o, size_t rank, const nd_rec_workspace_t *w, bool served) {
  char ratio[64];
  nd_rep_format_ratio(ratio, sizeof ratio, w->plan_sum_bytes, w->plan_peak_bytes);
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
  if (!served) return; // the bytes it served, what its learning trims gave back (ws_served)
  fputs("      served ", o);
  print_bytes(o, w->hit_bytes, false);
  fprintf(o, "; learning trims %llu: resident memory fell by ", (unsigned long long)w->learn_trims);
  print_bytes(o, w->learn_trim_bytes, false);
  fputs(", at most ", o);
  print_bytes(o, w->learn_trim_max_bytes, false);
  fputs(" at once\n", o);
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
    for (size_t i = 0; i < t->nws; i++)
      text_workspace(o, i + 1, &t->ws[r->ws[i]], t->has.ws_served);
  }
  uint64_t nrec = nd_rep_esc_records(t);
  if (!nrec) {
    if (!r->o->brief && t->nws) fputs("\n== leaked workspace pointers: none\n", o);
    return 0;
  }
  size_t n = nd_rep_list_len(r, r->ngroups);
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
  fprintf(o, "  %-16s  ", nd_rep_limit_names[id]);
  if (limit) print_bytes(o, limit, false);
  else fputs(unread_limit(l, id) ? "none (asked for, but its value could not be read)" : "none", o);
  fprintf(o, "; peak %s ", id == ND_LIMIT_BYTES ? "tracked" : "physical");
  if (id == ND_LIMIT_PHYSICAL && !l->physical_reads) {
    fputs("not read\n", o);
    return;
  }
  print_bytes(o, peak, false);
  if (limit) {
    char pct[48];
    nd_rep_format_pct(pct, sizeof pct, peak, limit);
    fprintf(o, ", %s", pct);
  }
  fputc('\n', o);
}

// The limits in force, where their percentages came from, and the totals.
static void text_limit_settings(FILE *o, const nd_trace_t *t) {
  fputs("\n== limits\n", o);
  if (!t->have_limits) {
    fputs(nd_rep_device_limited(t)
              ? "  no host limits; the device limits are in the device memory view\n"
              : "  (no LIMITS record: the limits in force and the totals are unknown)\n",
          o);
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
  fprintf(o, "  %-16s  %s\n", "on limit", nd_rep_action_names[l->action]);
  fprintf(o, "  %-16s  of ", "percentages");
  if (nd_rep_pct_of_cgroup(l)) {
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
          nd_rep_limit_names[ND_LIMIT_BYTES], (unsigned long long)l->breaches[ND_LIMIT_BYTES],
          nd_rep_limit_names[ND_LIMIT_PHYSICAL], (unsigned long long)l->breaches[ND_LIMIT_PHYSICAL],
          (unsigned long long)l->failed, plural(l->failed, "allocation", "allocations"),
          l->flags & ND_LIMITS_ABORTED ? l->flags & ND_LIMITS_RETRY_LOOP ? "; stopped on a retry loop"
                                                                         : "; aborted on a breach"
                                       : "");
  fprintf(o, "  %-16s  %llu %s released ", "relief", (unsigned long long)l->reliefs,
          plural(l->reliefs, "run", "runs"));
  print_bytes(o, l->relief_bytes, false);
  fputs(" of workspace arenas\n", o);
  fprintf(o, "  %-16s  %llu\n", "physical reads", (unsigned long long)l->physical_reads);
  fprintf(o, "  %-16s  %llu taken; %llu in the trace", "snapshots",
          (unsigned long long)l->snapshots, (unsigned long long)t->snap_records);
  if (t->snap_records > t->nsnaps)
    fprintf(o, ", the first and the last %zu kept", t->nsnaps - 1);
  bool touched = t->has.limit_details && !(l->flags & ND_LIMITS_MAPPINGS_WHOLE);
  fprintf(o, "\n  %-16s  tracked = heap usable bytes + anonymous mmaps%s + workspace arenas; "
             "physical = anonymous resident memory (resident - shared)\n",
          "measures", touched ? " (of 4 MiB or more: their touched pages)" : "");
  if (touched && l->max_bytes) {
    fprintf(o, "  %-16s  ", "untouched");
    print_bytes(o, l->untouched, false);
    fputs(" of large mappings not counted at the last record\n", o);
  }
}

static int text_breach(FILE *o, report_t *r, size_t rank, const nd_breach_t *x) {
  const nd_trace_t *t = r->t;
  const nd_rec_breach_t *b = &x->rec;
  bool device = b->limit == ND_LIMIT_DEVICE;
  fprintf(o, "#%-3zu %s breach %llu at ", rank, nd_rep_limit_names[b->limit],
          (unsigned long long)b->count);
  nd_rep_print_secs(o, nd_rep_since_start(t, b->mono_ns));
  fprintf(o, " on thread %u: %s ", b->tid, nd_rep_breach_fn(b));
  bool growth = !device && (b->fn == 2 || b->fn == 3); // realloc, reallocarray: the growth
  fputs(growth ? "growing a block by " : "of ", o);
  print_bytes(o, b->requested, false);
  if (device) fprintf(o, " on device %u", b->device);
  static const char *const done[4] = {"failed", "allowed (warn)", "aborted the process",
                                      "served from host memory"};
  fprintf(o, " -> %s\n      %s ", done[b->action],
          device ? "device memory" : b->limit == ND_LIMIT_BYTES ? "tracked" : "physical");
  print_bytes(o, b->value, false);
  fputs(" before the call; limit ", o);
  print_bytes(o, b->limit_bytes, false);
  fputc('\n', o);
  if (b->flags & ND_BREACH_RETRY_LOOP) {
    fprintf(o, "      the thread was refused the same requests %llu times in a row over ",
            (unsigned long long)b->retries);
    nd_rep_print_secs(o, b->retry_ns);
    fputs(": the program cannot take the failure, so ndmem stopped it "
          "(NDMEM_LIMIT_RETRY_MS)\n", o);
  }
  return x->stack >= 0 ? text_stack(o, r, (uint32_t)x->stack) : 0;
}

// The logged breaches, with the refused request's stack where the trace has it (version 10);
// brief: the first one only.
static int text_breaches(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  uint64_t logged = nd_rep_sat_add(t->nbreaches, t->breaches_dropped);
  size_t n = r->o->brief ? (t->nbreaches ? 1 : 0) : nd_rep_list_len(r, t->nbreaches);
  if (r->o->brief && !n) return 0;
  if (!logged && !(t->have_limits && breaches_total(&t->limits))) {
    fputs("\n== limit breaches: none\n", o);
    return 0;
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
  for (size_t i = 0; i < n; i++)
    if (text_breach(o, r, i + 1, &t->breaches[i])) return -1;
  for (size_t i = n; i < t->nbreaches; i++) // the one that stopped the process, always
    if ((t->breaches[i].rec.flags & ND_BREACH_RETRY_LOOP) && text_breach(o, r, i + 1, &t->breaches[i]))
      return -1;
  return 0;
}

static int text_snapshot(FILE *o, report_t *r, const nd_snapshot_t *s) {
  const nd_trace_t *t = r->t;
  const nd_rec_snapshot_t *x = &s->rec;
  fprintf(o, "\n== snapshot %llu of %llu at ", (unsigned long long)s->seq,
          (unsigned long long)t->snap_records);
  nd_rep_print_secs(o, nd_rep_since_start(t, x->mono_ns));
  int lim = nd_rep_snap_limit(t, x);
  if (x->reason == ND_SNAP_WATERMARK) fputs(": the warning watermark was crossed\n", o);
  else fprintf(o, ": the first breach of %s\n", lim < 0 ? "a limit" : nd_rep_limit_names[lim]);
  fputs("  tracked ", o);
  print_bytes(o, x->tracked, false);
  fputs("; physical ", o);
  if (x->physical) print_bytes(o, x->physical, false);
  else fputs("not read", o);
  fprintf(o, "; %s ",
          x->reason == ND_SNAP_WATERMARK ? "watermark"
          : lim < 0                      ? "limit"
                                         : nd_rep_limit_names[lim]);
  print_bytes(o, x->threshold, false);
  bool est;
  uint64_t live = nd_rep_snap_live(s, &est);
  size_t n = nd_rep_list_len(r, s->nsites);
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
    fprintf(o, "#%-3zu %-8s live ", i + 1, nd_rep_kind_names[e->rec.kind]);
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

// ---------------------------------------------------------------- device memory

static void text_class(FILE *o, const char *name, const nd_rec_dev_class_t *c) {
  fprintf(o, "    %-14s %llu %s of ", name, (unsigned long long)c->allocs,
          plural(c->allocs, "allocation", "allocations"));
  print_bytes(o, c->alloc_bytes, false);
  fprintf(o, ", %llu %s of ", (unsigned long long)c->frees, plural(c->frees, "free", "frees"));
  print_bytes(o, c->free_bytes, false);
  fputc('\n', o);
}

// A device's workspace (version 11): what it served without the driver, and what it waited for.
static void text_dws(FILE *o, const nd_rec_device_ws_t *w) {
  char hit[48], arena[48], peak[48], sum[48];
  nd_rep_human(hit, sizeof hit, w->hit_bytes);
  nd_rep_human(arena, sizeof arena, w->arena_bytes);
  nd_rep_human(peak, sizeof peak, w->plan_peak_bytes);
  nd_rep_human(sum, sizeof sum, w->plan_sum_bytes);
  fprintf(o, "    workspace      %s, sync=%s, %s\n", nd_rep_dws_modes[w->mode],
          nd_rep_dws_syncs[w->sync], nd_rep_dws_streams[w->streams]);
  fprintf(o, "                   served %llu %s, %s, with no driver call\n",
          (unsigned long long)w->hits, plural(w->hits, "allocation", "allocations"), hit);
  fprintf(o, "                   arena %s (plan peak %s, sum %s)\n", arena, peak, sum);
  fprintf(o, "                   %llu %s (%llu learning, %llu relearned); %llu to the driver, "
             "%llu off the plan\n",
          (unsigned long long)w->cycles, plural(w->cycles, "cycle", "cycles"),
          (unsigned long long)w->learned_cycles, (unsigned long long)w->relearns,
          (unsigned long long)w->spills, (unsigned long long)w->deviations);
  fprintf(o, "    reuse waits    %llu at frees, %llu on the host, %llu on streams (%llu events)\n"
             "                   %llu outlived their cycle; %llu fallbacks\n",
          (unsigned long long)w->ctx_syncs, (unsigned long long)w->host_waits,
          (unsigned long long)w->stream_waits, (unsigned long long)w->fences,
          (unsigned long long)w->outlived, (unsigned long long)w->fallbacks);
}

// Device memory served from host memory (version 11): the device's totals, then its sites.
static int text_spill(FILE *o, report_t *r, int d) {
  const nd_trace_t *t = r->t;
  const nd_rec_device_spill_t *s = &t->spill_total[d];
  fprintf(o, "    from host      %llu %s, ", (unsigned long long)s->allocs,
          plural(s->allocs, "allocation", "allocations"));
  print_bytes(o, s->alloc_bytes, false);
  fprintf(o, "\n                   %llu over the limit, %llu on a full device (page-locked "
             "memory)\n                   peak ",
          (unsigned long long)s->over_limit, (unsigned long long)s->device_full);
  print_sbytes(o, s->peak_bytes);
  fputs(t->ended ? ", live at exit " : ", live ", o);
  print_sbytes(o, s->live_bytes);
  fputc('\n', o);
  size_t shown = 0;
  for (size_t i = 0; i < t->nspills; i++) {
    const nd_spill_site_t *x = &t->spills[r->spill_order[i]];
    if (x->rec.device != (uint32_t)d) continue;
    if (shown == nd_rep_list_len(r, SIZE_MAX)) break;
    fprintf(o, "    #%zu ", ++shown);
    print_bytes(o, x->rec.alloc_bytes, false);
    char peak[48];
    nd_rep_human(peak, sizeof peak, (uint64_t)x->rec.peak_bytes);
    fprintf(o, " in %llu %s, peak %s [stack %u]\n", (unsigned long long)x->rec.allocs,
            plural(x->rec.allocs, "allocation", "allocations"), peak, x->rec.stack_id);
    if (text_stack(o, r, (uint32_t)x->stack)) return -1;
  }
  return 0;
}

// Each device the hooks saw (exact, requested bytes), CUPTI's view beside it when it was
// recorded, and the hooks' own totals and fallbacks.
static int text_devices(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("\n== device memory (CUDA driver API)\n", o);
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1)) continue;
    const nd_rec_device_t *v = &t->devices[d];
    fprintf(o, "  device %d: ", d);
    if (v->total_bytes) print_bytes(o, v->total_bytes, false);
    else fputs("size not asked", o);
    if (v->limit_bytes) {
      fputs("; maxDeviceBytes ", o);
      print_bytes(o, v->limit_bytes, false);
    }
    fputs("\n    peak ", o);
    print_sbytes(o, v->peak_bytes);
    fputs(t->ended ? ", live at exit " : ", live at the last flush ", o);
    print_sbytes(o, v->live_bytes);
    fputc('\n', o);
    for (int k = 0; k < ND_DEV_CLASSES; k++)
      if (v->cls[k].allocs || v->cls[k].frees) text_class(o, nd_rep_dev_class_names[k], &v->cls[k]);
    if (v->cls[ND_DEV_ASYNC].allocs)
      fputs("    (stream-ordered: bytes handed out; a pool may hold more from the device)\n", o);
    if (v->getinfo_calls || v->limit_bytes)
      fprintf(o, "    cuMemGetInfo   %llu %s, %llu lowered to the limit\n",
              (unsigned long long)v->getinfo_calls, plural(v->getinfo_calls, "answer", "answers"),
              (unsigned long long)v->getinfo_clamped);
    if (v->limit_bytes || v->breaches)
      fprintf(o, "    breaches       %llu, %llu failed\n", (unsigned long long)v->breaches,
              (unsigned long long)v->failed);
    if (t->have_device_ws >> d & 1) text_dws(o, &t->device_ws[d]);
    if ((t->have_spill >> d & 1) && text_spill(o, r, d)) return -1;
    if (v->flags & ND_DEV_CUPTI) {
      char why[256];
      bool differs = nd_rep_cupti_differs(v, why, sizeof why);
      fprintf(o, "    CUPTI          %s\n", differs ? "DIFFERS from the hooks:" : "agrees with the hooks");
      if (differs) fprintf(o, "      %s\n", why);
      text_class(o, "CUPTI device", &v->cupti);
      if (v->cupti_pool.allocs) text_class(o, "CUPTI pools", &v->cupti_pool);
      if (v->cupti_pool_reserved_peak) {
        fputs("    pools reserve  ", o);
        print_bytes(o, v->cupti_pool_reserved, false);
        fputs(" now, peak ", o);
        print_bytes(o, v->cupti_pool_reserved_peak, false);
        fputc('\n', o);
      }
      if (v->cupti_dropped)
        fprintf(o, "    CUPTI dropped %llu records: its totals are short\n",
                (unsigned long long)v->cupti_dropped);
    }
  }
  if (!t->have_cuda) return 0;
  const nd_rec_cuda_t *c = &t->cuda;
  const char *torch = nd_rep_torch_text(t);
  if (torch) fprintf(o, "  %s\n", torch);
  fputs("  hooks:", o);
  for (int f = 0; f < ND_CUDA_FN_USED; f++)
    if (c->calls[f]) fprintf(o, " %s=%llu", nd_rep_cuda_fn_names[f], (unsigned long long)c->calls[f]);
  fprintf(o, "\n  lookups answered with a hook: %llu by dlsym, %llu by cuGetProcAddress\n",
          (unsigned long long)c->answered_dlsym, (unsigned long long)c->answered_proc);
  fprintf(o, "  fallbacks: %llu lookups not hooked, %llu releases of memory not seen allocated, "
             "%llu allocations without a stack\n",
          (unsigned long long)c->unhooked, (unsigned long long)c->unknown_frees,
          (unsigned long long)c->untracked);
  return 0;
}

// The summary's line about device memory.
static void text_devices_line(FILE *o, const nd_trace_t *t) {
  fprintf(o, "  %-10s  ", "devices");
  int n = 0;
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1)) continue;
    const nd_rec_device_t *v = &t->devices[d];
    fprintf(o, "%sdevice %d peak ", n++ ? "; " : "", d);
    print_sbytes(o, v->peak_bytes);
    fputs(", live ", o);
    print_sbytes(o, v->live_bytes);
    if (v->breaches) fprintf(o, ", %llu %s", (unsigned long long)v->breaches, plural(v->breaches, "breach", "breaches"));
    if (t->have_device_ws >> d & 1) {
      fprintf(o, ", workspace served %llu", (unsigned long long)t->device_ws[d].hits);
    }
    if (t->have_spill >> d & 1) {
      fputs(", from host ", o);
      print_bytes(o, t->spill_total[d].alloc_bytes, false);
    }
    if (nd_rep_cupti_differs(v, NULL, 0)) fputs(", CUPTI differs", o);
  }
  if (!n) fputs("CUDA loaded, no device memory allocated", o);
  fputc('\n', o);
}

// The limits view: the limits and totals (unless only the brief report's first breach is
// wanted), the logged breaches, and the kept snapshots (unless brief).
static int text_limits(FILE *o, report_t *r, bool settings) {
  const nd_trace_t *t = r->t;
  if (settings) text_limit_settings(o, t);
  if (text_breaches(o, r)) return -1;
  if (r->o->brief) return 0;
  if (!t->nsnaps) fputs("\n== snapshots: none\n", o);
  for (size_t i = 0; i < t->nsnaps; i++)
    if (text_snapshot(o, r, t->snaps[i])) return -1;
  return 0;
}

static int text_main(FILE *o, report_t *r);
static int text_report(FILE *o, report_t *r);

// The text report through the 80-column stream (as it is where that cannot be made).
int nd_rep_text_report_80(FILE *out, report_t *r) {
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
      if (t->nws || nd_rep_esc_records(t)) text_ws_line(o, r);
      else fprintf(o, "  %-10s  none recorded\n", "workspaces");
      text_ws_effect_line(o, r, "resident"); // version 10: what they did to resident memory
      text_ws_retention_line(o, r, true);
    }
    if (r->o->limits) {
      if (nd_rep_has_limits(t)) text_limits_line(o, t);
      else fprintf(o, "  %-10s  none recorded\n", "limits");
    }
    if (r->o->workspaces && text_workspaces(o, r)) return -1;
    return r->o->limits && nd_rep_has_limits(t) ? text_limits(o, r, true) : 0;
  }
  if (text_main(o, r) || text_workspaces(o, r)) return -1;
  if (nd_rep_has_devices(t) && !r->o->brief && text_devices(o, r)) return -1;
  return nd_rep_has_limits(t) ? text_limits(o, r, !r->o->brief) : 0;
}

// The summary, the site lists (unless brief), and the leaks or, without a normal exit, the sites
// live at the last flush.
// The sites the shim named growing while the job ran (GROWTH records): the evidence that remains
// when the job did not end normally, and a note of growth that was later released.
static int text_growth(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  size_t n = nd_rep_list_len(r, t->ngrowth);
  uint64_t all = t->ngrowth + t->growth_dropped;
  fprintf(o, "\n== found growing while the job ran: %llu %s\n", (unsigned long long)all,
          plural(all, "site", "sites"));
  for (size_t i = 0; i < n; i++) {
    const nd_rec_growth_t *g = &t->growth[i].rec;
    bool est = g->flags & ND_SITE_SAMPLED, most_base, most_floor;
    uint64_t base = nd_rep_peak_cap(t, g->kind, g->base_bytes, est, &most_base);
    uint64_t lowest = nd_rep_peak_cap(t, g->kind, g->floor_bytes, est, &most_floor);
    fprintf(o, "#%-3zu %-8s ", i + 1, nd_rep_kind_names[g->kind]);
    print_amount(o, base, est, most_base);
    fputs(" -> ", o);
    print_amount(o, lowest, est, most_floor);
    fprintf(o, " at its lowest  [stack %u]\n      ", g->stack_id);
    if (g->cycle > g->base_cycle)
      fprintf(o, "cycles %llu to %llu", (unsigned long long)g->base_cycle,
              (unsigned long long)g->cycle);
    else
      fputs("no cycles", o);
    fputs(", named at ", o);
    nd_rep_print_secs(o, nd_rep_since_start(t, g->mono_ns));
    fprintf(o, "; rose in %llu flush windows\n", (unsigned long long)g->rises);
    if (text_stack(o, r, t->growth[i].stack)) return -1;
  }
  return 0;
}

// The sites grouped by their innermost Python frame (version 7), by bytes allocated.
static void text_py_lines(FILE *o, report_t *r) {
  size_t n = nd_rep_list_len(r, r->npy_lines);
  fprintf(o, "\n== top %zu Python lines by total bytes (of %zu %s)\n", n, r->npy_lines,
          plural(r->npy_lines, "line", "lines"));
  for (size_t i = 0; i < n; i++) {
    const py_line_t *l = &r->py_lines[i];
    const char *e = l->est ? "~" : "";
    fprintf(o, "#%-3zu total ", i + 1);
    print_bytes(o, l->alloc_bytes, l->est);
    fprintf(o, "  [%llu %s]\n      %s%llu %s; live ", (unsigned long long)l->sites,
            plural(l->sites, "site", "sites"), e, (unsigned long long)l->allocs,
            plural(l->allocs, "allocation", "allocations"));
    print_bytes(o, l->live_bytes, l->est);
    fputc('\n', o);
    nd_wrap_raw(o, r->wrap, true); // the location whole, as the frame it is
    fputs("      #0  ", o);
    text_pyloc(o, l->code->qualname, l->code->filename, l->line);
    fputc('\n', o);
    nd_wrap_raw(o, r->wrap, false);
  }
}

static int text_main(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  text_summary(o, r);
  if (!r->o->brief) {
    size_t n = nd_rep_list_len(r, t->nsites);
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
    if (r->npy_lines) text_py_lines(o, r);
  }
  if (t->ngrowth && text_growth(o, r)) return -1;
  if (nd_rep_leaks_known(t)) {
    return text_lifetimes(o, r);
  } else {
    size_t n = nd_rep_list_len(r, r->nlive);
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

