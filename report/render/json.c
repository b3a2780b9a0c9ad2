// SPDX-License-Identifier: MIT
// json.c: ndmemreport's JSON report (nd_rep_json_report, render.h): one document, keys in
// a fixed order; strings escaped and kept valid UTF-8 (nd_rep_json_str).
#include "render/render.h"

#include <stdlib.h>
#include <string.h>

void nd_rep_json_classes(FILE *o, const uint64_t *bytes, const uint64_t *blocks,
                         const uint64_t *stacks, const bool *est, const char *sep) {
  for (int c = 0; c < ND_LIFE_CLASSES; c++)
    fprintf(o, "%s\"%s\": {\"bytes\": %llu, \"blocks\": %llu, \"stacks\": %llu, "
               "\"estimated\": %s}",
            c ? sep : "", nd_life_keys[c], (unsigned long long)bytes[c],
            (unsigned long long)blocks[c], (unsigned long long)stacks[c],
            est[c] ? "true" : "false");
}

static void json_hex(FILE *o, uint64_t v) { fprintf(o, "\"0x%llx\"", (unsigned long long)v); }

// ---------------------------------------------------------------- JSON

static void json_loc(FILE *o, const nd_loc_t *l) {
  fputs("\"function\": ", o);
  nd_rep_json_str(o, l->function);
  fputs(", \"file\": ", o);
  nd_rep_json_str(o, l->file);
  if (l->file) fprintf(o, ", \"line\": %d", l->line);
  else fputs(", \"line\": null", o);
}

// A Python frame, or a Python line: its function, file and line (null: unknown).
static void json_pyloc(FILE *o, const char *function, const char *file, uint32_t line) {
  fputs("\"function\": ", o);
  nd_rep_json_str(o, function);
  fputs(", \"file\": ", o);
  nd_rep_json_str(o, file);
  if (line) fprintf(o, ", \"line\": %u", line);
  else fputs(", \"line\": null", o);
}

// A frame: a native one's keys are those of versions before 7, unchanged; a Python frame (version
// 7) is {"python": true, "function", "file", "line"}.
static void json_frame(FILE *o, const nd_frame_t *f) {
  fputc('{', o);
  if (f->python) {
    fputs("\"python\": true, ", o);
    json_pyloc(o, f->at.function, f->at.file, (uint32_t)f->at.line);
    fputc('}', o);
    return;
  }
  fputs("\"ip\": ", o);
  json_hex(o, f->ip);
  fputs(", \"module\": ", o);
  nd_rep_json_str(o, f->module);
  fputs(", \"offset\": ", o);
  if (f->module) json_hex(o, f->offset);
  else fputs("null", o);
  fputs(", ", o);
  json_loc(o, &f->at);
  fputs(", \"inlined_into\": [", o);
  for (size_t k = 0; k < f->ninlined; k++) {
    fputs(k ? ", {" : "{", o);
    json_loc(o, &f->inlined_into[k]);
    fputc('}', o);
  }
  fputs("]}", o);
}

// A stack's frames; --python-only: only the Python frames of a stack that has one. Before them
// its place (analyse/place.h): "program_frame", the program's own innermost frame, and
// "library_frame", the frame it called that allocated (the site's name where the program has no
// frame), each null where there is none; "place", both in one line, as text and HTML name it.
static int json_stack(FILE *o, report_t *r, uint32_t stack, const char *ind) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only = nd_rep_python_only(r, s), any = false;
  nd_rep_place_t p;
  if (nd_rep_place(r, stack, &p)) return -1;
  sbuf_t b = {0};
  if (nd_rep_place_text(&b, &p)) return -1;
  fputs("\"place\": ", o);
  nd_rep_json_str(o, b.p);
  free(b.p);
  fputs(", \"program_frame\": ", o);
  if (p.own) json_frame(o, p.own);
  else fputs("null", o);
  fputs(", \"library_frame\": ", o);
  if (p.lib) json_frame(o, p.lib);
  else fputs("null", o);
  fprintf(o, ",\n%s\"frames\": [", ind);
  for (size_t i = 0; i < s->depth; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    fprintf(o, "%s\n%s  ", any ? "," : "", ind);
    any = true;
    json_frame(o, f);
  }
  fprintf(o, any ? "\n%s]" : "]", ind);
  return 0;
}

// "stack_key": the stack's stable key (nd_rep_stack_key), 16 hex digits, then ", ".
static int json_stack_key(FILE *o, report_t *r, uint32_t stack) {
  uint64_t k;
  if (nd_rep_stack_key(r, stack, &k)) return -1;
  fprintf(o, "\"stack_key\": \"%016llx\", ", (unsigned long long)k);
  return 0;
}

static int json_site(FILE *o, report_t *r, uint32_t si, bool more) {
  const nd_site_t *s = &r->t->sites[si];
  const nd_rec_site_t *x = &s->rec;
  fprintf(o, "      {\"stack_id\": %u, ", x->stack_id);
  if (json_stack_key(o, r, s->stack)) return -1;
  fprintf(o,
          "\"kind\": \"%s\", \"sampled\": %s, \"allocs\": %llu, "
          "\"frees\": %llu, \"alloc_bytes\": %llu, \"free_bytes\": %llu, \"live_bytes\": %llu, "
          "\"peak_live_bytes\": %llu,\n       ",
          nd_rep_kind_names[x->kind], x->flags & ND_SITE_SAMPLED ? "true" : "false",
          (unsigned long long)x->allocs, (unsigned long long)x->frees,
          (unsigned long long)x->alloc_bytes, (unsigned long long)x->free_bytes,
          (unsigned long long)nd_rep_site_live(x), (unsigned long long)x->peak_live_bytes);
  if (json_stack(o, r, s->stack, "       ")) return -1;
  fputs(more ? "},\n" : "}\n", o);
  return 0;
}

static int json_sites(FILE *o, report_t *r, const char *key, const uint32_t *idx, size_t n,
                      bool last) {
  fprintf(o, "    \"%s\": [%s", key, n ? "\n" : "");
  for (size_t i = 0; i < n; i++)
    if (json_site(o, r, idx[i], i + 1 < n)) return -1;
  fprintf(o, "%s]%s\n", n ? "    " : "", last ? "" : ",");
  return 0;
}

static void json_kind(FILE *o, const nd_rec_kind_totals_t *k, int i, bool more) {
  fprintf(o,
          "      {\"kind\": \"%s\", \"peak_bytes\": %lld, \"live_bytes\": %lld, "
          "\"live_count\": %lld, \"allocs\": %llu, \"frees\": %llu}%s\n",
          nd_rep_kind_names[i], (long long)k->peak_bytes, (long long)k->live_bytes,
          (long long)k->live_count, (unsigned long long)k->allocs, (unsigned long long)k->frees,
          more ? "," : "");
}

static void json_u64(FILE *o, const char *key, uint64_t v, bool more) {
  fprintf(o, "\"%s\": %llu%s", key, (unsigned long long)v, more ? ", " : "");
}

