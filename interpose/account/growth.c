// SPDX-License-Identifier: MIT
// growth.c: finding a site that keeps growing while the job runs, hours before the OOM killer.
//
// A site's live bytes swing within a cycle (its temporaries), so they say little; its *floor* —
// the lowest live bytes in a window — does not: temporaries return to it, retained blocks raise
// it. The trace writer closes every site's window at each flush where the cycle clock moved (or
// at every flush in a job without cycles) and hands the floor here. A site is growing when its
// floor rose in at least 3 windows, over at least NDMEM_GROWTH_CYCLES cycles (windows when there
// are no cycles), never fell in between, and rose again recently (within the second half of that
// span): a start-up ramp that has stopped, or a cache that fills and then evicts, does not; nor
// a rise under the growth floor (nd_growth_below_floor: under 1 KiB a cycle and 64 KiB in all,
// as numpy's small caches fill). In a job with cycles, a rise begins in them: the start-up before
// the first cycle does not count.
// At most MAX_SAID sites are named on stderr; the rest are recorded only. It is said once per site
// (the root process only, as every remark) and written as a GROWTH record.
#include "account/growth.h"

#include "stacks/names.h"
#include "common/os.h"

#include <string.h>

#define MIN_RISES 3

#define MAX_SAID 8 // lines per process; later growing sites are recorded in the trace only

// The line: kind, stack, floor, then the slope in words, "+1.00 MiB per 5 cycles" (k: cycles per
// retained block, so a leak every fifth cycle reads as such), or per second without cycles, and
// the top frames with the innermost Python line (nd_buf_stack).
static void say(int fd, const nd_site_t *s, const nd_rec_growth_t *r, uint64_t count) {
  static unsigned said; // the trace writer's thread only
  if (fd < 0 || said > MAX_SAID) return;
  if (said++ == MAX_SAID) {
    nd_buf_t b;
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem: growing: more sites grow; the trace records each (ndmemreport)");
    nd_buf_line(&b, fd);
    return;
  }
  const char *est = s->sampled ? "~" : "";
  uint64_t grew = r->floor_bytes - r->base_bytes, retained = count - s->g->rise->base_count;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem: growing: ");
  nd_buf_kind(&b, s->kind);
  nd_buf_str(&b, " site [stack ");
  nd_buf_u64(&b, s->id);
  nd_buf_str(&b, "] holds ");
  nd_buf_str(&b, est);
  nd_buf_ubytes(&b, r->floor_bytes);
  nd_buf_str(&b, " at its lowest, +");
  nd_buf_str(&b, est);
  if (r->cycle > r->base_cycle) {
    uint64_t span = r->cycle - r->base_cycle;
    uint64_t k = retained && retained <= span ? (span + retained / 2) / retained : 1;
    nd_buf_ubytes(&b, (uint64_t)((double)grew * (double)k / (double)span + 0.5));
    nd_buf_str(&b, " per ");
    if (k > 1) {
      nd_buf_u64(&b, k);
      nd_buf_str(&b, " cycles");
    } else {
      nd_buf_str(&b, "cycle");
    }
    nd_buf_str(&b, " over ");
    nd_buf_u64(&b, span);
    nd_buf_str(&b, " cycles");
  } else {
    double secs = (double)(r->mono_ns - r->base_ns) / 1e9;
    nd_buf_ubytes(&b, (uint64_t)((double)grew / (secs > 0.001 ? secs : 0.001) + 0.5));
    nd_buf_str(&b, " per second over ");
    nd_buf_u64(&b, r->rises);
    nd_buf_str(&b, " rises");
  }
  if (s->depth) {
    uintptr_t ips[ND_STACK_MAX];
    nd_buf_str(&b, ": ");
    nd_buf_stack(&b, ips, nd_site_stack(s, ips), 3);
  }
  nd_buf_line(&b, fd);
}

// A site's or a rise's state, zeroed, from growth.c's own pages (the trace writer's thread only,
// never freed).
static void *state_new(size_t n) {
  static char *chunk;
  static size_t left;
  if (left < n) {
    if (!(chunk = nd_os_map(1u << 16))) return left = 0, NULL;
    left = 1u << 16;
  }
  void *r = chunk;
  chunk += n;
  left -= n;
  memset(r, 0, n);
  return r;
}

