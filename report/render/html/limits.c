// SPDX-License-Identifier: MIT
// limits.c: the HTML report's limits (html.h): the limits in force and their peaks, the totals,
// the logged breaches (why each request could be refused), the requests admitted over the limits
// with their places, and the snapshots with their sites folded under each.
#include "render/html/html.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void limit_row(FILE *o, const char *name, uint64_t limit, const char *what, uint64_t peak,
                      bool read) {
  fprintf(o, "<tr><td>%s</td><td class=\"n\">", name);
  if (limit) nd_html_bytes(o, limit, false);
  else fputs("none", o);
  fprintf(o, "</td><td>%s</td><td class=\"n\">", what);
  if (read) nd_html_bytes(o, peak, false);
  else fputs("not read", o);
  fputs("</td><td class=\"n\">", o);
  if (limit && read) {
    char pct[32];
    nd_rep_format_pct(pct, sizeof pct, peak, limit);
    fputs(pct, o);
  }
  fputs("</td></tr>\n", o);
}

// A snapshot's sites (--top of those kept), each with its stack, folded: the text --limits
// view's snapshot.
static int html_snapshot(FILE *o, report_t *r, const nd_snapshot_t *s) {
  size_t n = nd_rep_list_len(r, s->nsites);
  fprintf(o, "<details id=\"snap-%llu\"><summary>S%llu: ", (unsigned long long)s->seq,
          (unsigned long long)s->seq);
  nd_rep_snap_sites(o, s, n, nd_html_bytes);
  fputs("</summary>\n", o);
  if (n) {
    fputs("<table>\n<tr><th>#</th><th>kind</th><th>live</th><th>blocks</th><th>stack</th></tr>\n",
          o);
    for (size_t i = 0; i < n; i++) {
      const nd_snap_site_t *e = &s->sites[i];
      bool sampled = e->rec.flags & ND_SITE_SAMPLED;
      fprintf(o, "<tr><td>%zu</td><td>%s</td><td class=\"n\">", i + 1,
              nd_rep_kind_names[e->rec.kind]);
      nd_html_bytes(o, e->rec.live_bytes, sampled);
      fprintf(o, "</td><td class=\"n\">%s%llu %s</td><td>stack %u ", sampled ? "~" : "",
              (unsigned long long)e->rec.live_count,
              e->rec.kind == 1 ? (e->rec.live_count == 1 ? "mapping" : "mappings")
                               : (e->rec.live_count == 1 ? "block" : "blocks"),
              e->rec.stack_id);
      if (nd_html_stack(o, r, e->stack)) return -1;
      fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  fputs("</details>\n", o);
  return 0;
}

// The requests admitted over the limits (version 16): each limit's totals, then the asking sites
// (--top of them), most bytes first, each by its place with its stack folded.
static int html_admitted(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!t->have_admitted) return 0;
  uint64_t total = nd_rep_admitted_total(t);
  fprintf(o, "<h3>Admitted over limits: %llu %s</h3>\n<p class=\"note\">From code that cannot "
             "take a refusal: let through within the limit's slack (NDMEM_LIMIT_SLACK). "
             "NDMEM_LIMIT_REFUSE names code whose requests may be refused.</p>\n<table>\n"
             "<tr><th>#</th><th>limit</th><th>kind</th><th>requests</th><th>bytes</th>"
             "<th>most past the limit</th><th>from</th></tr>\n",
          (unsigned long long)total, total == 1 ? "request" : "requests");
  size_t rank = 0;
  for (int slot = 0; slot < ND_TRACE_ADMIT_SLOTS; slot++) {
    if (!(t->have_admitted >> slot & 1)) continue;
    const nd_rec_admitted_t *a = &t->admitted[slot];
    char name[48], bytes[ND_HTML_SIZE], over[ND_HTML_SIZE], lim[ND_HTML_SIZE], slack[ND_HTML_SIZE];
    const char *limit = nd_rep_admit_limit_name(t, slot, name, sizeof name);
    fprintf(o, "<tr><td></td><td>%s %s</td><td>all</td><td class=\"n\">%llu</td>"
               "<td class=\"n\">%s</td><td class=\"n\">%s</td><td>slack %s; %llu refused past "
               "it</td></tr>\n",
            limit, nd_html_size(lim, a->limit_bytes, false), (unsigned long long)a->admitted,
            nd_html_size(bytes, a->bytes, false), nd_html_size(over, a->over_max, false),
            nd_html_size(slack, a->slack_bytes, false), (unsigned long long)a->past_slack);
    size_t *order, n;
    if (nd_rep_admit_order(t, slot, &order, &n)) return -1;
    size_t show = nd_rep_list_len(r, n);
    for (size_t i = 0; i < show; i++) {
      const nd_admit_site_t *e = &t->admit_sites[order[i]];
      fprintf(o, "<tr><td>%zu</td><td>%s</td><td>%s</td><td class=\"n\">%llu</td>"
                 "<td class=\"n\">%s</td><td class=\"n\">%s</td><td>",
              ++rank, limit, nd_rep_kind_names[e->rec.kind], (unsigned long long)e->rec.admitted,
              nd_html_size(bytes, e->rec.bytes, false), nd_html_size(over, e->rec.over_max, false));
      if (e->stack < 0) {
        fputs("(no stack recorded)", o);
      } else {
        fputs("<details><summary>", o);
        if (nd_html_site_label(o, r, (uint32_t)e->stack)) {
          free(order);
          return -1;
        }
        fprintf(o, " (stack %u)</summary>", e->rec.stack_id);
        if (nd_html_stack(o, r, (uint32_t)e->stack)) {
          free(order);
          return -1;
        }
        fputs("</details>", o);
      }
      // the code asking (looked up after the stack: a lookup may end an earlier frame's life)
      const nd_frame_t *f = e->rec.ip ? nd_sym_frame(r->sym, e->rec.ip) : NULL;
      if (e->rec.ip && !f) {
        free(order);
        return -1;
      }
      if (f) {
        sbuf_t b = {0};
        nd_rep_frame_text(&b, f, ND_NAME_BASE);
        fputs(" <span class=\"note\">asked by ", o);
        if (b.p) nd_html_esc(o, b.p);
        fputs("</span>", o);
        free(b.p);
      }
      fputs("</td></tr>\n", o);
    }
    free(order);
  }
  fputs("</table>\n", o);
  return 0;
}

int nd_html_limits(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  // As the link to it at the top (a device with breaches and no limit left set has one too).
  if (!nd_rep_has_limits(t) && !nd_rep_device_limited(t)) return 0;
  fputs("<h2 id=\"limits\">Limits</h2>\n", o);
  fputs("<table>\n<tr><th>limit</th><th>value</th><th>measures</th><th>peak</th>"
        "<th>of the limit</th></tr>\n",
        o);
  if (t->have_limits) {
    const nd_rec_limits_t *l = &t->limits;
    limit_row(o, "maxBytes", l->max_bytes, "tracked", l->peak_tracked, true);
    // One peak of resident memory, the summary's resident line's (records.c: saw_resident).
    limit_row(o, "maxPhysicalBytes", l->max_physical_bytes, "anonymous resident",
              t->resident_peak, t->have_resident_peak);
    limit_row(o, "warn at (watermark)", l->warn_at, "anonymous resident", t->resident_peak,
              t->have_resident_peak);
  }
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1) || !t->devices[d].limit_bytes) continue;
    char name[48];
    snprintf(name, sizeof name, "maxDeviceBytes (device %d)", d);
    const nd_rec_device_t *v = &t->devices[d];
    limit_row(o, name, v->limit_bytes, "device memory",
              v->peak_bytes > 0 ? (uint64_t)v->peak_bytes : 0, true);
  }
  fputs("</table>\n", o);
  if (t->have_limits) {
    const nd_rec_limits_t *l = &t->limits;
    fprintf(o,
            "<p>On limit: %s. Breaches: maxBytes %llu, maxPhysicalBytes %llu; %llu "
            "%s failed%s. Relief: %llu %s released ",
            nd_rep_action_names[l->action < 3 ? l->action : 0],
            (unsigned long long)l->breaches[ND_LIMIT_BYTES],
            (unsigned long long)l->breaches[ND_LIMIT_PHYSICAL], (unsigned long long)l->failed,
            l->failed == 1 ? "allocation" : "allocations",
            l->flags & ND_LIMITS_ABORTED ? l->flags & ND_LIMITS_RETRY_LOOP
                                               ? "; stopped on a retry loop"
                                               : "; aborted on a breach"
                                         : "",
            (unsigned long long)l->reliefs, l->reliefs == 1 ? "run" : "runs");
    nd_html_bytes(o, l->relief_bytes, false);
    fputs(" of workspace arenas.</p>\n", o);
  }
  size_t n = nd_rep_list_len(r, t->nbreaches);
  if (n) {
    fprintf(o, "<h3>Logged breaches: %llu</h3>\n<table>\n<tr><th>#</th><th>limit</th>"
               "<th>count</th><th>at</th><th>thread</th><th>call</th><th>requested</th>"
               "<th>before the call</th><th>limit</th><th>done</th></tr>\n",
            (unsigned long long)nd_rep_sat_add(t->nbreaches, t->breaches_dropped));
    static const char *const done[4] = {"failed", "allowed (warn)", "aborted the process",
                                        "served from host memory"};
    for (size_t i = 0; i < n; i++) {
      const nd_rec_breach_t *b = &t->breaches[i].rec;
      fprintf(o, "<tr><td>%zu</td><td>%s</td><td class=\"n\">%llu</td><td class=\"n\">", i + 1,
              nd_rep_limit_names[b->limit], (unsigned long long)b->count);
      nd_rep_print_secs(o, nd_rep_since_start(t, b->mono_ns));
      fprintf(o, "</td><td class=\"n\">%u</td><td>%s", b->tid, nd_rep_breach_fn(b));
      if (b->limit == ND_LIMIT_DEVICE) fprintf(o, " (device %u)", b->device);
      char req[ND_HTML_SIZE], before[ND_HTML_SIZE], limit[ND_HTML_SIZE];
      fprintf(o, "</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td>%s",
              nd_html_size(req, b->requested, false), nd_html_size(before, b->value, false),
              nd_html_size(limit, b->limit_bytes, false), done[b->action < 4 ? b->action : 0]);
      if (b->flags & ND_BREACH_WHY) { // version 16: why it could be refused
        char why[256];
        fputs(": ", o);
        nd_html_esc(o, nd_rep_breach_why(b, why, sizeof why));
      }
      if (b->flags & ND_BREACH_RETRY_LOOP) { // version 10: why it stopped the process
        fprintf(o, ": refused %llu times in a row over ", (unsigned long long)b->retries);
        nd_rep_print_secs(o, b->retry_ns);
        fputs(", a retry loop", o);
      }
      fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
  if (html_admitted(o, r)) return -1;
  if (t->nsnaps) {
    fprintf(o, "<h3>Snapshots: %llu in the trace, %zu kept</h3>\n<table>\n<tr><th>#</th>"
               "<th>at</th><th>reason</th><th>tracked</th><th>physical</th><th>threshold</th>"
               "<th>sites</th><th>largest site</th></tr>\n",
            (unsigned long long)t->snap_records, t->nsnaps);
    for (size_t i = 0; i < t->nsnaps; i++) {
      const nd_snapshot_t *s = t->snaps[i];
      int lim = nd_rep_snap_limit(t, &s->rec);
      fprintf(o, "<tr><td>S%llu</td><td class=\"n\">", (unsigned long long)s->seq);
      nd_rep_print_secs(o, nd_rep_since_start(t, s->rec.mono_ns));
      fprintf(o, "</td><td>%s%s</td><td class=\"n\">",
              s->rec.reason == ND_SNAP_WATERMARK ? "watermark" : "first breach of ",
              s->rec.reason == ND_SNAP_WATERMARK ? "" : lim < 0 ? "a limit"
                                                                : nd_rep_limit_names[lim]);
      nd_html_bytes(o, s->rec.tracked, false);
      fputs("</td><td class=\"n\">", o);
      if (s->rec.physical) nd_html_bytes(o, s->rec.physical, false);
      else fputs("not read", o);
      fputs("</td><td class=\"n\">", o);
      nd_html_bytes(o, s->rec.threshold, false);
      fprintf(o, "</td><td class=\"n\"><a href=\"#snap-%llu\">%u</a></td><td>",
              (unsigned long long)s->seq, s->read);
      if (s->nsites) {
        const nd_snap_site_t *e = &s->sites[0];
        fprintf(o, "%s ", nd_rep_kind_names[e->rec.kind]);
        nd_html_bytes(o, e->rec.live_bytes, e->rec.flags & ND_SITE_SAMPLED);
        fprintf(o, ", stack %u", e->rec.stack_id);
      }
      fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
    for (size_t i = 0; i < t->nsnaps; i++)
      if (html_snapshot(o, r, t->snaps[i])) return -1;
  }
  return 0;
}