// Version 18: the kernel's peak (ru_maxrss) and its parts at the reading nearest it
// (analyse/peak.c), inside "resident"; null where the trace has no RSS record.
static void json_kernel_peak(FILE *o, const nd_trace_t *t) {
  nd_rep_peak_t k;
  nd_rep_peak(t, &k);
  if (!k.known) {
    fputs("\"peak_rss_bytes\": null, \"peak_rss_read\": null, \"at_peak\": null", o);
    return;
  }
  const nd_rss_parts_t *p = &k.p;
  json_u64(o, "peak_rss_bytes", k.peak, true);
  fprintf(o, "\"peak_rss_read\": \"%s\", ", k.at_end ? "at_end" : "last_flush");
  json_u64(o, "maxrss_bytes", k.maxrss, true);
  json_u64(o, "hwm_bytes", k.hwm, true);
  json_u64(o, "rss_last_bytes", k.rss_now, true);
  fputs("\"at_peak\": {", o);
  json_u64(o, "mono_ns", p->mono_ns, true);
  json_u64(o, "rss_bytes", p->rss, true);
  json_u64(o, "heap_in_use_bytes", p->heap_bytes, true);
  if (p->alloc_ns) json_u64(o, "allocator_free_bytes", p->alloc_free_bytes, true);
  else fputs("\"allocator_free_bytes\": null, ", o);
  json_u64(o, "mappings_touched_bytes", p->maps_touched_bytes, true);
  json_u64(o, "workspace_idle_bytes", p->ws_idle_bytes, true);
  json_u64(o, "ndmem_bytes", p->self_bytes, true);
  fprintf(o, "\"other_anonymous_bytes\": %lld, ", (long long)k.other);
  json_u64(o, "anonymous_bytes", p->anon, true);
  json_u64(o, "file_bytes", p->file, true);
  json_u64(o, "shmem_bytes", p->shmem, true);
  fprintf(o, "\"between_readings_bytes\": %lld, ", (long long)k.unseen);
  json_u64(o, "mappings_untouched_bytes", k.untouched, false);
  fputs("}", o);
}

// Version 9: resident growth beside flat tracked memory (analyse.c), one fixed-schema object.
// class: "allocator" (the allocator's own free bytes grew by most of it), "untracked" (nothing
// ndmem reads accounts for it) or null; the figures are null where the trace cannot give them.
static void json_retention(FILE *o, const nd_retention_t *x) {
  static const char *const cls[] = {"null", "\"allocator\"", "\"untracked\"", "\"prevented\""};
  fprintf(o, "  \"retention\": {\"class\": %s, \"allocator\": \"%s\", ", cls[x->cls],
          nd_rep_allocator_keys[x->allocator]);
  if (x->known) {
    json_u64(o, "resident_from_bytes", x->resident_from, true);
    json_u64(o, "resident_growth_bytes", x->resident_to - x->resident_from, true);
    fprintf(o, "\"host_bytes\": %lld, \"host_change_bytes\": %lld, ",
            (long long)x->tracked_to, (long long)x->tracked_change);
  } else {
    fputs("\"resident_from_bytes\": null, \"resident_growth_bytes\": null, "
          "\"host_bytes\": null, \"host_change_bytes\": null, ", o);
  }
  if (x->known && x->have_free)
    fprintf(o, "\"allocator_free_bytes\": %llu, \"allocator_free_growth_bytes\": %lld, "
               "\"allocator_trimmed_bytes\": %llu},\n",
            (unsigned long long)x->free_bytes, (long long)x->free_growth,
            (unsigned long long)x->trimmed_bytes);
  else
    fputs("\"allocator_free_bytes\": null, \"allocator_free_growth_bytes\": null, "
          "\"allocator_trimmed_bytes\": null},\n", o);
}

// Version 10: what workspaces did to resident memory (analyse.c), one fixed-schema object.
// "served": their arenas served allocations, blocks the allocator never held, so the run's
// resident memory is not the job's own; "held": ndmem's learning trims gave back at least
// ND_RETAIN_MIN_BYTES (resident memory's fall across them, in all and at most at once), freed
// memory the allocator held; "without": how to measure the job alone (null when neither).
static void json_ws_effect(FILE *o, const report_t *r) {
  const nd_ws_effect_t *e = &r->ws_effect;
  fprintf(o, "  \"workspaces_effect\": {\"served\": %s, \"held\": %s, ",
          e->served ? "true" : "false", e->held ? "true" : "false");
  json_u64(o, "allocations", e->hits, true);
  json_u64(o, "bytes", e->hit_bytes, true);
  json_u64(o, "arena_bytes", e->arena_bytes, true);
  json_u64(o, "learning_trims", e->trims, true);
  json_u64(o, "learning_trim_bytes", e->trim_bytes, true);
  json_u64(o, "learning_trim_max_bytes", e->trim_max, true);
  // version 15, the workspace saving (analyse.c, ws_saving): null where not estimated
  if (e->saving_known) {
    json_u64(o, "saving_bytes", e->saving, true);
    json_u64(o, "held_learning_bytes", e->held_learning, true);
    json_u64(o, "held_learning_reads", e->held_reads, true);
    if (e->serving_read) json_u64(o, "held_serving_bytes", e->held_serving, true);
    else fputs("\"held_serving_bytes\": null, ", o);
  } else {
    fputs("\"saving_bytes\": null, \"held_learning_bytes\": null, \"held_learning_reads\": null, "
          "\"held_serving_bytes\": null, ", o);
  }
  fprintf(o, "\"without\": %s},\n",
          e->served || e->held ? "\"ndmem run --no-workspaces\"" : "null");
}

static void json_workspace(FILE *o, const nd_rec_workspace_t *w, bool served, bool more) {
  char ratio[64];
  nd_rep_format_ratio(ratio, sizeof ratio, w->plan_sum_bytes, w->plan_peak_bytes);
  fprintf(o, "      {\"tid\": %u, \"name\": ", w->tid);
  nd_rep_json_str(o, w->name);
  fputs(", ", o);
  json_u64(o, "cycles", w->cycles, true);
  json_u64(o, "learned_cycles", w->learned_cycles, true);
  json_u64(o, "arena_bytes", w->arena_bytes, true);
  json_u64(o, "plan_peak_bytes", w->plan_peak_bytes, true);
  json_u64(o, "plan_sum_bytes", w->plan_sum_bytes, true);
  fprintf(o, "\"sum_over_peak\": %s,\n       ", w->plan_peak_bytes ? ratio : "null");
  json_u64(o, "hits", w->hits, true);
  json_u64(o, "spills", w->spills, true);
  json_u64(o, "spill_bytes", w->spill_bytes, true);
  json_u64(o, "escapes", w->escapes, true);
  json_u64(o, "outlived", w->outlived, true);
  json_u64(o, "relearns", w->relearns, true);
  json_u64(o, "deviations", w->deviations, true);
  json_u64(o, "pinned_bytes", w->pinned_bytes, served);
  if (served) { // the bytes it served, what its learning trims gave back (nd_trace_has_t)
    json_u64(o, "hit_bytes", w->hit_bytes, true);
    json_u64(o, "learning_trims", w->learn_trims, true);
    json_u64(o, "learning_trim_bytes", w->learn_trim_bytes, true);
    json_u64(o, "learning_trim_max_bytes", w->learn_trim_max_bytes, false);
  }
  fputs(",\n       \"nd4j\": {", o);
  json_u64(o, "allocated", w->arena_bytes, true);
  json_u64(o, "external_spilled", w->spill_bytes, true);
  json_u64(o, "external_pinned", w->pinned_bytes, false);
  fprintf(o, "}}%s\n", more ? "," : "");
}