// The windows' last CLOSE_RING closes by number (from 1; 0 is none): the cycle clock and the
// time of each, for the sites that held nothing at their last close and keep only its number.
// A site that held nothing at a close and changed at none since held nothing at every later
// close too, so a number older than the ring is read as its oldest close: a rise is then judged
// from a later base, over a shorter span, never from a guess. 1 MiB at most: over 18 hours of
// 1 s flushes, 11 minutes at NDMEM_FLUSH_MS=10.
#define CLOSE_RING 65536u
typedef struct close_at {
  uint64_t cycle, ns;
} close_at_t;
static close_at_t *closes; // [CLOSE_RING], mapped at the first close
static uint32_t nclosed;   // the last close's number (wraps, skipping 0)

uint32_t nd_growth_close(uint64_t cycle, uint64_t now_ns) {
  if (!closes && !(closes = nd_os_map(CLOSE_RING * sizeof *closes))) return 0;
  uint32_t n = nclosed + 1 ? nclosed + 1 : 1;
  closes[n % CLOSE_RING] = (close_at_t){cycle, now_ns};
  return nclosed = n;
}

// Close number w, or the oldest the ring keeps when w is older.
static const close_at_t *close_of(uint32_t w) {
  if (nclosed - w >= CLOSE_RING) w = nclosed - (CLOSE_RING - 1);
  return &closes[w % CLOSE_RING];
}

int nd_growth_window(nd_site_t *s, uint32_t win, uint64_t floor, uint64_t count, uint64_t cycle,
                     uint64_t now_ns, uint64_t every, int fd, nd_rec_growth_t *out) {
  nd_growth_t *g = s->g;
  if (!g) {
    // Held nothing at every close so far: the close is all there is to keep (without a number,
    // win 0, the next close that finds memory counts as the site's first).
    if (!floor && !count) {
      s->close_win = win;
      return 0;
    }
    if (!(g = state_new(sizeof *g))) return 0; // out of memory: not judged
    s->g = g;
    if (s->close_win) { // it held nothing at that close: a rise may begin there
      const close_at_t *c = close_of(s->close_win);
      g->close_cycle = c->cycle;
      g->close_ns = c->ns;
    }
  }
  // The site's first window has nothing to compare with yet. A window that opened before the
  // job's first cycle and closes after it holds the end of its start-up (libraries loaded, the
  // exit-handler list and caches filled), which rises in the healthiest job: a rise counted in
  // cycles begins at a close made in them (a job without cycles counts its windows from the
  // start, as it has nothing else to go by).
  if (!g->close_ns || (cycle && !g->close_cycle)) {
    if (g->rise) g->rise->rises = g->rise->windows = 0;
    g->last_floor = floor;
    g->close_cycle = cycle;
    g->close_ns = now_ns;
    g->close_count = count;
    return 0;
  }
  if (floor > g->last_floor && !g->rise) g->rise = state_new(sizeof *g->rise); // NULL: not judged
  nd_growth_rise_t *r = g->rise;
  if (r && floor < g->last_floor) {
    r->rises = r->windows = 0; // it fell: whatever rose was not retained
  } else if (r && floor > g->last_floor) {
    if (!r->rises) { // a rise begins at the previous window's close
      r->base_floor = g->last_floor;
      r->base_cycle = g->close_cycle;
      r->base_ns = g->close_ns;
      r->base_count = g->close_count;
      r->windows = 0;
    }
    r->rises++;
    r->last_rise_cycle = cycle;
    r->last_rise_window = r->windows + 1;
  }
  if (r && r->rises) r->windows++;
  g->last_floor = floor;
  g->close_cycle = cycle;
  g->close_ns = now_ns;
  g->close_count = count;
  if (!r || r->warned || !every || r->rises < MIN_RISES) return 0;
  // Counted in cycles where the cycle clock kept pace with the windows; in windows where it
  // stalled (a stream the detector lost) or the job has no cycles.
  int cycles = cycle - r->base_cycle >= r->windows;
  uint64_t span = cycles ? cycle - r->base_cycle : r->windows;
  uint64_t quiet = cycles ? cycle - r->last_rise_cycle : r->windows - r->last_rise_window;
  if (span < every || quiet * 2 > span) return 0;
  // A few bytes a cycle, a few KiB in all (a runtime's small cache filling): no finding, unless
  // it goes on past the floor (trace_format.h)
  if (nd_growth_below_floor(floor - r->base_floor, span)) return 0;
  r->warned = 1;
  memset(out, 0, sizeof *out);
  out->mono_ns = now_ns;
  out->stack_id = s->id;
  out->kind = s->kind;
  out->flags = s->sampled ? ND_SITE_SAMPLED : 0;
  out->cycle = cycles ? cycle : 0;
  out->base_cycle = cycles ? r->base_cycle : 0;
  out->base_ns = r->base_ns;
  out->base_bytes = r->base_floor;
  out->floor_bytes = floor;
  out->rises = r->rises;
  say(fd, s, out, count);
  return 1;
}
