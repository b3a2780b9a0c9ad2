// SPDX-License-Identifier: MIT
// workspace.h: ndmem's workspace engine, pure C with no hooks (unit-tested directly).
//
// Four parts, each a file:
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
//   ws_learn.c one workspace's learning machine and serving, for the host's and the device's
//              alike: DETECT -> RECORD -> PLANNED, the plan's instance and the checks before a
//              range is handed out; the owner passes what differs (its arenas, its waits).
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
// A plan's offsets besides real ones: WS_PLAN_NONE, not cyclic (ws_plan_build: the block outlives
// its cycle, the heap's by plan); WS_PLAN_TOO_BIG, its range ends past the arena it got, a spill
// every cycle.
#define WS_PLAN_NONE UINT64_MAX
#define WS_PLAN_TOO_BIG (UINT64_MAX - 1)
// Marks WS_PLAN_TOO_BIG the placed allocations whose range ends past an arena of `size` bytes;
// returns how many were newly so.
uint32_t ws_plan_spill_past(ws_plan_t *p, const ws_req_t *reqs, uint64_t size);

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

// ---------------------------------------------------------------- ws_learn.c: one workspace

// A plan in force and its arenas (or, in ND4J's unplanned modes, a bump arena and its live
// blocks). The owner keeps an instance it replaced while blocks it served may still be live.
typedef struct ws_inst {
  struct ws_inst *next;  // the owner's list (device: older instances that still hold blocks)
  struct ws_learn *learn; // the workspace it serves
  uint64_t arena[2];     // addresses; 0: none (not made, or released by the owner)
  uint64_t size;         // bytes of each arena
  uint32_t nlive;        // blocks live (atomic)
  int bump;
  // planned
  ws_req_t *preqs;       // the planned cycle's allocations
  ws_plan_t plan;
  uint32_t *by_off;      // entries sorted by offset
  uint8_t *live;         // per entry (atomic: frees come from any thread)
  uint8_t *escaped;      // per entry: it escaped or outlived its cycle (kept valid, not routed)
  uint8_t *which;        // per entry: the arena it was last served in
  uint64_t *born;        // born[2 * e + which]: the cycle in which entry e's latest block in that
                         // arena was served (0: never), so a dead block can still be named
  // bump: the live blocks, so a reused range is proven free first (under ops->lock)
  uint64_t *blo, *bsize, *bborn; // address, size, cycle allocated in
  uint8_t *bescaped;
  uint32_t nb, capb;
} ws_inst_t;

enum ws_mode { WS_MODE_OFF, WS_MODE_DETECT, WS_MODE_RECORD, WS_MODE_PLANNED, WS_MODE_BUMP };

// What the owner hears of (ws_learn_ops_t.event).
enum ws_event {
  WS_EV_CYCLE_CLOSED, // l->st.cycles just grew
  WS_EV_RECORD_BEGIN, // a recording began
  WS_EV_RECORD_STOP,  // ... and stopped unfinished (the plan dropped, the workspace reconfigured)
  WS_EV_RECORD_DONE,  // ... and finished: frees of the heap blocks it recorded are no longer its
  WS_EV_PLANNED,      // a new plan is in force (l->cur)
  WS_EV_CYCLE_END,    // a planned cycle ended; the next one serves from arena l->cur_which
  WS_EV_LEARN_CYCLE_END, // a cycle being recorded (or about to be) ended: its blocks went to the
                         // heap and are freed; WS_EV_PLANNED, if it comes, comes after
};