// "workspaces" and "leaked_workspace_pointers"; `last`: no key follows.
static int json_ws(FILE *o, report_t *r, bool last) {
  const nd_trace_t *t = r->t;
  fprintf(o, "  \"workspaces\": {\"count\": %zu, ", t->nws);
  json_u64(o, "hits", r->ws_hits, true);
  json_u64(o, "spills", r->ws_spills, true);
  json_u64(o, "spill_bytes", r->ws_spill_bytes, true);
  if (t->has.ws_served) json_u64(o, "hit_bytes", r->ws_effect.hit_bytes, true);
  json_u64(o, "escapes", r->ws_escapes, !r->o->brief);
  if (!r->o->brief) {
    fprintf(o, "\"list\": [%s", t->nws ? "\n" : "");
    for (size_t i = 0; i < t->nws; i++)
      json_workspace(o, &t->ws[r->ws[i]], t->has.ws_served, i + 1 < t->nws);
    fputs(t->nws ? "    ]" : "]", o);
  }
  fputs("},\n  \"leaked_workspace_pointers\": {", o);
  size_t n = nd_rep_list_len(r, r->ngroups);
  json_u64(o, "records", nd_rep_esc_records(t), true);
  json_u64(o, "not_kept", t->escapes_dropped, true);
  json_u64(o, "bytes", r->esc_bytes, true);
  fprintf(o, "\"pairs\": %zu, \"groups\": [%s", r->ngroups, n ? "\n" : "");
  for (size_t i = 0; i < n; i++) {
    const esc_group_t *g = &r->groups[r->group_order[i]];
    const nd_ws_escape_t *e = &t->escapes[g->first];
    fprintf(o, "    {\"tid\": %u, \"workspace\": ", e->rec.tid);
    nd_rep_json_str(o, e->rec.name);
    if (e->rec.stack_id == UINT32_MAX) fputs(", \"stack_id\": null, ", o);
    else fprintf(o, ", \"stack_id\": %u, ", e->rec.stack_id);
    if (e->stack == UINT32_MAX) fputs("\"stack_key\": null, ", o);
    else if (json_stack_key(o, r, e->stack)) return -1;
    json_u64(o, "count", g->count, true);
    json_u64(o, "bytes", g->bytes, true);
    json_u64(o, "first_cycle_born", g->born, true);
    json_u64(o, "first_cycle_seen", g->seen, false);
    fputs(",\n     ", o);
    if (e->stack == UINT32_MAX)
      fputs("\"place\": null, \"program_frame\": null, \"library_frame\": null, \"frames\": null", o);
    else if (json_stack(o, r, e->stack, "     ")) return -1;
    fputs(i + 1 < n ? "},\n" : "}\n", o);
  }
  fprintf(o, "%s]}%s\n", n ? "  " : "", last ? "" : ",");
  return 0;
}

static void json_class(FILE *o, const char *key, const nd_rec_dev_class_t *c, bool more) {
  fprintf(o, "\"%s\": {", key);
  json_u64(o, "allocs", c->allocs, true);
  json_u64(o, "frees", c->frees, true);
  json_u64(o, "alloc_bytes", c->alloc_bytes, true);
  json_u64(o, "free_bytes", c->free_bytes, false);
  fputs(more ? "}, " : "}", o);
}

// Version 11: a device's workspace ("workspace", null without one) and the device memory it got
// from host memory ("from_host", null when none), with the sites that spilled, largest first.
static int json_device_ws(FILE *o, report_t *r, int d) {
  const nd_trace_t *t = r->t;
  fputs(",\n     \"workspace\": ", o);
  if (!(t->have_device_ws >> d & 1)) {
    fputs("null", o);
  } else {
    const nd_rec_device_ws_t *w = &t->device_ws[d];
    static const char *const keys[5] = {"off", "detect", "learning", "planned", "nd4j"};
    fprintf(o, "{\"mode\": \"%s\", \"sync\": \"%s\", \"streams\": %u, ", keys[w->mode],
            nd_rep_dws_syncs[w->sync], w->streams);
    json_u64(o, "cycles", w->cycles, true);
    json_u64(o, "learned_cycles", w->learned_cycles, true);
    json_u64(o, "relearns", w->relearns, true);
    json_u64(o, "arena_bytes", w->arena_bytes, true);
    json_u64(o, "plan_peak_bytes", w->plan_peak_bytes, true);
    json_u64(o, "plan_sum_bytes", w->plan_sum_bytes, true);
    json_u64(o, "hits", w->hits, true);
    json_u64(o, "hit_bytes", w->hit_bytes, true);
    json_u64(o, "spills", w->spills, true);
    json_u64(o, "spill_bytes", w->spill_bytes, true);
    json_u64(o, "deviations", w->deviations, true);
    json_u64(o, "outlived", w->outlived, true);
    json_u64(o, "frees", w->frees, true);
    json_u64(o, "ctx_syncs", w->ctx_syncs, true);
    json_u64(o, "fences", w->fences, true);
    json_u64(o, "host_waits", w->host_waits, true);
    json_u64(o, "stream_waits", w->stream_waits, true);
    json_u64(o, "fallbacks", w->fallbacks, true);
    json_u64(o, "arena_allocs", w->arena_allocs, true);
    json_u64(o, "arena_frees", w->arena_frees, false);
    fputc('}', o);
  }
  fputs(",\n     \"from_host\": ", o);
  if (!(t->have_spill >> d & 1)) {
    fputs("null", o);
    return 0;
  }
  const nd_rec_device_spill_t *s = &t->spill_total[d];
  fputc('{', o);
  json_u64(o, "allocations", s->allocs, true);
  json_u64(o, "frees", s->frees, true);
  json_u64(o, "bytes", s->alloc_bytes, true);
  fprintf(o, "\"peak_bytes\": %lld, \"live_bytes\": %lld, ", (long long)s->peak_bytes,
          (long long)s->live_bytes);
  json_u64(o, "over_limit", s->over_limit, true);
  json_u64(o, "device_full", s->device_full, true);
  fputs("\"sites\": [", o);
  int n = 0;
  for (size_t i = 0; i < t->nspills; i++) {
    const nd_spill_site_t *x = &t->spills[r->spill_order[i]];
    if (x->rec.device != (uint32_t)d) continue;
    fprintf(o, "%s\n       {\"stack_id\": %u, ", n++ ? "," : "", x->rec.stack_id);
    if (json_stack_key(o, r, (uint32_t)x->stack)) return -1;
    json_u64(o, "allocations", x->rec.allocs, true);
    json_u64(o, "bytes", x->rec.alloc_bytes, true);
    fprintf(o, "\"peak_bytes\": %lld, \"live_bytes\": %lld, ", (long long)x->rec.peak_bytes,
            (long long)x->rec.live_bytes);
    if (json_stack(o, r, (uint32_t)x->stack, "       ")) return -1;
    fputc('}', o);
  }
  fputs("]}", o);
  return 0;
}

