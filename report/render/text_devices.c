// SPDX-License-Identifier: MIT
// text_devices.c: device memory in the text report (text.h): the summary's devices line, then
// each device the hooks saw, CUPTI's view beside it, its workspace and the device memory served
// from host memory, and the CUDA hooks' own totals.
#include "render/text.h"

#include <stdlib.h>
#include <string.h>

static void text_class(FILE *o, const char *name, const nd_rec_dev_class_t *c) {
  fprintf(o, "    %-14s %llu %s of ", name, (unsigned long long)c->allocs,
          nd_text_plural(c->allocs, "allocation", "allocations"));
  nd_text_bytes(o, c->alloc_bytes, false);
  fprintf(o, ", %llu %s of ", (unsigned long long)c->frees,
          nd_text_plural(c->frees, "free", "frees"));
  nd_text_bytes(o, c->free_bytes, false);
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
          (unsigned long long)w->hits, nd_text_plural(w->hits, "allocation", "allocations"), hit);
  fprintf(o, "                   arena %s (plan peak %s, sum %s)\n", arena, peak, sum);
  fprintf(o, "                   %llu %s (%llu learning, %llu relearned); %llu to the driver, "
             "%llu off the plan\n",
          (unsigned long long)w->cycles, nd_text_plural(w->cycles, "cycle", "cycles"),
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
          nd_text_plural(s->allocs, "allocation", "allocations"));
  nd_text_bytes(o, s->alloc_bytes, false);
  fprintf(o, "\n                   %llu over the limit, %llu on a full device (page-locked "
             "memory)\n                   peak ",
          (unsigned long long)s->over_limit, (unsigned long long)s->device_full);
  nd_text_sbytes(o, s->peak_bytes);
  fputs(t->ended ? ", live at exit " : ", live ", o);
  nd_text_sbytes(o, s->live_bytes);
  fputc('\n', o);
  size_t shown = 0;
  for (size_t i = 0; i < t->nspills; i++) {
    const nd_spill_site_t *x = &t->spills[r->spill_order[i]];
    if (x->rec.device != (uint32_t)d) continue;
    if (shown == nd_rep_list_len(r, SIZE_MAX)) break;
    fprintf(o, "    #%zu ", ++shown);
    nd_text_bytes(o, x->rec.alloc_bytes, false);
    char peak[48];
    nd_rep_human(peak, sizeof peak, (uint64_t)x->rec.peak_bytes);
    fprintf(o, " in %llu %s, peak %s [stack %u]\n", (unsigned long long)x->rec.allocs,
            nd_text_plural(x->rec.allocs, "allocation", "allocations"), peak, x->rec.stack_id);
    if (nd_text_placed_stack(o, r, (uint32_t)x->stack)) return -1;
  }
  return 0;
}

// Each device the hooks saw (exact, requested bytes), CUPTI's view beside it when it was
// recorded, and the hooks' own totals and fallbacks.
int nd_text_devices(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  fputs("\n== device memory (CUDA driver API)\n", o);
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1)) continue;
    const nd_rec_device_t *v = &t->devices[d];
    fprintf(o, "  device %d: ", d);
    if (v->total_bytes) nd_text_bytes(o, v->total_bytes, false);
    else fputs("size not asked", o);
    if (v->limit_bytes) {
      fputs("; maxDeviceBytes ", o);
      nd_text_bytes(o, v->limit_bytes, false);
    }
    fputs("\n    peak ", o);
    nd_text_sbytes(o, v->peak_bytes);
    fputs(t->ended ? ", live at exit " : ", live at the last flush ", o);
    nd_text_sbytes(o, v->live_bytes);
    fputc('\n', o);
    for (int k = 0; k < ND_DEV_CLASSES; k++)
      if (v->cls[k].allocs || v->cls[k].frees) text_class(o, nd_rep_dev_class_names[k], &v->cls[k]);
    if (v->cls[ND_DEV_ASYNC].allocs)
      fputs("    (stream-ordered: bytes handed out; a pool may hold more from the device)\n", o);
    if (v->getinfo_calls || v->limit_bytes)
      fprintf(o, "    cuMemGetInfo   %llu %s, %llu lowered to the limit\n",
              (unsigned long long)v->getinfo_calls,
              nd_text_plural(v->getinfo_calls, "answer", "answers"),
              (unsigned long long)v->getinfo_clamped);
    if (v->limit_bytes || v->breaches)
      fprintf(o, "    breaches       %llu, %llu failed\n", (unsigned long long)v->breaches,
              (unsigned long long)v->failed);
    if (t->have_device_ws >> d & 1) text_dws(o, &t->device_ws[d]);
    if ((t->have_spill >> d & 1) && text_spill(o, r, d)) return -1;
    if (v->flags & ND_DEV_CUPTI) {
      char why[256];
      bool differs = nd_rep_cupti_differs(v, why, sizeof why);
      fprintf(o, "    CUPTI          %s\n",
              differs ? "DIFFERS from the hooks:" : "agrees with the hooks");
      if (differs) fprintf(o, "      %s\n", why);
      text_class(o, "CUPTI device", &v->cupti);
      if (v->cupti_pool.allocs) text_class(o, "CUPTI pools", &v->cupti_pool);
      if (v->cupti_pool_reserved_peak) {
        char now[ND_TEXT_SIZE], peak[ND_TEXT_SIZE];
        fprintf(o, "    pools reserve  %s now, peak %s\n",
                nd_text_size(now, v->cupti_pool_reserved, false),
                nd_text_size(peak, v->cupti_pool_reserved_peak, false));
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
    if (c->calls[f])
      fprintf(o, " %s=%llu", nd_rep_cuda_fn_names[f], (unsigned long long)c->calls[f]);
  fprintf(o, "\n  lookups answered with a hook: %llu by dlsym, %llu by cuGetProcAddress\n",
          (unsigned long long)c->answered_dlsym, (unsigned long long)c->answered_proc);
  fprintf(o, "  fallbacks: %llu lookups not hooked, %llu releases of memory not seen allocated, "
             "%llu allocations without a stack\n",
          (unsigned long long)c->unhooked, (unsigned long long)c->unknown_frees,
          (unsigned long long)c->untracked);
  return 0;
}

// The summary's line about device memory.
void nd_text_devices_line(FILE *o, const nd_trace_t *t) {
  fprintf(o, "  %-10s  ", "devices");
  int n = 0;
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++) {
    if (!(t->have_device >> d & 1)) continue;
    const nd_rec_device_t *v = &t->devices[d];
    fprintf(o, "%sdevice %d peak ", n++ ? "; " : "", d);
    nd_text_sbytes(o, v->peak_bytes);
    fputs(", live ", o);
    nd_text_sbytes(o, v->live_bytes);
    if (v->breaches)
      fprintf(o, ", %llu %s", (unsigned long long)v->breaches,
              nd_text_plural(v->breaches, "breach", "breaches"));
    if (t->have_device_ws >> d & 1) {
      fprintf(o, ", workspace served %llu", (unsigned long long)t->device_ws[d].hits);
    }
    if (t->have_spill >> d & 1) {
      fputs(", from host ", o);
      nd_text_bytes(o, t->spill_total[d].alloc_bytes, false);
    }
    if (nd_rep_cupti_differs(v, NULL, 0)) fputs(", CUPTI differs", o);
  }
  if (!n) fputs("CUDA loaded, no device memory allocated", o);
  fputc('\n', o);
}
