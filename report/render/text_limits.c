// SPDX-License-Identifier: MIT
// text_limits.c: limits in the text report (text.h): the summary's limits line, then the limits
// view: the limits in force and their totals, the logged breaches with the refused requests'
// stacks and why each could be refused, the requests admitted over the limits (how much, from
// where), and the snapshots of live memory by site taken at the watermark and at breaches.
#include "render/text.h"

#include "analyse/frames.h"
#include "analyse/place.h"

#include <stdlib.h>
#include <string.h>

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

// "maxBytes 64.00 MiB (peak tracked 63.99 MiB, 99.9 %)" or "maxBytes none". maxPhysicalBytes'
// peak is the report's one peak of resident memory (nd_trace_t.resident_peak), as the resident
// line says it: "maxPhysicalBytes 200.00 MiB (peak resident 228.74 MiB, 114.4 %)".
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
  fprintf(o, "%s (peak %s %s, %s)", a, id == ND_LIMIT_BYTES ? "tracked" : "resident", b, pct);
}

// The summary's line about limits.
void nd_text_limits_line(FILE *o, const nd_trace_t *t) {
  fprintf(o, "  %-10s  ", "limits");
  if (!t->have_limits) {
    uint64_t nb = nd_rep_sat_add(t->nbreaches, t->breaches_dropped);
    fprintf(o, "%s; %llu logged %s, %llu %s\n",
            nd_rep_device_limited(t) ? "device limits only" : "no LIMITS record",
            (unsigned long long)nb, nd_text_plural(nb, "breach", "breaches"),
            (unsigned long long)t->snap_records,
            nd_text_plural(t->snap_records, "snapshot", "snapshots"));
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
  text_limit_short(o, ND_LIMIT_PHYSICAL, l->max_physical_bytes, t->resident_peak);
  if (unread_limit(l, ND_LIMIT_PHYSICAL)) fputs(" (its value could not be read)", o);
  nd_rep_human(h, sizeof h, l->warn_at);
  if (l->warn_at) fprintf(o, "; warn at %s", h);
  else fputs("; no warning watermark", o);
  fprintf(o, "; on limit %s", nd_rep_action_names[l->action]);
  uint64_t nb = breaches_total(l);
  if (nb)
    fprintf(o, "; %llu %s, %llu %s failed", (unsigned long long)nb,
            nd_text_plural(nb, "breach", "breaches"), (unsigned long long)l->failed,
            nd_text_plural(l->failed, "allocation", "allocations"));
  else
    fputs("; no breaches", o);
  if (l->flags & ND_LIMITS_ABORTED) fprintf(o, "; %s", stopped_how(l));
  uint64_t adm = nd_rep_admitted_total(t);
  if (adm) {
    uint64_t bytes = 0;
    for (int s = 0; s < ND_TRACE_ADMIT_SLOTS; s++)
      if (t->have_admitted >> s & 1) bytes = nd_rep_sat_add(bytes, t->admitted[s].bytes);
    nd_rep_human(h, sizeof h, bytes);
    fprintf(o, "; %llu %s admitted over them (%s)", (unsigned long long)adm,
            nd_text_plural(adm, "request", "requests"), h);
  }
  fputc('\n', o);
}

// "  maxBytes          64.00 MiB (67108864 B); peak tracked 63.99 MiB (67098214 B), 99.9 %"
static void text_limit_full(FILE *o, const nd_trace_t *t, int id) {
  const nd_rec_limits_t *l = &t->limits;
  uint64_t limit = id == ND_LIMIT_BYTES ? l->max_bytes : l->max_physical_bytes;
  uint64_t peak = id == ND_LIMIT_BYTES ? l->peak_tracked : t->resident_peak;
  fprintf(o, "  %-16s  ", nd_rep_limit_names[id]);
  if (limit) nd_text_bytes(o, limit, false);
  else fputs(unread_limit(l, id) ? "none (asked for, but its value could not be read)" : "none", o);
  fprintf(o, "; peak %s ", id == ND_LIMIT_BYTES ? "tracked" : "resident");
  if (id == ND_LIMIT_PHYSICAL && !t->have_resident_peak) {
    fputs("not read\n", o);
    return;
  }
  nd_text_bytes(o, peak, false);
  if (limit) {
    char pct[48];
    nd_rep_format_pct(pct, sizeof pct, peak, limit);
    fprintf(o, ", %s", pct);
  }
  fputc('\n', o);
}

// The last refused request (version 16), first: what, when, the program's line that asked, how
// many were refused in all, and how soon the process ended after it where that end is named with
// it (nd_rep_end_after_refusal).
static int text_last_refusal(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!t->have_refusal) return 0;
  fprintf(o, "  %-16s  ", "refused last");
  nd_rep_refusal_words(o, t, nd_text_bytes);
  if (t->refusal_stack >= 0) {
    nd_rep_place_t p;
    if (nd_rep_place(r, (uint32_t)t->refusal_stack, &p)) return -1;
    sbuf_t b = {0};
    if (nd_rep_place_text(&b, &p)) return -1;
    fputs(", at ", o);
    nd_rep_print_text(o, b.p);
    free(b.p);
  } else {
    fputs(" (its stack was not recorded)", o);
  }
  fprintf(o, "; %llu %s refused in all", (unsigned long long)t->refusal.refusals,
          nd_text_plural(t->refusal.refusals, "request", "requests"));
  uint64_t since;
  if (nd_rep_end_after_refusal(t, &since)) {
    fputs("; the process ended ", o);
    nd_rep_end_words(o, t);
    fputc(' ', o);
    nd_rep_print_secs(o, since);
    fputs(" after it", o);
  }
  fputc('\n', o);
  return 0;
}