// "devices": every device the hooks saw, with CUPTI's view ("cupti": null without it); "cuda":
// the hooks' own totals (null when no CUDA memory function was called). Version 6 reports.
static int json_devices(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  int last = -1;
  for (int d = 0; d < ND_TRACE_MAX_DEVICES; d++)
    if (t->have_device >> d & 1) last = d;
  fprintf(o, "  \"devices\": [%s", last >= 0 ? "\n" : "");
  for (int d = 0; d <= last; d++) {
    if (!(t->have_device >> d & 1)) continue;
    const nd_rec_device_t *v = &t->devices[d];
    fprintf(o, "    {\"device\": %d, ", d);
    json_u64(o, "total_bytes", v->total_bytes, true);
    json_u64(o, "limit_bytes", v->limit_bytes, true);
    fprintf(o, "\"live_bytes\": %lld, \"peak_bytes\": %lld, ", (long long)v->live_bytes,
            (long long)v->peak_bytes);
    uint64_t allocs = 0, frees = 0;
    for (int k = 0; k < ND_DEV_CLASSES; k++) allocs += v->cls[k].allocs, frees += v->cls[k].frees;
    json_u64(o, "allocs", allocs, true);
    json_u64(o, "frees", frees, true);
    json_u64(o, "breaches", v->breaches, true);
    json_u64(o, "failed", v->failed, true);
    json_u64(o, "getinfo_calls", v->getinfo_calls, true);
    json_u64(o, "getinfo_clamped", v->getinfo_clamped, false);
    fputs(",\n     ", o);
    json_class(o, "plain", &v->cls[ND_DEV_PLAIN], true);
    json_class(o, "async", &v->cls[ND_DEV_ASYNC], true);
    json_class(o, "vmm", &v->cls[ND_DEV_VMM], false);
    fputs(",\n     \"cupti\": ", o);
    if (!(v->flags & ND_DEV_CUPTI)) {
      fputs("null", o);
    } else {
      char why[256] = "";
      bool differs = nd_rep_cupti_differs(v, why, sizeof why);
      fprintf(o, "{\"agrees\": %s, \"difference\": ", differs ? "false" : "true");
      if (differs) nd_rep_json_str(o, why);
      else fputs("null", o);
      fputs(", ", o);
      json_u64(o, "allocs", v->cupti.allocs, true);
      json_u64(o, "frees", v->cupti.frees, true);
      json_u64(o, "alloc_bytes", v->cupti.alloc_bytes, true);
      json_u64(o, "free_bytes", v->cupti.free_bytes, true);
      json_u64(o, "pool_allocs", v->cupti_pool.allocs, true);
      json_u64(o, "pool_frees", v->cupti_pool.frees, true);
      json_u64(o, "pool_alloc_bytes", v->cupti_pool.alloc_bytes, true);
      json_u64(o, "pool_free_bytes", v->cupti_pool.free_bytes, true);
      json_u64(o, "pool_reserved_bytes", v->cupti_pool_reserved, true);
      json_u64(o, "pool_reserved_peak", v->cupti_pool_reserved_peak, true);
      json_u64(o, "pinned_bytes", v->cupti_pinned, true);
      json_u64(o, "managed_bytes", v->cupti_managed, true);
      json_u64(o, "records", v->cupti_records, true);
      json_u64(o, "dropped", v->cupti_dropped, false);
      fputs("}", o);
    }
    if (t->has.device_ws && json_device_ws(o, r, d)) return -1;
    fputs(d < last ? "},\n" : "}\n", o);
  }
  fprintf(o, "%s],\n  \"cuda\": ", last >= 0 ? "  " : "");
  if (!t->have_cuda) {
    fputs("null,\n", o);
    return 0;
  }
  const nd_rec_cuda_t *c = &t->cuda;
  fputs("{\"calls\": {", o);
  for (uint32_t f = 0; f < t->has.cuda_fns; f++)
    json_u64(o, nd_rep_cuda_fn_names[f], c->calls[f], f + 1 < t->has.cuda_fns);
  fputs("}, ", o);
  json_u64(o, "answered_dlsym", c->answered_dlsym, true);
  json_u64(o, "answered_proc", c->answered_proc, true);
  json_u64(o, "unhooked", c->unhooked, true);
  json_u64(o, "unknown_frees", c->unknown_frees, true);
  json_u64(o, "untracked", c->untracked, false);
  if (t->has.device_ws) { // PyTorch's CUDA allocator: null, "native" or "async"
    static const char *const torch[3] = {"null", "\"native\"", "\"async\""};
    fprintf(o, ", \"torch_allocator\": %s, \"torch_tensors_by_ndmem\": %s",
            torch[nd_rep_torch(t)], t->cuda.torch_conf & ND_TORCH_CONF_BY_NDMEM ? "true" : "false");
  }
  fputs("},\n", o);
  return 0;
}

// ",\n    "admitted": [...]" (version 16): each limit's requests admitted over it (from code that
// cannot take a refusal, within its slack) and their asking sites, most bytes first (--top;
// brief: the first), each with its place and stack.
static int json_admitted(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  if (!t->has.admissions) return 0;
  fputs(",\n    \"admitted\": [", o);
  bool first = true;
  for (int slot = 0; slot < ND_TRACE_ADMIT_SLOTS; slot++) {
    if (!(t->have_admitted >> slot & 1)) continue;
    const nd_rec_admitted_t *a = &t->admitted[slot];
    fprintf(o, "%s\n      {\"limit\": \"%s\", ", first ? "" : ",", nd_rep_limit_keys[a->limit]);
    first = false;
    if (a->limit == ND_LIMIT_DEVICE) fprintf(o, "\"device\": %u, ", a->device);
    else fputs("\"device\": null, ", o);
    json_u64(o, "limit_bytes", a->limit_bytes, true);
    json_u64(o, "slack_bytes", a->slack_bytes, true);
    json_u64(o, "large_bytes", a->large_bytes, true);
    json_u64(o, "requests", a->admitted, true);
    json_u64(o, "bytes", a->bytes, true);
    json_u64(o, "over_max_bytes", a->over_max, true);
    json_u64(o, "refused_past_slack", a->past_slack, true);
    json_u64(o, "unplaced", a->unplaced, true);
    size_t *order, n;
    if (nd_rep_admit_order(t, slot, &order, &n)) return -1;
    size_t show = r->o->brief ? (n ? 1 : 0) : nd_rep_list_len(r, n);
    json_u64(o, "sites_kept", n, true);
    fputs("\"sites\": [", o);
    for (size_t i = 0; i < show; i++) {
      const nd_admit_site_t *e = &t->admit_sites[order[i]];
      fprintf(o, "%s\n        {\"kind\": \"%s\", ", i ? "," : "", nd_rep_kind_names[e->rec.kind]);
      json_u64(o, "requests", e->rec.admitted, true);
      json_u64(o, "bytes", e->rec.bytes, true);
      json_u64(o, "over_max_bytes", e->rec.over_max, true);
      json_u64(o, "first_since_start_ns", nd_rep_since_start(t, e->rec.first_ns), true);
      json_u64(o, "last_since_start_ns", nd_rep_since_start(t, e->rec.last_ns), true);
      fputs("\"asking_frame\": ", o); // the code asking (null: not found)
      if (e->rec.ip) {
        const nd_frame_t *f = nd_sym_frame(r->sym, e->rec.ip);
        if (!f) {
          free(order);
          return -1;
        }
        json_frame(o, f);
      } else {
        fputs("null", o);
      }
      fputs(", ", o);
      if (e->stack < 0) {
        fputs("\"stack_id\": null, \"place\": null, \"program_frame\": null, "
              "\"library_frame\": null, \"frames\": []}", o);
        continue;
      }
      fprintf(o, "\"stack_id\": %u, ", e->rec.stack_id);
      if (json_stack_key(o, r, (uint32_t)e->stack) ||
          json_stack(o, r, (uint32_t)e->stack, "         ")) {
        free(order);
        return -1;
      }
      fputc('}', o);
    }
    free(order);
    fprintf(o, "%s]}", show ? "\n      " : "");
  }
  fprintf(o, "%s]", first ? "" : "\n    ");
  return 0;
}

// "limits": null when the trace has no record of limits; else the LIMITS record's limits and
// totals (null without one), what the reader kept, the logged breaches and the kept snapshots
// with their top sites (brief: the first breach, no snapshots). `last`: no key follows.
// How the process ended (EXIT, version 4), or the exec its trace ends in (EXEC, version 16), as
// "exit": {"how", "code", "tid"}; from version 16 also "status" (a normal exit's or _exit's exit
// status, null where unknown or another end), "after_refusal" (the end named with the last refused
// request: {"ns": from it to the end, "function", "requested", "limit", "place"}, else null) and,
// for an exec ("how": "exec"), "program", "followed" and "why" (nd_rep_exec_keys); and
// "failed_execs", the execs that returned.
static int json_exit(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  static const char *const how[] = {"exit", "_exit", "signal", "limit_abort"};
  bool exec = nd_rep_exec_end(t);
  if (!(t->ended && t->have_exit) && !exec) {
    if (t->has.end_causes)
      fprintf(o, ", \"exit\": null, \"failed_execs\": %llu", (unsigned long long)t->exec_failures);
    if (t->have_exit && !t->has.end_causes) // a trace cut after its EXIT record
      fprintf(o, ", \"exit\": {\"how\": \"%s\", \"code\": %d, \"tid\": %u}", how[t->exit.how],
              t->exit.code, t->exit.tid);
    return 0;
  }
  if (exec) {
    fprintf(o, ", \"exit\": {\"how\": \"exec\", \"code\": null, \"tid\": %u, \"program\": ",
            t->exec.tid);
    nd_rep_json_str(o, t->exec_path);
    fprintf(o, ", \"followed\": %s, \"why\": \"%s\"",
            t->exec.follow == ND_EXEC_FOLLOWED ? "true" : "false", nd_rep_exec_keys[t->exec.follow]);
  } else {
    fprintf(o, ", \"exit\": {\"how\": \"%s\", \"code\": %d, \"tid\": %u", how[t->exit.how],
            t->exit.code, t->exit.tid);
  }
  if (t->has.end_causes) {
    int status;
    if (!exec && nd_rep_exit_status(t, &status)) fprintf(o, ", \"status\": %d", status);
    else fputs(", \"status\": null", o);
    uint64_t since;
    if (nd_rep_end_after_refusal(t, &since)) {
      const nd_rec_refusal_t *x = &t->refusal;
      fprintf(o, ", \"after_refusal\": {\"ns\": %llu, \"function\": \"%s\", \"requested\": %llu, "
                 "\"limit\": \"%s\", \"place\": ",
              (unsigned long long)since, nd_rep_refusal_fn(x), (unsigned long long)x->requested,
              nd_rep_limit_keys[x->limit]);
      if (t->refusal_stack < 0) {
        fputs("null}", o);
      } else {
        nd_rep_place_t p;
        if (nd_rep_place(r, (uint32_t)t->refusal_stack, &p)) return -1;
        sbuf_t b = {0};
        if (nd_rep_place_text(&b, &p)) return -1;
        nd_rep_json_str(o, b.p);
        free(b.p);
        fputc('}', o);
      }
    } else {
      fputs(", \"after_refusal\": null", o);
    }
  }
  fputc('}', o);
  if (t->has.end_causes)
    fprintf(o, ", \"failed_execs\": %llu", (unsigned long long)t->exec_failures);
  return 0;
}

