// SPDX-License-Identifier: MIT
// ws_detect.c: the period of an unmodified program's allocation stream, found online in O(1)
// (expected) per symbol, so the shim can find a training loop's iterations without marks. A
// candidate period comes from the last occurrence of the current *context* (the last WS_CTX
// symbols); it is confirmed by counting consecutive symbols equal to the one a period earlier and
// dropped at the first that is not, and the next context proposes again (re-arming on variation).
#include "workspace.h"

#include <string.h>

// Decisions, and why:
// - Context, not symbol. The distance to a symbol's last occurrence is shorter than the period
//   whenever the symbol recurs inside the loop, and re-arming on it can livelock: in
//   A B B A A B B A ... every restart proposes 1 or 3, never 4. The last occurrence of the last 4
//   symbols is a period back unless those 4 recur inside the loop; a wrong proposal fails, and
//   the context where it failed proposes next.
// - Exact table. The table holds every context whose last occurrence is in the window (entries
//   are deleted as they leave it, so at most W of them in 2W slots) and never loses one. A
//   proposal is therefore the *latest* repeat of its context, never a multiple kP of a period P
//   that the recent symbols already show; a lossy cache could propose 2P and lock on it for ever.
// - Evidence: P is reported once the last 2P symbols are two equal repetitions (P consecutive
//   matches) and never on fewer than WS_MIN_MATCH matches, so a run of one symbol is period 1
//   after 9 equal symbols and period 2 after 5 repetitions, and any period needs 2P symbols.
// - Nested loops: an inner loop that repeats for at least max(P, 8) matches is reported while it
//   runs; the outer period takes over once the outer loop's context recurs. A consumer that wants
//   the outer loop acts on a period that persists.
#define WS_CTX 4
#define WS_MIN_MATCH 8
#define WS_TABLE_BITS 13 // 2 * WS_DETECT_WINDOW slots: load at most 1/2

_Static_assert(((size_t)1 << WS_TABLE_BITS) >= 2 * WS_DETECT_WINDOW, "table load above 1/2");

// The one allocation: last_key[2W], last_pos[2W] (position + 1 of the context's last occurrence,
// 0: empty slot), then the ring of context hashes by position, to delete what leaves the window.
static size_t block_bytes(uint32_t bits) {
  return (((size_t)2 << bits) + WS_DETECT_WINDOW) * sizeof(uint64_t);
}
static uint64_t *ctx_ring(const ws_detect_t *d) { return d->last_pos + ((size_t)1 << d->table_bits); }

static uint64_t mix(uint64_t x) { // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int ws_detect_init(ws_detect_t *d, const ws_mem_t *mem) {
  memset(d, 0, sizeof *d);
  d->table_bits = WS_TABLE_BITS;
  uint64_t *t = mem->alloc(mem->ctx, block_bytes(d->table_bits));
  if (!t) return -1;
  d->last_key = t;
  d->last_pos = t + ((size_t)1 << d->table_bits);
  return 0;
}

void ws_detect_free(ws_detect_t *d, const ws_mem_t *mem) {
  if (d->last_key) mem->free(mem->ctx, d->last_key, block_bytes(d->table_bits));
  d->last_key = d->last_pos = NULL;
}

void ws_detect_reset(ws_detect_t *d) {
  d->count = 0;
  d->period = 0;
  d->matched = 0;
  if (d->last_key) memset(d->last_key, 0, block_bytes(d->table_bits));
}

static uint64_t sym_at(const ws_detect_t *d, uint64_t pos) { return d->sym[pos % WS_DETECT_WINDOW]; }

static size_t home(const ws_detect_t *d, uint64_t h) { return (size_t)(h >> (64 - d->table_bits)); }

// Records that context h ended at position i; returns its previous position + 1, or 0. Linear
// probing: the load is at most 1/2 (plus the one entry about to leave), so probes are short.
static uint64_t ctx_swap(ws_detect_t *d, uint64_t h, uint64_t i) {
  size_t mask = ((size_t)1 << d->table_bits) - 1;
  for (size_t s = home(d, h);; s = (s + 1) & mask) {
    if (!d->last_pos[s]) {
      d->last_key[s] = h;
      d->last_pos[s] = i + 1;
      return 0;
    }
    if (d->last_key[s] == h) {
      uint64_t prev = d->last_pos[s];
      d->last_pos[s] = i + 1;
      return prev;
    }
  }
}

