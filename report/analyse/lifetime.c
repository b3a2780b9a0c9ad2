// SPDX-License-Identifier: MIT
// lifetime.c: the classes of what was live at exit (see lifetime.h). Every claim rests on what
// the trace proves: a block's birth time and cycle, the steady state's start (the first cycle
// any workspace closed), and the floor history of its site. Where the evidence is missing (an
// older trace, a job without cycles, a run too short for a second flush), an entry stays "live
// at exit": a missed growth costs less than a false one; where too few flush windows were there
// to judge growth at all, the report says so (nd_life_judged_t), never silence.
#include "analyse/lifetime.h"

#include <stdlib.h>
#include <string.h>

const char *const nd_life_names[ND_LIFE_CLASSES] = {
    "definitely lost", "indirectly lost", "growing", "released at teardown", "live at exit",
    "bounded cache", "possibly lost", "still reachable", "held since start-up", "suppressed",
    "inherited at fork"};
const char *const nd_life_keys[ND_LIFE_CLASSES] = {
    "definitely_lost", "indirectly_lost", "growing", "released_at_teardown", "live_at_exit",
    "bounded_cache", "possibly_lost", "still_reachable", "held_since_startup", "suppressed",
    "inherited_at_fork"};

#define MIN_BLOCKS 3 // retained blocks born in the steady state before a site can be growing
#define MIN_RISES 2  // floor rises (and no fall) before a site's history shows growth
#define MIN_CYCLES 8 // fewer cycles in the whole run: the floor history decides, not the cycles
#define CACHE_SHARE 3 // a bounded cache is flat for the last 1/CACHE_SHARE of the steady state,
#define CACHE_PACE 2  // CACHE_PACE times the mean cycles between its rises
#define CACHE_PAUSE 2 // and CACHE_PAUSE times the longest pause between two of them, at least

typedef struct run {
  const nd_trace_t *t;
  uint64_t t0, end, steady; // monotonic ns: start, end, steady state (0: none)
  uint64_t flushes;         // the final flush's number (after a normal exit)
  bool by_cycles;           // cycles enough (MIN_CYCLES) to judge spread and teardown by them
  bool floors;              // windows enough (judge) for a floor's history to show growth
} run_t;

// The run as the rules read it (floors: set once judge() has counted the windows). It ends where
// the program ended (its EXIT record: exit called, a fatal signal), not where the trace did: the
// exit scan and the last records come after the program's last allocation, and in a fork worker
// that inherited a large heap they can take a quarter of its life, with no flush in them.
static uint64_t run_end(const nd_trace_t *t) {
  uint64_t end = t->ended ? t->end.mono_ns : t->last_ns;
  if (t->have_exit && t->exit.mono_ns > t->hdr.start_mono_ns && t->exit.mono_ns < end)
    end = t->exit.mono_ns;
  return end;
}
static run_t run_of(const nd_trace_t *t) {
  return (run_t){t, t->hdr.start_mono_ns, run_end(t),
                 t->flush.steady_ns, t->flushes,
                 t->flush.steady_ns && t->flush.cycles >= MIN_CYCLES, false};
}

static double frac(const run_t *r, uint64_t ns) {
  if (!ns || r->end <= r->t0 || ns <= r->t0) return 0;
  return ns >= r->end ? 1.0 : (double)(ns - r->t0) / (double)(r->end - r->t0);
}

// The moves of a site's floor over the run. The trailing falls are the teardown when they began
// after the last cycle closed (a job with cycles: an interpreter's shutdown runs after its loop)
// or are the final flush's fall; they are then left out of the run's moves (*final set).
static void moves(const run_t *r, const nd_site_hist_t *h, bool *final, uint32_t *rises,
                  uint32_t *drops) {
  const nd_trace_t *t = r->t;
  bool st = r->steady != 0, counts = h->records >= 2 && (!st || h->cycle >= 1);
  *rises = (st ? h->rises : h->rises_any) + (counts && h->move > 0);
  *drops = (st ? h->drops : h->drops_any) + (counts && h->move < 0);
  *final = t->ended && h->tail_drops && h->move < 0 &&
           ((h->tail_drops == 1 && h->seq == r->flushes) ||
            (r->by_cycles && h->tail_cycle == t->flush.cycles));
  if (*final) *drops -= *drops < h->tail_drops ? *drops : h->tail_drops;
}

