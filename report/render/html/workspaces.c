// SPDX-License-Identifier: MIT
// workspaces.c: the HTML report's workspaces (html.h): each workspace's cycles, plan, hits,
// spills and escapes, then the leaked workspace pointers by (workspace, stack).
#include "render/html/html.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int nd_html_workspaces(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!t->nws && !nd_rep_esc_records(t)) return 0;
  fputs("<h2 id=\"workspaces\">Workspaces</h2>\n", o);
  if (t->nws) {
    fputs("<table>\n<tr><th>workspace</th><th>thread</th><th>cycles</th><th>learned</th>"
          "<th>re-learns</th><th>deviations</th><th>arena</th><th>plan peak</th>"
          "<th>plan sum</th><th>sum/peak</th><th>hits</th><th>spills</th><th>spilled</th>"
          "<th>escapes</th><th>pinned</th><th>outlived</th>", o);
    bool served = t->has.ws_served; // what it served, and what its learning trims gave back
    if (served)
      fputs("<th>served</th><th>learning trims</th><th>gave back</th><th>at most</th>", o);
    fputs("</tr>\n", o);
    for (size_t i = 0; i < t->nws; i++) {
      const nd_rec_workspace_t *w = &t->ws[r->ws[i]];
      char ratio[64];
      nd_rep_format_ratio(ratio, sizeof ratio, w->plan_sum_bytes, w->plan_peak_bytes);
      fputs("<tr><td>", o);
      nd_html_esc(o, w->name); // NUL-terminated (check_name)
      fprintf(o, "</td><td class=\"n\">%u</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>"
                 "<td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">",
              w->tid, (unsigned long long)w->cycles, (unsigned long long)w->learned_cycles,
              (unsigned long long)w->relearns, (unsigned long long)w->deviations);
      char arena[ND_HTML_SIZE], peak[ND_HTML_SIZE], sum[ND_HTML_SIZE], spilled[ND_HTML_SIZE],
          pinned[ND_HTML_SIZE];
      fprintf(o, "%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                 "<td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">%s</td>"
                 "<td class=\"n\">%llu</td><td class=\"n\">%s</td><td class=\"n\">%llu</td>",
              nd_html_size(arena, w->arena_bytes, false),
              nd_html_size(peak, w->plan_peak_bytes, false),
              nd_html_size(sum, w->plan_sum_bytes, false), ratio, (unsigned long long)w->hits,
              (unsigned long long)w->spills, nd_html_size(spilled, w->spill_bytes, false),
              (unsigned long long)w->escapes, nd_html_size(pinned, w->pinned_bytes, false),
              (unsigned long long)w->outlived);
      if (served) {
        fputs("<td class=\"n\">", o);
        nd_html_bytes(o, w->hit_bytes, false);
        fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">",
                (unsigned long long)w->learn_trims);
        nd_html_bytes(o, w->learn_trim_bytes, false);
        fputs("</td><td class=\"n\">", o);
        nd_html_bytes(o, w->learn_trim_max_bytes, false);
        fputs("</td>", o);
      }
      fputs("</tr>\n", o);
    }
    fputs("</table>\n", o);
    if (r->ws_effect.saving_known) { // the workspace saving, in the text's words
      fputs("<p><b>saving</b>: ", o);
      nd_rep_ws_saving(o, r, nd_html_bytes);
      fputs("</p>\n", o);
    }
  }
  if (!r->ngroups) return 0;
  size_t n = nd_rep_list_len(r, r->ngroups);
  fprintf(o, "<h3>Leaked workspace pointers: %zu %s from %zu (workspace, stack) %s</h3>\n"
             "<table>\n<tr><th>#</th><th>workspace</th><th>thread</th><th>escapes</th>"
             "<th>bytes</th><th>born in cycle</th><th>seen in cycle</th><th>stack</th></tr>\n",
          t->nescapes, t->nescapes == 1 ? "block" : "blocks", r->ngroups,
          r->ngroups == 1 ? "pair" : "pairs");
  for (size_t i = 0; i < n; i++) {
    const esc_group_t *g = &r->groups[r->group_order[i]];
    const nd_ws_escape_t *e = &t->escapes[g->first];
    fprintf(o, "<tr><td>%zu</td><td>", i + 1);
    nd_html_esc(o, e->rec.name); // NUL-terminated (check_name)
    fprintf(o, "</td><td class=\"n\">%u</td><td class=\"n\">%llu</td><td class=\"n\">", e->rec.tid,
            (unsigned long long)g->count);
    nd_html_bytes(o, g->bytes, false);
    fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td>",
            (unsigned long long)g->born, (unsigned long long)g->seen);
    if (e->rec.stack_id == UINT32_MAX) {
      fputs("unknown (not tracked)", o);
    } else if (e->stack == UINT32_MAX) {
      fprintf(o, "stack %u (not in the trace)", e->rec.stack_id);
    } else {
      fprintf(o, "stack %u ", e->rec.stack_id);
      if (nd_html_stack(o, r, e->stack)) return -1;
    }
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  return 0;
}