// The last refused request (version 16): what, when, how many in all, how soon the process
// ended after it where its end is named with it (end_after_ns; null: not named), and the request's
// stack with its place ("place": the program's line that asked).
static int json_refusal(FILE *o, report_t *r, const char *ind) {
  const nd_trace_t *t = r->t;
  const nd_rec_refusal_t *x = &t->refusal;
  fputc('{', o);
  json_u64(o, "mono_ns", x->mono_ns, true);
  json_u64(o, "since_start_ns", nd_rep_since_start(t, x->mono_ns), true);
  fprintf(o, "\"tid\": %u, \"limit\": \"%s\", \"function\": \"%s\", ", x->tid,
          nd_rep_limit_keys[x->limit], nd_rep_refusal_fn(x));
  if (x->limit == ND_LIMIT_DEVICE) fprintf(o, "\"device\": %u, ", x->device);
  else fputs("\"device\": null, ", o);
  json_u64(o, "requested", x->requested, true);
  json_u64(o, "limit_bytes", x->limit_bytes, true);
  json_u64(o, "refusals", x->refusals, true);
  uint64_t since;
  if (nd_rep_end_after_refusal(t, &since)) json_u64(o, "end_after_ns", since, true);
  else fputs("\"end_after_ns\": null, ", o);
  if (t->refusal_stack < 0) {
    fputs("\"stack_id\": null, \"place\": null, \"program_frame\": null, "
          "\"library_frame\": null, \"frames\": []}", o);
    return 0;
  }
  fprintf(o, "\"stack_id\": %u, ", x->stack_id);
  if (json_stack_key(o, r, (uint32_t)t->refusal_stack) ||
      json_stack(o, r, (uint32_t)t->refusal_stack, ind))
    return -1;
  fputc('}', o);
  return 0;
}

