// SPDX-License-Identifier: MIT
// ws_plan.c: fixed offsets for the allocations of a learned cycle, so an arena holds about the
// cycle's peak live bytes instead of the sum ND4J reserves. Greedy by size (as TFLite plans its
// tensor arena): biggest first, each at the lowest aligned offset not used by an already placed
// block whose lifetime intersects its own. O(n^2) time for n allocations, O(n) scratch plus the
// conflict lists; every byte comes from the caller's ws_mem_t (this runs inside the shim, where
// malloc is the hooked function and qsort may call it).
#include "workspace.h"

#include <string.h>

static int planned(const ws_req_t *r) { return r->t_free != UINT32_MAX; }

// Lifetimes are half-open [t_alloc, t_free): a block freed at tick t and one allocated at t may
// share memory. An empty lifetime (t_free <= t_alloc) intersects nothing.
static int lives_intersect(const ws_req_t *a, const ws_req_t *b) {
  uint32_t lo = a->t_alloc > b->t_alloc ? a->t_alloc : b->t_alloc;
  uint32_t hi = a->t_free < b->t_free ? a->t_free : b->t_free;
  return lo < hi;
}

// Memory ranges [offset, offset + size); an empty range overlaps nothing.
static int ranges_overlap(uint64_t oa, uint64_t sa, uint64_t ob, uint64_t sb) {
  return sa > 0 && sb > 0 && oa < ob + sb && ob < oa + sa;
}

static uint64_t align_up(uint64_t x, uint64_t align) { return (x + align - 1) & ~(align - 1); }

// ---------------------------------------------------------------- heapsort of indices

typedef int (*less_fn)(uint32_t a, uint32_t b, const void *ctx);

static void sift(uint32_t *v, uint32_t root, uint32_t n, less_fn less, const void *ctx) {
  for (;;) {
    uint32_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && less(v[child], v[child + 1], ctx)) child++;
    if (!less(v[root], v[child], ctx)) return;
    uint32_t t = v[root];
    v[root] = v[child];
    v[child] = t;
    root = child;
  }
}

// Ascending by `less` (less(a, b): a goes first). In place, no allocation, O(n log n) worst case;
// the orders used are total, so the result is deterministic although heapsort is not stable.
static void sort_idx(uint32_t *v, uint32_t n, less_fn less, const void *ctx) {
  for (uint32_t i = n / 2; i-- > 0;) sift(v, i, n, less, ctx);
  for (uint32_t end = n; end-- > 1;) {
    uint32_t t = v[0];
    v[0] = v[end];
    v[end] = t;
    sift(v, 0, end, less, ctx);
  }
}

// Placement order: size descending, then t_alloc ascending, then index. The t_alloc tie-break
// makes equal sizes go in order of start time, which is first-fit interval colouring: optimal,
// so a cycle of equal-sized blocks gets exactly its peak.
static int place_before(uint32_t a, uint32_t b, const void *ctx) {
  const ws_req_t *r = ctx;
  if (r[a].size != r[b].size) return r[a].size > r[b].size;
  if (r[a].t_alloc != r[b].t_alloc) return r[a].t_alloc < r[b].t_alloc;
  return a < b;
}

static int alloc_less(uint32_t a, uint32_t b, const void *ctx) {
  const ws_req_t *r = ctx;
  return r[a].t_alloc != r[b].t_alloc ? r[a].t_alloc < r[b].t_alloc : a < b;
}
static int free_less(uint32_t a, uint32_t b, const void *ctx) {
  const ws_req_t *r = ctx;
  return r[a].t_free != r[b].t_free ? r[a].t_free < r[b].t_free : a < b;
}
static int index_less(uint32_t a, uint32_t b, const void *ctx) {
  (void)ctx;
  return a < b;
}

// ---------------------------------------------------------------- build

void ws_plan_free(ws_plan_t *p, const ws_mem_t *mem) {
  if (p->offset) mem->free(mem->ctx, p->offset, (size_t)p->n * sizeof *p->offset);
  if (p->conflict_off) mem->free(mem->ctx, p->conflict_off, ((size_t)p->n + 1) * sizeof *p->conflict_off);
  if (p->conflicts) mem->free(mem->ctx, p->conflicts, (size_t)p->nconflicts * sizeof *p->conflicts);
  memset(p, 0, sizeof *p);
}

// Calls fn(ctx, a, b) once for every pair of planned blocks whose memory ranges overlap. byoff
// holds the m planned blocks sorted by offset, so the blocks overlapping a from above are the run
// after it that starts below a's end: O(m + pairs).
static void each_overlap(const ws_req_t *reqs, const uint64_t *off, const uint32_t *byoff, uint32_t m,
                         void (*fn)(void *ctx, uint32_t a, uint32_t b), void *ctx) {
  for (uint32_t k = 0; k < m; k++) {
    uint32_t a = byoff[k];
    if (reqs[a].size == 0) continue;
    uint64_t end = off[a] + reqs[a].size;
    for (uint32_t l = k + 1; l < m && off[byoff[l]] < end; l++)
      if (reqs[byoff[l]].size > 0) fn(ctx, a, byoff[l]);
  }
}