struct ws_learn;
// What differs between the owners of workspaces: the host's (one per thread and name, arenas
// mmap'd, guard mode alternating two) and the device's (one per device, arenas from cuMemAlloc,
// reuse waiting for stream work). Callbacks get the ctx the owner passed with the call; those
// other than arena may be NULL.
typedef struct ws_learn_ops {
  const ws_mem_t *mem; // the engine's tables
  uint64_t align;      // of planned offsets; recorded sizes are rounded up to it
  uint64_t granule;    // an arena's size is a multiple of it
  // REALLOCATE re-records a grown cycle from the next boundary rather than from the cycle that
  // begins when the plan is dropped (the device's rule; the host records that cycle).
  int realloc_waits;
  // An arena of `size` bytes for pi (arena `which`, 0 or 1): its address, or 0 when none can be
  // had (host: mmap under maxBytes, registered by address; device: cuMemAlloc under the limit).
  uint64_t (*arena)(void *ctx, struct ws_learn *l, ws_inst_t *pi, int which, uint64_t size);
  // The arena a new plan may have, `want` bytes or less (host: under maxBytes, shrinking the plan
  // with ws_plan_fit and ws_plan_spill_past); 0: none, the workspace goes off.
  uint64_t (*fit)(void *ctx, struct ws_learn *l, const ws_req_t *reqs, ws_plan_t *plan,
                  uint64_t want);
  // pi, the instance in force, is replaced or dropped (device: freed once its blocks are). NULL:
  // nothing to do, and a dropped plan's instance stays l->cur until the next one.
  void (*retire)(void *ctx, struct ws_learn *l, ws_inst_t *pi);
  // Before [lo, hi) is handed out: waits for what may still use it (device: stream work); 0, or
  // -1 when it cannot (the allocation then spills).
  int (*settle)(void *ctx, uint64_t lo, uint64_t hi);
  // A block still live when its cycle ended (once per block): it stays valid and its entry is no
  // longer routed. born: the cycle it was allocated in.
  void (*outlived)(void *ctx, struct ws_learn *l, uint64_t addr, uint64_t size, uint64_t born);
  void (*event)(void *ctx, struct ws_learn *l, int ev);
  // Guards bump instances' live lists (host: frees come from any thread; a leaf lock). NULL:
  // the owner holds its own lock around every call.
  void (*lock)(void *ctx);
  void (*unlock)(void *ctx);
} ws_learn_ops_t;

typedef struct ws_learn_stats {
  uint64_t cycles, learned_cycles, relearns;
  uint64_t hits, hit_bytes;        // allocations served from arenas
  uint64_t spills, spill_bytes;    // routed allocations the workspace could not serve
  uint64_t deviations;             // allocations off the plan
  uint64_t arena_bytes;            // the arenas of the instance in force, as made
  uint64_t plan_peak_bytes, plan_sum_bytes; // the planned cycle's peak live bytes, sum of sizes
} ws_learn_stats_t;

// One workspace. The stream of routed allocations goes DETECT (automatic workspaces: the period
// and the phase, ws_follow_feed) -> RECORD (each allocation with its lifetime; over_time records
// cycles_before_init cycles and plans each position's largest size) -> PLANNED (an instance of
// the plan: the k-th allocation of a cycle is served at its offset when it matches and every
// allocation sharing its range is free; a cycle of mostly deviations drops the plan). Learning
// none or the circular reset policy serve from ND4J's bump arena instead (WS_MODE_BUMP).
typedef struct ws_learn {
  const ws_learn_ops_t *ops;
  ws_config_t cfg;
  int mode;              // enum ws_mode
  int automatic;         // cycles found in the stream (else declared: ws_learn_begin/end)
  int bump;              // ND4J mode: learning none or the circular reset policy
  uint32_t arenas;       // 1, or 2 alternating per cycle (host guard mode)
  ws_detect_t *det;
  ws_follow_t follow;
  uint32_t period, phase;
  uint32_t in_cycle;     // routed allocations so far in the current cycle
  // recording
  ws_req_t *reqs;
  uint32_t nreq, capreq, tick, rec_cycles, rec_start;
  int recording;         // RECORD has begun (automatic: after the first boundary; declared: begin)
  int closed;            // declared: the cycle ended; the next begin finishes it
  // serving
  ws_inst_t *cur;        // the instance in force (NULL before the first)
  uint32_t pos;          // the plan entry the next allocation is expected to match
  uint32_t cycle_devs, cycle_spills;
  uint64_t gen;          // planned cycles started
  int cur_which;         // the arena this cycle serves from
  ws_nd4j_t nd;          // the reference model that bump-allocates (ND4J mode)
  ws_learn_stats_t st;
} ws_learn_t;