static int json_limits(FILE *o, report_t *r, bool last) {
  const nd_trace_t *t = r->t;
  const char *end = last ? "\n" : ",\n";
  if (!nd_rep_has_limits(t)) {
    fprintf(o, "  \"limits\": null%s", end);
    return 0;
  }
  fputs("  \"limits\": {\n", o);
  if (t->has.end_causes) { // the last refused request first, as the text and HTML views
    fputs("    \"last_refusal\": ", o);
    if (!t->have_refusal) fputs("null", o);
    else if (json_refusal(o, r, "     ")) return -1;
    fputs(",\n", o);
  }
  fputs("    \"limits\": ", o);
  if (t->have_limits) {
    const nd_rec_limits_t *l = &t->limits;
    fputc('{', o);
    json_u64(o, "max_bytes", l->max_bytes, true);
    json_u64(o, "max_physical_bytes", l->max_physical_bytes, true);
    json_u64(o, "warn_at", l->warn_at, true);
    fprintf(o, "\"on_limit\": \"%s\", ", nd_rep_action_names[l->action]);
    json_u64(o, "ram_bytes", l->ram_bytes, true);
    json_u64(o, "cgroup_bytes", l->cgroup_bytes, true);
    fprintf(o, "\"percent_of\": \"%s\", \"aborted\": %s", nd_rep_pct_of_cgroup(l) ? "cgroup" : "ram",
            l->flags & ND_LIMITS_ABORTED ? "true" : "false");
    if (t->has.limit_details) { // how large mappings counted, a stop on a retry loop, unread limits
      fprintf(o, ", \"mappings\": \"%s\", ",
              l->flags & ND_LIMITS_MAPPINGS_WHOLE ? "whole" : "touched");
      json_u64(o, "untouched_bytes", l->untouched, true);
      fprintf(o, "\"retry_loop\": %s, \"unread\": [%s%s%s]",
              l->flags & ND_LIMITS_RETRY_LOOP ? "true" : "false",
              l->flags & ND_LIMITS_UNREAD_BYTES ? "\"max_bytes\"" : "",
              (l->flags & ND_LIMITS_UNREAD_BYTES) && (l->flags & ND_LIMITS_UNREAD_PHYSICAL) ? ", " : "",
              l->flags & ND_LIMITS_UNREAD_PHYSICAL ? "\"max_physical_bytes\"" : "");
    }
    fputs("},\n    \"totals\": {\"breaches\": {", o);
    json_u64(o, nd_rep_limit_keys[ND_LIMIT_BYTES], l->breaches[ND_LIMIT_BYTES], true);
    json_u64(o, nd_rep_limit_keys[ND_LIMIT_PHYSICAL], l->breaches[ND_LIMIT_PHYSICAL], false);
    fputs("}, ", o);
    json_u64(o, "failed", l->failed, true);
    json_u64(o, "reliefs", l->reliefs, true);
    json_u64(o, "relief_bytes", l->relief_bytes, true);
    json_u64(o, "peak_tracked", l->peak_tracked, true);
    // The report's one peak of resident memory, the same as "resident"'s peak_bytes (records.c).
    if (t->have_resident_peak) json_u64(o, "peak_resident", t->resident_peak, true);
    else fputs("\"peak_resident\": null, ", o);
    json_u64(o, "physical_reads", l->physical_reads, true);
    json_u64(o, "snapshots", l->snapshots, false);
    fputs("},\n", o);
  } else {
    fputs("null,\n    \"totals\": null,\n", o);
  }
  fputs("    \"records\": {", o);
  json_u64(o, "breaches", nd_rep_sat_add(t->nbreaches, t->breaches_dropped), true);
  json_u64(o, "breaches_kept", t->nbreaches, true);
  json_u64(o, "snapshots", t->snap_records, true);
  json_u64(o, "snapshots_kept", t->nsnaps, false);
  size_t n = r->o->brief ? (t->nbreaches ? 1 : 0) : nd_rep_list_len(r, t->nbreaches);
  fprintf(o, "},\n    \"breaches\": [%s", n ? "\n" : "");
  for (size_t i = 0; i < n; i++) {
    const nd_rec_breach_t *b = &t->breaches[i].rec;
    long st = t->breaches[i].stack;
    fputs("      {", o);
    json_u64(o, "mono_ns", b->mono_ns, true);
    json_u64(o, "since_start_ns", nd_rep_since_start(t, b->mono_ns), true);
    fprintf(o, "\"tid\": %u, \"limit\": \"%s\", \"action\": \"%s\", \"function\": \"%s\", ",
            b->tid, nd_rep_limit_keys[b->limit], nd_rep_action_names[b->action],
            nd_rep_breach_fn(b));
    if (t->has.devices) { // the device of a device limit's breach
      if (b->limit == ND_LIMIT_DEVICE) fprintf(o, "\"device\": %u, ", b->device);
      else fputs("\"device\": null, ", o);
    }
    json_u64(o, "requested", b->requested, true);
    json_u64(o, "value", b->value, true);
    json_u64(o, "limit_bytes", b->limit_bytes, true);
    json_u64(o, "count", b->count, t->has.limit_details);
    if (t->has.admissions) { // version 16: why it could be refused
      fputs("\"why\": [", o);
      for (int k = 0, any = 0; k < ND_REP_WHY; k++)
        if (b->flags & (ND_BREACH_RUNTIME << k))
          fprintf(o, "%s\"%s\"", any++ ? ", " : "", nd_rep_why_keys[k]);
      fputs("], ", o);
    }
    if (t->has.limit_details) { // the refused request's stack, and a retry loop's length
      if (b->flags & ND_BREACH_RETRY_LOOP) {
        fputs("\"retry_loop\": {", o);
        json_u64(o, "retries", b->retries, true);
        json_u64(o, "ns", b->retry_ns, false);
        fputs("}, ", o);
      } else {
        fputs("\"retry_loop\": null, ", o);
      }
      if (st < 0) {
        fputs("\"stack_id\": null, \"place\": null, \"program_frame\": null, "
              "\"library_frame\": null, \"frames\": []", o);
      } else {
        fprintf(o, "\"stack_id\": %u, ", b->stack_id);
        if (json_stack_key(o, r, (uint32_t)st) || json_stack(o, r, (uint32_t)st, "       ")) return -1;
      }
    }
    fputs(i + 1 < n ? "},\n" : "}\n", o);
  }
  fprintf(o, "%s]", n ? "    " : "");
  if (json_admitted(o, r)) return -1;
  if (r->o->brief) {
    fprintf(o, "\n  }%s", end);
    return 0;
  }
  fprintf(o, ",\n    \"snapshots\": [%s", t->nsnaps ? "\n" : "");
  for (size_t i = 0; i < t->nsnaps; i++) {
    const nd_snapshot_t *s = t->snaps[i];
    const nd_rec_snapshot_t *x = &s->rec;
    int lim = nd_rep_snap_limit(t, x);
    bool est;
    uint64_t live = nd_rep_snap_live(s, &est);
    fputs("      {", o);
    json_u64(o, "seq", s->seq, true);
    json_u64(o, "mono_ns", x->mono_ns, true);
    json_u64(o, "since_start_ns", nd_rep_since_start(t, x->mono_ns), true);
    fprintf(o, "\"reason\": \"%s\", \"limit\": ",
            x->reason == ND_SNAP_WATERMARK ? "watermark" : "breach");
    if (lim < 0) fputs("null, ", o);
    else fprintf(o, "\"%s\", ", nd_rep_limit_keys[lim]);
    json_u64(o, "tracked", x->tracked, true);
    if (x->physical) json_u64(o, "physical", x->physical, true);
    else fputs("\"physical\": null, ", o);
    json_u64(o, "threshold", x->threshold, false);
    fputs(",\n       ", o);
    json_u64(o, "sites", x->sites, true);
    json_u64(o, "sites_read", s->read, true);
    json_u64(o, "sites_not_kept", s->read - s->nsites, true);
    fprintf(o, "\"complete\": %s, ", s->read < x->sites ? "false" : "true");
    json_u64(o, "live_bytes", live, true);
    size_t k = nd_rep_list_len(r, s->nsites);
    fprintf(o, "\"estimated\": %s, \"top\": [%s", est ? "true" : "false", k ? "\n" : "");
    for (size_t j = 0; j < k; j++) {
      const nd_snap_site_t *e = &s->sites[j];
      fprintf(o, "        {\"stack_id\": %u, ", e->rec.stack_id);
      if (json_stack_key(o, r, e->stack)) return -1;
      fprintf(o, "\"kind\": \"%s\", \"sampled\": %s, ", nd_rep_kind_names[e->rec.kind],
              e->rec.flags & ND_SITE_SAMPLED ? "true" : "false");
      json_u64(o, "live_bytes", e->rec.live_bytes, true);
      json_u64(o, "live_count", e->rec.live_count, false);
      fputs(",\n         ", o);
      if (json_stack(o, r, e->stack, "         ")) return -1;
      fputs(j + 1 < k ? "},\n" : "}\n", o);
    }
    fprintf(o, "%s]}%s\n", k ? "      " : "", i + 1 < t->nsnaps ? "," : "");
  }
  fprintf(o, "%s]\n  }%s", t->nsnaps ? "    " : "", end);
  return 0;
}

// "python": the PYTHON record (null without one). Version 7 reports.
static void json_python(FILE *o, const nd_trace_t *t) {
  if (!t->have_python) {
    fputs("  \"python\": null,\n", o);
    return;
  }
  const nd_rec_python_t *p = &t->python;
  char v[48];
  nd_rep_format_pyversion(v, sizeof v, p->version_hex);
  fprintf(o, "  \"python\": {\"state\": \"%s\", \"version\": ", nd_rep_py_states[p->state]);
  if (p->version_hex) fprintf(o, "\"%s\", ", v);
  else fputs("null, ", o);
  json_u64(o, "version_hex", p->version_hex, true);
  json_u64(o, "stacks", p->stacks, true);
  json_u64(o, "with_python", p->with_python, true);
  json_u64(o, "frames", p->frames, true);
  json_u64(o, "dropped", p->dropped, true);
  json_u64(o, "codes", p->codes, false);
  fputs("},\n", o);
}

// "python_lines": the sites grouped by Python line, the program's lines first, each group by
// bytes allocated ("program": the line is the program's, which counts what the library code it
// called allocated; else a library's innermost frame: analyse.h, py_line_t). Version 7 reports,
// not brief ones.
static void json_py_lines(FILE *o, report_t *r) {
  size_t own, n = nd_rep_py_lines_shown(r, &own);
  fprintf(o, "  \"python_lines\": {\"count\": %zu, \"top\": [%s", r->npy_lines, n ? "\n" : "");
  for (size_t i = 0; i < n; i++) {
    const py_line_t *l = &r->py_lines[i < own ? i : r->npy_program + i - own];
    fputs("    {", o);
    json_pyloc(o, l->code->qualname, l->code->filename, l->line);
    fprintf(o, ", \"program\": %s, ", l->program ? "true" : "false");
    json_u64(o, "sites", l->sites, true);
    json_u64(o, "allocs", l->allocs, true);
    json_u64(o, "alloc_bytes", l->alloc_bytes, true);
    json_u64(o, "live_bytes", l->live_bytes, true);
    fprintf(o, "\"estimated\": %s}%s\n", l->est ? "true" : "false", i + 1 < n ? "," : "");
  }
  fprintf(o, "%s]},\n", n ? "  " : "");
}

