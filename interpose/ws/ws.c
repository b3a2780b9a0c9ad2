// SPDX-License-Identifier: MIT
// ws.c: workspaces for unmodified programs (ND4J's MemoryWorkspaces, learned and planned).
//
// Each thread has workspaces ("spaces"): the automatic one, whose cycles are found in the
// thread's stream of routed allocations (size >= NDMEM_WS_MIN; symbol = call site and size), and
// named ones opened by ndmem_cycle_begin / ndmem_workspace_enter. A space goes DETECT (auto only:
// find the period and the low-water phase) -> RECORD (note each allocation of a cycle and when it
// is freed, NDMEM_WS_CYCLES cycles with over_time) -> PLANNED (workspace/ws_plan.c gives every
// allocation a fixed offset; an arena of about the cycle's peak live bytes is mapped once and
// stays resident). In PLANNED, the k-th routed allocation of a cycle is served at its offset when
// it matches the plan (same symbol, no larger) and every allocation that shares its range is free
// — the safety invariant, never traded: no two live blocks overlap. Anything else is a deviation,
// served per the spill policy; a cycle of mostly deviations drops the plan and learning restarts.
// A block still live when its cycle has ended is kept valid and its entry is no longer routed.
// Where the program declared the cycle (marks, named workspaces) that is ND4J's leaked workspace
// pointer, an *escape*: logged once and written to the trace. Under automatic cycles the program
// declared nothing: the block *outlived* the cycle ndmem detected (an array kept across
// iterations, a result handed to another thread, a boundary in the wrong place), ndmem's
// misprediction; it is counted, never reported as the program's error. Guard mode alternates two
// arenas and makes the one of the finished cycle inaccessible (blocks that escaped or outlived it
// excepted), so a stale pointer faults and is named.
#include "ws/ws.h"

#include "runtime/allocstat.h"
#include "common/fmt.h"
#include "limits/limits.h"
#include "common/os.h"
#include "runtime/shim.h"
#include "account/sites.h"
#include "runtime/sysmem.h"
#include "common/trace_format.h"
#include "workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

size_t nd_ws_min = SIZE_MAX;
uintptr_t nd_ws_lo = UINTPTR_MAX, nd_ws_hi = 0;
int nd_ws_recording;
int64_t nd_ws_arena_total, nd_ws_live_total;
uint64_t nd_cycle_clock, nd_steady_ns;

