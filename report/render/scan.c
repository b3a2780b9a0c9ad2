// SPDX-License-Identifier: MIT
// scan.c: the reachability scan's record in words (see render.h and interpose/scan/reach.c).
#include "render/render.h"

static const char *const status_text[ND_SCAN_STATUS_MAX + 1] = {
    "done",
    "off (NDMEM_LEAK_SCAN=0)",
    "not run: the process did not end by exit or _exit",
    "not run: other threads kept ndmem's tables busy each time they were stopped",
    "not run: no real-time signal was free to stop the other threads with",
    "not run: ndmem's own memory was not all known",
    "not run: no memory for the scan",
    "not run: /proc/self/maps could not be read"};
static const char *const status_keys[ND_SCAN_STATUS_MAX + 1] = {
    "done", "off", "not_at_end", "busy", "no_signal", "own_unknown", "no_memory", "no_maps"};

const char *nd_scan_status_text(uint32_t status) {
  return status <= ND_SCAN_STATUS_MAX ? status_text[status] : NULL;
}

void nd_scan_text(FILE *o, const nd_trace_t *t) {
  if (!t->have_scan) return;
  const nd_rec_scan_t *s = &t->scan;
  fprintf(o, "  %-10s  ", "reach");
  if (s->status != ND_SCAN_DONE) {
    fprintf(o, "%s\n", nd_scan_status_text(s->status));
    return;
  }
  char a[32], b[32];
  fprintf(o, "scanned at exit: %llu %s classed, %s of roots and %s of blocks read; ",
          (unsigned long long)s->blocks, s->blocks == 1 ? "block" : "blocks",
          nd_rep_human(a, sizeof a, s->root_bytes), nd_rep_human(b, sizeof b, s->block_bytes));
  fprintf(o, "%u other %s held still for ", s->threads - s->unheld,
          s->threads - s->unheld == 1 ? "thread" : "threads");
  nd_rep_print_secs(o, s->ns);
  if (s->unheld)
    fprintf(o, "; %u did not stop (every signal blocked): their registers were not read", s->unheld);
  if (s->ended_threads)
    fprintf(o, "; the stacks of %u ended %s (%s, kept mapped by glibc) were not read: what a "
               "thread left there is dead",
            s->ended_threads, s->ended_threads == 1 ? "thread" : "threads",
            nd_rep_human(a, sizeof a, s->ended_bytes));
  if (s->reserved_maps)
    fprintf(o, "; %u %s inside larger reservations reached through them", s->reserved_maps,
            s->reserved_maps == 1 ? "mapping" : "mappings");
  if (!(s->flags & ND_SCAN_COMPLETE))
    fprintf(o, "; %llu live heap %s had no record: the allocator's memory was read as roots (a "
               "block they point to is not called lost; they are unchecked)",
            (unsigned long long)s->untracked_blocks, s->untracked_blocks == 1 ? "block" : "blocks");
  fputc('\n', o);
}

void nd_scan_json(FILE *o, const nd_trace_t *t) {
  if (!t->have_scan) {
    fputs("\"scan\": null", o);
    return;
  }
  const nd_rec_scan_t *s = &t->scan;
  fprintf(o,
          "\"scan\": {\"status\": \"%s\", \"complete\": %s, \"allocator_known\": %s, "
          "\"threads\": %u, \"threads_not_held\": %u, \"held_ns\": %llu, \"tries\": %llu, "
          "\"blocks\": %llu, \"root_bytes\": %llu, \"block_bytes\": %llu, "
          "\"not_resident_bytes\": %llu, \"untracked_blocks\": %llu, \"ended_threads\": %u, "
          "\"ended_thread_bytes\": %llu, \"reserved_maps\": %u}",
          status_keys[s->status <= ND_SCAN_STATUS_MAX ? s->status : 0],
          s->flags & ND_SCAN_COMPLETE ? "true" : "false",
          s->flags & ND_SCAN_ALLOCATOR_KNOWN ? "true" : "false", s->threads, s->unheld,
          (unsigned long long)s->ns, (unsigned long long)s->tries, (unsigned long long)s->blocks,
          (unsigned long long)s->root_bytes, (unsigned long long)s->block_bytes,
          (unsigned long long)s->skipped_bytes, (unsigned long long)s->untracked_blocks,
          s->ended_threads, (unsigned long long)s->ended_bytes, s->reserved_maps);
}
