// SPDX-License-Identifier: MIT
// workspace.h: ndmem's workspace engine, pure C with no hooks (unit-tested directly).
//
// Three parts, each a file:
//   ws_nd4j.c  the reference semantics of ND4J's MemoryWorkspace (shared/ND4J_NOTES.md): a bump
//              arena per cycle with learning, over-allocation, spill and circular policies. ndmem
//              uses it for sizing and for workspaces in ND4J mode (no plan: learning NONE, or the
//              circular reset policy).
//   ws_plan.c  beyond ND4J: given the allocations of a learned cycle with their lifetimes, give
//              each a fixed offset (greedy by size interval packing) so the arena is about the
//              cycle's *peak live* bytes, not the sum; and, per allocation, the allocations it
//              shares memory with, so a caller can check they are free before reusing a range.
//   ws_detect.c finding cycles in an unmodified program's allocation stream: the period with
//              which a stream of symbols (call site, size class) repeats, and the phase where
//              cyclic live bytes return to their low-water mark.
// Nothing here allocates through malloc: callers pass an allocator (the shim's own pages).
#ifndef ND_WORKSPACE_H
#define ND_WORKSPACE_H

#include <stddef.h>
#include <stdint.h>

// Memory for the engine's own tables. The shim passes its mmap'd arena; tests pass malloc/free.
typedef struct ws_mem {
  void *(*alloc)(void *ctx, size_t bytes); // zeroed memory, or NULL
  void (*free)(void *ctx, void *p, size_t bytes);
  void *ctx;
} ws_mem_t;

// ---------------------------------------------------------------- policies (ND4J names)

typedef enum ws_learning { WS_LEARN_NONE, WS_LEARN_FIRST_LOOP, WS_LEARN_OVER_TIME } ws_learning_t;
typedef enum ws_allocation { WS_ALLOC_STRICT, WS_ALLOC_OVERALLOCATE } ws_allocation_t;
typedef enum ws_spill { WS_SPILL_EXTERNAL, WS_SPILL_REALLOCATE, WS_SPILL_FAIL } ws_spill_t;
typedef enum ws_reset { WS_RESET_BLOCK_LEFT, WS_RESET_ENDOFBUFFER_REACHED } ws_reset_t;
typedef enum ws_location { WS_LOC_RAM, WS_LOC_MMAP } ws_location_t;

typedef struct ws_config {
  ws_learning_t learning;       // default FIRST_LOOP
  uint32_t cycles_before_init;  // OVER_TIME(N); default 0 (ND4J quirk: then never initialises)
  ws_allocation_t allocation;   // default OVERALLOCATE
  double overallocation_limit;  // default 0.3; circular: the number of extra slots
  ws_spill_t spill;             // default EXTERNAL
  ws_reset_t reset;             // default BLOCK_LEFT
  ws_location_t location;       // default RAM
  uint64_t initial_size;        // default 0
  uint64_t min_size;            // default 0
  uint64_t max_size;            // default 0 = unlimited
} ws_config_t;

void ws_config_default(ws_config_t *c); // ND4J's defaults, listed above

// ---------------------------------------------------------------- ws_nd4j.c: reference model
// Offsets only: the caller owns the memory (arena of current_size bytes at offset 0). Every
// number here is the one ND4J would compute (ND4J_NOTES.md "One workspace, one cycle").

typedef enum ws_result { WS_OK = 0, WS_SPILLED = 1, WS_PINNED = 2, WS_FULL = 3 } ws_result_t;

typedef struct ws_nd4j {
  ws_config_t cfg;
  uint64_t current_size;      // arena bytes (0 until initialised)
  uint64_t host_offset;       // bump pointer
  uint64_t cycle_allocations; // bytes requested this cycle (rounded to 32)
  uint64_t max_cycle;         // high-water of cycle_allocations, never shrinks
  uint64_t last_cycle;        // cycle_allocations of the previous cycle
  uint64_t spilled_bytes, spilled_count; // this cycle
  uint64_t pinned_bytes, pinned_count;   // circular "trimmed" mode
  uint64_t cycles;            // closed cycles (cyclesCount)
  uint64_t generation;        // generationId, ++ on enter
  uint64_t slot_size;         // circular: round8(1.3 * max_cycle)
  uint32_t slots;             // circular: 1 + extra slots
  int trimmed;                // circular: a cycle outgrew its slot
  int open;                   // between enter and close
  // ND4J state the counters above do not carry, needed to reproduce it exactly:
  uint64_t steps;             // laps over the buffer (stepsCount): +1 every `slots` cycles
  uint64_t trimmed_step;      // circular: the lap in which trimmed mode began
  uint64_t pinned_lap_bytes[3], pinned_lap_count[3]; // pinned still held, by lap % 3
  int over;                   // the arena had its one overallocation (isOver)
} ws_nd4j_t;

void ws_nd4j_init(ws_nd4j_t *w, const ws_config_t *cfg); // initial_size sizes the arena at once
void ws_nd4j_enter(ws_nd4j_t *w);
// Allocates `bytes` (rounded up to 32). WS_OK: *offset is in the arena. WS_SPILLED: the caller
// makes a separate (external) allocation. WS_PINNED: circular trimmed mode, external and kept
// two laps. WS_FULL: spill policy FAIL ("Can't allocate memory: Workspace is full").
ws_result_t ws_nd4j_alloc(ws_nd4j_t *w, uint64_t bytes, uint64_t *offset);
void ws_nd4j_close(ws_nd4j_t *w); // learning and REALLOCATE growth happen here
// The size ND4J gives an arena for a need of `need` bytes under cfg (min(need, max) +
// overallocation, clamped up to min, then down to max as ND4J's init() does; circular: slots).
// ndmem passes the planned peak where ND4J passes the sum.
uint64_t ws_nd4j_size_for(const ws_config_t *cfg, uint64_t need);