// Context h ended at position `gone`, now out of the window: drop its entry unless a later
// occurrence took it over. Backward-shift deletion keeps every probe chain unbroken: each entry
// after the hole moves into it unless its home lies cyclically in (hole, entry].
static void ctx_drop(ws_detect_t *d, uint64_t h, uint64_t gone) {
  size_t mask = ((size_t)1 << d->table_bits) - 1, s = home(d, h);
  while (d->last_pos[s] && d->last_key[s] != h) s = (s + 1) & mask;
  if (d->last_pos[s] != gone + 1) return;
  d->last_pos[s] = 0;
  for (size_t j = (s + 1) & mask; d->last_pos[j]; j = (j + 1) & mask) {
    size_t k = home(d, d->last_key[j]);
    int stays = s < j ? (s < k && k <= j) : (s < k || k <= j);
    if (stays) continue;
    d->last_key[s] = d->last_key[j];
    d->last_pos[s] = d->last_pos[j];
    d->last_pos[j] = 0;
    s = j;
  }
}

uint32_t ws_detect_feed(ws_detect_t *d, uint64_t sym, int64_t live_after) {
  // Everything is read before position i is stored: until then the ring still holds i - W, so a
  // period of exactly WS_DETECT_WINDOW can be checked. `back(k)` is the symbol k positions back.
#define back(k) ((k) == 0 ? sym : sym_at(d, i - (k)))
  uint64_t i = d->count;
  if (d->period) {
    if (sym == sym_at(d, i - d->period)) {
      if (d->matched < UINT32_MAX) d->matched++;
    } else {
      d->period = 0; // re-arm: this position proposes again below
      d->matched = 0;
    }
  }
  if (i + 1 >= WS_CTX) {
    uint64_t h = 0;
    for (uint64_t k = 0; k < WS_CTX; k++) h = mix(h ^ mix(back(k) + k));
    uint64_t prev = ctx_swap(d, h, i);
    if (i >= WS_DETECT_WINDOW + WS_CTX - 1) // the context that ended at i - W leaves the window
      ctx_drop(d, ctx_ring(d)[i % WS_DETECT_WINDOW], i - WS_DETECT_WINDOW);
    ctx_ring(d)[i % WS_DETECT_WINDOW] = h;
    if (!d->period && prev) {
      // Proposal P = i - (prev - 1) <= W. Its matches are counted from the symbols (a hash
      // collision proposes nothing), over the context as far as the window reaches back
      // (i - k - P >= i - W): 4 below W - 2, then 3, 2, 1 for P = W - 2, W - 1, W.
      uint64_t p = i - (prev - 1);
      uint32_t k = 0;
      while (k < WS_CTX && p + k <= WS_DETECT_WINDOW && back(k) == sym_at(d, i - k - p)) k++;
      if (k > 0) {
        d->period = (uint32_t)p;
        d->matched = k;
      }
    }
  }
#undef back
  d->sym[i % WS_DETECT_WINDOW] = sym;
  d->live[i % WS_DETECT_WINDOW] = live_after;
  d->count = i + 1;
  uint32_t need = d->period > WS_MIN_MATCH ? d->period : WS_MIN_MATCH;
  return d->period && d->matched >= need ? d->period : 0;
}

// Phases are positions modulo P, counted from the first symbol fed after init or reset: a cycle
// boundary belongs after every symbol whose position is phase (mod P). Ties go to the earliest
// position of the last period. 0 without a usable period (0, above the window or the count).
uint32_t ws_detect_phase(const ws_detect_t *d, uint32_t period) {
  if (period == 0 || period > WS_DETECT_WINDOW || period > d->count) return 0;
  uint64_t best = d->count - period;
  for (uint64_t pos = best + 1; pos < d->count; pos++)
    if (d->live[pos % WS_DETECT_WINDOW] < d->live[best % WS_DETECT_WINDOW]) best = pos;
  return (uint32_t)(best % period);
}

uint32_t ws_follow_feed(ws_detect_t *d, ws_follow_t *f, uint64_t sym, int64_t live_before,
                        uint32_t *phase, uint32_t *in_cycle) {
  uint32_t p = ws_detect_feed(d, sym, live_before);
  f->symbols++;
  if (p && p == f->cand) f->cand_seen++;
  else f->cand = p, f->cand_seen = p ? 1 : 0;
  p = f->cand_seen >= f->cand && f->cand ? f->cand : 0;
  if (!p) return 0;
  *phase = ws_detect_phase(d, p);
  uint32_t wait = (uint32_t)((*phase + p - f->symbols % p) % p); // symbols before a cycle starts
  *in_cycle = p - wait;
  return p;
}
