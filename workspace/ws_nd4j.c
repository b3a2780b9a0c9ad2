// SPDX-License-Identifier: MIT
// ws_nd4j.c: the reference model of ND4J's MemoryWorkspace (shared/ND4J_NOTES.md), offsets only.
// It is what ndmem's workspaces are measured against and what ND4J-mode workspaces run on, so
// every number is the one ND4J computes, statement by statement, quirks included; where ND4J
// throws or recurses without end the model says what it does instead. Each function names the
// method of Nd4jWorkspace (or CpuWorkspace) it mirrors.
#include "workspace.h"

#include <string.h>

#define ALIGN 32 // alignmentBase: every request is rounded up to it

void ws_config_default(ws_config_t *c) {
  memset(c, 0, sizeof *c);
  c->learning = WS_LEARN_FIRST_LOOP;
  c->allocation = WS_ALLOC_OVERALLOCATE;
  c->overallocation_limit = 0.3;
  c->spill = WS_SPILL_EXTERNAL;
  c->reset = WS_RESET_BLOCK_LEFT;
  c->location = WS_LOC_RAM;
}

static int circular(const ws_config_t *c) { return c->reset == WS_RESET_ENDOFBUFFER_REACHED; }

// (long)(x * f) as Java computes it for the sizes that occur; a product past 2^64 saturates
// (Java's cast saturates too, at 2^63 - 1).
static uint64_t mul_trunc(uint64_t x, double f) {
  double p = (double)x * f;
  if (!(p > 0)) return 0;
  return p >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)p;
}

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static int over_applies(const ws_config_t *c) {
  return c->allocation == WS_ALLOC_OVERALLOCATE && c->overallocation_limit > 0;
}

// Nd4jWorkspace.init(), the tail of every sizing: the arena's one overallocation if it has not
// had it, then the max clamp. MMAP arenas are never overallocated or clamped (ND4J sizes them by
// their file). Since this clamp comes last, max_size wins over both overallocation and min_size.
static uint64_t init_size(const ws_config_t *c, uint64_t size, int *over) {
  if (size > 0 && c->location != WS_LOC_MMAP) {
    if (!*over && over_applies(c)) {
      size = add_sat(size, mul_trunc(size, c->overallocation_limit));
      *over = 1;
    }
    if (c->max_size > 0 && size > c->max_size) size = c->max_size;
  }
  return size;
}

// initializeWorkspace()'s sizing for a learned need (maxCycle). Circular workspaces first turn the
// need into a slot: (long)(need * 1.3), then `size += 8 - size % 8`, which is ND4J's round-up to 8
// except that a multiple of 8 gains a full 8 (1664 -> 1672); the overallocation then adds
// (long)(slot * limit), i.e. `limit` more slots when the limit is integral. *slot gets the slot.
static uint64_t learned_size(const ws_config_t *c, uint64_t need, int *over, uint64_t *slot) {
  uint64_t size = c->max_size > 0 && need > c->max_size ? c->max_size : need;
  if (circular(c)) {
    size = mul_trunc(size, 1.3);
    size = add_sat(size, 8 - size % 8);
    *slot = size;
  }
  if (!*over && over_applies(c) && size > 0) {
    size = add_sat(size, mul_trunc(size, c->overallocation_limit));
    *over = 1;
  }
  if (c->min_size > 0 && size < c->min_size) size = c->min_size;
  return init_size(c, size, over);
}

uint64_t ws_nd4j_size_for(const ws_config_t *cfg, uint64_t need) {
  // A fresh arena (not yet overallocated). ND4J itself never sizes for need 0 (it learns only
  // after a cycle that allocated); for 0 the formulas give min_size, overallocated by init().
  int over = 0;
  uint64_t slot = 0;
  return learned_size(cfg, need, &over, &slot);
}