// ---------------------------------------------------------------- ws_plan.c: planning

// One allocation of a learned cycle. Ticks count the cycle's events (allocations and frees of
// routed blocks) from 0; the block is live in [t_alloc, t_free). t_free == UINT32_MAX: it was
// not freed within the cycle (it is not cyclic and gets no offset).
typedef struct ws_req {
  uint64_t key;  // the symbol (call site and size class) the allocation matched
  uint64_t size; // bytes it needs
  uint32_t t_alloc, t_free;
} ws_req_t;

typedef struct ws_plan {
  uint32_t n;             // allocations in the cycle
  uint64_t arena_size;    // bytes the planned offsets span
  uint64_t peak_live;     // the cycle's peak of simultaneously live bytes (lower bound)
  uint64_t sum;           // the sum of the sizes (what ND4J's arena would be)
  uint64_t *offset;       // per allocation; UINT64_MAX when not planned (not cyclic)
  uint32_t *conflict_off; // per allocation, start index into conflicts[] (n + 1 entries)
  uint32_t *conflicts;    // allocations whose ranges overlap allocation i's (time-disjoint)
  uint32_t nconflicts;
} ws_plan_t;

// Greedy by size: allocations in decreasing size order take the lowest offset (aligned to
// `align`, a power of two) whose range is free of every already placed allocation whose
// lifetime intersects theirs. Returns 0, or -1 when memory for the plan could not be had.
int ws_plan_build(const ws_req_t *reqs, uint32_t n, uint64_t align, const ws_mem_t *mem,
                  ws_plan_t *out);
void ws_plan_free(ws_plan_t *p, const ws_mem_t *mem);
// The plan shrunk to fit under a byte limit: the largest arena (a multiple of `page`) that serves
// the placed allocations whose range [offset, offset + size) lies inside it, such that the arena
// plus the peak live bytes of the cyclic allocations it leaves to the heap (by their lifetimes;
// an offset past arena_size marks one placed nowhere) is at most `budget`. The arena is counted
// whole while the heap's blocks come and go, so a smaller arena is not always cheaper: every cut
// at an allocation's end is tried, largest first. Returns its size, 0 for none (*total, then the
// heap's peak alone, is above `budget` when even that does not fit), or UINT64_MAX when memory
// for the work could not be had. *total: the arena plus that heap peak.
uint64_t ws_plan_fit(const ws_req_t *reqs, const ws_plan_t *p, uint64_t page, uint64_t budget,
                     const ws_mem_t *mem, uint64_t *total);
// Checks a plan: no two allocations with intersecting lifetimes overlap in memory, every offset
// is aligned and inside arena_size, and the conflict lists are exact. 0 if valid.
int ws_plan_verify(const ws_req_t *reqs, const ws_plan_t *p, uint64_t align);

// ---------------------------------------------------------------- ws_detect.c: cycle detection

#define WS_DETECT_WINDOW 4096 // longest period found, in symbols

typedef struct ws_detect {
  uint64_t sym[WS_DETECT_WINDOW];  // ring of recent symbols
  int64_t live[WS_DETECT_WINDOW];  // routed live bytes after each symbol
  uint64_t count;                  // symbols seen
  uint32_t period;                 // candidate period (0: none)
  uint32_t matched;                // consecutive symbols equal to the one a period earlier
  uint32_t table_bits;
  uint64_t *last_key;              // hash table: context (last 4 symbols) -> position + 1
  uint64_t *last_pos;              // where it last ended (see ws_detect.c)
} ws_detect_t;

int ws_detect_init(ws_detect_t *d, const ws_mem_t *mem);
void ws_detect_free(ws_detect_t *d, const ws_mem_t *mem);
void ws_detect_reset(ws_detect_t *d);
// Feeds one allocation symbol with the routed live bytes just after it. Returns the detected
// period P (> 0) once the last 2*P symbols are two identical repetitions (small periods need
// more repetitions, see ws_detect.c), else 0. Cheap: O(1) per symbol.
uint32_t ws_detect_feed(ws_detect_t *d, uint64_t sym, int64_t live_after);
// With a period P detected: the phase (0..P-1) of the symbol after which live bytes were lowest
// over the last period, i.e. where a cycle boundary belongs; cycles begin right after it.
uint32_t ws_detect_phase(const ws_detect_t *d, uint32_t period);

// Follows the detector over one stream of allocations (a thread's host workspace, a device's
// workspace): a reported period is acted on once it persisted for one more period, so an inner
// loop is reported while it runs and the outer period takes over once it recurs.
typedef struct ws_follow {
  uint32_t cand, cand_seen; // the period the detector reports, and for how many symbols in a row
  uint64_t symbols;         // symbols fed since detection started
} ws_follow_t;
// Feeds sym with the live bytes before it (their low-water mark is then at the first allocation
// of a cycle, and cycles begin at symbols of that phase). Returns the period once it persisted,
// else 0; then *phase is ws_detect_phase's and *in_cycle how far into its cycle the stream
// stands: it reaches the period just before the symbol that starts a cycle.
uint32_t ws_follow_feed(ws_detect_t *d, ws_follow_t *f, uint64_t sym, int64_t live_before,
                        uint32_t *phase, uint32_t *in_cycle);

#endif
