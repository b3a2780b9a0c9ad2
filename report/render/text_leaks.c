// SPDX-License-Identifier: MIT
// text_leaks.c: what was live at exit in the text report (text.h), by lifetime class
// (lifetime.h): the summary's leaks and growth-judged lines, then each class with its entries,
// their evidence and stacks, and what the counters show live beyond every record.
#include "render/text.h"

#include <stdlib.h>
#include <string.h>

static void text_bytes_blocks(FILE *o, uint64_t bytes, uint64_t blocks, bool est, bool most_bytes,
                              bool most_blocks) {
  nd_text_amount(o, bytes, est, est && most_bytes);
  fprintf(o, " in %s%llu %s", est && most_blocks ? "at most " : est ? "~" : "",
          (unsigned long long)blocks, nd_text_plural(blocks, "block", "blocks"));
}

// The summary's leaks line: one line per class present, growth first; "none" when nothing was.
void nd_text_life_totals(FILE *o, const nd_lifetimes_t *l) {
  bool any = false;
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    if (!l->entries[c]) continue;
    if (any) fprintf(o, "  %-10s  ", "");
    fprintf(o, "%s ", nd_life_names[c]);
    if (c == ND_LIFE_TEARDOWN) nd_text_amount(o, l->bytes[c], l->est[c], l->most_bytes[c]);
    else text_bytes_blocks(o, l->bytes[c], l->blocks[c], l->est[c], l->most_bytes[c],
                           l->most_blocks[c]);
    fprintf(o, " (%llu %s)\n", (unsigned long long)l->entries[c],
            nd_text_plural(l->entries[c], "stack", "stacks"));
    any = true;
  }
  if (l->untracked_blocks) {
    if (any) fprintf(o, "  %-10s  ", "");
    fprintf(o, "untracked %llu small %s live at exit (see below)\n",
            (unsigned long long)l->untracked_blocks,
            nd_text_plural(l->untracked_blocks, "block", "blocks"));
    any = true;
  }
  if (!any) fputs("none\n", o);
}

// The summary's growth line where the trace held too few flush windows to judge growth
// (lifetime.h): what could not be judged, the windows and the span they had, and the setting
// that would judge it. A report that lists no growth must not read as "no growth" then.
void nd_text_judged_line(FILE *o, const nd_lifetimes_t *l) {
  const nd_life_judged_t *j = &l->judged;
  if (!j->known || j->judged) return;
  bool part = !strcmp(nd_life_judged_key(l), "part");
  fprintf(o, "  %-10s  %s", "growth", part ? "judged in part" : "not judged");
  if (j->by_births) fputs(" (blocks live at exit, by their births)", o);
  fprintf(o, ": only %llu flush %s in the ", (unsigned long long)j->windows,
          nd_text_plural(j->windows, "window", "windows"));
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
            nd_text_plural(j->cycles, "cycle", "cycles"));
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
    nd_text_bytes(o, e->flat_bytes, false);
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
      nd_text_bytes(o, e->grew / e->grew_blocks, est);
      if (e->per_cycles > 1) fprintf(o, " per %llu cycles", (unsigned long long)e->per_cycles);
      else fputs(" per cycle", o);
      fprintf(o, " over %llu cycles", (unsigned long long)e->cycles);
    } else if (e->cycles) {
      nd_text_amount(o, e->grew / e->cycles, est, most);
      fprintf(o, " per cycle over %llu cycles", (unsigned long long)e->cycles);
    } else if (e->cls == ND_LIFE_GROWING && e->secs > 0) {
      nd_text_amount(o, e->grew, est, most);
      fprintf(o, " over %.3f s", e->secs);
    } else {
      nd_text_amount(o, e->grew, est, most);
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
    nd_text_amount(o, e->bytes, est, est && e->most_bytes);
    fputs(r->life.cycles ? " at the last cycle" : " before its teardown", o); // (no cycles)
  } else {
    text_bytes_blocks(o, e->bytes, e->blocks, est, e->most_bytes, e->most_blocks);
  }
  fprintf(o, "  [stack %u]\n", r->t->stacks[e->stack].id);
  if (e->samples)
    fprintf(o, "      estimate from %llu %s%s\n", (unsigned long long)e->samples,
            nd_text_plural(e->samples, "sample", "samples"),
            !e->capped                  ? ""
            : e->cls == ND_LIFE_TEARDOWN ? ", lowered to the peak the exact counters show"
                                         : ", lowered to what the exact counters show live");
  text_life_evidence(o, e, r->life.cycles);
  return nd_text_placed_stack(o, r, e->stack);
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
int nd_text_lifetimes(FILE *o, report_t *r) {
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
      fprintf(o, " from %zu %s\n", n, nd_text_plural(n, "stack", "stacks"));
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
        fprintf(o, " from %llu %s\n", (unsigned long long)stacks,
                nd_text_plural(stacks, "stack", "stacks"));
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
    // Two counts of one thing: the blocks without a record of their own (unrecorded), of
    // which the sampled entries above estimate the most; what no estimate covers (untracked)
    if (l->untracked_blocks)
      fprintf(o, "\n== untracked: %llu small %s live at exit in no entry above\n   ",
              (unsigned long long)l->untracked_blocks,
              nd_text_plural(l->untracked_blocks, "block", "blocks"));
    else
      fputs("\n== untracked: none beyond the estimates above\n   ", o);
    if (h->track_min) {
      char under[ND_TEXT_SIZE], every[ND_TEXT_SIZE];
      fprintf(o, "Blocks under %s are sampled, about 1 per %s allocated:\n   only the sampled "
                 "ones have a record, and the entries above scale them (~).\n",
              nd_text_size(under, h->track_min, false),
              nd_text_size(every, h->sample_interval, false));
    } else {
      fputs("Every block was to be tracked (NDMEM_TRACK_MIN=0).\n", o);
    }
    if (l->unrecorded_blocks) {
      fprintf(o, "   %llu heap %s live at exit (at most ", (unsigned long long)l->unrecorded_blocks,
              nd_text_plural(l->unrecorded_blocks, "block", "blocks"));
      nd_text_bytes(o, l->unrecorded_bytes, false);
      fprintf(o, ") had no record of %s own, the %llu above among them:\n"
                 "   --fail-on-leak cannot check %s (exit status 3).\n",
              l->unrecorded_blocks == 1 ? "its" : "their",
              (unsigned long long)l->untracked_blocks,
              l->unrecorded_blocks == 1 ? "it" : "them");
    }
    if (h->track_min)
      fputs("   Run with --exact (NDMEM_TRACK_MIN=0) to list every block exactly.\n", o);
  }
  if (!any) fputs("\n== leaks at exit: none\n", o);
  return 0;
}