void ws_nd4j_init(ws_nd4j_t *w, const ws_config_t *cfg) {
  memset(w, 0, sizeof *w);
  w->cfg = *cfg;
  // stepsNumber: a circular OVERALLOCATE workspace counts a lap every (int)(limit + 1) cycles,
  // one per slot; every other workspace every cycle. ND4J rejects circular OVERALLOCATE with a
  // limit below 1 ("overallocation should be positive integral value"); the model gives it one
  // slot per lap and leaves the rejection to ndmem's configuration layer.
  w->slots = 1;
  if (circular(cfg) && cfg->allocation == WS_ALLOC_OVERALLOCATE && cfg->overallocation_limit >= 1)
    w->slots = cfg->overallocation_limit >= 4294967295.0 ? UINT32_MAX
                                                         : (uint32_t)(cfg->overallocation_limit + 1);
  // The constructor: currentSize = initialSize, then init(). An initial size leaves slot_size
  // (initialBlockSize) at 0, so such a circular workspace wraps but never trims.
  w->current_size = init_size(cfg, cfg->initial_size, &w->over);
}

// destroyWorkspace(): the arena is gone, offsets back to 0. Spilled counters stay per cycle (see
// ws_nd4j_enter); pinned blocks are released by lap in close, never here.
static void destroy(ws_nd4j_t *w) {
  w->current_size = 0;
  w->host_offset = 0;
}

// initializeWorkspace(). ND4J's isInit ("an arena is allocated") is current_size > 0 here: its
// init() sets it exactly when currentSize > 0, destroyWorkspace clears both.
static void initialize(ws_nd4j_t *w) {
  const ws_config_t *c = &w->cfg;
  // REALLOCATE: a scoped arena smaller than the largest cycle is dropped and sized anew, unless
  // that cycle reached max_size. The fresh size is max_cycle itself: the arena already had its
  // overallocation (over), so "REALLOCATE grows a too-small arena to max_cycle".
  if ((w->current_size < w->max_cycle || w->current_size < w->cycle_allocations) &&
      c->spill == WS_SPILL_REALLOCATE && (c->max_size == 0 || w->max_cycle < c->max_size) &&
      !circular(c))
    destroy(w);
  // Circular trimmed mode ends two laps after it began: the arena is rebuilt from max_cycle and
  // may be overallocated again.
  if (w->trimmed && w->trimmed_step + 2 < w->steps) {
    destroy(w);
    w->over = 0;
  }
  if (w->current_size > 0 || c->learning == WS_LEARN_NONE) return;
  uint64_t slot = 0;
  w->current_size = learned_size(c, w->max_cycle, &w->over, &slot);
  if (circular(c)) {
    w->slot_size = slot; // initialBlockSize
    w->max_cycle = slot; // ND4J stores the slot as the new maxCycle
  }
}

// notifyScopeEntered()
void ws_nd4j_enter(ws_nd4j_t *w) {
  // Entering a workspace that is already open only nests (tagScope): no reset, no new generation.
  if (w->open) {
    w->open++;
    return;
  }
  w->open = 1;
  if (w->cfg.reset == WS_RESET_BLOCK_LEFT) w->host_offset = 0;
  // ND4J frees a scoped workspace's spilled blocks here (a circular one's only after its buffer
  // wrapped, since a prefetch consumer may still read them); the counters are per cycle either way.
  w->spilled_bytes = w->spilled_count = 0;
  w->cycle_allocations = 0;
  w->generation++;
}

static int fits(uint64_t offset, uint64_t bytes, uint64_t size) {
  return offset <= size && bytes <= size - offset; // hostOffset + bytes <= currentSize, no overflow
}

