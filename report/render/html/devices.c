// SPDX-License-Identifier: MIT
// devices.c: the HTML report's device memory (html.h): each device the hooks saw, CUPTI's view
// beside it, its workspace and the device memory served from host memory, the CUDA hooks' own
// totals: the text report's device view.
#include "render/html/html.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void sbytes(FILE *o, int64_t v) {
  if (v < 0) fputc('-', o);
  nd_html_bytes(o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, false);
}

static void dev_class_row(FILE *o, const char *name, const nd_rec_dev_class_t *c) {
  fprintf(o, "<tr><td>%s</td><td class=\"n\">%llu</td><td class=\"n\">", name,
          (unsigned long long)c->allocs);
  nd_html_bytes(o, c->alloc_bytes, false);
  fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">", (unsigned long long)c->frees);
  nd_html_bytes(o, c->free_bytes, false);
  fputs("</td></tr>\n", o);
}

// A device's workspace and the device memory it got from host memory (version 11), with the sites
// that spilled: the text report's rows.
static int html_device_ws(FILE *o, report_t *r, int d) {
  const nd_trace_t *t = r->t;
  if (t->have_device_ws >> d & 1) {
    const nd_rec_device_ws_t *w = &t->device_ws[d];
    char hit[ND_HTML_SIZE], arena[ND_HTML_SIZE], peak[ND_HTML_SIZE], sum[ND_HTML_SIZE];
    fprintf(o, "<table class=\"kv\">\n<tr><th>workspace</th><td>%s (sync=%s, %s): served %llu "
               "allocations (%s) from an arena of %s with no driver call; plan peak %s, sum %s",
            nd_rep_dws_modes[w->mode], nd_rep_dws_syncs[w->sync], nd_rep_dws_streams[w->streams],
            (unsigned long long)w->hits, nd_html_size(hit, w->hit_bytes, false),
            nd_html_size(arena, w->arena_bytes, false),
            nd_html_size(peak, w->plan_peak_bytes, false),
            nd_html_size(sum, w->plan_sum_bytes, false));
    fprintf(o, "</td></tr>\n<tr><th>cycles</th><td>%llu (%llu learning, %llu relearned); %llu to "
               "the driver (%llu off the plan)</td></tr>\n<tr><th>reuse waits</th><td>%llu at "
               "frees (cuCtxSynchronize), %llu on the host, %llu on streams; %llu events; %llu "
               "outlived their cycle; %llu fallbacks</td></tr>\n</table>\n",
            (unsigned long long)w->cycles, (unsigned long long)w->learned_cycles,
            (unsigned long long)w->relearns, (unsigned long long)w->spills,
            (unsigned long long)w->deviations, (unsigned long long)w->ctx_syncs,
            (unsigned long long)w->host_waits, (unsigned long long)w->stream_waits,
            (unsigned long long)w->fences, (unsigned long long)w->outlived,
            (unsigned long long)w->fallbacks);
  }
  if (!(t->have_spill >> d & 1)) return 0;
  const nd_rec_device_spill_t *s = &t->spill_total[d];
  fprintf(o, "<p>From host memory (page-locked, NDMEM_ON_DEVICE_LIMIT=host): %llu allocations of ",
          (unsigned long long)s->allocs);
  nd_html_bytes(o, s->alloc_bytes, false);
  fprintf(o, ", %llu over the limit, %llu on a full device; peak ",
          (unsigned long long)s->over_limit, (unsigned long long)s->device_full);
  sbytes(o, s->peak_bytes);
  fputs(", live ", o);
  sbytes(o, s->live_bytes);
  fputs(".</p>\n<table>\n<tr><th>#</th><th>bytes</th><th>allocations</th><th>peak</th><th>stack"
        "</th></tr>\n", o);
  size_t n = 0;
  for (size_t i = 0; i < t->nspills; i++) {
    const nd_spill_site_t *x = &t->spills[r->spill_order[i]];
    if (x->rec.device != (uint32_t)d) continue;
    fprintf(o, "<tr><td>%zu</td><td class=\"n\">", ++n);
    nd_html_bytes(o, x->rec.alloc_bytes, false);
    fprintf(o, "</td><td class=\"n\">%llu</td><td class=\"n\">", (unsigned long long)x->rec.allocs);
    sbytes(o, x->rec.peak_bytes);
    fputs("</td><td>", o);
    if (nd_html_stack(o, r, (uint32_t)x->stack)) return -1;
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  return 0;
}

// Each device the hooks saw (exact, requested bytes), CUPTI's view beside it when it was
// recorded, and the hooks' own totals and fallbacks: the text report's device view.
int nd_html_devices(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!nd_rep_has_devices(t)) return 0;
  fputs("<h2 id=\"devices\">Device memory (CUDA driver API)</h2>\n", o);
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1)) continue;
    const nd_rec_device_t *v = &t->devices[d];
    fprintf(o, "<h3>Device %d</h3>\n<table class=\"kv\">\n<tr><th>size</th><td>", d);
    if (v->total_bytes) nd_html_bytes(o, v->total_bytes, false);
    else fputs("not asked", o);
    fputs("</td></tr>\n<tr><th>maxDeviceBytes</th><td>", o);
    if (v->limit_bytes) nd_html_bytes(o, v->limit_bytes, false);
    else fputs("none", o);
    fputs("</td></tr>\n<tr><th>peak</th><td>", o);
    sbytes(o, v->peak_bytes);
    fprintf(o, "</td></tr>\n<tr><th>%s</th><td>",
            t->ended ? "live at exit" : "live at the last flush");
    sbytes(o, v->live_bytes);
    fputs("</td></tr>\n", o);
    if (v->getinfo_calls || v->limit_bytes)
      fprintf(o, "<tr><th>cuMemGetInfo</th><td>%llu %s, %llu lowered to the limit</td></tr>\n",
              (unsigned long long)v->getinfo_calls, v->getinfo_calls == 1 ? "answer" : "answers",
              (unsigned long long)v->getinfo_clamped);
    if (v->limit_bytes || v->breaches)
      fprintf(o, "<tr><th>breaches</th><td>%llu, %llu failed</td></tr>\n",
              (unsigned long long)v->breaches, (unsigned long long)v->failed);
    if (v->flags & ND_DEV_CUPTI) {
      char why[256];
      bool differs = nd_rep_cupti_differs(v, why, sizeof why);
      fprintf(o, "<tr><th>CUPTI</th><td>%s", differs ? "<b>DIFFERS</b> from the hooks: "
                                                      : "agrees with the hooks");
      if (differs) nd_html_esc(o, why);
      fputs("</td></tr>\n", o);
      if (v->cupti_pool_reserved_peak) {
        char now[ND_HTML_SIZE], peak[ND_HTML_SIZE];
        fprintf(o, "<tr><th>pools reserve</th><td>%s now, peak %s</td></tr>\n",
                nd_html_size(now, v->cupti_pool_reserved, false),
                nd_html_size(peak, v->cupti_pool_reserved_peak, false));
      }
      if (v->cupti_dropped)
        fprintf(o, "<tr><th>CUPTI dropped</th><td>%llu records: its totals are short</td></tr>\n",
                (unsigned long long)v->cupti_dropped);
    }
    fputs("</table>\n", o);
    bool any = v->flags & ND_DEV_CUPTI;
    for (int k = 0; k < ND_DEV_CLASSES; k++) any |= v->cls[k].allocs || v->cls[k].frees;
    if (any) {
      fputs("<table>\n<tr><th>allocated by</th><th>allocations</th><th>bytes</th><th>frees</th>"
            "<th>bytes</th></tr>\n",
            o);
      for (int k = 0; k < ND_DEV_CLASSES; k++)
        if (v->cls[k].allocs || v->cls[k].frees)
          dev_class_row(o, nd_rep_dev_class_names[k], &v->cls[k]);
      if (v->flags & ND_DEV_CUPTI) {
        dev_class_row(o, "CUPTI device", &v->cupti);
        if (v->cupti_pool.allocs) dev_class_row(o, "CUPTI pools", &v->cupti_pool);
      }
      fputs("</table>\n", o);
    }
    if (v->cls[ND_DEV_ASYNC].allocs)
      fputs("<p class=\"note\">Stream-ordered: bytes handed out; a pool may hold more from the "
            "device.</p>\n",
            o);
    if (html_device_ws(o, r, d)) return -1;
  }
  if (!t->have_cuda) return 0;
  const nd_rec_cuda_t *c = &t->cuda;
  const char *torch = nd_rep_torch_text(t);
  if (torch) {
    fputs("<p>", o);
    nd_html_esc(o, torch);
    fputs(".</p>\n", o);
  }
  fputs("<h3>Hooks</h3>\n<table class=\"kv\">\n<tr><th>calls</th><td>", o);
  int n = 0;
  for (int f = 0; f < ND_CUDA_FN_USED; f++)
    if (c->calls[f])
      fprintf(o, "%s%s=%llu", n++ ? " " : "", nd_rep_cuda_fn_names[f],
              (unsigned long long)c->calls[f]);
  if (!n) fputs("none", o);
  fprintf(o, "</td></tr>\n<tr><th>lookups</th><td>answered with a hook: %llu by dlsym, %llu by "
             "cuGetProcAddress</td></tr>\n<tr><th>fallbacks</th><td>%llu lookups not hooked, "
             "%llu releases of memory not seen allocated, %llu allocations without a stack"
             "</td></tr>\n</table>\n",
          (unsigned long long)c->answered_dlsym, (unsigned long long)c->answered_proc,
          (unsigned long long)c->unhooked, (unsigned long long)c->unknown_frees,
          (unsigned long long)c->untracked);
  return 0;
}