// The limits in force, where their percentages came from, and the totals.
static void text_limit_settings(FILE *o, const nd_trace_t *t) {
  if (!t->have_limits) {
    fputs(nd_rep_device_limited(t)
              ? "  no host limits; the device limits are in the device memory view\n"
              : "  (no LIMITS record: the limits in force and the totals are unknown)\n",
          o);
    return;
  }
  const nd_rec_limits_t *l = &t->limits;
  text_limit_full(o, t, ND_LIMIT_BYTES);
  text_limit_full(o, t, ND_LIMIT_PHYSICAL);
  fprintf(o, "  %-16s  ", "warn at");
  if (l->warn_at) {
    nd_text_bytes(o, l->warn_at, false);
    fputs(" physical\n", o);
  } else {
    fputs("none\n", o);
  }
  fprintf(o, "  %-16s  %s\n", "on limit", nd_rep_action_names[l->action]);
  fprintf(o, "  %-16s  of ", "percentages");
  if (nd_rep_pct_of_cgroup(l)) {
    fputs("the cgroup limit ", o);
    nd_text_bytes(o, l->cgroup_bytes, false);
    fputs(", smaller than RAM ", o);
    nd_text_bytes(o, l->ram_bytes, false);
  } else {
    fputs("RAM ", o);
    nd_text_bytes(o, l->ram_bytes, false);
    if (l->cgroup_bytes) {
      fputs("; cgroup limit ", o);
      nd_text_bytes(o, l->cgroup_bytes, false);
    } else {
      fputs("; no cgroup limit", o);
    }
  }
  fprintf(o, "\n  %-16s  %s %llu, %s %llu; %llu %s failed%s\n", "breaches",
          nd_rep_limit_names[ND_LIMIT_BYTES], (unsigned long long)l->breaches[ND_LIMIT_BYTES],
          nd_rep_limit_names[ND_LIMIT_PHYSICAL], (unsigned long long)l->breaches[ND_LIMIT_PHYSICAL],
          (unsigned long long)l->failed, nd_text_plural(l->failed, "allocation", "allocations"),
          l->flags & ND_LIMITS_ABORTED ? l->flags & ND_LIMITS_RETRY_LOOP
                                             ? "; stopped on a retry loop"
                                             : "; aborted on a breach"
                                       : "");
  fprintf(o, "  %-16s  %llu %s released ", "relief", (unsigned long long)l->reliefs,
          nd_text_plural(l->reliefs, "run", "runs"));
  nd_text_bytes(o, l->relief_bytes, false);
  fputs(" of workspace arenas\n", o);
  fprintf(o, "  %-16s  %llu\n", "physical reads", (unsigned long long)l->physical_reads);
  fprintf(o, "  %-16s  %llu taken; %llu in the trace", "snapshots",
          (unsigned long long)l->snapshots, (unsigned long long)t->snap_records);
  if (t->snap_records > t->nsnaps)
    fprintf(o, ", the first and the last %zu kept", t->nsnaps - 1);
  bool touched = t->has.limit_details && !(l->flags & ND_LIMITS_MAPPINGS_WHOLE);
  fprintf(o, "\n  %-16s  tracked = heap usable bytes + anonymous mmaps%s + workspace arenas; "
             "physical = anonymous resident memory (resident - shared), its peak (peak "
             "resident) the highest of every reading, limit checks' and flushes'\n",
          "measures", touched ? " (of 4 MiB or more: their touched pages)" : "");
  if (touched && l->max_bytes) {
    fprintf(o, "  %-16s  ", "untouched");
    nd_text_bytes(o, l->untouched, false);
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
  nd_text_bytes(o, b->requested, false);
  if (device) fprintf(o, " on device %u", b->device);
  static const char *const done[4] = {"failed", "allowed (warn)", "aborted the process",
                                      "served from host memory"};
  fprintf(o, " -> %s\n", done[b->action]);
  if (x->stack >= 0 && nd_text_place(o, r, (uint32_t)x->stack, false)) return -1;
  fprintf(o, "      %s ", device ? "device memory" : b->limit == ND_LIMIT_BYTES ? "tracked" : "physical");
  nd_text_bytes(o, b->value, false);
  fputs(" before the call; limit ", o);
  nd_text_bytes(o, b->limit_bytes, false);
  fputc('\n', o);
  if (b->flags & ND_BREACH_WHY) { // version 16: why it could be refused
    char why[256];
    fprintf(o, "      refusable: %s\n", nd_rep_breach_why(b, why, sizeof why));
  }
  if (b->flags & ND_BREACH_RETRY_LOOP) {
    fprintf(o, "      the thread was refused the same requests %llu times in a row over ",
            (unsigned long long)b->retries);
    nd_rep_print_secs(o, b->retry_ns);
    fputs(": the program cannot take the failure, so ndmem stopped it "
          "(NDMEM_LIMIT_RETRY_MS)\n", o);
  }
  return x->stack >= 0 ? nd_text_stack(o, r, (uint32_t)x->stack) : 0;
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
    fprintf(o, "%llu %s, ", (unsigned long long)n_all, nd_text_plural(n_all, "breach", "breaches"));
  }
  fprintf(o, "%llu logged (the 1st, 2nd, 4th, 8th, ... of each limit)", (unsigned long long)logged);
  nd_rep_not_kept(o, t->breaches_dropped, ND_TRACE_MAX_BREACHES);
  if (n < t->nbreaches) fprintf(o, "; first %zu", n);
  fputc('\n', o);
  for (size_t i = 0; i < n; i++)
    if (text_breach(o, r, i + 1, &t->breaches[i])) return -1;
  for (size_t i = n; i < t->nbreaches; i++) // the one that stopped the process, always
    if ((t->breaches[i].rec.flags & ND_BREACH_RETRY_LOOP) &&
        text_breach(o, r, i + 1, &t->breaches[i]))
      return -1;
  return 0;
}

