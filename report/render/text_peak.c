// SPDX-License-Identifier: MIT
// text_peak.c: the text report's headline, the kernel's peak of resident memory (what
// /usr/bin/time and the OOM killer go by), and the parts it was made of at the reading nearest
// it (analyse/peak.c), each named by what it measures; and a mapping site's untouched bytes.
#include "render/text.h"

static void part(FILE *o, const char *name, uint64_t v, bool *first) {
  char b[48];
  fprintf(o, "%s%s %s", *first ? "" : ", ", name, nd_rep_human(b, sizeof b, v));
  *first = false;
}

static void spart(FILE *o, const char *name, int64_t v) {
  char b[48];
  fprintf(o, ", %s %s%s", name, v < 0 ? "-" : "",
          nd_rep_human(b, sizeof b, v < 0 ? (uint64_t)-v : (uint64_t)v));
}

void nd_text_peak_lines(FILE *o, const nd_trace_t *t) {
  nd_rep_peak_t k;
  nd_rep_peak(t, &k);
  if (!k.known) return;
  char b[ND_TEXT_SIZE];
  fprintf(o, "  %-10s  %s: the kernel's high-water mark of resident memory (ru_maxrss, read %s)\n",
          "peak RSS", nd_text_size(b, k.peak, false),
          k.at_end ? "at the process's end" : "at its last flush: it ended without one at its end");
  const nd_rss_parts_t *p = &k.p;
  fprintf(o, "  %-10s  at the reading nearest it (", "at peak");
  nd_rep_print_secs(o, nd_rep_since_start(t, p->mono_ns));
  fprintf(o, ", resident %s): ", nd_rep_human(b, sizeof b, p->rss));
  bool first = true;
  part(o, "heap in use", p->heap_bytes, &first);
  if (p->alloc_ns) part(o, "freed, held by the allocator", p->alloc_free_bytes, &first);
  part(o, "mappings (touched pages)", p->maps_touched_bytes, &first);
  if (p->ws_idle_bytes) part(o, "workspace arenas (idle)", p->ws_idle_bytes, &first);
  part(o, "ndmem's own", p->self_bytes, &first);
  spart(o, "other anonymous", k.other);
  part(o, "file-backed", p->file, &first);
  part(o, "shmem", p->shmem, &first);
  spart(o, "peak between readings", k.unseen);
  fputc('\n', o);
  if (k.untouched) {
    fprintf(o, "  %-10s  mappings reserved and never touched %s (not resident: in no figure above)\n",
            "untouched", nd_rep_human(b, sizeof b, k.untouched));
  }
}

void nd_text_untouched(FILE *o, uint64_t peak, uint64_t untouched) {
  char a[48], b[48];
  fprintf(o, "; mapped %s, never touched %s", nd_rep_human(a, sizeof a, peak),
          nd_rep_human(b, sizeof b, untouched));
}