// A leak whose blocks were born across the steady state and whose site shows retention. With
// cycles, the births must span at least MIN_BLOCKS cycles and a quarter of the steady state's
// cycles, and the site must have kept every block it made (its live bytes rose at each birth) or
// its floor must have risen and never fallen. Without cycles only the floor's history counts: a
// burst of allocations within one flush window is not growth, however it is spread in time, and
// the site must still have been growing in the run's last quarter (the span judged): a job
// without cycles may be all start-up (`import torch`: libraries' registrations that stop once
// their last library is loaded). A floor's history counts only where the span had windows
// enough to judge (judge); else a site that also frees stays live at exit.
static bool growing(const run_t *r, const nd_leak_t *l, const nd_site_t *s, nd_life_t *e) {
  if (l->steady_blocks < MIN_BLOCKS || !l->born_last_ns || !s) return false;
  uint64_t from = r->steady ? r->steady : r->t0;
  if (r->end <= from || l->born_last_ns <= l->steady_first_ns) return false;
  // A burst in time, where the cycles cannot tell: with cycles, their spread below is the
  // evidence (a loop of 30 quick steps in a long job is no burst: one block per step, kept).
  if (!r->by_cycles && (l->born_last_ns - l->steady_first_ns) * 4 < r->end - from) return false;
  bool final;
  uint32_t rises, drops;
  moves(r, &s->h, &final, &rises, &drops);
  bool floor_rose = r->floors && rises >= MIN_RISES && !drops;
  if (r->by_cycles) {
    uint64_t spread = l->steady_last_cycle - l->steady_first_cycle, all = r->t->flush.cycles;
    if (spread + 1 < MIN_BLOCKS || spread * 4 < all) return false;
    // A site that never freed a block retained every one: its live bytes rose at each birth.
    if (!floor_rose && (s->rec.frees || (s->rec.flags & ND_SITE_SAMPLED))) return false;
  } else if (!floor_rose || (l->born_last_ns - from) * 4 < (r->end - from) * 3) {
    return false;
  }
  uint64_t cycles = l->steady_last_cycle - l->steady_first_cycle;
  if (nd_growth_below_floor(l->steady_bytes, cycles ? cycles : rises)) return false; // no finding
  e->grew = l->steady_bytes;
  e->grew_blocks = l->steady_blocks;
  e->cycles = cycles;
  // One block per k cycles: counted in blocks, so not where samples stand for blocks unseen
  // (their growth is said in bytes per cycle; cap_growth estimates its blocks).
  e->per_cycles = e->cycles && l->steady_blocks > 1 && !l->sampled_blocks
                      ? (e->cycles + (l->steady_blocks - 1) / 2) / (l->steady_blocks - 1)
                      : 0;
  e->secs = (double)(l->born_last_ns - l->steady_first_ns) / 1e9;
  return true;
}