// Sites the shim found growing while the job ran (GROWTH records, version 5).
static int json_growth(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  size_t n = nd_rep_list_len(r, t->ngrowth);
  fprintf(o, "  \"growth_while_running\": {\"count\": %llu, \"sites\": [%s",
          (unsigned long long)(t->ngrowth + t->growth_dropped), n ? "\n" : "");
  for (size_t i = 0; i < n; i++) {
    const nd_rec_growth_t *g = &t->growth[i].rec;
    nd_rep_growth_t x = nd_rep_growth(t, g); // held to the kind's peak
    fprintf(o, "    {\"stack_id\": %u, ", g->stack_id);
    if (json_stack_key(o, r, t->growth[i].stack)) return -1;
    fprintf(o,
            "\"kind\": \"%s\", \"estimated\": %s, \"at_ns\": %llu, "
            "\"cycle\": %llu, \"base_cycle\": %llu, \"base_ns\": %llu, \"base_bytes\": %llu, "
            "\"floor_bytes\": %llu, \"bytes_at_most\": %s, \"rises\": %llu,\n     ",
            nd_rep_kind_names[g->kind], x.est ? "true" : "false",
            (unsigned long long)nd_rep_since_start(t, g->mono_ns), (unsigned long long)g->cycle,
            (unsigned long long)g->base_cycle,
            (unsigned long long)nd_rep_since_start(t, g->base_ns),
            (unsigned long long)x.base, (unsigned long long)x.lowest,
            x.most_base || x.most_floor ? "true" : "false", (unsigned long long)g->rises);
    if (json_stack(o, r, t->growth[i].stack, "     ")) return -1;
    fputs(i + 1 < n ? "},\n" : "}\n", o);
  }
  fprintf(o, "%s]},\n", n ? "  " : "");
  return 0;
}

// What was live at exit, by class: totals per class, then the entries (each class's first --top).
static int json_lifetimes(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  const nd_lifetimes_t *l = &r->life;
  fprintf(o,
          "  \"leaks\": {\"known\": true, \"bytes\": %llu, \"blocks\": %llu, \"estimated\": %s, "
          "\"stacks\": %zu, \"steady_state\": ",
          (unsigned long long)r->leak_bytes, (unsigned long long)r->leak_blocks,
          r->leak_est ? "true" : "false", t->nleaks);
  if (l->steady)
    fprintf(o, "{\"start_ns\": %llu, \"cycles\": %llu}", (unsigned long long)l->steady_ns,
            (unsigned long long)l->cycles);
  else fputs("null", o);
  fprintf(o, ", \"untracked_blocks\": %llu, \"unrecorded_blocks\": %llu, "
             "\"unrecorded_bytes_at_most\": %llu,\n   ",
          (unsigned long long)l->untracked_blocks, (unsigned long long)l->unrecorded_blocks,
          (unsigned long long)l->unrecorded_bytes);
  if (l->judged.known) { // version 5: whether the flush windows sufficed (lifetime.h)
    const nd_life_judged_t *j = &l->judged;
    fprintf(o,
            "\"growth_judged\": {\"judged\": \"%s\", \"windows\": %llu, \"windows_needed\": %d, "
            "\"span\": \"%s\", \"span_ns\": %llu, \"cycles\": %llu, \"by_births\": %s, "
            "\"flush_ms_to_judge\": ",
            nd_life_judged_key(l), (unsigned long long)j->windows, ND_LIFE_MIN_WINDOWS,
            j->cycles ? "steady_state" : "last_quarter_of_run", (unsigned long long)j->span_ns,
            (unsigned long long)j->cycles, j->by_births ? "true" : "false");
    if (j->flush_ms) fprintf(o, "%llu},\n   ", (unsigned long long)j->flush_ms);
    else fputs("null},\n   ", o);
  }
  fputs("\"classes\": {", o);
  nd_rep_json_classes(o, l->bytes, l->blocks, l->entries, l->est, ",\n               ");
  fputs("},\n   \"groups\": [", o);
  size_t at = 0;
  bool first = true;
  for (int c = 0; c < ND_LIFE_CLASSES; c++) {
    size_t n = l->entries[c], shown = nd_rep_list_len(r, n);
    for (size_t i = 0; i < shown; i++) {
      const nd_life_t *e = &l->v[at + i];
      const nd_leak_t *k = e->leak >= 0 ? &t->leaks[e->leak] : NULL;
      fprintf(o, "%s    {\"class\": \"%s\", \"stack_id\": %u, ", first ? "\n" : ",\n",
              nd_life_keys[e->cls], t->stacks[e->stack].id);
      if (json_stack_key(o, r, e->stack)) return -1;
      fprintf(o,
              "\"kind\": \"%s\", \"bytes\": %llu, "
              "\"blocks\": %llu, \"estimated\": %s, \"capped\": %s, \"bytes_at_most\": %s, "
              "\"blocks_at_most\": %s, \"exact_bytes\": %llu, \"exact_blocks\": %llu, "
              "\"sampled_blocks\": %llu, \"estimated_bytes\": %llu,\n"
              "     \"births\": ",
              nd_rep_kind_names[e->kind], (unsigned long long)e->bytes,
              (unsigned long long)e->blocks,
              e->samples ? "true" : "false", e->capped ? "true" : "false",
              e->samples && e->most_bytes ? "true" : "false",
              e->samples && e->most_blocks ? "true" : "false",
              (unsigned long long)(k ? k->exact_bytes : 0),
              (unsigned long long)(k ? k->exact_blocks : 0), (unsigned long long)e->samples,
              (unsigned long long)(e->bytes - (k ? k->exact_bytes : 0)));
      if (k) fprintf(o, "{\"first\": %.4f, \"last\": %.4f}", e->born_first, e->born_last);
      else fputs("null", o);
      fputs(", \"growth\": ", o);
      if (e->cls == ND_LIFE_GROWING || e->cls == ND_LIFE_TEARDOWN)
        fprintf(o, "{\"bytes\": %llu, \"bytes_at_most\": %s, \"blocks\": %llu, "
                   "\"cycles\": %llu, \"cycles_per_block\": %llu, \"seconds\": %.6f}",
                (unsigned long long)e->grew, e->samples && e->most_grew ? "true" : "false",
                (unsigned long long)e->grew_blocks,
                (unsigned long long)e->cycles, (unsigned long long)e->per_cycles, e->secs);
      else fputs("null", o);
      fputs(", \"plateau\": ", o); // a bounded cache's: its bytes, held flat from a cycle on
      if (e->cls == ND_LIFE_CACHE)
        fprintf(o, "{\"bytes\": %llu, \"from_cycle\": %llu, \"cycles\": %llu, \"windows\": %llu, "
                   "\"by\": \"%s\"}",
                (unsigned long long)e->flat_bytes, (unsigned long long)e->flat_from,
                (unsigned long long)e->flat_cycles, (unsigned long long)e->flat_windows,
                e->flat_windows ? "floor" : "births");
      else fputs("null", o);
      fprintf(o, ", \"flagged_while_running\": %s, \"suppressed_by\": ",
              e->flagged ? "true" : "false");
      if (e->suppressed_by) nd_rep_json_str(o, e->suppressed_by);
      else fputs("null", o);
      // What the exit scan found of the blocks, whatever the class (a growing site's blocks may
      // be reachable or lost): memcheck's words; null where they were not scanned.
      static const char *const reach_keys[ND_REACH_MAX + 1] = {
          NULL, "still_reachable", "possibly_lost", "indirectly_lost", "definitely_lost"};
      fputs(", \"reach\": ", o);
      if (e->reach && e->reach <= ND_REACH_MAX) fprintf(o, "\"%s\"", reach_keys[e->reach]);
      else fputs("null", o);
      fputs(",\n     ", o);
      if (json_stack(o, r, e->stack, "     ")) return -1;
      fputs("}", o);
      first = false;
    }
    at += n;
  }
  fprintf(o, "%s]}", first ? "" : "\n  ");
  return 0;
}

// A signed header field, -1 (unknown) as null.
static void json_known(FILE *o, const char *key, int32_t v) {
  if (v >= 0) fprintf(o, ", \"%s\": %d", key, v);
  else fprintf(o, ", \"%s\": null", key);
}

const char *const nd_rep_origin_keys[ND_ORIGIN_MAX + 1] = {NULL, "started", "exec", "fork"};

void nd_rep_json_job(FILE *o, const nd_trace_header_t *h) {
  if (h->ppid) fprintf(o, ", \"ppid\": %llu, \"origin\": ", (unsigned long long)h->ppid);
  else fputs(", \"ppid\": null, \"origin\": ", o);
  nd_rep_json_str(o, nd_rep_origin_keys[h->origin <= ND_ORIGIN_MAX ? h->origin : 0]);
  json_known(o, "rank", h->rank);
  json_known(o, "world_size", h->world_size);
  json_known(o, "local_rank", h->local_rank);
  json_known(o, "local_world_size", h->local_world_size);
  fputs(", \"rank_from\": ", o);
  nd_rep_json_str(o, nd_rank_from_name(h->rank_from));
}