struct fill {
  uint32_t *count;      // count pass: per block
  uint32_t *cursor;     // fill pass: next free entry per block
  uint32_t *conflicts;
  uint64_t pairs;
};
static void count_pair(void *ctx, uint32_t a, uint32_t b) {
  struct fill *f = ctx;
  f->count[a]++, f->count[b]++;
  f->pairs++;
}
static void fill_pair(void *ctx, uint32_t a, uint32_t b) {
  struct fill *f = ctx;
  f->conflicts[f->cursor[a]++] = b;
  f->conflicts[f->cursor[b]++] = a;
}

// Returns -1 when memory for the plan could not be had, and also when the planned sizes are so
// large that the arena's offsets would not fit in 64 bits.
int ws_plan_build(const ws_req_t *reqs, uint32_t n, uint64_t align, const ws_mem_t *mem,
                  ws_plan_t *out) {
  memset(out, 0, sizeof *out);
  if (align == 0) align = 1;
  uint64_t sum = 0, bound = 0; // bound: the largest arena greedy can produce, sum of aligned sizes
  uint32_t m = 0;              // planned blocks
  for (uint32_t i = 0; i < n; i++) {
    sum = sum > UINT64_MAX - reqs[i].size ? UINT64_MAX : sum + reqs[i].size;
    if (!planned(&reqs[i])) continue;
    m++;
    uint64_t room = UINT64_MAX - bound; // what the arena may still grow by
    if (room < align - 1 || reqs[i].size > room - (align - 1)) return -1;
    bound += align_up(reqs[i].size, align);
  }
  out->n = n;
  out->sum = sum;
  size_t scratch_bytes = (size_t)4 * (n ? n : 1) * sizeof(uint32_t);
  uint32_t *scratch = mem->alloc(mem->ctx, scratch_bytes);
  out->conflict_off = mem->alloc(mem->ctx, ((size_t)n + 1) * sizeof *out->conflict_off);
  if (n) out->offset = mem->alloc(mem->ctx, (size_t)n * sizeof *out->offset);
  if (!scratch || !out->conflict_off || (n && !out->offset)) goto fail;
  uint32_t *order = scratch, *byoff = scratch + n, *by_alloc = scratch + 2 * (size_t)n,
           *by_free = scratch + 3 * (size_t)n;
  uint64_t *off = out->offset;

  m = 0;
  for (uint32_t i = 0; i < n; i++) {
    off[i] = UINT64_MAX;
    if (planned(&reqs[i])) order[m++] = i;
  }
  sort_idx(order, m, place_before, reqs);

  // byoff: the placed blocks by offset. For block i, walk it upwards keeping `cand`, the lowest
  // aligned offset above every conflicting (lifetime-intersecting) block seen so far; the first
  // conflicting block that starts at or above cand + size leaves the gap [cand, cand + size) free,
  // since all later ones start higher still.
  uint64_t arena = 0;
  for (uint32_t k = 0; k < m; k++) {
    uint32_t i = order[k];
    uint64_t size = reqs[i].size, cand = 0;
    for (uint32_t l = 0; l < k; l++) {
      uint32_t j = byoff[l];
      if (reqs[j].size == 0 || !lives_intersect(&reqs[i], &reqs[j])) continue;
      if (off[j] >= cand + size) break;
      uint64_t end = align_up(off[j] + reqs[j].size, align);
      if (end > cand) cand = end;
    }
    off[i] = cand;
    if (cand + size > arena) arena = cand + size;
    uint32_t lo = 0, hi = k; // insert after every block at or below cand
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (off[byoff[mid]] <= cand) lo = mid + 1;
      else hi = mid;
    }
    memmove(byoff + lo + 1, byoff + lo, (size_t)(k - lo) * sizeof *byoff);
    byoff[lo] = i;
  }
  out->arena_size = arena;

  // Peak live: sweep the planned blocks' allocations and frees in tick order, frees first at equal
  // ticks (half-open lifetimes). Blocks with an empty lifetime are never live.
  uint32_t live_n = 0;
  for (uint32_t k = 0; k < m; k++)
    if (reqs[order[k]].t_alloc < reqs[order[k]].t_free) by_alloc[live_n] = by_free[live_n] = order[k], live_n++;
  sort_idx(by_alloc, live_n, alloc_less, reqs);
  sort_idx(by_free, live_n, free_less, reqs);
  uint64_t live = 0, peak = 0;
  for (uint32_t a = 0, f = 0; a < live_n;) {
    if (reqs[by_free[f]].t_free <= reqs[by_alloc[a]].t_alloc) {
      live -= reqs[by_free[f++]].size;
    } else {
      live += reqs[by_alloc[a++]].size;
      if (live > peak) peak = live;
    }
  }
  out->peak_live = peak;

  // Conflict lists: count, prefix sums, fill, then sort each list by index.
  struct fill f = {.count = order, .cursor = by_alloc};
  memset(order, 0, (size_t)n * sizeof *order);
  each_overlap(reqs, off, byoff, m, count_pair, &f);
  if (f.pairs > UINT32_MAX / 2) goto fail;
  out->nconflicts = (uint32_t)(2 * f.pairs);
  for (uint32_t i = 0; i < n; i++) out->conflict_off[i + 1] = out->conflict_off[i] + f.count[i];
  if (out->nconflicts) {
    out->conflicts = mem->alloc(mem->ctx, (size_t)out->nconflicts * sizeof *out->conflicts);
    if (!out->conflicts) goto fail;
    f.conflicts = out->conflicts;
    memcpy(f.cursor, out->conflict_off, (size_t)n * sizeof *f.cursor);
    each_overlap(reqs, off, byoff, m, fill_pair, &f);
    for (uint32_t i = 0; i < n; i++)
      sort_idx(out->conflicts + out->conflict_off[i], f.count[i], index_less, NULL);
  }
  mem->free(mem->ctx, scratch, scratch_bytes);
  return 0;