// A site whose floor rose through the run and fell only at the teardown (moves: after the last
// cycle, or in the final flush), from its highest value; only where the span had windows enough
// to judge (a short run's warm-up rises as a leak does).
static bool teardown(const run_t *r, const nd_site_t *s, nd_life_t *e) {
  const nd_site_hist_t *h = &s->h;
  bool final;
  uint32_t rises, drops;
  moves(r, h, &final, &rises, &drops);
  if (!r->floors || !final || rises < MIN_RISES || drops) return false;
  if (h->tail_floor < h->peak_floor) return false; // its highest floor came before the last cycle
  // ... and it was still rising late in the run, not on a plateau since a warm-up: the peak was
  // first reached in the last quarter of the steady state's cycles (of the site's records in a
  // job without enough cycles; a site is recorded only in windows where it changed).
  if (r->by_cycles && h->steady) {
    uint64_t from = h->steady_cycle, last = h->cycle; // flat until the teardown's record
    if (last <= from || (h->peak_cycle - from) * 4 < (last - from) * 3) return false;
  } else {
    uint64_t from = h->steady ? h->steady_rec : 1, last = h->records - h->tail_drops;
    if (last <= from || (h->peak_rec - from) * 4 < (last - from) * 3) return false;
    // ... and its rise was no burst: from the window it began in to its peak, a quarter of the
    // run's flushes at least (a library's constructor that fills a table over a few windows of a
    // start-up, as an import of torch loads gdcm's dictionaries, is not growth, whatever the site
    // did before).
    if ((h->peak_seq - h->rise_seq) * 4 < r->flushes) return false;
  }
  uint64_t base = r->steady && h->steady ? h->steady_floor : 0;
  if (h->tail_floor <= base) return false;
  e->bytes = h->tail_floor;
  e->grew = h->tail_floor - base;
  e->cycles = r->steady && h->peak_cycle > h->steady_cycle ? h->peak_cycle - h->steady_cycle : 0;
  // A site that freed nothing from its first steady-state record to the teardown kept every
  // block it made in between: what it held then, and its growth in those blocks, exactly (a
  // floor lags its window by one; with few windows, by much of the run). One block per k cycles
  // where it made at most one and a half per cycle, else bytes per cycle.
  if (e->cycles && h->held_frees == h->steady_frees && h->held_allocs > h->steady_allocs &&
      h->held_cycle > h->steady_cycle && !(s->rec.flags & ND_SITE_SAMPLED)) {
    e->bytes = h->held_live;
    e->grew = h->held_alloc_bytes - h->steady_alloc_bytes;
    e->grew_blocks = h->held_allocs - h->steady_allocs;
    e->cycles = h->held_cycle - h->steady_cycle;
    e->per_cycles = e->grew_blocks * 2 <= e->cycles * 3
                        ? (e->cycles + e->grew_blocks / 2) / e->grew_blocks
                        : 0;
  }
  return !nd_growth_below_floor(e->grew, e->cycles ? e->cycles : rises); // else no finding
}

// A bounded cache: a site that grew in the steady state (MIN_BLOCKS blocks live at exit born
// over MIN_BLOCKS cycles at least, and it kept every block it made, or its floor rose
// MIN_RISES times and never fell), reached its highest bytes at cycle `from` and held them flat
// to the last cycle, holding no more at exit than on that plateau. Flat, at least, for
//   - the last 1/CACHE_SHARE of the steady state's cycles;
//   - CACHE_PACE times the mean cycles between its rises: a leak of a block every k cycles is
//     never flat for k at the end, so a site flat for twice its own pace stopped;
//   - CACHE_PAUSE times the longest pause between two of its rises: a leak in bursts (one per
//     epoch) pauses between them as long as it then looks flat.
// With cycles enough (MIN_CYCLES), windows enough to judge (the pauses are seen in them) and
// exact sites only: a sampled site's history moves only at its samples, so it looks flat between
// them whatever it did, and a false cache hides a leak.
// The plateau is found
//   1. at a site that never freed a block and has a record of each (all live at exit, with
//      their birth cycles), by its births: the last is where it reached its plateau;
//   2. else by its floor history, flat over ND_LIFE_MIN_WINDOWS windows at least: no fall, the
//      latest floor its highest, held since the peak's record (or the one before, whose live
//      bytes were the peak already). A site is written only where it changed, so one written no
//      more after a record whose live bytes stood above its floor held them in every window
//      since: they are its plateau, from that record on.
static bool cache(const run_t *r, const nd_leak_t *l, const nd_site_t *s, nd_life_t *e) {
  if (!r->by_cycles || !r->floors || !s || (s->rec.flags & ND_SITE_SAMPLED) || l->sampled_blocks)
    return false;
  uint64_t spread = l->steady_last_cycle - l->steady_first_cycle; // a burst is no fill
  if (l->steady_blocks < MIN_BLOCKS || spread + 1 < MIN_BLOCKS) return false;
  const nd_site_hist_t *h = &s->h;
  uint64_t end = r->t->flush.cycles, from, bytes, rise, rises, windows = 0;
  if (!s->rec.frees) {
    if (s->rec.allocs != l->exact_blocks || s->rec.alloc_bytes != l->exact_bytes) return false;
    bytes = l->exact_bytes;
    from = l->steady_last_cycle;
    rise = spread;
    rises = l->steady_blocks - 1;
  } else {
    bool final;
    uint32_t up, down;
    moves(r, h, &final, &up, &down);
    if (down || up < MIN_RISES || (final ? h->tail_floor : h->floor) != h->peak_floor) return false;
    bool quiet = !final && h->seq < r->flushes && h->live > h->floor;
    bytes = quiet ? h->live : h->peak_floor;
    from = quiet ? h->cycle : h->peak_since;
    uint64_t since = quiet ? h->win + 1 : h->peak_since_win;
    windows = r->t->steady_windows > since ? r->t->steady_windows - since : 0;
    if (windows < ND_LIFE_MIN_WINDOWS) return false;
    rise = from; // from the steady state's start: its pace no faster than this says
    rises = up;
  }
  if (!bytes || e->bytes > bytes || from > end) return false;
  uint64_t flat = end - from;
  if (flat * CACHE_SHARE < end || flat * rises < rise * CACHE_PACE ||
      flat < h->max_pause * CACHE_PAUSE)
    return false;
  e->flat_bytes = bytes;
  e->flat_from = from;
  e->flat_cycles = flat;
  e->flat_windows = windows;
  return true;
}