void nd_ws_cycle_closed(uint64_t cycles) {
  uint64_t c = __atomic_load_n(&nd_cycle_clock, __ATOMIC_RELAXED), zero = 0;
  while (cycles > c && !__atomic_compare_exchange_n(&nd_cycle_clock, &c, cycles, 1,
                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  if (!__atomic_load_n(&nd_steady_ns, __ATOMIC_RELAXED))
    __atomic_compare_exchange_n(&nd_steady_ns, &zero, nd_os_mono_ns(), 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
}

#define ALIGN 64
#define MAX_ARENAS 256
#define NONE UINT64_MAX        // plan offset: not cyclic (outlives its cycle), the heap by plan
#define TOO_BIG (UINT64_MAX - 1) // plan offset: beyond NDMEM_WS_MAX_SIZE, a spill every cycle

enum { WSM_DETECT, WSM_RECORD, WSM_PLANNED, WSM_BUMP, WSM_OFF };

// One plan and its arenas. A plan that is dropped stays registered with its arenas: blocks it
// served (escaped ones) may still be live, and their frees must find them.
typedef struct inst {
  struct space *space;
  ws_req_t *preqs;
  ws_plan_t plan;
  uint32_t *by_off;     // entries sorted by offset
  uint8_t *live;        // per entry, atomic
  uint8_t *escaped;     // per entry: it escaped or outlived its cycle (kept valid, not routed)
  uint8_t *which;       // per entry: which arena (guard mode alternates 0/1)
  uint64_t *born;       // per entry and arena, born[2 * e + which]: the cycle in which its latest
                        // block in that arena was served (0: never), so guard mode can name a
                        // dead block after its entry was served again in the other arena
  char *arena[2];
  uint64_t arena_size;
  // ND4J's unplanned modes (learning none, circular): an arena the reference model bump-allocates
  // in; its live blocks are listed so a reused range is proven free first.
  int bump;
  uintptr_t *blive;   // live block addresses
  uint64_t *bsize;    // and sizes
  uint32_t nblive, capblive;
  uint64_t *bborn;    // the cycle each was allocated in
  uint8_t *bescaped;  // escaped or outlived its cycle
} inst_t;

typedef struct space {
  ndmem_ws_stats_t st;  // st.escapes: declared cycles only; st.pinned_bytes: escaped + outlived
  uint64_t outlived;    // automatic: blocks that outlived a detected cycle (not in ndmem.h)
  // The resident-memory effect (the trace's WORKSPACE record, version 10; not in ndmem.h): bytes
  // of the blocks the arena served, and ndmem's trims while this space learned (trim_bounded):
  // how many were measured, by how much resident memory fell across them, the largest fall.
  uint64_t hit_bytes;
  uint64_t trims, trim_bytes, trim_max;
  pid_t tid;
  struct space *all;    // registry of every space (the trace writes their statistics)
  int mode;
  int automatic;
  int bump;             // ND4J mode: learning none or the circular reset policy
  ws_nd4j_t nd;         // the reference model that bump-allocates (ND4J mode)
  ws_config_t cfg;
  ws_detect_t *det;
  uint32_t period, phase;
  ws_follow_t follow;    // auto: the detector's reports over the routed allocations
  uint32_t limited;     // arenas refused or shrunk by NDMEM_MAX_BYTES (said once)
  int heap_trims;       // its cycles run on the heap under maxBytes: trimmed as while learning
  uint32_t in_cycle;    // routed allocations so far in the current cycle
  // recording
  ws_req_t *reqs;
  uint32_t nreq, capreq, tick, rec_cycles, rec_start;
  int recording;        // RECORD has begun (auto: after the first boundary; marked: begin)
  int closed;           // marked: the cycle ended; the next begin finishes it
  struct inst *pi;      // the plan in force (NULL before the first)
  uint32_t pos;
  uint32_t cycle_devs, cycle_spills;
  uint64_t gen;         // planned cycles started (the generation blocks are born in)
  int cur_which;        // the arena this cycle serves from (guard mode alternates)
  struct space *next;
} space_t;

typedef struct ws_thread {
  struct ws_thread *pool_next; // in G.pool: left by a thread that ended (nd_ws_thread_exit)
  int64_t routed_live;  // bytes of routed-size blocks this thread holds (flows)
  space_t *auto_space;
  space_t *named;       // list
  space_t *stack[16];   // open marked cycles
  int depth;
  int marked;           // this thread uses explicit marks: no automatic detection
} ws_thread_t;

static struct {
  int lock;
  struct { uintptr_t lo, hi; struct inst *inst; int which; } arenas[MAX_ARENAS];
  int narenas;
  // learning: heap blocks recorded by a RECORD cycle, address -> entry (open addressing)
  struct rec { uintptr_t addr; space_t *space; uint32_t idx; } *rec;
  size_t rec_cap, rec_n;
  int guard;
  struct sigaction old_segv;
  space_t *spaces;      // registry, append-only (atomic head)
  nd_rec_ws_escape_t pending[256]; // escapes not yet written to the trace
  unsigned npending;
  struct ws_thread *pool; // thread states to reuse (under lock)
  int auto_spaces;        // automatic workspaces made (atomic; reused ones are not counted again)
} G;


static void *mem_alloc(void *ctx, size_t n) {
  (void)ctx;
  return nd_os_map(n ? n : 1);
}
static void mem_free(void *ctx, void *p, size_t n) {
  (void)ctx;
  if (p) nd_os_unmap(p, n ? n : 1);
}
const ws_mem_t nd_ws_mem = {mem_alloc, mem_free, NULL};
#define MEM nd_ws_mem

// glibc's malloc_trim walks and locks every arena and madvises every free page run: its cost
// grows with the threads, arenas and fragmentation of the program (mimalloc's test-stress once ran
// 21x slower from one trim per large free). So trimming is bounded in time: one trim at a time in
// the process, and all trims together take at most 1/TRIM_SHARE of the time since ndmem started
// (plus a small credit for the first cycles).
// Cheap trims (a training loop's few arenas) all run; expensive ones are skipped.
#define TRIM_SHARE 50 // 2 %
#define TRIM_CREDIT_NS 20000000ull // and 20 ms at the start (the first learning cycles)
static uint64_t trim_start_ns, trim_spent_ns;
static int trim_busy;
static int64_t trim_freed; // routed-size heap bytes freed while learning since the last trim
// Each trim is measured: anonymous resident memory is read just before and just after it (a pread
// of the statm descriptor sysmem.c keeps; trims are few, and budgeted here). malloc_trim gives back
// nothing but free memory the allocator held, so a fall across it is freed memory glibc kept
// resident because of the program's own allocation pattern, the retention that workspaces then
// keep it from (their blocks never reach the allocator). Exactly so while one thread allocates;
// where others run meanwhile, their unmaps (large frees, their own trims) add to the fall and
// their first touches of fresh pages take from it. So what is kept, and claimed (the summary, the
// report), is only "resident memory fell by X across ndmem's malloc_trim while it learned", per
// space s that asked for the trim (its owner thread: plain stores, as its other statistics). The
// limits' relief trim (limits.c) is not counted: it runs under a limit's pressure whatever
// workspaces do, and what it gives back says nothing of what they prevent.
static void trim_bounded(space_t *s) {
  if (!nd_real.trim) return;
  uint64_t now = nd_os_mono_ns();
  uint64_t spent = __atomic_load_n(&trim_spent_ns, __ATOMIC_RELAXED);
  if (spent > TRIM_CREDIT_NS && (spent - TRIM_CREDIT_NS) * TRIM_SHARE > now - trim_start_ns) return;
  if (__atomic_exchange_n(&trim_busy, 1, __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&trim_freed, 0, __ATOMIC_RELAXED);
  uint64_t fell = UINT64_MAX; // stays so when resident memory could not be read
  nd_allocstat_trim(nd_real.trim, 0, &fell);
  if (fell != UINT64_MAX) {
    s->trims++;
    s->trim_bytes += fell;
    if (fell > s->trim_max) s->trim_max = fell;
  }
  __atomic_fetch_add(&trim_spent_ns, nd_os_mono_ns() - now, __ATOMIC_RELAXED);
  __atomic_store_n(&trim_busy, 0, __ATOMIC_RELEASE);
}

// ---------------------------------------------------------------- arenas

// Said once per space: the planned arena did not fit under maxBytes, and what was done instead.
static void say_fit(space_t *s, uint64_t want, uint64_t cut, uint32_t spilled, uint32_t n) {
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem: workspace [");
  nd_buf_str(&b, s->st.name);
  nd_buf_str(&b, "]: an arena of ");
  nd_buf_bytes(&b, (int64_t)want);
  nd_buf_str(&b, " would exceed maxBytes (NDMEM_MAX_BYTES); ");
  if (cut) {
    nd_buf_str(&b, "planned in one of ");
    nd_buf_bytes(&b, (int64_t)cut);
    nd_buf_str(&b, ", ");
    nd_buf_u64(&b, spilled);
    nd_buf_str(&b, " of its ");
    nd_buf_u64(&b, n);
    nd_buf_str(&b, " allocations a cycle from the heap");
  } else {
    nd_buf_str(&b, "its allocations go to the heap");
  }
  nd_buf_str(&b, ", which ndmem trims at the cycle's frees");
  nd_buf_line(&b, 2);
}

static char *map_arena(space_t *s, inst_t *pi, int which, uint64_t size) {
  char *p = NULL;
  if (!nd_limit_room(size)) { // an arena counts towards NDMEM_MAX_BYTES whole
    if (!s->limited++) {
      nd_buf_t b;
      nd_buf_reset(&b);
      nd_buf_str(&b, "ndmem: workspace [");
      nd_buf_str(&b, s->st.name);
      nd_buf_str(&b, "]: an arena of ");
      nd_buf_bytes(&b, (int64_t)size);
      nd_buf_str(&b, " would exceed maxBytes (NDMEM_MAX_BYTES); its allocations go to the heap");
      nd_buf_line(&b, 2);
    }
    return NULL;
  }
  if (s->cfg.location == WS_LOC_MMAP) {
    char path[ND_CONFIG_PATH_MAX + 32];
    nd_buf_t b;
    nd_buf_reset(&b);
    nd_buf_str(&b, nd_cfg.ws_mmap_dir);
    nd_buf_str(&b, "/ndmem-ws-XXXXXX");
    memcpy(path, nd_buf_cstr(&b), b.len + 1);
    int saved = errno;
    int fd = mkostemp(path, O_CLOEXEC), err = errno;
    if (fd >= 0) {
      unlink(path);
      if (ftruncate(fd, (off_t)size) == 0) {
        p = nd_real.mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) p = NULL;
      }
      err = errno;
      close(fd);
    }
    errno = saved;
    if (!p) { // the folder is missing, full or read-only: anonymous memory, said once
      static int said;
      if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) && !nd_quiet()) {
        nd_buf_reset(&b);
        nd_buf_str(&b, "ndmem: NDMEM_WS_MMAP_DIR='");
        nd_buf_strn(&b, nd_cfg.ws_mmap_dir, 200);
        nd_buf_str(&b, "': cannot make an arena file (");
        nd_buf_str(&b, nd_errno_text(err));
        nd_buf_str(&b, "); arenas use anonymous memory (NDMEM_WS_LOCATION=ram)");
        nd_buf_line(&b, 2);
      }
    }
  }
  if (!p) {
    p = nd_os_map(size);
    // Transparent huge pages where the kernel offers them (madvise mode): fewer TLB misses and
    // faults for tensor-sized arenas.
    if (p && size >= (2u << 20)) {
      int saved = errno;
      madvise(p, size, MADV_HUGEPAGE);
      errno = saved;
    }
  }
  if (!p) return NULL;
  nd_spin_lock(&G.lock);
  int slot = 0; // a slot released by relief (lo == hi == 0), else a new one
  while (slot < G.narenas && (G.arenas[slot].lo || G.arenas[slot].hi)) slot++;
  if (slot < MAX_ARENAS) {
    G.arenas[slot].inst = pi;
    G.arenas[slot].which = which;
    __atomic_store_n(&G.arenas[slot].lo, (uintptr_t)p, __ATOMIC_RELEASE);
    __atomic_store_n(&G.arenas[slot].hi, (uintptr_t)p + size, __ATOMIC_RELEASE);
    if (slot == G.narenas) __atomic_store_n(&G.narenas, slot + 1, __ATOMIC_RELEASE);
    if ((uintptr_t)p < nd_ws_lo) __atomic_store_n(&nd_ws_lo, (uintptr_t)p, __ATOMIC_RELEASE);
    if ((uintptr_t)p + size > nd_ws_hi) __atomic_store_n(&nd_ws_hi, (uintptr_t)p + size, __ATOMIC_RELEASE);
    __atomic_fetch_add(&nd_ws_arena_total, (int64_t)size, __ATOMIC_RELAXED);
  } else {
    nd_os_unmap(p, size); // no slot to find it again by address: do without
    p = NULL;
  }
  nd_spin_unlock(&G.lock);
  return p;
}

// The arena slot holding p, or -1. Only relief unmaps arenas (those without a live block), and a
// released slot reads lo == hi == 0 until it is reused.
static int arena_of(uintptr_t p) {
  int n = __atomic_load_n(&G.narenas, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++)
    if (p >= G.arenas[i].lo && p < G.arenas[i].hi) return i;
  return -1;
}

// The live entry whose block starts at offset `off` of arena `which` of space s, or -1.
static int64_t bump_at(inst_t *s, uintptr_t addr) {
  for (uint32_t i = 0; i < s->nblive; i++)
    if (s->blive[i] == addr) return i;
  return -1;
}

static int64_t entry_at(inst_t *s, uint64_t off, int which) {
  uint32_t lo = 0, hi = s->plan.n;
  while (lo < hi) { // first entry (in offset order) with offset >= off
    uint32_t mid = lo + (hi - lo) / 2;
    if (s->plan.offset[s->by_off[mid]] < off) lo = mid + 1;
    else hi = mid;
  }
  for (uint32_t i = lo; i < s->plan.n && s->plan.offset[s->by_off[i]] == off; i++) {
    uint32_t e = s->by_off[i];
    if (__atomic_load_n(&s->live[e], __ATOMIC_ACQUIRE) && s->which[e] == which) return e;
  }
  return -1;
}

// ---------------------------------------------------------------- spaces

// Threads come and go (thread pools, mimalloc's test-stress creates threads every round). A
// thread whose automatic workspace was still looking for its cycle leaves its state (about 230
// KiB, mostly the detector's rings and table) to the next new thread: no fresh pages to fault in
// (each first write into a zero page is a TLB shootdown of every CPU running the program), no
// memory kept per dead thread, and one workspace record in the trace instead of one per thread.
// A workspace that got further (a plan, a recording, named ones, marks) keeps its state: its
// statistics are reported and its blocks may still be live.
void nd_ws_thread_exit(nd_tls_t *t) {
  ws_thread_t *w = t->ws;
  space_t *s = w ? w->auto_space : NULL;
  if (!s || w->named || w->depth || w->marked || s->mode != WSM_DETECT || s->pi) return;
  t->ws = NULL;
  nd_spin_lock(&G.lock);
  w->pool_next = G.pool;
  G.pool = w;
  nd_spin_unlock(&G.lock);
}

static ws_thread_t *thread_state(nd_tls_t *t) {
  if (t->ws) return t->ws;
  nd_spin_lock(&G.lock);
  ws_thread_t *w = G.pool;
  if (w) G.pool = w->pool_next;
  nd_spin_unlock(&G.lock);
  if (w) { // what an ended thread left: its automatic workspace starts over for this one
    space_t *s = w->auto_space;
    ws_detect_reset(s->det);
    s->tid = nd_os_gettid();
    s->follow = (ws_follow_t){0};
    s->period = s->phase = s->in_cycle = 0;
    w->pool_next = NULL;
    w->routed_live = 0;
  } else {
    w = nd_os_map(sizeof(ws_thread_t));
  }
  t->ws = w;
  return w;
}

static space_t *space_new(const char *name, int automatic) {
  space_t *s = nd_os_map(sizeof *s);
  if (!s) return NULL;
  s->tid = nd_os_gettid();
  s->all = __atomic_load_n(&G.spaces, __ATOMIC_ACQUIRE);
  while (!__atomic_compare_exchange_n(&G.spaces, &s->all, s, 1, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
  }
  size_t n = 0;
  while (name[n] && n + 1 < sizeof s->st.name) s->st.name[n] = name[n], n++;
  s->automatic = automatic;
  ws_config_default(&s->cfg);
  s->cfg.learning = (ws_learning_t)nd_cfg.ws_learning;
  s->cfg.cycles_before_init = (uint32_t)nd_cfg.ws_cycles;
  s->cfg.allocation = (ws_allocation_t)nd_cfg.ws_allocation;
  s->cfg.overallocation_limit = (double)nd_cfg.ws_overallocate / 1e6;
  s->cfg.spill = (ws_spill_t)nd_cfg.ws_spill;
  s->cfg.reset = (ws_reset_t)nd_cfg.ws_reset;
  s->cfg.location = (ws_location_t)nd_cfg.ws_location;
  s->cfg.initial_size = (uint64_t)nd_cfg.ws_initial_size;
  s->cfg.min_size = (uint64_t)nd_cfg.ws_min_size;
  s->cfg.max_size = (uint64_t)nd_cfg.ws_max_size;
  // ND4J's unplanned modes: the reference model places allocations; ndmem checks each range
  // against the blocks still live before serving it.
  s->bump = s->cfg.learning == WS_LEARN_NONE || s->cfg.reset == WS_RESET_ENDOFBUFFER_REACHED;
  if (s->bump) ws_nd4j_init(&s->nd, &s->cfg);
  if (automatic) {
    __atomic_fetch_add(&G.auto_spaces, 1, __ATOMIC_RELAXED);
    s->det = nd_os_map(sizeof *s->det);
    if (!s->det || ws_detect_init(s->det, &MEM) != 0) s->mode = WSM_OFF;
    else s->mode = WSM_DETECT;
  } else {
    s->mode = s->bump ? WSM_BUMP : WSM_RECORD;
  }
  return s;
}

// Room for one more recorded allocation in *reqs (n used of *cap), from ndmem's own pages; the
// device workspaces record theirs the same way. Without memory nothing changes (n stays >= cap).
void nd_ws_reqs_reserve(ws_req_t **reqs, uint32_t n, uint32_t *cap) {
  if (n < *cap) return;
  uint32_t c = *cap ? *cap * 2 : 256;
  ws_req_t *v = nd_os_map(c * sizeof *v);
  if (!v) return;
  if (*reqs) {
    memcpy(v, *reqs, n * sizeof *v);
    nd_os_unmap(*reqs, *cap * sizeof *v);
  }
  *reqs = v;
  *cap = c;
}
static void rec_reserve(space_t *s) { nd_ws_reqs_reserve(&s->reqs, s->nreq, &s->capreq); }

// ---------------------------------------------------------------- the learning table

static size_t rec_slot(uintptr_t a, size_t cap) { return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1); }

static void rec_put(uintptr_t addr, space_t *s, uint32_t idx) {
  nd_spin_lock(&G.lock);
  if ((G.rec_n + 1) * 2 > G.rec_cap) {
    size_t cap = G.rec_cap ? G.rec_cap * 2 : 1024;
    struct rec *v = nd_os_map(cap * sizeof *v);
    if (!v) {
      nd_spin_unlock(&G.lock);
      return;
    }
    for (size_t i = 0; i < G.rec_cap; i++)
      if (G.rec[i].addr) {
        size_t j = rec_slot(G.rec[i].addr, cap);
        while (v[j].addr) j = (j + 1) & (cap - 1);
        v[j] = G.rec[i];
      }
    if (G.rec) nd_os_unmap(G.rec, G.rec_cap * sizeof *v);
    G.rec = v;
    G.rec_cap = cap;
  }
  size_t j = rec_slot(addr, G.rec_cap);
  while (G.rec[j].addr) j = (j + 1) & (G.rec_cap - 1);
  G.rec[j].addr = addr;
  G.rec[j].space = s;
  G.rec[j].idx = idx;
  G.rec_n++;
  nd_spin_unlock(&G.lock);
}

// Removes addr from the table; returns its record (space NULL when absent).
static struct rec rec_take(uintptr_t addr) {
  struct rec r = {0, NULL, 0};
  nd_spin_lock(&G.lock);
  if (G.rec_cap) {
    size_t j = rec_slot(addr, G.rec_cap);
    for (; G.rec[j].addr; j = (j + 1) & (G.rec_cap - 1))
      if (G.rec[j].addr == addr) break;
    if (G.rec[j].addr == addr) {
      r = G.rec[j];
      size_t hole = j; // backward-shift deletion
      for (size_t i = (j + 1) & (G.rec_cap - 1); G.rec[i].addr; i = (i + 1) & (G.rec_cap - 1)) {
        size_t home = rec_slot(G.rec[i].addr, G.rec_cap);
        if (((i - home) & (G.rec_cap - 1)) >= ((i - hole) & (G.rec_cap - 1))) {
          G.rec[hole] = G.rec[i];
          hole = i;
        }
      }
      G.rec[hole].addr = 0;
      G.rec_n--;
    }
  }
  nd_spin_unlock(&G.lock);
  return r;
}

// Forget every recorded block of s (its recording ended: later frees are outside the cycle).
static void rec_forget(space_t *s) {
  nd_spin_lock(&G.lock);
  for (size_t i = 0; i < G.rec_cap; i++)
    if (G.rec[i].addr && G.rec[i].space == s) G.rec[i].space = NULL; // tombstone-free: keep slot
  nd_spin_unlock(&G.lock);
}

// ---------------------------------------------------------------- planning

static void rec_on(space_t *s) {
  if (!s->recording) __atomic_fetch_add(&nd_ws_recording, 1, __ATOMIC_RELAXED);
  s->recording = 1;
}
static void rec_off(space_t *s) {
  if (s->recording) __atomic_fetch_sub(&nd_ws_recording, 1, __ATOMIC_RELAXED);
  s->recording = 0;
}

static void drop_plan(space_t *s) {
  // The arenas stay mapped and registered (escaped blocks may still live there, and their
  // frees must still find them); the next plan gets arenas of its own.
  s->mode = s->automatic ? WSM_DETECT : WSM_RECORD;
  s->st.relearns++;
  s->pos = 0;
  s->nreq = s->rec_cycles = s->rec_start = s->tick = 0;
  rec_off(s);
  if (s->det) ws_detect_reset(s->det);
}

static void start_recording(space_t *s) {
  s->mode = WSM_RECORD;
  s->nreq = s->tick = s->rec_cycles = s->rec_start = 0;
  rec_on(s);
}

// The planned allocations whose range ends past an arena of `size` bytes go external every cycle
// (TOO_BIG); returns how many were newly so.
static uint32_t spill_past(ws_plan_t *plan, const ws_req_t *reqs, uint32_t n, uint64_t size) {
  uint32_t spilled = 0;
  for (uint32_t i = 0; i < n; i++)
    if (plan->offset[i] < TOO_BIG && plan->offset[i] + reqs[i].size > size)
      plan->offset[i] = TOO_BIG, spilled++;
  return spilled;
}

// A recorded cycle ended. Over_time records NDMEM_WS_CYCLES cycles back to back; then the plan.
static void finish_recording(space_t *s) {
  s->st.learned_cycles++;
  uint32_t need = s->cfg.learning == WS_LEARN_OVER_TIME ? s->cfg.cycles_before_init : 1;
  if (++s->rec_cycles < need) {
    s->rec_start = s->nreq;
    return;
  }
  rec_off(s);
  rec_forget(s);
  // over_time: the cycles recorded back to back; plan the last one with every size the largest
  // any cycle had at that position (when the cycles have the same shape).
  uint32_t n = s->nreq - s->rec_start, cycles = s->rec_cycles;
  ws_req_t *last = s->reqs + s->rec_start;
  if (cycles > 1 && s->nreq == n * cycles)
    for (uint32_t c = 0; c + 1 < cycles; c++)
      for (uint32_t i = 0; i < n; i++)
        if (s->reqs[c * n + i].key == last[i].key && s->reqs[c * n + i].size > last[i].size)
          last[i].size = s->reqs[c * n + i].size;
  ws_plan_t plan;
  if (!n || ws_plan_build(last, n, ALIGN, &MEM, &plan) != 0) {
    drop_plan(s);
    return;
  }
  uint64_t size = plan.arena_size;
  // ND4J's sizing rule (overallocation, min/max clamps) applied to the planned size.
  uint64_t want = ws_nd4j_size_for(&s->cfg, size);
  want = (want + 4095) & ~(uint64_t)4095;
  // What does not fit under NDMEM_WS_MAX_SIZE is not planned: it goes external.
  spill_past(&plan, last, n, want);
  // Under maxBytes an arena counts whole. One that does not fit beside what is tracked now (the
  // cycle's temporaries are gone) is not refused outright, which sent the whole cycle to the heap
  // and let glibc keep what it freed (a limit that raised resident memory): the plan shrinks
  // to the largest arena that, with the heap's share of the cycle, stays under the limit
  // (ws_plan_fit); the rest spills every cycle (counted), and the heap is trimmed at the cycle's
  // frees as while learning. Guard mode's double arenas are refused as before.
  uint64_t room = nd_limit_room_left();
  if (!G.guard && want > room) {
    uint64_t total = 0, cut = ws_plan_fit(last, &plan, 4096, room, &MEM, &total);
    if (cut == UINT64_MAX) cut = 0;
    uint32_t spilled = spill_past(&plan, last, n, cut);
    s->heap_trims = 1;
    if (!s->limited++) say_fit(s, want, cut, spilled, n);
    want = cut;
    if (!want) {
      ws_plan_free(&plan, &MEM);
      s->mode = WSM_OFF;
      return;
    }
  }
  inst_t *pi = nd_os_map(sizeof *pi);
  char *a0 = pi && want ? map_arena(s, pi, 0, want) : NULL;
  char *a1 = a0 && G.guard ? map_arena(s, pi, 1, want) : NULL;
  if (!a0 || (G.guard && !a1)) {
    ws_plan_free(&plan, &MEM);
    s->mode = WSM_OFF;
    return;
  }
  pi->space = s;
  pi->preqs = nd_os_map(n * sizeof *pi->preqs);
  pi->by_off = nd_os_map(n * sizeof *pi->by_off);
  pi->live = nd_os_map(n);
  pi->escaped = nd_os_map(n);
  pi->which = nd_os_map(n);
  pi->born = nd_os_map(2 * n * sizeof *pi->born);
  if (!pi->preqs || !pi->by_off || !pi->live || !pi->escaped || !pi->which || !pi->born) {
    s->mode = WSM_OFF;
    return;
  }
  memcpy(pi->preqs, last, n * sizeof *last);
  for (uint32_t i = 0; i < n; i++) pi->by_off[i] = i;
  for (uint32_t i = 1; i < n; i++) { // insertion sort by offset (n is small)
    uint32_t e = pi->by_off[i], j = i;
    while (j > 0 && plan.offset[pi->by_off[j - 1]] > plan.offset[e]) pi->by_off[j] = pi->by_off[j - 1], j--;
    pi->by_off[j] = e;
  }
  pi->plan = plan;
  pi->arena[0] = a0;
  pi->arena[1] = a1;
  pi->arena_size = want;
  s->pi = pi;
  // The learning cycles ran through the heap, which may keep their memory; the arena replaces
  // it, so give it back before the arena is touched (peak RSS stays near the plan's peak).
  trim_bounded(s);
  s->st.arena_bytes = want * (G.guard ? 2 : 1);
  s->st.plan_peak_bytes = plan.peak_live;
  s->st.plan_sum_bytes = plan.sum;
  s->pos = 0;
  s->gen = 0;
  s->cur_which = 0;
  s->mode = WSM_PLANNED;
}

// ---------------------------------------------------------------- cycles

static void guard_protect(space_t *s, int which, int prot);

// A block still live after its cycle ended (once per block): kept valid, its bytes pinned while it
// lives. An automatic workspace counts it as outlived and says nothing: the cycle was ndmem's
// guess. A declared cycle's block is an escape: counted, said once on stderr (with its allocation
// stack's id when it is tracked) and queued for the trace. Takes G.lock: call without it.
static void outlived_cycle(space_t *s, uintptr_t addr, uint64_t size, uint64_t born) {
  s->st.pinned_bytes += size;
  if (s->automatic) {
    s->outlived++;
    return;
  }
  s->st.escapes++;
  nd_block_t blk;
  uint32_t stack = nd_blocks_find(addr, &blk) ? blk.site->id : UINT32_MAX;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem: leaked workspace pointer from workspace [");
  nd_buf_str(&b, s->st.name);
  nd_buf_str(&b, "]: a block of ");
  nd_buf_u64(&b, size);
  nd_buf_str(&b, " B allocated in cycle ");
  nd_buf_u64(&b, born);
  nd_buf_str(&b, " is still live in cycle ");
  nd_buf_u64(&b, s->st.cycles + 1);
  nd_buf_str(&b, "; it stays valid and is no longer routed");
  if (stack != UINT32_MAX) {
    nd_buf_str(&b, " (allocation stack ");
    nd_buf_u64(&b, stack);
    nd_buf_str(&b, ": ndmemreport shows its file:line)");
  }
  nd_buf_line(&b, 2);
  nd_spin_lock(&G.lock);
  if (G.npending < sizeof G.pending / sizeof G.pending[0]) {
    nd_rec_ws_escape_t *r = &G.pending[G.npending++];
    memset(r, 0, sizeof *r);
    r->tid = (uint32_t)s->tid;
    r->stack_id = stack;
    memcpy(r->name, s->st.name, sizeof r->name);
    r->addr = addr;
    r->size = size;
    r->cycle_born = born;
    r->cycle_seen = s->st.cycles + 1;
  } // else: more escapes than the buffer holds between two flushes; the count stays exact
  nd_spin_unlock(&G.lock);
}

// A cycle of a PLANNED space ended: blocks still live from it escaped or outlived it.
static void end_cycle(space_t *s) {
  if (s->mode != WSM_PLANNED) return;
  for (uint32_t e = 0; e < s->pi->plan.n; e++) {
    if (!__atomic_load_n(&s->pi->live[e], __ATOMIC_ACQUIRE) || s->pi->escaped[e]) continue;
    s->pi->escaped[e] = 1; // kept valid; never routed again; its range stays taken while it lives
    uintptr_t addr = (uintptr_t)(s->pi->arena[s->pi->which[e]] + s->pi->plan.offset[e]);
    outlived_cycle(s, addr, s->pi->preqs[e].size, s->pi->born[2 * e + s->pi->which[e]]);
  }
  if (s->cycle_spills && s->cfg.spill == WS_SPILL_REALLOCATE) {
    // REALLOCATE: an arena that could not hold the cycle is re-planned from the next one.
    drop_plan(s);
    s->st.relearns--; // a planned growth, not a change of stream
    if (s->automatic) { s->mode = WSM_RECORD; rec_on(s); } // same period: record the next cycle
  } else if (s->pi->plan.n && s->cycle_devs * 2 > s->pi->plan.n) {
    drop_plan(s); // the stream changed: learn it again
  }
  if (G.guard && s->mode == WSM_PLANNED) {
    guard_protect(s, s->cur_which, PROT_NONE);
    guard_protect(s, s->cur_which ^ 1, PROT_READ | PROT_WRITE);
  }
  s->gen++;
  s->cur_which = G.guard ? (int)(s->gen & 1) : 0;
  s->pos = 0;
  s->cycle_devs = s->cycle_spills = 0;
  s->in_cycle = 0;
}

// ---------------------------------------------------------------- serving

static int entry_free_to_use(space_t *s, uint32_t k) {
  if (__atomic_load_n(&s->pi->live[k], __ATOMIC_ACQUIRE) || s->pi->escaped[k]) return 0;
  for (uint32_t i = s->pi->plan.conflict_off[k]; i < s->pi->plan.conflict_off[k + 1]; i++) {
    uint32_t c = s->pi->plan.conflicts[i];
    // a conflicting block in the other arena (guard mode) does not share memory with k
    if (__atomic_load_n(&s->pi->live[c], __ATOMIC_ACQUIRE) && s->pi->which[c] == s->cur_which) return 0;
  }
  return 1;
}

static void *serve(space_t *s, uint32_t k, uint64_t *usable) {
  int which = s->cur_which;
  s->pi->which[k] = (uint8_t)which;
  s->pi->born[2 * k + which] = s->st.cycles + 1; // the cycle, from 1 (learning cycles count too)
  __atomic_store_n(&s->pi->live[k], 1, __ATOMIC_RELEASE);
  s->st.hits++;
  s->hit_bytes += s->pi->preqs[k].size;
  *usable = s->pi->preqs[k].size;
  return s->pi->arena[which] + s->pi->plan.offset[k];
}

// An allocation the plan cannot serve, a spill. Why: SP_TAKEN, its range is still taken by an
// escaped block (always the heap: the program did nothing wrong this cycle); SP_DEVIATION, the
// stream is not the plan's; SP_TOO_BIG, its entry did not fit under NDMEM_WS_MAX_SIZE.
enum { SP_TAKEN, SP_DEVIATION, SP_TOO_BIG };
static void *deviate(space_t *s, size_t req, int why) {
  s->st.spills++;
  s->st.spill_bytes += req;
  s->cycle_spills++;
  if (why == SP_TAKEN) return NULL;
  if (why == SP_DEVIATION) {
    s->st.deviations++;
    s->cycle_devs++;
  }
  if (s->cfg.spill == WS_SPILL_FAIL) {
    if (s->st.spills == 1) {
      nd_buf_t b;
      nd_buf_reset(&b);
      nd_buf_str(&b, "ndmem: Can't allocate memory: Workspace [");
      nd_buf_str(&b, s->st.name);
      nd_buf_str(&b, "] is full: ");
      nd_buf_u64(&b, req);
      nd_buf_str(&b, " B requested in cycle ");
      nd_buf_u64(&b, s->st.cycles + 1);
      nd_buf_str(&b, " do not fit its plan (NDMEM_WS_SPILL=fail)");
      nd_buf_line(&b, 2);
    }
    return ND_WS_FAIL;
  }
  return NULL;
}

// ---------------------------------------------------------------- ND4J mode

static inst_t *bump_inst(space_t *s, uint64_t size) {
  inst_t *pi = nd_os_map(sizeof *pi);
  if (!pi) return NULL;
  pi->space = s;
  pi->bump = 1;
  pi->capblive = 4096;
  pi->blive = nd_os_map(pi->capblive * sizeof *pi->blive);
  pi->bsize = nd_os_map(pi->capblive * sizeof *pi->bsize);
  pi->bborn = nd_os_map(pi->capblive * sizeof *pi->bborn);
  pi->bescaped = nd_os_map(pi->capblive);
  pi->arena[0] = pi->blive && pi->bsize && pi->bborn && pi->bescaped ? map_arena(s, pi, 0, size) : NULL;
  if (!pi->arena[0]) return NULL;
  pi->arena_size = size;
  s->st.arena_bytes = size;
  return pi;
}

// A cycle of an ND4J-mode space begins: the previous one closes (learning, REALLOCATE growth),
// blocks still live from it escaped or outlived it.
static void bump_cycle(space_t *s) {
  if (s->nd.open) ws_nd4j_close(&s->nd);
  inst_t *pi = s->pi;
  // The live list is guarded by G.lock, a leaf lock: take the new escapes out in small batches,
  // then report each without it (outlived_cycle looks up the block's stack).
  for (uint32_t found = pi ? 1 : 0; found;) {
    struct { uintptr_t addr; uint64_t size, born; } batch[32];
    found = 0;
    nd_spin_lock(&G.lock);
    for (uint32_t i = 0; i < pi->nblive && found < 32; i++) {
      if (pi->bescaped[i]) continue;
      pi->bescaped[i] = 1;
      batch[found].addr = pi->blive[i];
      batch[found].size = pi->bsize[i];
      batch[found].born = pi->bborn[i];
      found++;
    }
    nd_spin_unlock(&G.lock);
    for (uint32_t i = 0; i < found; i++)
      outlived_cycle(s, batch[i].addr, batch[i].size, batch[i].born);
  }
  ws_nd4j_enter(&s->nd);
}

static void *bump_alloc(space_t *s, size_t req, uint64_t *usable) {
  uint64_t off;
  ws_result_t r = ws_nd4j_alloc(&s->nd, req, &off);
  if (r == WS_FULL) return deviate(s, req, SP_TOO_BIG);
  if (r != WS_OK) return deviate(s, req, SP_TAKEN); // spilled or pinned: the heap, by ND4J's rule
  uint64_t size = (req + 31) & ~(uint64_t)31;
  if (!s->pi || s->pi->arena_size < s->nd.current_size) { // the model grew the arena
    inst_t *pi = bump_inst(s, (s->nd.current_size + 4095) & ~(uint64_t)4095);
    if (!pi) return deviate(s, req, SP_TAKEN);
    s->pi = pi; // the old arena stays registered for its live blocks
  }
  inst_t *pi = s->pi;
  uintptr_t lo = (uintptr_t)pi->arena[0] + off, hi = lo + size;
  nd_spin_lock(&G.lock);
  int clash = pi->nblive >= pi->capblive || off + size > pi->arena_size;
  for (uint32_t i = 0; i < pi->nblive && !clash; i++)
    clash = lo < pi->blive[i] + pi->bsize[i] && pi->blive[i] < hi;
  if (!clash) {
    uint32_t i = pi->nblive++;
    pi->blive[i] = lo;
    pi->bsize[i] = size;
    pi->bborn[i] = s->st.cycles + 1;
    pi->bescaped[i] = 0;
  }
  nd_spin_unlock(&G.lock);
  if (clash) return deviate(s, req, SP_TAKEN); // the range is still taken: never overlap
  s->st.hits++;
  s->hit_bytes += size;
  *usable = size;
  return (void *)lo;
}

static uint64_t symbol(uintptr_t ra, size_t req) {
  uint64_t h = (uint64_t)ra * 0x9e3779b97f4a7c15ull;
  h ^= ((uint64_t)req + 63) / 64; // size class: 64-byte granules
  h *= 0xff51afd7ed558ccdull;
  return (h ^ (h >> 29)) | 1;
}

static space_t *current_space(nd_tls_t *t, ws_thread_t *w) {
  if (w->depth) return w->stack[w->depth - 1];
  if (w->marked) return NULL; // a marked thread routes only inside its cycles
  if (!w->auto_space) w->auto_space = space_new("auto", 1);
  (void)t;
  return w->auto_space;
}

static __thread space_t *pending_space; // set when the caller must report its external block
static __thread uint32_t pending_idx;

void *nd_ws_alloc(nd_tls_t *t, size_t req, size_t align, uintptr_t ra, uint64_t *usable) {
  pending_space = NULL;
  if (align > ALIGN) return NULL;
  ws_thread_t *w = thread_state(t);
  space_t *s = w ? current_space(t, w) : NULL;
  if (!s || s->mode == WSM_OFF) return NULL;
  uint64_t sym = symbol(ra, req);

  int64_t live_before = w->routed_live;
  w->routed_live += (int64_t)req;

  if (s->mode == WSM_DETECT) {
    // The detector gets the live bytes *before* each allocation (ws_follow_feed says why).
    uint32_t p = ws_follow_feed(s->det, &s->follow, sym, live_before, &s->phase, &s->in_cycle);
    if (p) {
      s->period = p;
      s->mode = s->bump ? WSM_BUMP : WSM_RECORD;
      s->nreq = s->tick = s->rec_cycles = s->rec_start = 0;
      s->recording = 0;
    }
    return NULL;
  }

  if (s->automatic && s->in_cycle >= s->period) { // this allocation begins a cycle
    if (s->mode == WSM_RECORD && !s->recording) {
      start_recording(s);
    } else if (s->mode == WSM_RECORD) {
      nd_ws_cycle_closed(++s->st.cycles);
      finish_recording(s);
    } else if (s->mode == WSM_PLANNED) {
      nd_ws_cycle_closed(++s->st.cycles);
      end_cycle(s);
    } else if (s->mode == WSM_BUMP) {
      if (s->nd.open) nd_ws_cycle_closed(++s->st.cycles);
      bump_cycle(s);
    }
    s->in_cycle = 0;
  }
  s->in_cycle++;
  if (s->mode == WSM_BUMP) return s->nd.open ? bump_alloc(s, req, usable) : NULL;

  if (s->mode == WSM_RECORD) {
    if (!s->recording) return NULL; // before the first boundary
    rec_reserve(s);
    if (s->nreq >= s->capreq || s->nreq - s->rec_start >= 65536) return NULL;
    ws_req_t *r = &s->reqs[s->nreq];
    r->key = sym;
    r->size = (req + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
    r->t_alloc = s->tick++;
    r->t_free = UINT32_MAX;
    pending_space = s;
    pending_idx = s->nreq++;
    return NULL;
  }
  if (s->mode != WSM_PLANNED) return NULL;

  // The k-th routed allocation of the cycle is expected to be plan entry k; one missing
  // allocation is tolerated (entry k+1 matches: resynchronise).
  uint32_t k = s->pos, n = s->pi->plan.n;
  if (!(k < n && s->pi->preqs[k].key == sym) && k + 1 < n && s->pi->preqs[k + 1].key == sym) {
    s->st.deviations++;
    s->cycle_devs++;
    k++;
  }
  if (k < n && s->pi->preqs[k].key == sym) {
    s->pos = k + 1;
    if (s->pi->plan.offset[k] == NONE) return NULL; // outlives its cycle: the heap, by plan
    if (s->pi->plan.offset[k] == TOO_BIG) return deviate(s, req, SP_TOO_BIG);
    if (req > s->pi->preqs[k].size) return deviate(s, req, SP_DEVIATION); // it grew
    if (!entry_free_to_use(s, k)) return deviate(s, req, SP_TAKEN);
    if (!s->pi->arena[s->cur_which]) { // released by relief: map it again
      s->pi->arena[s->cur_which] = map_arena(s, s->pi, s->cur_which, s->pi->arena_size);
      if (!s->pi->arena[s->cur_which]) return deviate(s, req, SP_TAKEN);
      s->st.arena_bytes += s->pi->arena_size;
    }
    return serve(s, k, usable);
  }
  return deviate(s, req, SP_DEVIATION);
}

void nd_ws_external(nd_tls_t *t, void *p) {
  (void)t;
  if (pending_space && p) rec_put((uintptr_t)p, pending_space, pending_idx);
  pending_space = NULL;
}

// A routed-size heap block went back to the allocator while the thread's automatic workspace is
// still finding or learning its cycle. glibc keeps such memory (its mmap threshold grows after
// the first large free, so later tensors come from the brk heap and stay resident when freed);
// returning it keeps the learning cycles' RSS near the program's live bytes. A trim once
// TRIM_FREED bytes have been freed, within trim_bounded's time budget.
#define TRIM_FREED (16 << 20)
#define TRIM_BLIND 8 // trims before a stream shows any repetition, per process (see below)
void nd_ws_heap_freed(uint64_t bytes) {
  ws_thread_t *w = nd_tls.ws;
  space_t *s = w && !w->marked ? w->auto_space : NULL;
  if (!nd_real.trim || !s || (s->mode != WSM_DETECT && s->mode != WSM_RECORD && !s->heap_trims))
    return;
  if (__atomic_add_fetch(&trim_freed, (int64_t)bytes, __ATOMIC_RELAXED) < TRIM_FREED) return;
  // A stream that repeats (a period being confirmed, a cycle being recorded) is a loop about to
  // get its arena. Before any repetition shows, a loop cannot be told from a program that has
  // none, where a trimmed heap is reused at once and the trim only costs page faults and TLB
  // shootdowns: such trims come from a small budget for the whole process (threads that come and
  // go do not renew it). 8 is what the benchmark's tensor loop (bench/tensor_loop.c: 14 buffers,
  // 180 MiB live) needs to keep its learning RSS at its live bytes (1.01x; 4 leave it at glibc's
  // 1.11x); a one-thread program that never repeats pays 8 trims in all.
  if (s->mode == WSM_DETECT && !s->follow.cand) {
    // ... and only while one thread makes routed allocations: where several do (thread pools,
    // servers, test-stress), trimming under them costs each one page faults and TLB shootdowns.
    if (__atomic_load_n(&G.auto_spaces, __ATOMIC_RELAXED) > 1) return;
    static int blind_left = TRIM_BLIND;
    if (__atomic_load_n(&blind_left, __ATOMIC_RELAXED) <= 0 ||
        __atomic_sub_fetch(&blind_left, 1, __ATOMIC_RELAXED) < 0)
      return;
  }
  trim_bounded(s);
}

void nd_ws_note_free(uint64_t bytes) {
  ws_thread_t *w = nd_tls.ws;
  if (w) w->routed_live -= (int64_t)bytes;
}

void nd_ws_free_external(void *p) {
  struct rec r = rec_take((uintptr_t)p);
  if (r.space && r.space->mode == WSM_RECORD && r.idx < r.space->nreq)
    r.space->reqs[r.idx].t_free = r.space->tick++;
}

uint64_t nd_ws_usable(const void *p) {
  int a = arena_of((uintptr_t)p);
  if (a < 0) return 0;
  inst_t *pi = G.arenas[a].inst;
  if (pi->bump) {
    nd_spin_lock(&G.lock);
    int64_t i = bump_at(pi, (uintptr_t)p);
    uint64_t u = i < 0 ? 0 : pi->bsize[i];
    nd_spin_unlock(&G.lock);
    return u;
  }
  int64_t e = entry_at(pi, (uintptr_t)p - G.arenas[a].lo, G.arenas[a].which);
  return e < 0 ? 0 : pi->preqs[e].size;
}

int nd_ws_free(void *p, uint64_t *usable) {
  int a = arena_of((uintptr_t)p);
  if (a < 0) return -1; // between arenas: an ordinary heap block
  inst_t *pi = G.arenas[a].inst;
  space_t *s = pi->space;
  int64_t e;
  if (pi->bump) {
    nd_spin_lock(&G.lock);
    e = bump_at(pi, (uintptr_t)p);
    if (e >= 0) {
      *usable = pi->bsize[e];
      if (pi->bescaped[e]) s->st.pinned_bytes -= pi->bsize[e];
      uint32_t last = --pi->nblive; // swap-remove
      pi->blive[e] = pi->blive[last];
      pi->bsize[e] = pi->bsize[last];
      pi->bborn[e] = pi->bborn[last];
      pi->bescaped[e] = pi->bescaped[last];
    }
    nd_spin_unlock(&G.lock);
    if (e >= 0) return 1;
  } else {
    e = entry_at(pi, (uintptr_t)p - G.arenas[a].lo, G.arenas[a].which);
  }
  if (e < 0) {
    // Not the start of a live block: a double or invalid free. The allocator would abort on
    // it; ndmem cannot hand arena memory to it, so it says so and drops the call.
    nd_buf_t b;
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem: free(");
    nd_buf_hex(&b, (uint64_t)(uintptr_t)p);
    nd_buf_str(&b, ") is not a live block of workspace [");
    nd_buf_str(&b, s->st.name);
    nd_buf_str(&b, "] (double free?); ignored");
    nd_buf_line(&b, 2);
    return 0;
  }
  if (pi->escaped[e]) s->st.pinned_bytes -= pi->preqs[e].size;
  *usable = pi->preqs[e].size;
  __atomic_store_n(&pi->live[e], 0, __ATOMIC_RELEASE);
  return 1;
}

// ---------------------------------------------------------------- explicit marks

static space_t *named_space(ws_thread_t *w, const char *name) {
  for (space_t *s = w->named; s; s = s->next)
    if (strncmp(s->st.name, name, sizeof s->st.name - 1) == 0) return s;
  space_t *s = space_new(name, 0);
  if (!s) return NULL;
  s->next = w->named;
  w->named = s;
  return s;
}

// One policy of a workspace configuration (ndmem_workspace_configure's keys): 1 when the key is
// known and its value good (then applied to *c), 0 for an unknown key, -1 for a bad value.
int nd_ws_option(ws_config_t *c, const char *key, size_t keylen, const char *val) {
  static const struct { const char *key; int kind; const char *words; } keys[] = {
      {"learning", 'c', "none|first_loop|over_time"}, {"cycles", 'i', NULL},
      {"allocation", 'c', "strict|overallocate"},     {"overallocate", 'f', NULL},
      {"spill", 'c', "external|reallocate|fail"},     {"reset", 'c', "block_left|endofbuffer"},
      {"location", 'c', "ram|mmap"},                  {"initial_size", 's', NULL},
      {"min_size", 's', NULL},                        {"max_size", 's', NULL}};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    if (strlen(keys[k].key) != keylen || strncmp(key, keys[k].key, keylen)) continue;
    int64_t v;
    int ok = keys[k].kind == 'c'   ? nd_parse_choice(val, keys[k].words, &v) == 0
             : keys[k].kind == 'i' ? nd_parse_int(val, &v) == 0 && v >= 1 && v <= 1000
             : keys[k].kind == 'f' ? nd_parse_fraction(val, &v) == 0
                                   : nd_parse_size(val, 0, &v) == 0;
    if (!ok) return -1;
    switch (k) {
    case 0: c->learning = (ws_learning_t)v; break;
    case 1: c->cycles_before_init = (uint32_t)v; break;
    case 2: c->allocation = (ws_allocation_t)v; break;
    case 3: c->overallocation_limit = (double)v / 1e6; break;
    case 4: c->spill = (ws_spill_t)v; break;
    case 5: c->reset = (ws_reset_t)v; break;
    case 6: c->location = (ws_location_t)v; break;
    case 7: c->initial_size = (uint64_t)v; break;
    case 8: c->min_size = (uint64_t)v; break;
    default: c->max_size = (uint64_t)v; break;
    }
    return 1;
  }
  return 0;
}

// The next item of a comma-separated option list into item (cut at its size); *p moves past it.
size_t nd_ws_next_item(const char **p, char *item, size_t cap) {
  size_t n = 0;
  while ((*p)[n] && (*p)[n] != ',' && n + 1 < cap) item[n] = (*p)[n], n++;
  item[n] = 0;
  *p += n;
  while (**p && **p != ',') (*p)++;
  if (**p == ',') (*p)++;
  return n;
}

int nd_ws_configure(const char *name, const char *opts) {
  nd_tls_t *t = &nd_tls;
  if (nd_ws_min == SIZE_MAX || nd_thread_prepare(t) != ND_T_COUNT) return -1;
  ws_thread_t *w = thread_state(t);
  space_t *s = w ? named_space(w, name ? name : "cycle") : NULL;
  if (!s || !opts) return -1;
  int rc = 0;
  ws_config_t c = s->cfg;
  for (const char *p = opts; *p;) {
    char item[128];
    nd_ws_next_item(&p, item, sizeof item);
    char *eq = strchr(item, '=');
    if (!item[0] || (eq && nd_ws_option(&c, item, (size_t)(eq - item), eq + 1) == 1)) continue;
    nd_buf_t b;
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem: ndmem_workspace_configure(\"");
    nd_buf_str(&b, s->st.name);
    nd_buf_str(&b, "\"): '");
    nd_buf_str(&b, item);
    nd_buf_str(&b, "' is not a known option with a valid value; ignored");
    nd_buf_line(&b, 2);
    rc = -1;
  }
  s->cfg = c;
  if (s->mode == WSM_PLANNED) drop_plan(s);
  rec_off(s);
  s->pi = NULL; // arenas stay registered for the blocks they hold
  s->bump = c.learning == WS_LEARN_NONE || c.reset == WS_RESET_ENDOFBUFFER_REACHED;
  if (s->bump) ws_nd4j_init(&s->nd, &c);
  s->mode = s->bump ? WSM_BUMP : WSM_RECORD;
  s->recording = 0;
  return rc;
}

void nd_ws_cycle_begin(const char *name) {
  nd_tls_t *t = &nd_tls;
  if (nd_ws_min == SIZE_MAX || t->mode != ND_T_COUNT) return;
  ws_thread_t *w = thread_state(t);
  if (!w || w->depth >= 16) return;
  w->marked = 1;
  space_t *s = named_space(w, name ? name : "cycle");
  if (!s) return;
  w->stack[w->depth++] = s;
  if (s->closed) { // the previous cycle's blocks had until now to be freed
    s->closed = 0;
    if (s->mode == WSM_PLANNED) end_cycle(s);
  }
  if (s->mode == WSM_RECORD && !s->recording) start_recording(s);
  if (s->mode == WSM_PLANNED) s->pos = 0;
  if (s->mode == WSM_BUMP) bump_cycle(s);
}

void nd_ws_cycle_end(void) {
  nd_tls_t *t = &nd_tls;
  ws_thread_t *w = t->ws;
  if (!w || !w->depth) return;
  space_t *s = w->stack[--w->depth];
  nd_ws_cycle_closed(++s->st.cycles);
  if (s->mode == WSM_RECORD && s->recording) finish_recording(s);
  else if (s->mode == WSM_PLANNED) s->closed = 1;
  else if (s->mode == WSM_BUMP && s->nd.open) ws_nd4j_close(&s->nd);
}

// ---------------------------------------------------------------- guard mode

static void guard_protect(space_t *s, int which, int prot) {
  char *a = s->pi->arena[which];
  if (!a) return;
  mprotect(a, s->pi->arena_size, prot);
  if (prot != PROT_NONE) return;
  // Blocks that escaped or outlived the cycle stay valid: their pages stay accessible (a stale
  // pointer into a dead block that shares a page with one of them does not fault).
  long page = (long)nd_os_page_size();
  for (uint32_t e = 0; e < s->pi->plan.n; e++) {
    if (!s->pi->escaped[e] || s->pi->which[e] != which || !__atomic_load_n(&s->pi->live[e], __ATOMIC_ACQUIRE)) continue;
    uintptr_t lo = (uintptr_t)a + s->pi->plan.offset[e], hi = lo + s->pi->preqs[e].size;
    lo &= ~(uintptr_t)(page - 1);
    hi = (hi + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE);
  }
}

static void segv_handler(int sig, siginfo_t *si, void *uc) {
  uintptr_t addr = (uintptr_t)si->si_addr;
  int a = arena_of(addr);
  if (a >= 0) {
    inst_t *pi = G.arenas[a].inst;
    space_t *s = pi->space;
    uint64_t off = addr - G.arenas[a].lo;
    // The dead block: of the entries whose range holds the address, the one served last in this
    // arena (its entry may have been served again since, in the other one).
    int64_t hit = -1;
    int w = G.arenas[a].which;
    for (uint32_t e = 0; e < pi->plan.n; e++)
      if (pi->plan.offset[e] < TOO_BIG && off >= pi->plan.offset[e] &&
          off < pi->plan.offset[e] + pi->preqs[e].size && pi->born[2 * e + w] &&
          (hit < 0 || pi->born[2 * e + w] > pi->born[2 * hit + w]))
        hit = e;
    nd_buf_t b;
    nd_buf_reset(&b);
    nd_buf_str(&b, "ndmem: uses leaked workspace pointer from workspace [");
    nd_buf_str(&b, s->st.name);
    nd_buf_str(&b, "]: address ");
    nd_buf_hex(&b, addr);
    if (hit >= 0) {
      nd_buf_str(&b, " is in a block of ");
      nd_buf_u64(&b, pi->preqs[hit].size);
      nd_buf_str(&b, " B (plan entry ");
      nd_buf_u64(&b, (uint64_t)hit);
      nd_buf_str(&b, ") allocated in cycle ");
      nd_buf_u64(&b, pi->born[2 * hit + w]);
    }
    nd_buf_str(&b, "; the workspace is now in cycle ");
    nd_buf_u64(&b, s->st.cycles + 1);
    nd_buf_str(&b, " (NDMEM_WS_GUARD=1 made that generation inaccessible)");
    nd_buf_line(&b, 2);
    // Re-raise with the default action: returning re-executes the faulting access.
    sigaction(SIGSEGV, &G.old_segv, NULL);
    if (G.old_segv.sa_handler == SIG_IGN) signal(SIGSEGV, SIG_DFL);
    return;
  }
  // Not ours: hand it to the handler that was there before.
  if (G.old_segv.sa_flags & SA_SIGINFO) {
    if (G.old_segv.sa_sigaction) G.old_segv.sa_sigaction(sig, si, uc);
    return;
  }
  if (G.old_segv.sa_handler == SIG_DFL || G.old_segv.sa_handler == SIG_IGN) {
    signal(SIGSEGV, SIG_DFL);
    return;
  }
  G.old_segv.sa_handler(sig);
}

// ---------------------------------------------------------------- relief (limits)

static int space_of_thread(ws_thread_t *w, space_t *s) {
  if (s == w->auto_space) return 1;
  for (space_t *n = w->named; n; n = n->next)
    if (n == s) return 1;
  return 0;
}

static int inst_idle(inst_t *pi) {
  if (pi->bump) return pi->nblive == 0; // under G.lock
  for (uint32_t e = 0; e < pi->plan.n; e++)
    if (__atomic_load_n(&pi->live[e], __ATOMIC_ACQUIRE)) return 0;
  return 1;
}

// Only this thread serves from its spaces, so an arena of its own with no live block stays
// without one while it is released; frees from other threads cannot name a block in it.
uint64_t nd_ws_relieve(void) {
  ws_thread_t *w = nd_tls.ws;
  if (!w || G.guard) return 0; // guard mode keeps its generations where they are
  struct { uintptr_t lo, hi; inst_t *pi; int which; } gone[32];
  int n = 0;
  nd_spin_lock(&G.lock);
  for (int i = 0; i < G.narenas && n < 32; i++) {
    inst_t *pi = G.arenas[i].inst;
    if (!G.arenas[i].hi || !space_of_thread(w, pi->space) || !inst_idle(pi)) continue;
    gone[n].lo = G.arenas[i].lo;
    gone[n].hi = G.arenas[i].hi;
    gone[n].pi = pi;
    gone[n].which = G.arenas[i].which;
    n++;
    __atomic_store_n(&G.arenas[i].hi, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&G.arenas[i].lo, 0, __ATOMIC_RELEASE);
  }
  nd_spin_unlock(&G.lock);
  uint64_t bytes = 0;
  for (int i = 0; i < n; i++) {
    uint64_t size = gone[i].hi - gone[i].lo;
    inst_t *pi = gone[i].pi;
    space_t *s = pi->space;
    nd_os_unmap((void *)gone[i].lo, size);
    pi->arena[gone[i].which] = NULL;
    if (s->pi == pi) {
      s->st.arena_bytes -= size;
      if (pi->bump) s->pi = NULL; // the next cycle maps a new arena at the model's size
    }
    __atomic_fetch_sub(&nd_ws_arena_total, (int64_t)size, __ATOMIC_RELAXED);
    bytes += size;
  }
  return bytes;
}

// ---------------------------------------------------------------- setup, stats

void nd_ws_setup(void) {
  if (!nd_cfg.workspaces) return;
  nd_ws_min = (size_t)nd_cfg.ws_min;
  trim_start_ns = nd_os_mono_ns();
  // The statm descriptor the trims are measured with, opened now, while one thread runs, rather
  // than by the first trim on a free's path (a fork child opens its own there).
  if (nd_real.trim)
    nd_statm_self_open(__atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) == ND_INITIALIZING);
  G.guard = (int)nd_cfg.ws_guard;
  if (G.guard) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &G.old_segv);
  }
}

int nd_ws_stats(void *out, int max) {
  ndmem_ws_stats_t *o = out;
  ws_thread_t *w = nd_tls.ws;
  if (!w) return 0;
  int n = 0;
  if (w->auto_space) {
    if (n < max) o[n] = w->auto_space->st;
    n++;
  }
  for (space_t *s = w->named; s; s = s->next) {
    if (n < max) o[n] = s->st;
    n++;
  }
  return n;
}

// fork: the table lock is a leaf (nothing else is taken while it is held), so it comes last.
void nd_ws_atfork_prepare(void) { nd_spin_lock(&G.lock); }
void nd_ws_atfork_parent(void) { nd_spin_unlock(&G.lock); }
void nd_ws_atfork_child(void) { nd_spin_unlock(&G.lock); }

// Every space ever made is on G.spaces (append-only, never freed), so the walk takes no lock; its
// owner thread updates the counters with plain stores, so a sum read meanwhile may lag by one.
void nd_ws_totals(nd_ws_totals_t *out) {
  memset(out, 0, sizeof *out);
  for (space_t *s = __atomic_load_n(&G.spaces, __ATOMIC_ACQUIRE); s; s = s->all) {
    out->hits += s->st.hits;
    out->spills += s->st.spills;
    out->spill_bytes += s->st.spill_bytes;
    out->arena_bytes += s->st.arena_bytes;
    out->hit_bytes += s->hit_bytes;
    out->trims += s->trims;
    out->trim_bytes += s->trim_bytes;
    if (s->trim_max > out->trim_max) out->trim_max = s->trim_max;
  }
}

// What workspaces did to resident memory, in the summary's words, and only what is measured: the
// blocks their arenas served never reached the allocator, so the resident memory of this run is
// not the job's own (whether it is higher or lower without ndmem is not known here: the arenas
// stay resident, and glibc's retention is what the trims below measured); and when resident
// memory fell by ND_RETAIN_MIN_BYTES or more across one learning trim, that glibc held that much
// freed memory at once: the job's own retention, which workspaces then keep it from. The sum over
// all trims is said beside it, never as the amount held: a trim leaves glibc's free chunks where
// they are, and a range given back, taken again and freed again is counted by every trim that
// gives it back (a PyTorch loop's trims added up to twice its peak). An automatic workspace trims
// every 16 MiB of large frees while it learns (nd_ws_heap_freed), so its largest fall stays small
// unless much else was freed; a marked one trims once, when its learning cycle ends. The way to
// see the job alone comes with it. Nothing is said of a job that workspaces never touched.
void nd_ws_summary(int fd) {
  nd_ws_totals_t w;
  nd_ws_totals(&w);
  int served = w.hits != 0, held = w.trim_max >= ND_RETAIN_MIN_BYTES;
  if (!served && !held) return;
  const char *who = nd_allocstat_kind() == ND_ALLOCATOR_GLIBC ? "glibc malloc" : "the allocator";
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem[");
  nd_buf_u64(&b, (uint64_t)nd_os_getpid());
  nd_buf_str(&b, "]: workspaces: ");
  if (served) {
    nd_buf_str(&b, "served ");
    nd_buf_u64(&b, w.hits);
    nd_buf_str(&b, w.hits == 1 ? " allocation (" : " allocations (");
    nd_buf_ubytes(&b, w.hit_bytes);
    nd_buf_str(&b, ") from arenas of ");
    nd_buf_ubytes(&b, w.arena_bytes);
    nd_buf_str(&b, ", blocks ");
    nd_buf_str(&b, who);
    nd_buf_str(&b, " never held: resident memory is not the job's own");
  }
  if (held) {
    nd_buf_str(&b, served ? "; while they learned, resident memory fell by "
                          : "served nothing, but while they looked for a cycle resident memory "
                            "fell by ");
    if (w.trims > 1) nd_buf_str(&b, "up to ");
    nd_buf_ubytes(&b, w.trim_max);
    nd_buf_str(&b, " across ndmem's malloc_trim");
    if (w.trims > 1) {
      nd_buf_str(&b, " (");
      nd_buf_ubytes(&b, w.trim_bytes);
      nd_buf_str(&b, " in ");
      nd_buf_u64(&b, w.trims);
      nd_buf_str(&b, " trims)");
    }
    nd_buf_str(&b, ": freed memory ");
    nd_buf_str(&b, who);
    nd_buf_str(&b, served ? " held; without workspaces expect allocator retention"
                          : " held, so resident memory is not the job's own");
  }
  nd_buf_str(&b, "; to measure the job without them: ndmem run --no-workspaces (NDMEM_WORKSPACES=0)");
  nd_buf_line(&b, fd);
}

void nd_ws_write_records(nd_ws_record_fn rec, void *ctx) {
  for (space_t *s = __atomic_load_n(&G.spaces, __ATOMIC_ACQUIRE); s; s = s->all) {
    nd_rec_workspace_t r;
    memset(&r, 0, sizeof r);
    r.tid = (uint32_t)s->tid;
    memcpy(r.name, s->st.name, sizeof r.name);
    r.name[sizeof r.name - 1] = 0;
    r.cycles = s->st.cycles;
    r.learned_cycles = s->st.learned_cycles;
    r.arena_bytes = s->st.arena_bytes;
    r.plan_peak_bytes = s->st.plan_peak_bytes;
    r.plan_sum_bytes = s->st.plan_sum_bytes;
    r.hits = s->st.hits;
    r.spills = s->st.spills;
    r.spill_bytes = s->st.spill_bytes;
    r.escapes = s->st.escapes;
    r.relearns = s->st.relearns;
    r.deviations = s->st.deviations;
    r.pinned_bytes = s->st.pinned_bytes;
    r.outlived = s->outlived;
    r.hit_bytes = s->hit_bytes;
    r.learn_trims = s->trims;
    r.learn_trim_bytes = s->trim_bytes;
    r.learn_trim_max_bytes = s->trim_max;
    rec(ctx, ND_REC_WORKSPACE, &r, sizeof r);
  }
  nd_rec_ws_escape_t copy[sizeof G.pending / sizeof G.pending[0]];
  nd_spin_lock(&G.lock);
  unsigned n = G.npending;
  memcpy(copy, G.pending, n * sizeof copy[0]);
  G.npending = 0;
  nd_spin_unlock(&G.lock);
  for (unsigned i = 0; i < n; i++) rec(ctx, ND_REC_WS_ESCAPE, &copy[i], sizeof copy[i]);
}