int nd_rep_json_report(FILE *o, report_t *r) {
  const nd_trace_t *t = r->t;
  const nd_trace_header_t *h = &t->hdr;
  char start[64];
  nd_rep_format_start(start, sizeof start, h->start_realtime_ns);
  fputs("{\n  \"ndmemreport\": 1,\n  \"file\": ", o);
  nd_rep_json_str(o, t->path);
  fprintf(o,
          ",\n  \"trace\": {\"version\": %u, \"bytes\": %llu, \"records\": %llu, "
          "\"complete\": %s, \"truncated\": %s, \"read_to\": %llu, ",
          h->version, (unsigned long long)t->file_size, (unsigned long long)t->records,
          t->ended ? "true" : "false", t->truncated ? "true" : "false",
          (unsigned long long)t->good_end);
  if (t->have_flush)
    fprintf(o, "\"last_flush\": {\"seq\": %llu, \"mono_ns\": %llu, \"records_after\": %llu}},\n",
            (unsigned long long)t->flush.seq, (unsigned long long)t->flush.mono_ns,
            (unsigned long long)t->after_flush);
  else
    fputs("\"last_flush\": null},\n", o);
  if (r->o->workspaces || r->o->limits) {
    if (r->o->workspaces && t->has.ws_served) json_ws_effect(o, r);
    if ((r->o->workspaces && json_ws(o, r, !r->o->limits)) ||
        (r->o->limits && json_limits(o, r, true)))
      return -1;
    fputs("}\n", o);
    return 0;
  }
  fprintf(o, "  \"process\": {\"pid\": %llu", (unsigned long long)h->pid);
  if (t->has.job) nd_rep_json_job(o, h); // where the process stands in its job
  fputs(", \"exe\": ", o);
  nd_rep_json_str(o, t->exe);
  fputs(", \"host\": ", o);
  nd_rep_json_str(o, t->host);
  fprintf(o,
          ", \"start_realtime_ns\": %llu, \"start\": \"%s\", \"duration_ns\": %llu, "
          "\"exited_normally\": %s, \"running\": %s",
          (unsigned long long)h->start_realtime_ns, start,
          (unsigned long long)(t->last_ns > h->start_mono_ns ? t->last_ns - h->start_mono_ns : 0),
          nd_rep_leaks_known(t) ? "true" : "false",
          t->ended || r->running == ND_RUN_NO    ? "false"
          : r->running == ND_RUN_YES             ? "true"
                                                 : "null");
  if (json_exit(o, r)) return -1;
  if (t->has.job) { // the traces of its descendants beside it (running.h)
    fputs(", \"descendants\": [", o);
    for (size_t i = 0; i < r->family.n; i++) {
      const nd_kin_t *k = &r->family.v[i];
      fputs(i ? ", {\"trace\": " : "{\"trace\": ", o);
      nd_rep_json_str(o, k->path);
      fprintf(o, ", \"pid\": %llu, \"ppid\": %llu, \"origin\": ", (unsigned long long)k->pid,
              (unsigned long long)k->ppid);
      nd_rep_json_str(o, nd_rep_origin_keys[k->origin <= ND_ORIGIN_MAX ? k->origin : 0]);
      fputs(", \"exe\": ", o);
      nd_rep_json_str(o, k->exe);
      fputc('}', o);
    }
    fputc(']', o);
  }
  fputs("},\n", o);
  fprintf(o,
          "  \"tracking\": {\"sample_interval\": %llu, \"track_min\": %llu, \"stack_depth\": %u, "
          "\"page_size\": %u},\n",
          (unsigned long long)h->sample_interval, (unsigned long long)h->track_min, h->depth,
          h->page_size);
  if (!t->have_counters) {
    fputs("  \"counters\": null,\n", o);
  } else {
    const nd_rec_counters_t *c = &t->counters;
    fprintf(o, "  \"counters\": {\n    \"mono_ns\": %llu,\n    \"threads\": %u,\n    \"calls\": {",
            (unsigned long long)c->mono_ns, c->threads);
    for (int i = 0; i < ND_TRACE_FNS; i++)
      fprintf(o, "%s\"%s\": %llu", i ? ", " : "", nd_rep_fn_names[i],
              (unsigned long long)c->calls[i]);
    fputs("},\n    \"fallbacks\": {", o);
    for (int i = 0; i < 4; i++)
      fprintf(o, "%s\"%s\": %llu", i ? ", " : "", nd_rep_fb_names[i],
              (unsigned long long)c->fallbacks[i]);
    fputs("},\n    \"kinds\": [\n", o);
    int last = 1;
    for (int i = 2; i < ND_TRACE_KINDS; i++) {
      const nd_rec_kind_totals_t *k = &c->kind[i];
      if (k->allocs || k->frees || k->live_bytes || k->peak_bytes) last = i;
    }
    for (int i = 0; i <= last; i++) {
      const nd_rec_kind_totals_t *k = &c->kind[i];
      if (i > 1 && !k->allocs && !k->frees && !k->live_bytes && !k->peak_bytes) continue;
      json_kind(o, k, i, i < last);
    }
    fputs("    ]\n  },\n", o);
  }
  // A part whose records the trace's version had no room for is absent, as from the reports of
  // that version (nd_trace_has_t); one it had room for is there, null where none was written.
  if (t->has.workspaces && json_ws(o, r, false)) return -1;
  if (t->has.limits && json_limits(o, r, false)) return -1;
  if (t->has.devices && json_devices(o, r)) return -1;
  if (t->has.python) json_python(o, t);
  if (t->has.resident) { // anonymous resident memory (RESIDENT records), null without one
    if (!t->have_resident) {
      fputs("  \"resident\": null,\n", o);
    } else {
      fputs("  \"resident\": {", o);
      json_u64(o, "peak_bytes", t->resident_peak, true);
      json_u64(o, "last_bytes", t->resident.anon_bytes, t->has.rss);
      if (t->has.rss) json_kernel_peak(o, t);
      fputs("},\n", o);
    }
  }
  if (t->has.allocator_view) json_retention(o, &r->retention);
  if (t->has.ws_served) json_ws_effect(o, r);
  if (!r->o->brief) {
    size_t n = nd_rep_list_len(r, t->nsites);
    fprintf(o, "  \"sites\": {\n    \"count\": %zu,\n", t->nsites);
    if (json_sites(o, r, "by_peak", r->by_peak, n, false) ||
        json_sites(o, r, "by_total", r->by_total, n, true))
      return -1;
    fputs("  },\n", o);
    if (t->has.python) json_py_lines(o, r);
  }
  if (json_growth(o, r)) return -1;
  fputs("  ", o);
  nd_scan_json(o, t);
  fputs(",\n", o);
  if (nd_rep_leaks_known(t)) {
    if (json_lifetimes(o, r)) return -1;
    fputs(",\n  \"live_at_last_flush\": null\n}\n", o);
  } else {
    size_t n = nd_rep_list_len(r, r->nlive);
    fprintf(o, "  \"leaks\": {\"known\": false},\n");
    fprintf(o,
            "  \"live_at_last_flush\": {\"bytes\": %llu, \"estimated\": %s, \"sites\": %zu, "
            "\"top\": [%s",
            (unsigned long long)r->live_bytes, r->live_est ? "true" : "false", r->nlive,
            n ? "\n" : "");
    for (size_t i = 0; i < n; i++)
      if (json_site(o, r, r->live[i], i + 1 < n)) return -1;
    fprintf(o, "%s]}\n}\n", n ? "  " : "");
  }
  return 0;
}