// Whether growth could be judged (nd_life_judged_t): the windows of the span, and where there are
// too few, the NDMEM_FLUSH_MS that would give it twice as many as needed. With cycles the span is
// the steady state's, to its last window, and its windows the flushes that closed them (the
// clock moved, or stood still for ND_WINDOW_FLUSHES flushes); with fewer cycles than windows
// needed and no window closed by a clock that stood still, no interval gives more. Without
// cycles growth must span a quarter of the run (growing), so the span is the last quarter, where
// the writer's windows are longest, and its windows the flushes in it (a COUNTERS record each,
// the timeline's points; a thinned timeline counts each kept point for its stride).
static void judge(const run_t *r, nd_life_judged_t *j) {
  static const uint64_t steps[] = {10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000};
  const nd_trace_t *t = r->t;
  if (!t->has.site_history) return;
  j->known = true;
  j->by_births = r->by_cycles;
  if (r->steady) {
    j->windows = t->steady_windows;
    j->span_ns = t->steady_window_ns > r->steady ? t->steady_window_ns - r->steady : 0;
    j->cycles = t->flush.cycles;
  } else {
    j->span_ns = r->end > r->t0 ? (r->end - r->t0) / 4 : 0;
    for (size_t i = 0; i < t->npoints; i++)
      if (t->series[i].mono_ns > r->end - j->span_ns) j->windows++;
    if (t->series_stride > 1) j->windows *= t->series_stride;
  }
  j->judged = j->windows >= ND_LIFE_MIN_WINDOWS;
  j->few_cycles = !j->judged && r->steady && j->cycles < ND_LIFE_MIN_WINDOWS && !t->stalled_windows;
  if (j->judged || j->few_cycles) return;
  uint64_t ms = j->span_ns / 1000000, want = ms / (2 * ND_LIFE_MIN_WINDOWS);
  for (size_t i = 0; i < sizeof steps / sizeof *steps && steps[i] <= want; i++)
    j->flush_ms = steps[i];
  if (!j->flush_ms && ms / ND_LIFE_MIN_WINDOWS >= steps[0]) j->flush_ms = steps[0];
}