// alloc(): bump, else wrap (circular), else spill or pin per policy.
ws_result_t ws_nd4j_alloc(ws_nd4j_t *w, uint64_t bytes, uint64_t *offset) {
  const ws_config_t *c = &w->cfg;
  uint64_t need = bytes > UINT64_MAX - (ALIGN - 1) ? UINT64_MAX & ~(uint64_t)(ALIGN - 1)
                                                  : (bytes + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
  *offset = UINT64_MAX; // only WS_OK gives an offset
  // "trimmer": a circular cycle that outgrows its slot, or any allocation while trimmed. Its
  // allocations are pinned (kept two laps: a consumer may still hold the slot's arrays); only
  // REALLOCATE enters trimmed mode, which ends in a rebuild (close).
  int trimmer = (circular(c) && w->slot_size > 0 && add_sat(need, w->cycle_allocations) > w->slot_size) ||
                w->trimmed;
  if (trimmer && c->spill == WS_SPILL_REALLOCATE && !w->trimmed) {
    w->trimmed = 1;
    w->trimmed_step = w->steps;
  }
  if (!trimmer) {
    if (fits(w->host_offset, need, w->current_size)) {
      *offset = w->host_offset;
      w->host_offset += need;
      w->cycle_allocations = add_sat(w->cycle_allocations, need);
      return WS_OK;
    }
    // Circular: wrap to 0 and try again. ND4J retries by recursion, which never ends when the
    // request exceeds the whole arena (possible only without a slot: initial size, no learning,
    // or a max_size below the slot); the model then leaves the offset alone and spills.
    if (circular(c) && w->current_size > 0 && fits(0, need, w->current_size)) {
      *offset = 0;
      w->host_offset = need;
      w->cycle_allocations = add_sat(w->cycle_allocations, need);
      return WS_OK;
    }
  }
  if (c->spill == WS_SPILL_FAIL) return WS_FULL; // not counted in cycle_allocations: ND4J throws first
  w->cycle_allocations = add_sat(w->cycle_allocations, need);
  if (!trimmer) {
    w->spilled_count++;
    w->spilled_bytes = add_sat(w->spilled_bytes, need);
    return WS_SPILLED;
  }
  // Pinned blocks carry the lap they were made in; clearPinnedAllocations frees those with
  // lap + 2 < steps. At most laps steps-2..steps are held, so three counters indexed by lap % 3.
  w->pinned_count++;
  w->pinned_bytes = add_sat(w->pinned_bytes, need);
  w->pinned_lap_count[w->steps % 3]++;
  w->pinned_lap_bytes[w->steps % 3] = add_sat(w->pinned_lap_bytes[w->steps % 3], need);
  return WS_PINNED;
}

// close()
void ws_nd4j_close(ws_nd4j_t *w) {
  const ws_config_t *c = &w->cfg;
  if (w->open > 1) { // closing a nested enter
    w->open--;
    return;
  }
  if (!w->open) return; // nothing open: ND4J's close would count a cycle that never began
  w->open = 0;
  w->cycles++;
  int lapped = w->cycles > 1 && (w->cycles - 1) % w->slots == 0;
  if (lapped) w->steps++;
  if (w->cycle_allocations > w->max_cycle) w->max_cycle = w->cycle_allocations;

  // Learning. FIRST_LOOP sizes the arena after the first cycle that allocated (maxCycle > 0)
  // while none exists; OVER_TIME(N) exactly at the close of cycle N (`cyclesBeforeInitialization
  // == cyclesCount`), so with the default N = 0, or when cycle N allocated nothing, it never
  // does. Kept as ND4J has it; ndmem's configuration layer decides what it exposes.
  if (c->learning != WS_LEARN_NONE && w->max_cycle > 0) {
    if ((c->learning == WS_LEARN_OVER_TIME && c->cycles_before_init == w->cycles) ||
        (c->learning == WS_LEARN_FIRST_LOOP && w->current_size == 0))
      initialize(w);
    else if (w->current_size > 0 && w->cycle_allocations > 0 && c->spill == WS_SPILL_REALLOCATE &&
             !circular(c))
      initialize(w);
  }

  // clearPinnedAllocations(): the close that makes steps = k frees lap k-3's blocks (lap + 2 < k),
  // which sit at index k % 3; closes that do not lap free nothing new.
  if (lapped && w->pinned_lap_count[w->steps % 3]) {
    w->pinned_count -= w->pinned_lap_count[w->steps % 3];
    w->pinned_bytes -= w->pinned_lap_bytes[w->steps % 3];
    w->pinned_lap_count[w->steps % 3] = w->pinned_lap_bytes[w->steps % 3] = 0;
  }

  if (w->trimmed && w->trimmed_step + 2 < w->steps) {
    w->slot_size = w->max_cycle;
    initialize(w); // destroys, then slot = round8(1.3 * max_cycle) and the slots again
    w->trimmed = 0;
    w->trimmed_step = 0;
    w->host_offset = 0;
  }

  w->last_cycle = w->cycle_allocations;
  if (c->reset == WS_RESET_BLOCK_LEFT) {
    w->host_offset = 0;
  } else if (w->current_size > 0 && !w->trimmed && w->host_offset > 0 &&
             w->slot_size > w->cycle_allocations) {
    // Circular: a cycle smaller than its slot still uses the whole slot, so every cycle starts on
    // a slot boundary and `slots` cycles fill the arena before it wraps.
    w->host_offset += w->slot_size - w->cycle_allocations;
  }
  w->cycle_allocations = 0;
}