fail:
  if (scratch) mem->free(mem->ctx, scratch, scratch_bytes);
  ws_plan_free(out, mem);
  return -1;
}

// ---------------------------------------------------------------- verify

// Independent of ws_plan_build (plain O(n^2) pair checks, its own peak computation), so a test
// that builds and verifies checks one against the other. Returns 0 if the plan is valid, else the
// number of the first rule broken:
//   1 an allocation without t_free has an offset, or a planned one has none (UINT64_MAX)
//   2 a planned offset is not a multiple of align
//   3 a planned range is not inside [0, arena_size), or arena_size is not exactly their span
//   4 two allocations with intersecting lifetimes overlap in memory
//   5 sum is not the sum of every size, or peak_live not the planned blocks' peak of live bytes
//   6 the conflict index is malformed (conflict_off not 0 .. nconflicts, not ascending)
//   7 a conflict entry is out of range, itself, unplanned, repeated or not sorted, or its range
//     does not overlap the allocation's
//   8 a list misses an allocation whose range overlaps (exactness: count matches the truth)
int ws_plan_verify(const ws_req_t *reqs, const ws_plan_t *p, uint64_t align) {
  uint32_t n = p->n;
  if (align == 0) align = 1;
  if (n && (!p->offset || !p->conflict_off)) return 6;
  uint64_t span = 0, sum = 0;
  for (uint32_t i = 0; i < n; i++) {
    sum = sum > UINT64_MAX - reqs[i].size ? UINT64_MAX : sum + reqs[i].size;
    uint64_t o = p->offset[i];
    if (planned(&reqs[i]) != (o != UINT64_MAX)) return 1;
    if (o == UINT64_MAX) continue;
    if (o % align) return 2;
    if (reqs[i].size > UINT64_MAX - o || o + reqs[i].size > p->arena_size) return 3;
    if (o + reqs[i].size > span) span = o + reqs[i].size;
  }
  if (span != p->arena_size) return 3;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = i + 1; j < n; j++)
      if (planned(&reqs[i]) && planned(&reqs[j]) && lives_intersect(&reqs[i], &reqs[j]) &&
          ranges_overlap(p->offset[i], reqs[i].size, p->offset[j], reqs[j].size))
        return 4;
  // Live bytes only change at allocations, so the peak is the live total just after one of them.
  uint64_t peak = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!planned(&reqs[i]) || reqs[i].t_alloc >= reqs[i].t_free) continue;
    uint64_t live = 0;
    for (uint32_t j = 0; j < n; j++)
      if (planned(&reqs[j]) && reqs[j].t_alloc <= reqs[i].t_alloc && reqs[i].t_alloc < reqs[j].t_free)
        live += reqs[j].size;
    if (live > peak) peak = live;
  }
  if (sum != p->sum || peak != p->peak_live) return 5;
  if (p->conflict_off[0] != 0 || p->conflict_off[n] != p->nconflicts || (p->nconflicts && !p->conflicts))
    return 6;
  for (uint32_t i = 0; i < n; i++) {
    if (p->conflict_off[i + 1] < p->conflict_off[i]) return 6;
    uint32_t truth = 0;
    for (uint32_t j = 0; j < n; j++)
      truth += j != i && planned(&reqs[i]) && planned(&reqs[j]) &&
               ranges_overlap(p->offset[i], reqs[i].size, p->offset[j], reqs[j].size);
    for (uint32_t k = p->conflict_off[i]; k < p->conflict_off[i + 1]; k++) {
      uint32_t j = p->conflicts[k];
      if (j >= n || j == i || (k > p->conflict_off[i] && j <= p->conflicts[k - 1])) return 7;
      if (!planned(&reqs[i]) || !planned(&reqs[j]) ||
          !ranges_overlap(p->offset[i], reqs[i].size, p->offset[j], reqs[j].size))
        return 7;
    }
    if (p->conflict_off[i + 1] - p->conflict_off[i] != truth) return 8;
  }
  return 0;
}