static int by_class(const void *a, const void *b) {
  const nd_life_t *x = a, *y = b;
  if (x->cls != y->cls) return x->cls < y->cls ? -1 : 1;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static bool flagged(const nd_trace_t *t, uint32_t stack, uint16_t kind) {
  for (size_t i = 0; i < t->ngrowth; i++)
    if (t->growth[i].stack == stack && t->growth[i].rec.kind == kind) return true;
  return false;
}

static uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// x * room / all (all > 0), in 128 bits: a trace's counters may hold any 64-bit value.
static uint64_t share(uint64_t x, uint64_t room, uint64_t all) {
  __extension__ unsigned __int128 v = (unsigned __int128)x * room / all;
  return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

// One dimension (blocks or bytes) of the sampled entries of one kind, lowered where together
// they claim more than `cap` (what the counters show live beyond the exact blocks): each keeps
// what its own samples prove (`own`: blocks, or their requested bytes), and the room left above
// all the samples is shared in proportion to what each estimated beyond its own. An entry that
// alone estimated beyond its samples then gets all the room: cap less the others' samples, the
// bound the counters prove for it, so its figure is "at most" (*most). Returns the new figure.
static uint64_t lower(uint64_t est, uint64_t own, uint64_t cap, uint64_t owns, uint64_t extras,
                      bool *most) {
  uint64_t room = sat_sub(cap, owns), extra = sat_sub(est, own);
  *most = cap >= owns && extra == extras; // counters below the samples prove nothing
  return own + (extras ? share(extra, room, extras) : 0);
}

// Sampled estimates may not claim more than the exact counters show live beyond the exact
// entries (a sample of a 100 B block stands for ~512 KiB), blocks and bytes each (the counters
// hold usable sizes, entries requested ones: the bytes' cap is loose by the exact blocks' slack).
// What the counters show beyond every entry is untracked; heap blocks beyond every record are
// unrecorded (only the heap is sampled: mappings and device memory are tracked whole). Growth
// is part of an entry's bytes: it is lowered with them.
static void cap_estimates(const nd_trace_t *t, nd_lifetimes_t *out) {
  for (int k = 0; k < ND_TRACE_KINDS; k++) {
    const nd_rec_kind_totals_t *c = &t->counters.kind[k];
    int64_t cn = c->live_count, cb = c->live_bytes;
    if (k < 2 && t->have_scan && t->scan.status == ND_SCAN_DONE) // the moment of the BLOCK records
      cn = t->scan.live_count[k], cb = t->scan.live_bytes[k];
    uint64_t live_n = cn > 0 ? (uint64_t)cn : 0;
    uint64_t live_b = cb > 0 ? (uint64_t)cb : 0;
    uint64_t exact_n = 0, exact_b = 0, est_n = 0, est_b = 0, own_n = 0, own_b = 0;
    uint64_t extra_n = 0, extra_b = 0;
    for (size_t i = 0; i < out->n; i++) {
      const nd_life_t *e = &out->v[i];
      if (e->kind != k || e->leak < 0) continue;
      const nd_leak_t *l = &t->leaks[e->leak];
      exact_n += l->exact_blocks;
      exact_b += l->exact_bytes;
      est_n += e->blocks - l->exact_blocks;
      est_b += e->bytes - l->exact_bytes;
      own_n += l->sampled_blocks;
      own_b += l->sampled_bytes;
      extra_n += sat_sub(e->blocks - l->exact_blocks, l->sampled_blocks);
      extra_b += sat_sub(e->bytes - l->exact_bytes, l->sampled_bytes);
    }
    if (!t->have_counters) continue;
    uint64_t cap_n = sat_sub(live_n, exact_n), cap_b = sat_sub(live_b, exact_b);
    if (k == 0) {
      out->unrecorded_blocks = sat_sub(cap_n, own_n);
      out->unrecorded_bytes = sat_sub(cap_b, own_b);
    }
    bool over_n = est_n > cap_n, over_b = est_b > cap_b;
    for (size_t i = 0; (over_n || over_b) && i < out->n; i++) {
      nd_life_t *e = &out->v[i];
      if (e->kind != k || e->leak < 0 || !e->samples) continue;
      const nd_leak_t *l = &t->leaks[e->leak];
      uint64_t bytes = e->bytes;
      if (over_n)
        e->blocks = l->exact_blocks + lower(e->blocks - l->exact_blocks, l->sampled_blocks, cap_n,
                                            own_n, extra_n, &e->most_blocks);
      if (over_b)
        e->bytes = l->exact_bytes + lower(e->bytes - l->exact_bytes, l->sampled_bytes, cap_b,
                                          own_b, extra_b, &e->most_bytes);
      e->capped = true;
      if (bytes && e->bytes < bytes) e->grew = share(e->grew, e->bytes, bytes);
    }
    if (over_n || over_b) {
      est_n = 0;
      for (size_t i = 0; i < out->n; i++) {
        const nd_life_t *e = &out->v[i];
        if (e->kind != k || e->leak < 0) continue;
        est_n += e->blocks - t->leaks[e->leak].exact_blocks;
      }
    }
    if (k == 0 || k == 1) out->untracked_blocks += sat_sub(cap_n, est_n); // kinds with small blocks
  }
}

// What a growth figure may claim: no more than the bytes it is part of (a growing entry's live
// bytes, a teardown's floor), which no more than the kind's peak where they are an estimate (a
// sampled site's floor is its samples' weights; an exact figure is a fact and stays). Blocks of
// an estimate are estimated from its bytes (its growth blocks are samples, not blocks).
static void cap_growth(const nd_trace_t *t, nd_life_t *e) {
  const nd_rec_kind_totals_t *c = &t->counters.kind[e->kind];
  uint64_t peak = c->peak_bytes > 0 ? (uint64_t)c->peak_bytes : 0;
  if (e->samples && t->have_counters && e->bytes > peak) {
    e->bytes = peak;
    e->capped = e->most_bytes = true;
  }
  if (e->grew > e->bytes) e->grew = e->bytes;
  // A growth figure scaled down with its entry is an estimate: blocks born before the steady
  // state may hold more of the bound than their share. All of it is bounded as the bytes are.
  e->most_grew = e->most_bytes && e->grew == e->bytes;
  if (e->samples && e->cls == ND_LIFE_GROWING)
    e->grew_blocks = e->bytes ? share(e->blocks, e->grew, e->bytes) : 0;
}

int nd_lifetimes(const nd_trace_t *t, nd_life_supp_fn supp, void *ctx, nd_lifetimes_t *out) {
  memset(out, 0, sizeof *out);
  run_t r = run_of(t);
  out->steady = r.steady != 0;
  out->steady_ns = r.steady > r.t0 ? r.steady - r.t0 : 0;
  out->cycles = t->flush.cycles;
  judge(&r, &out->judged);
  r.floors = out->judged.judged || !out->judged.known;
  size_t cap = t->nleaks + t->nsites;
  out->v = calloc(cap ? cap : 1, sizeof *out->v);
  if (!out->v) return -1;
  for (size_t i = 0; i < t->nleaks; i++) {
    const nd_leak_t *l = &t->leaks[i];
    nd_life_t *e = &out->v[out->n++];
    e->stack = l->stack;
    e->kind = l->kind;
    e->leak = (long)i;
    e->site = nd_trace_site_of(t, t->stacks[l->stack].id, l->kind);
    e->bytes = l->exact_bytes + l->est_bytes;
    e->blocks = l->exact_blocks + (uint64_t)(l->est_blocks + 0.5);
    e->samples = l->sampled_blocks;
    e->born_first = frac(&r, l->born_first_ns);
    e->born_last = frac(&r, l->born_last_ns);
    e->flagged = flagged(t, l->stack, l->kind);
    const nd_site_t *s = e->site >= 0 ? &t->sites[e->site] : NULL;
    // Growth first (its evidence is the run's history: a list that keeps a block per step grows
    // whether its blocks are reachable or lost; the entry says which, e->reach), a cache that
    // filled and held apart from it, then the scan's proof (a lost block is lost whenever it was
    // born), then when memory that was not lost was kept (held since start-up), then what the
    // scan found of the rest.
    bool startup = r.steady && l->born_last_ns && !l->born_last_cycle;
    e->reach = l->reach;
    if (l->inherited) e->cls = ND_LIFE_INHERITED;
    else if (supp && (e->suppressed_by = supp(ctx, l->stack)) != NULL) e->cls = ND_LIFE_SUPPRESSED;
    // A bounded cache (filled, then held) is none of the growth below, unless the scan proved
    // its blocks lost: memory nothing can free is a leak however flat it stayed.
    else if (!startup && l->reach != ND_REACH_LOST && l->reach != ND_REACH_INDIRECT &&
             cache(&r, l, s, e))
      e->cls = ND_LIFE_CACHE;
    else if (!startup && growing(&r, l, s, e)) e->cls = ND_LIFE_GROWING;
    else if (l->reach == ND_REACH_LOST) e->cls = ND_LIFE_LOST;
    else if (l->reach == ND_REACH_INDIRECT) e->cls = ND_LIFE_INDIRECT;
    else if (startup) e->cls = ND_LIFE_STARTUP;
    else if (l->reach == ND_REACH_POSSIBLE) e->cls = ND_LIFE_POSSIBLE;
    else if (l->reach == ND_REACH_REACHABLE) e->cls = ND_LIFE_REACHABLE;
    else e->cls = ND_LIFE_LIVE;
  }
  cap_estimates(t, out);
  for (size_t i = 0; i < out->n; i++)
    if (out->v[i].cls == ND_LIFE_GROWING) cap_growth(t, &out->v[i]);
  for (size_t i = 0; t->ended && i < t->nsites; i++) {
    const nd_site_t *s = &t->sites[i];
    nd_life_t e = {.cls = ND_LIFE_TEARDOWN, .stack = s->stack, .kind = s->rec.kind, .leak = -1,
                   .site = (long)i};
    if (!teardown(&r, s, &e)) continue;
    e.samples = s->rec.flags & ND_SITE_SAMPLED ? 1 : 0;
    e.flagged = flagged(t, s->stack, s->rec.kind);
    cap_growth(t, &e);
    if (supp && (e.suppressed_by = supp(ctx, s->stack)) != NULL) e.cls = ND_LIFE_SUPPRESSED;
    out->v[out->n++] = e;
  }
  qsort(out->v, out->n, sizeof *out->v, by_class);
  for (size_t i = 0; i < out->n; i++) {
    const nd_life_t *e = &out->v[i];
    out->bytes[e->cls] += e->bytes;
    out->blocks[e->cls] += e->blocks;
    out->entries[e->cls]++;
    if (e->samples) out->est[e->cls] = true;
  }
  // A class's totals are upper bounds where each of its estimates is one (exact figures added)
  for (int c = 0; c < ND_LIFE_CLASSES; c++) out->most_bytes[c] = out->most_blocks[c] = out->est[c];
  for (size_t i = 0; i < out->n; i++) {
    const nd_life_t *e = &out->v[i];
    if (!e->samples) continue;
    out->most_bytes[e->cls] &= e->most_bytes;
    out->most_blocks[e->cls] &= e->most_blocks;
  }
  return 0;
}

uint64_t nd_life_held(const nd_trace_t *t, const nd_site_t *s, bool *teardown) {
  const nd_site_hist_t *h = &s->h;
  uint64_t live = s->rec.alloc_bytes > s->rec.free_bytes ? s->rec.alloc_bytes - s->rec.free_bytes
                                                         : 0;
  *teardown = false;
  if (!t->ended || !t->has.site_history || h->records < 2) return live;
  if (t->have_exit && (t->exit.how == ND_EXIT_SIGNAL || t->exit.how == ND_EXIT_LIMIT_ABORT))
    return live; // a crash's last frees are no teardown
  run_t r = run_of(t);
  bool final;
  uint32_t rises, drops;
  moves(&r, h, &final, &rises, &drops);
  uint64_t held;
  if (final) { // the falls of "released at teardown": from the record before them
    bool kept = h->steady && h->held_frees == h->steady_frees; // no block freed since
    held = h->held_quiet || kept ? h->held_live : h->tail_floor;
    if (held < h->tail_floor) held = h->tail_floor;
  } else if (h->seq == r.flushes && h->live < h->prev_live) { // the final flush's fall alone
    held = h->prev_seq + 1 < h->seq ? h->prev_live : h->prev_floor;
  } else {
    return live;
  }
  if (held <= live) return live;
  *teardown = true;
  return held;
}

void nd_life_unseen(const nd_trace_t *t, const nd_lifetimes_t *l, nd_life_unseen_t *u) {
  const nd_life_judged_t *j = &l->judged;
  *u = (nd_life_unseen_t){.track_min = t->hdr.track_min, .sample = t->hdr.sample_interval};
  if (t->hdr.track_min <= 1 || !j->known) return; // every block exact; or no floors to judge by
  if (!j->judged && !j->by_births) return;         // not judged for exact blocks either
  if (!t->hdr.sample_interval || !j->judged) {     // none sampled; no sampled site's floor judged
    u->unseen = true;
    u->units = j->cycles;
    return;
  }
  run_t r = run_of(t);
  uint64_t m = 0; // the cycles (windows) of the quarter that has fewest
  if (r.by_cycles) {
    u->units = t->flush.cycles;
    m = u->units / 4;
  } else { // the windows of each quarter of the span growing() judges, as judge() counts them
    uint64_t from = r.steady ? r.steady : r.t0, span = r.end > from ? r.end - from : 0;
    uint64_t q[4] = {0, 0, 0, 0};
    for (size_t i = 0; span && i < t->npoints; i++) {
      uint64_t ns = t->series[i].mono_ns;
      if (ns <= from || ns > r.end) continue;
      unsigned k = (unsigned)((__extension__(unsigned __int128)(ns - from - 1) * 4) / span);
      q[k < 4 ? k : 3] += t->series_stride > 1 ? t->series_stride : 1;
    }
    u->per_window = true;
    u->since_steady = r.steady != 0;
    u->units = q[0] + q[1] + q[2] + q[3];
    m = q[0];
    for (int k = 1; k < 4; k++) m = q[k] < m ? q[k] : m;
  }
  u->unseen = true;
  if (!m) return; // a quarter without a window: no rate shows
  // R ln(4 * ND_LIFE_UNSEEN_MISS) / m, rounded up, in integers: ln 400 = 5.991464547107...,
  // its ninth decimal rounded up
  _Static_assert(ND_LIFE_UNSEEN_MISS == 100, "the logarithm below is ln(4 * 100)");
  __extension__ unsigned __int128 den = (unsigned __int128)1000000000u * m;
  __extension__ unsigned __int128 x = ((unsigned __int128)t->hdr.sample_interval * 5991464548u +
                                       den - 1) / den;
  u->rate = x > UINT64_MAX ? UINT64_MAX : (uint64_t)x;
  // What exact tracking names at all (nd_growth_below_floor): sampling hides nothing below it.
  uint64_t floor = u->units ? (ND_GROWTH_MIN_BYTES + u->units - 1) / u->units : ND_GROWTH_MIN_BYTES;
  if (floor > ND_GROWTH_MIN_RATE) floor = ND_GROWTH_MIN_RATE;
  if (u->rate <= floor) *u = (nd_life_unseen_t){.track_min = u->track_min, .sample = u->sample};
}

const char *nd_life_judged_key(const nd_lifetimes_t *l) {
  if (l->judged.judged) return "all";
  if (l->judged.by_births || l->entries[ND_LIFE_GROWING] || l->entries[ND_LIFE_TEARDOWN])
    return "part";
  return "none";
}

void nd_lifetimes_free(nd_lifetimes_t *l) {
  free(l->v);
  memset(l, 0, sizeof *l);
}
