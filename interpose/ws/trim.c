// SPDX-License-Identifier: MIT
// trim.c: ndmem's malloc_trim while workspaces learn. The learning cycles run through the heap,
// and glibc keeps what they free; trims give it back (at the large frees of a workspace that is
// finding or recording its cycle, and once before a new arena is first used), bounded in time,
// and each one measured: the summary and the report say what they gave back.
#include "ws/space.h"

#include "common/os.h"
#include "runtime/allocstat.h"
#include "runtime/sysmem.h"

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
//
// The trim just before a new plan's arena is first used (plan != 0) is outside the budget: it comes
// once per arena, and it is what keeps the learning cycles' freed memory from staying resident
// beside the arena (a budgeted one skipped there left later cycles to touch it all again). Its
// fall is also kept on its own (plan_trims, plan_trim_bytes).
void nd_ws_trim(space_t *s, int plan) {
  if (!nd_real.trim) return;
  uint64_t now = nd_os_mono_ns();
  uint64_t spent = __atomic_load_n(&trim_spent_ns, __ATOMIC_RELAXED);
  if (!plan && spent > TRIM_CREDIT_NS && (spent - TRIM_CREDIT_NS) * TRIM_SHARE > now - trim_start_ns)
    return;
  if (__atomic_exchange_n(&trim_busy, 1, __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&trim_freed, 0, __ATOMIC_RELAXED);
  uint64_t fell = UINT64_MAX; // stays so when resident memory could not be read
  nd_allocstat_trim(nd_real.trim, 0, &fell);
  if (fell != UINT64_MAX) {
    s->trims++;
    s->trim_bytes += fell;
    if (fell > s->trim_max) s->trim_max = fell;
    if (plan) {
      s->plan_trims++;
      s->plan_trim_bytes += fell;
    }
  }
  __atomic_fetch_add(&trim_spent_ns, nd_os_mono_ns() - now, __ATOMIC_RELAXED);
  __atomic_store_n(&trim_busy, 0, __ATOMIC_RELEASE);
}

void nd_ws_trim_setup(void) {
  trim_start_ns = nd_os_mono_ns();
  // The statm descriptor the trims are measured with, opened now, while one thread runs, rather
  // than by the first trim on a free's path (a fork child opens its own there).
  if (nd_real.trim)
    nd_statm_self_open(__atomic_load_n(&nd_state, __ATOMIC_ACQUIRE) == ND_INITIALIZING);
}

// A routed-size heap block went back to the allocator while the thread's automatic workspace is
// still finding or learning its cycle. glibc keeps such memory (its mmap threshold grows after
// the first large free, so later tensors come from the brk heap and stay resident when freed);
// returning it keeps the learning cycles' RSS near the program's live bytes. A trim once
// TRIM_FREED bytes have been freed, within nd_ws_trim's time budget.
#define TRIM_FREED (16 << 20)
#define TRIM_BLIND 8 // trims before a stream shows any repetition, per process (see below)
void nd_ws_heap_freed(uint64_t bytes) {
  ws_thread_t *w = nd_tls.ws;
  space_t *s = w && !w->marked ? w->auto_space : NULL;
  if (!nd_real.trim || !s || (s->learn.mode != WS_MODE_DETECT && s->learn.mode != WS_MODE_RECORD && !s->heap_trims))
    return;
  if (__atomic_add_fetch(&trim_freed, (int64_t)bytes, __ATOMIC_RELAXED) < TRIM_FREED) return;
  // A stream that repeats (a period being confirmed, a cycle being recorded) is a loop about to
  // get its arena. Before any repetition shows, a loop cannot be told from a program that has
  // none, where a trimmed heap is reused at once and the trim only costs page faults and TLB
  // shootdowns: such trims come from a small budget for the whole process (threads that come and
  // go do not renew it). 8 is what the benchmark's tensor loop (bench/tensor_loop.c: 14 buffers,
  // 180 MiB live) needs to keep its learning RSS at its live bytes (1.01x; 4 leave it at glibc's
  // 1.11x); a one-thread program that never repeats pays 8 trims in all.
  if (s->learn.mode == WS_MODE_DETECT && !s->learn.follow.cand) {
    // ... and only while one thread makes routed allocations: where several do (thread pools,
    // servers, test-stress), trimming under them costs each one page faults and TLB shootdowns.
    if (__atomic_load_n(&nd_ws_auto_spaces, __ATOMIC_RELAXED) > 1) return;
    static int blind_left = TRIM_BLIND;
    if (__atomic_load_n(&blind_left, __ATOMIC_RELAXED) <= 0 ||
        __atomic_sub_fetch(&blind_left, 1, __ATOMIC_RELAXED) < 0)
      return;
  }
  nd_ws_trim(s, 0);
}

// A cycle the workspace learns ended (its blocks came from the heap and are freed): what the
// allocator holds freed below the heap's top now is what, without workspaces, it would keep from
// cycle to cycle (glibc returns no free chunk inside its heap on its own). Read before the trim a
// new plan makes here (WS_EV_PLANNED comes after), though a trim changes nothing of it: it gives
// pages back and leaves the chunks free. Asked on the program's thread, on the hook path like any
// malloc (allocstat.c: never from the writer's side of a flush): once per learning cycle, a few
// per workspace, each a walk of the free lists.
void nd_ws_learn_cycle_end(space_t *s) {
  uint64_t held;
  if (nd_allocstat_held(&held) != 0) return;
  s->held_reads++;
  if (held > s->held_max) s->held_max = held;
}