// "      from PLACE" (analyse/place.h): where an admitted request came from.
static int text_from(FILE *o, report_t *r, uint32_t stack) {
  nd_rep_place_t p;
  if (nd_rep_place(r, stack, &p)) return -1;
  sbuf_t b = {0};
  if (nd_rep_place_text(&b, &p)) return -1;
  nd_wrap_raw(o, r->wrap, true); // whole, as the frames
  fputs("      from ", o);
  nd_rep_print_text(o, b.p);
  fputc('\n', o);
  nd_wrap_raw(o, r->wrap, false);
  free(b.p);
  return 0;
}

// "      asked by FRAME" (the code asking: the request's first frame outside the objects that
// pass requests on), where the trace knows it.
static int text_asked(FILE *o, report_t *r, uint64_t ip) {
  if (!ip) return 0;
  const nd_frame_t *f = nd_sym_frame(r->sym, ip);
  if (!f) return -1;
  sbuf_t b = {0};
  nd_rep_frame_text(&b, f, ND_NAME_BASE);
  if (b.oom) {
    free(b.p);
    return -1;
  }
  nd_wrap_raw(o, r->wrap, true);
  fputs("      asked by ", o);
  nd_rep_print_text(o, b.p);
  fputc('\n', o);
  nd_wrap_raw(o, r->wrap, false);
  free(b.p);
  return 0;
}