// ---------------------------------------------------------------- shrinking to fit

// The peak live bytes of the allocations that end past `cut` (the heap's, when the arena is `cut`
// long), by a sweep of the lifetimes sorted once (by_alloc, by_free; frees first at equal ticks,
// as for the plan's own peak). end[i]: where allocation i's range ends (UINT64_MAX: never in an
// arena).
static uint64_t spilled_peak(const ws_req_t *reqs, const uint64_t *end, const uint32_t *by_alloc,
                             const uint32_t *by_free, uint32_t live_n, uint64_t cut) {
  uint64_t live = 0, peak = 0;
  for (uint32_t a = 0, f = 0; a < live_n;) {
    if (reqs[by_free[f]].t_free <= reqs[by_alloc[a]].t_alloc) {
      uint32_t i = by_free[f++];
      if (end[i] > cut) live -= reqs[i].size;
    } else {
      uint32_t i = by_alloc[a++];
      if (end[i] > cut && (live += reqs[i].size) > peak) peak = live;
    }
  }
  return peak;
}

static int end_before(uint32_t a, uint32_t b, const void *ctx) {
  const uint64_t *end = ctx;
  return end[a] != end[b] ? end[a] < end[b] : a < b;
}

uint64_t ws_plan_fit(const ws_req_t *reqs, const ws_plan_t *p, uint64_t page, uint64_t budget,
                     const ws_mem_t *mem, uint64_t *total) {
  uint32_t n = p->n, live_n = 0, m = 0;
  size_t isz = (size_t)(n ? n : 1) * sizeof(uint32_t), esz = (size_t)(n ? n : 1) * sizeof(uint64_t);
  uint32_t *by_alloc = mem->alloc(mem->ctx, isz), *by_free = mem->alloc(mem->ctx, isz);
  uint32_t *by_end = mem->alloc(mem->ctx, isz);
  uint64_t *end = mem->alloc(mem->ctx, esz);
  uint64_t best = UINT64_MAX;
  *total = 0;
  if (!by_alloc || !by_free || !by_end || !end) goto out;
  // The cyclic allocations with a lifetime; those with an offset end where their range does (the
  // cuts tried, rounded to pages), the others (not placed: too big for the arena) never.
  for (uint32_t i = 0; i < n; i++) {
    if (!planned(&reqs[i]) || p->offset[i] == UINT64_MAX) continue;
    int placed = p->offset[i] <= p->arena_size;
    end[i] = placed ? p->offset[i] + reqs[i].size : UINT64_MAX;
    if (placed) by_end[m++] = i;
    if (reqs[i].t_alloc < reqs[i].t_free) by_alloc[live_n] = by_free[live_n] = i, live_n++;
  }
  sort_idx(by_alloc, live_n, alloc_less, reqs);
  sort_idx(by_free, live_n, free_less, reqs);
  sort_idx(by_end, m, end_before, end);
  // Largest cut first (every placed allocation in the arena), down to no arena at all.
  for (uint32_t k = m + 1; k-- > 0;) {
    uint64_t cut = k ? align_up(end[by_end[k - 1]], page) : 0;
    if (k && k < m && cut == align_up(end[by_end[k]], page)) continue; // tried just above
    uint64_t t = cut + spilled_peak(reqs, end, by_alloc, by_free, live_n, cut);
    if (t <= budget || !k) {
      best = t <= budget ? cut : 0;
      *total = t;
      break;
    }
  }
out:
  if (end) mem->free(mem->ctx, end, esz);
  if (by_end) mem->free(mem->ctx, by_end, isz);
  if (by_free) mem->free(mem->ctx, by_free, isz);
  if (by_alloc) mem->free(mem->ctx, by_alloc, isz);
  return best;
}

uint32_t ws_plan_spill_past(ws_plan_t *p, const ws_req_t *reqs, uint64_t size) {
  uint32_t spilled = 0;
  for (uint32_t i = 0; i < p->n; i++)
    if (p->offset[i] < WS_PLAN_TOO_BIG && p->offset[i] + reqs[i].size > size)
      p->offset[i] = WS_PLAN_TOO_BIG, spilled++;
  return spilled;
}
