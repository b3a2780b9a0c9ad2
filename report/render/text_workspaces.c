// SPDX-License-Identifier: MIT
// text_workspaces.c: workspaces in the text report (text.h): the summary's workspaces line and
// what workspaces did to resident memory, then the workspaces view: each workspace, then the
// leaked workspace pointers by (workspace, stack).
#include "render/text.h"

#include <stdlib.h>
#include <string.h>

// The summary's line about workspaces.
void nd_text_ws_line(FILE *o, const report_t *r) {
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
            nd_text_plural(nd_rep_esc_records(t), "pointer", "pointers"));
}

// The allocator that would have held what workspaces served, as the RESIDENT records name it.
static const char *effect_allocator(const nd_trace_t *t) {
  return t->have_resident && t->resident.allocator != ND_ALLOCATOR_UNKNOWN
             ? nd_rep_allocator_names[t->resident.allocator]
             : "the allocator";
}

// Version 10: what workspaces did to resident memory (analyse.c), beside the resident line it
// qualifies (`label`: "resident" when there is none).
void nd_text_ws_effect_line(FILE *o, const report_t *r, const char *label) {
  const nd_ws_effect_t *e = &r->ws_effect;
  if (!e->served && !e->held) return;
  char h[48], a[48];
  fprintf(o, "  %-10s  not the job's own: ", label);
  if (e->served) {
    nd_rep_human(h, sizeof h, e->hit_bytes);
    nd_rep_human(a, sizeof a, e->arena_bytes);
    // The records carry the arenas mapped at their writing: none when relief near a limit (or
    // the end) released them all, never an arena of 0 B that served anything.
    fprintf(o, "%s never held the %llu %s (%s) that workspaces served from arenas%s%s",
            effect_allocator(r->t), (unsigned long long)e->hits,
            nd_text_plural(e->hits, "allocation", "allocations"), h,
            e->arena_bytes ? " of " : " released since", e->arena_bytes ? a : "");
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
void nd_text_ws_retention_line(FILE *o, const report_t *r, bool first) {
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
  fputs(e->served ? "); without ndmem expect allocator retention"
                  : "): allocator retention, not a leak",
        o);
  fputs(" (ndmem run --no-workspaces measures it)\n", o);
}

// Version 15: the workspace saving (analyse.c, ws_saving), with what it rests on. One sentence
// for the text, the HTML page's workspaces view and the JSON's "saving" wording alike.
static void human_bytes(FILE *o, uint64_t v, bool est) {
  char b[48];
  (void)est;
  fputs(nd_rep_human(b, sizeof b, v), o);
}

void nd_text_ws_saving_line(FILE *o, const report_t *r) {
  if (!r->ws_effect.saving_known) return;
  fprintf(o, "  %-10s  ", "saving");
  nd_rep_ws_saving(o, r, human_bytes);
  fputc('\n', o);
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
  char arena[ND_TEXT_SIZE], peak[ND_TEXT_SIZE], sum[ND_TEXT_SIZE], spilled[ND_TEXT_SIZE],
      pinned[ND_TEXT_SIZE];
  nd_text_size(arena, w->arena_bytes, false);
  nd_text_size(spilled, w->spill_bytes, false);
  fprintf(o, "%s; learned plan peak live %s, sum %s; sum/peak %s%s\n", arena,
          nd_text_size(peak, w->plan_peak_bytes, false),
          nd_text_size(sum, w->plan_sum_bytes, false), ratio, w->plan_peak_bytes ? "x" : "");
  fprintf(o, "      hits %llu; spills %llu, %s; escapes %llu\n", (unsigned long long)w->hits,
          (unsigned long long)w->spills, spilled, (unsigned long long)w->escapes);
  fprintf(o, "      ND4J: allocated %s / external (spilled) %s / external (pinned) %s\n", arena,
          spilled, nd_text_size(pinned, w->pinned_bytes, false));
  if (w->outlived) // only automatic workspaces have them (and only traces of version 5)
    fprintf(o,
            "      outlived %llu (kept valid, no longer routed)\n"
            "      ndmem's misprediction of the automatic cycle, not the program's error\n",
            (unsigned long long)w->outlived);
  if (!served) return; // the bytes it served, what its learning trims gave back (ws_served)
  char served_b[ND_TEXT_SIZE], fell[ND_TEXT_SIZE], most[ND_TEXT_SIZE];
  fprintf(o,
          "      served %s; learning trims %llu: resident memory fell by %s, at most %s at once\n",
          nd_text_size(served_b, w->hit_bytes, false), (unsigned long long)w->learn_trims,
          nd_text_size(fell, w->learn_trim_bytes, false),
          nd_text_size(most, w->learn_trim_max_bytes, false));
}

static int text_esc_group(FILE *o, report_t *r, size_t rank, const esc_group_t *g) {
  const nd_ws_escape_t *e = &r->t->escapes[g->first];
  fprintf(o, "#%-3zu ", rank);
  text_ws_name(o, e->rec.name, e->rec.tid);
  fprintf(o, ": %llu %s, ", (unsigned long long)g->count,
          nd_text_plural(g->count, "escape", "escapes"));
  nd_text_bytes(o, g->bytes, false);
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
  return nd_text_placed_stack(o, r, e->stack);
}

// The workspaces view: every workspace (unless brief), then the leaked workspace pointers.
int nd_text_workspaces(FILE *o, report_t *r) {
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
          nd_text_plural(t->nescapes, "block", "blocks"));
  nd_text_bytes(o, r->esc_bytes, false);
  fprintf(o, ", from %zu (workspace, stack) %s", r->ngroups,
          nd_text_plural(r->ngroups, "pair", "pairs"));
  nd_rep_not_kept(o, t->escapes_dropped, ND_TRACE_MAX_ESCAPES);
  if (n < r->ngroups) fprintf(o, "; top %zu", n);
  fputc('\n', o);
  for (size_t i = 0; i < n; i++)
    if (text_esc_group(o, r, i + 1, &r->groups[r->group_order[i]])) return -1;
  return 0;
}