// Sets up *l (zeroed) with the policies cfg. Declared workspaces start recording at their first
// begin (or in ND4J mode); automatic ones look for their cycle first. 0, or -1 when the detector's
// memory could not be had (then WS_MODE_OFF).
int ws_learn_init(ws_learn_t *l, const ws_learn_ops_t *ops, const ws_config_t *cfg, int automatic,
                  uint32_t arenas);
// A routed allocation's symbol: its call site (or stack) and a size class.
uint64_t ws_symbol(uint64_t site, uint64_t size_class);

enum ws_go {
  WS_GO_HEAP,     // not the workspace's to serve now: the owner allocates it as before
  WS_GO_RECORDED, // ... and reports when it is freed: ws_learn_freed(out->idx)
  WS_GO_SERVED,   // out->addr, out->size bytes from an arena
  WS_GO_SPILL,    // counted as a spill, why in out->why (the spill policy says what follows)
};
enum ws_why {
  WS_WHY_TAKEN,     // its range is still taken, or no arena: the heap, never an overlap
  WS_WHY_DEVIATION, // the stream is not the plan's (another symbol, a larger size)
  WS_WHY_TOO_BIG,   // its plan entry did not fit in the arena (max_size, a limit)
  WS_WHY_FULL,      // ND4J mode, spill policy fail: the arena is full
};
typedef struct ws_learn_out {
  uint64_t addr, size;
  uint32_t idx;
  int why;
} ws_learn_out_t;

// A routed allocation of `bytes` (in a mode other than WS_MODE_OFF), sym its symbol, live_before
// the routed bytes live before it (their low-water mark places the cycle's boundary). Returns
// enum ws_go. ctx goes to the callbacks, which may run here (a cycle ends, a plan is made).
int ws_learn_alloc(ws_learn_t *l, void *ctx, uint64_t sym, uint64_t bytes, int64_t live_before,
                   ws_learn_out_t *out);
void ws_learn_freed(ws_learn_t *l, uint32_t idx); // the block of a WS_GO_RECORDED was freed
void ws_learn_begin(ws_learn_t *l, void *ctx);    // a declared cycle begins
void ws_learn_end(ws_learn_t *l, void *ctx);      // ... and ends
// New policies: a plan in force is dropped and learning starts over (declared workspaces).
void ws_learn_configure(ws_learn_t *l, void *ctx, const ws_config_t *cfg);
// The stream starts over (another thread takes the workspace, a fork child): the detector and
// the position in the cycle forget it.
void ws_learn_restart(ws_learn_t *l);

// The live block of pi at addr (in arena `which`): its entry or bump index, or -1.
int64_t ws_inst_find(const ws_inst_t *pi, uint64_t addr, int which);
uint64_t ws_inst_size(const ws_inst_t *pi, int64_t i); // a found block's bytes
// Frees found block i: its bytes; *escaped: it had escaped or outlived its cycle.
uint64_t ws_inst_release(ws_inst_t *pi, int64_t i, int *escaped);
void ws_inst_free(ws_inst_t *pi, const ws_mem_t *mem); // its tables (its arenas are the owner's)

// Heap blocks a recording noted (address -> owner and request index), found again when freed:
// open addressing with backward-shift deletion, grown through mem. No lock: the owner's.
typedef struct ws_rtab_slot {
  uint64_t addr;
  void *owner; // NULL: forgotten (the recording ended), the slot kept until the block is freed
  uint32_t idx;
} ws_rtab_slot_t;
typedef struct ws_rtab {
  ws_rtab_slot_t *slot;
  size_t cap, n;
} ws_rtab_t;
void ws_rtab_put(ws_rtab_t *t, const ws_mem_t *mem, uint64_t addr, void *owner, uint32_t idx);
// Removes addr: 1 with its owner and index, 0 when absent.
int ws_rtab_take(ws_rtab_t *t, uint64_t addr, void **owner, uint32_t *idx);
void ws_rtab_forget(ws_rtab_t *t, const void *owner); // every block of owner
void ws_rtab_clear(ws_rtab_t *t);                     // every block

#endif