// One limit's admissions and its asking sites (--top of them; brief: the first), each with its
// place and stack.
static int text_admitted_limit(FILE *o, report_t *r, int slot, size_t *rank) {
  const nd_trace_t *t = r->t;
  const nd_rec_admitted_t *a = &t->admitted[slot];
  char name[48];
  const char *lim = nd_rep_admit_limit_name(t, slot, name, sizeof name);
  fprintf(o, "  %s: %llu %s, ", lim, (unsigned long long)a->admitted,
          nd_text_plural(a->admitted, "request", "requests"));
  nd_text_bytes(o, a->bytes, false);
  // maxPhysicalBytes: its readings when a request was admitted (the program's pages move them too)
  fputs(a->limit == ND_LIMIT_PHYSICAL ? "; resident at most " : "; at most ", o);
  nd_text_bytes(o, a->over_max, false);
  fputs(" past the limit ", o);
  nd_text_bytes(o, a->limit_bytes, false);
  fputs("; slack ", o);
  nd_text_bytes(o, a->slack_bytes, false);
  fprintf(o, "; %llu refused past the slack", (unsigned long long)a->past_slack);
  if (a->unplaced) fprintf(o, "; %llu not placed (no room left for their sites)",
                           (unsigned long long)a->unplaced);
  fputc('\n', o);
  size_t *order, n;
  if (nd_rep_admit_order(t, slot, &order, &n)) return -1;
  size_t show = r->o->brief ? (n ? 1 : 0) : nd_rep_list_len(r, n);
  for (size_t i = 0; i < show; i++) {
    const nd_admit_site_t *e = &t->admit_sites[order[i]];
    fprintf(o, "#%-3zu %-8s %llu %s, ", ++*rank, nd_rep_kind_names[e->rec.kind],
            (unsigned long long)e->rec.admitted,
            nd_text_plural(e->rec.admitted, "request", "requests"));
    nd_text_bytes(o, e->rec.bytes, false);
    fputs(e->rec.limit == ND_LIMIT_PHYSICAL ? "; resident at most " : "; at most ", o);
    nd_text_bytes(o, e->rec.over_max, false);
    fputs(" past the limit", o);
    if (e->stack < 0) {
      fputs(" (no stack recorded)\n", o);
      if (text_asked(o, r, e->rec.ip)) {
        free(order);
        return -1;
      }
      continue;
    }
    fprintf(o, "  [stack %u]\n", e->rec.stack_id);
    if (text_from(o, r, (uint32_t)e->stack) || text_asked(o, r, e->rec.ip) ||
        nd_text_stack(o, r, (uint32_t)e->stack)) {
      free(order);
      return -1;
    }
  }
  free(order);
  return 0;
}

// The requests admitted over the limits (version 16): from code that cannot take a refusal, let
// through within each limit's slack.
static int text_admitted(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!t->has.admissions) return 0;
  uint64_t n = nd_rep_admitted_total(t);
  if (!n && !t->have_admitted) {
    if (!r->o->brief) fputs("\n== admitted over limits: none\n", o);
    return 0;
  }
  fprintf(o, "\n== admitted over limits: %llu %s (from code that cannot take a refusal: let "
             "through within the limit's slack; NDMEM_LIMIT_REFUSE names code to refuse)",
          (unsigned long long)n, nd_text_plural(n, "request", "requests"));
  nd_rep_not_kept(o, t->admit_sites_dropped, ND_TRACE_MAX_ADMIT_SITES);
  fputc('\n', o);
  size_t rank = 0;
  for (int s = 0; s < ND_TRACE_ADMIT_SLOTS; s++)
    if ((t->have_admitted >> s & 1) && text_admitted_limit(o, r, s, &rank)) return -1;
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
  nd_text_bytes(o, x->tracked, false);
  fputs("; physical ", o);
  if (x->physical) nd_text_bytes(o, x->physical, false);
  else fputs("not read", o);
  fprintf(o, "; %s ",
          x->reason == ND_SNAP_WATERMARK ? "watermark"
          : lim < 0                      ? "limit"
                                         : nd_rep_limit_names[lim]);
  nd_text_bytes(o, x->threshold, false);
  size_t n = nd_rep_list_len(r, s->nsites);
  fputs("\n  ", o);
  nd_rep_snap_sites(o, s, n, nd_text_bytes);
  fputc('\n', o);
  for (size_t i = 0; i < n; i++) {
    const nd_snap_site_t *e = &s->sites[i];
    bool sampled = e->rec.flags & ND_SITE_SAMPLED;
    fprintf(o, "#%-3zu %-8s live ", i + 1, nd_rep_kind_names[e->rec.kind]);
    nd_text_bytes(o, e->rec.live_bytes, sampled);
    fprintf(o, " in %s%llu %s  [stack %u]\n", sampled ? "~" : "",
            (unsigned long long)e->rec.live_count,
            e->rec.kind == 1 ? nd_text_plural(e->rec.live_count, "mapping", "mappings")
                             : nd_text_plural(e->rec.live_count, "block", "blocks"),
            e->rec.stack_id);
    if (nd_text_placed_stack(o, r, e->stack)) return -1;
  }
  return 0;
}

// The limits view: the limits and totals (unless only the brief report's first breach is
// wanted), the logged breaches, and the kept snapshots (unless brief).
int nd_text_limits(FILE *o, report_t *r, bool settings) {
  const nd_trace_t *t = r->t;
  if (settings) {
    fputs("\n== limits\n", o);
    if (text_last_refusal(o, r)) return -1;
    text_limit_settings(o, t);
  }
  if (text_breaches(o, r) || text_admitted(o, r)) return -1;
  if (r->o->brief) return 0;
  if (!t->nsnaps) fputs("\n== snapshots: none\n", o);
  for (size_t i = 0; i < t->nsnaps; i++)
    if (text_snapshot(o, r, t->snaps[i])) return -1;
  return 0;
}
