// SPDX-License-Identifier: MIT
// rss.c: the RSS record (trace version 18). The kernel keeps the peak that /usr/bin/time, the
// cgroup and the OOM killer go by (ru_maxrss, VmHWM): ndmem reads it, exact, at every flush and at
// the end, never estimates it from samples. Beside it, the split the kernel gives of VmRSS
// (anonymous, file-backed, shmem) and ndmem's own account of the anonymous part, read at the same
// flush; the reading with the highest VmRSS is kept as the breakdown at the peak. Everything here
// is system calls and counters: callable from a fatal signal's last flush (no lock waited for).
#include "output/rss.h"

#include "account/sites.h"
#include "account/track.h"
#include "common/os.h"
#include "limits/limits.h"
#include "runtime/allocstat.h"
#include "runtime/shim.h"
#include "runtime/sysmem.h"

#include <string.h>

// Mapping sites with untouched pages, as last written: a site enters when it has some and leaves
// once its 0 is written. Beyond SITES_MAX such sites the rest are in the totals only.
#define SITES_MAX 1024
static struct {
  nd_site_t *site[SITES_MAX];
  uint64_t now[SITES_MAX], written[SITES_MAX];
  uint32_t n;
  int full;
  nd_rss_parts_t at_peak;
  uint64_t untouched; // the last reading's total (kept when the table is busy)
  uint64_t self;      // the same for ndmem's own mappings
} rs;

static void site_untouched(void *ctx, struct nd_site *site, uint64_t u) {
  (void)ctx;
  if (!site) return;
  uint32_t i = 0;
  while (i < rs.n && rs.site[i] != site) i++;
  if (i == rs.n) {
    if (rs.n == SITES_MAX) {
      rs.full = 1;
      return;
    }
    rs.site[rs.n] = site, rs.now[rs.n] = 0, rs.written[rs.n] = 0, rs.n++;
  }
  rs.now[i] += u;
}

static void write_sites(nd_tw_t *w) {
  uint32_t keep = 0;
  for (uint32_t i = 0; i < rs.n; i++) {
    nd_site_t *s = rs.site[i];
    if (rs.now[i] != rs.written[i] && s->written) { // its STACK is in the trace
      nd_rec_site_untouched_t r = {s->id, s->kind, 0, rs.now[i]};
      nd_tw_record(w, ND_REC_SITE_UNTOUCHED, &r, sizeof r, NULL, 0);
      rs.written[i] = rs.now[i];
    }
    if (rs.now[i] || rs.written[i]) {
      rs.site[keep] = s, rs.now[keep] = rs.now[i], rs.written[keep] = rs.written[i];
      keep++;
    }
  }
  rs.n = keep;
}

void nd_rss_write(nd_tw_t *w, int final) {
  nd_status_mem_t m;
  if (nd_status_self(&m) != 0) return; // no /proc: no record (the reader says unknown)
  nd_rec_rss_t r;
  memset(&r, 0, sizeof r);
  r.flags = final ? ND_RSS_AT_END : 0;
  r.maxrss_bytes = nd_maxrss_self();
  r.hwm_bytes = m.hwm;
  nd_rss_parts_t *p = &r.now;
  p->mono_ns = nd_os_mono_ns();
  p->rss = m.rss, p->anon = m.anon, p->file = m.file, p->shmem = m.shmem;
  ndmem_stats_t s;
  nd_counters_snapshot_process(&s);
  p->heap_bytes = s.kind[NDMEM_KIND_HEAP].live_bytes > 0 ? (uint64_t)s.kind[NDMEM_KIND_HEAP].live_bytes : 0;
  int64_t maps = s.kind[NDMEM_KIND_MMAP].live_bytes;
  nd_rec_resident_t a;
  memset(&a, 0, sizeof a);
  if (nd_allocstat_last(&a) == 0 && a.alloc_ns) {
    p->alloc_free_bytes = a.alloc_free_bytes > a.alloc_trimmed_bytes ? a.alloc_free_bytes - a.alloc_trimmed_bytes : 0;
    p->alloc_ns = a.alloc_ns;
  }
  for (uint32_t i = 0; i < rs.n; i++) rs.now[i] = 0;
  int64_t u = nd_mmap_read_touched(site_untouched, NULL);
  if (u >= 0) rs.untouched = (uint64_t)u;
  else r.flags |= ND_RSS_MAPS_UNREAD;
  if (rs.full) r.flags |= ND_RSS_SITES_FULL;
  p->maps_untouched_bytes = maps > 0 && rs.untouched < (uint64_t)maps ? rs.untouched : (maps > 0 ? (uint64_t)maps : 0);
  p->maps_touched_bytes = maps > 0 ? (uint64_t)maps - p->maps_untouched_bytes : 0;
  p->ws_idle_bytes = (uint64_t)nd_ws_idle_bytes();
  int64_t own = nd_os_own_resident();
  if (own >= 0) {
    int64_t arenas = __atomic_load_n(&nd_ws_arena_total, __ATOMIC_RELAXED);
    rs.self = own > arenas ? (uint64_t)(own - arenas) : 0;
  } else {
    r.flags |= ND_RSS_OWN_UNREAD;
  }
  p->self_bytes = rs.self;
  // The reading closest to the peak: the highest VmRSS so far (the peak itself lies between two
  // readings unless one caught it).
  if (!rs.at_peak.mono_ns || p->rss >= rs.at_peak.rss) rs.at_peak = *p;
  r.at_peak = rs.at_peak;
  nd_tw_record(w, ND_REC_RSS, &r, sizeof r, NULL, 0);
  if (u >= 0) write_sites(w);
}

void nd_rss_atfork_child(void) { memset(&rs, 0, sizeof rs); }
