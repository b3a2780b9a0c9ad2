// SPDX-License-Identifier: MIT
// peak.c: the HTML report's headline, the kernel's peak of resident memory (what /usr/bin/time
// and the OOM killer go by) and its parts, named as text and JSON name them (analyse/peak.c).
#include "render/html/html.h"

static void part(FILE *o, const char *name, uint64_t v) {
  fprintf(o, "<li>%s ", name);
  nd_html_bytes(o, v, false);
  fputs("</li>", o);
}

static void spart(FILE *o, const char *name, int64_t v) {
  fprintf(o, "<li>%s %s", name, v < 0 ? "-" : "");
  nd_html_bytes(o, v < 0 ? (uint64_t)-v : (uint64_t)v, false);
  fputs("</li>", o);
}

void nd_html_peak(FILE *o, const nd_trace_t *t) {
  nd_rep_peak_t k;
  nd_rep_peak(t, &k);
  if (!k.known) return;
  const nd_rss_parts_t *p = &k.p;
  fputs("<p class=\"big\">peak RSS <b>", o);
  nd_html_bytes(o, k.peak, false);
  fprintf(o, "</b> <small>the kernel's high-water mark of resident memory (ru_maxrss, read %s)"
             "</small></p>\n<p><small>at the reading nearest it (resident ",
          k.at_end ? "at the process's end" : "at its last flush");
  nd_html_bytes(o, p->rss, false);
  fputs("):</small></p>\n<ul class=\"parts\">", o);
  part(o, "heap in use", p->heap_bytes);
  if (p->alloc_ns) part(o, "freed, held by the allocator", p->alloc_free_bytes);
  part(o, "mappings (touched pages)", p->maps_touched_bytes);
  if (p->ws_idle_bytes) part(o, "workspace arenas (idle)", p->ws_idle_bytes);
  part(o, "ndmem's own", p->self_bytes);
  spart(o, "other anonymous", k.other);
  part(o, "file-backed", p->file);
  part(o, "shmem", p->shmem);
  spart(o, "peak between readings", k.unseen);
  fputs("</ul>\n", o);
  if (k.untouched) {
    fputs("<p><small>mappings reserved and never touched ", o);
    nd_html_bytes(o, k.untouched, false);
    fputs(" (not resident: in no figure above)</small></p>\n", o);
  }
}
