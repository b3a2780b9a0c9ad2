// SPDX-License-Identifier: MIT
// peak.c: the kernel's peak of resident memory and its parts (analyse.h, nd_rep_peak): one
// computation for text, JSON and HTML, so that every format says the same figures.
#include "analyse/analyse.h"

#include <string.h>

void nd_rep_peak(const nd_trace_t *t, nd_rep_peak_t *out) {
  memset(out, 0, sizeof *out);
  if (!t->have_rss) return;
  const nd_rec_rss_t *r = &t->rss;
  out->known = true;
  out->at_end = r->flags & ND_RSS_AT_END;
  out->maxrss = r->maxrss_bytes;
  out->hwm = r->hwm_bytes;
  out->peak = r->maxrss_bytes > r->hwm_bytes ? r->maxrss_bytes : r->hwm_bytes;
  out->p = r->at_peak.mono_ns ? r->at_peak : r->now;
  const nd_rss_parts_t *p = &out->p;
  // Sums of counters far below 2^62 (the reader checked): no overflow in int64_t.
  int64_t parts = (int64_t)(p->heap_bytes + p->alloc_free_bytes + p->maps_touched_bytes +
                            p->ws_idle_bytes + p->self_bytes);
  out->other = (int64_t)p->anon - parts;
  out->unseen = (int64_t)out->peak - (int64_t)p->rss;
  out->untouched = p->maps_untouched_bytes;
  out->rss_now = r->now.rss;
}
