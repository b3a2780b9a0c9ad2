// SPDX-License-Identifier: MIT
// replay.c: recording stacks for replay (replay.h). A thread's table holds, per stack pointer at
// which a capture started, up to ND_REPLAY_WAYS stacks, each with the slots where its callers'
// return addresses were saved. A stack is recorded the eighth time it is seen at the same stack
// pointer with the same site (two candidates a set): the recording is a walk with libunwind's
// cursor (unw_step, unw_get_save_loc, about 100 ns a frame) that also proves the cursor and the
// fast unwinder agree on every frame, which a stack seen a few times (an import's) would not pay
// back (`import torch`: 25 000 stacks recorded at the third sighting made 222 000 replays, 1 900
// at the eighth 172 000; a training loop's stacks repeat thousands of times). Not recorded (the
// capture unwinds every time):
//   1. a stack through a signal frame (the handler's stack may be another; sigaltstack),
//   2. deeper than ND_REPLAY_FRAMES native frames or ND_REPLAY_PY Python frame records,
//   3. a walk that disagrees with the fast unwinder's frames or finds no slot in memory.
// Tables are ndmem's own pages; a thread's table goes to the next thread emptied (its entries
// name the old thread's stack, which may be gone: a slot is read only at a stack pointer the
// reading thread stands on). Python frames join the check once the interpreter is found
// (nd_replay_gen: every table is emptied then).
#define UNW_LOCAL_ONLY
#include "stacks/replay.h"
#include "runtime/module.h"
#include "runtime/shim.h"

#include "common/fmt.h"
#include "common/os.h"
#include "stacks/unwind.h"
#include "threads/threads.h"

#include <libunwind.h>
#include <unistd.h>
#include <string.h>

__thread nd_replay_tab_t *nd_replay_tab __attribute__((tls_model("initial-exec")));
int nd_replay_on = 1;

uint32_t nd_replay_gen;

static struct {
  int lock;
  nd_replay_tab_t *free; // tables of threads that ended
  nd_replay_tab_t *all;  // every table (atomic; never freed): their hits are summed
  uint64_t misses, recorded, refused; // atomic
} replay;

void nd_replay_invalidate(void) { __atomic_fetch_add(&nd_replay_gen, 1, __ATOMIC_RELEASE); }

void nd_replay_py_counts(uint64_t out[4]) {
  out[0] = out[1] = out[2] = out[3] = 0;
  for (nd_replay_tab_t *t = __atomic_load_n(&replay.all, __ATOMIC_ACQUIRE); t; t = t->next_all) {
    out[0] += __atomic_load_n(&t->py_stacks, __ATOMIC_RELAXED);
    out[1] += __atomic_load_n(&t->py_with, __ATOMIC_RELAXED);
    out[2] += __atomic_load_n(&t->py_frames, __ATOMIC_RELAXED);
    out[3] += __atomic_load_n(&t->py_dropped, __ATOMIC_RELAXED);
  }
}

void nd_replay_stats(nd_replay_stats_t *out) {
  out->hits = 0;
  out->native_hits = 0;
  for (nd_replay_tab_t *t = __atomic_load_n(&replay.all, __ATOMIC_ACQUIRE); t; t = t->next_all) {
    out->hits += __atomic_load_n(&t->hits, __ATOMIC_RELAXED);
    out->native_hits += __atomic_load_n(&t->native_hits, __ATOMIC_RELAXED);
  }
  out->misses = __atomic_load_n(&replay.misses, __ATOMIC_RELAXED);
  out->recorded = __atomic_load_n(&replay.recorded, __ATOMIC_RELAXED);
  out->refused = __atomic_load_n(&replay.refused, __ATOMIC_RELAXED);
}

// ---------------------------------------------------------------- tables

// Emptied: only the keys and what chooses a way say where an entry is.
static void empty(nd_replay_tab_t *t) {
  memset(t->key, 0, sizeof t->key);
  memset(t->next, 0, sizeof t->next);
  memset(t->seen, 0, sizeof t->seen);
}

static nd_replay_tab_t *table(void) {
  nd_replay_tab_t *t = nd_replay_tab;
  uint32_t gen = __atomic_load_n(&nd_replay_gen, __ATOMIC_ACQUIRE);
  if (t) {
    if (t->gen != gen) empty(t), t->gen = gen;
    return t;
  }
  nd_spin_lock(&replay.lock);
  t = replay.free;
  if (t) replay.free = t->next_free;
  nd_spin_unlock(&replay.lock);
  if (t) {
    empty(t);
  } else {
    t = nd_os_map(sizeof *t); // zero-filled; its entries' pages are touched as they are used
    if (!t) return NULL;
    nd_replay_tab_t *head = __atomic_load_n(&replay.all, __ATOMIC_RELAXED);
    do t->next_all = head;
    while (!__atomic_compare_exchange_n(&replay.all, &head, t, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
  }
  t->gen = gen;
  // A stack is recorded only where the capture's stack pointer and every slot lie in the
  // thread's own stack, so that a slot is read only in memory that stays mapped as long as the
  // thread lives (a coroutine's stack, which the program may free and map again, is never
  // recorded). Known from the thread's start (threads.h), never asked of libc here: this runs
  // inside a hook, whose caller may hold the thread's own lock (pthread_getattr_np's realloc).
  if (nd_thread_stack(&t->stk_lo, &t->stk_hi) != 0) nd_thread_unknown();
  return nd_replay_tab = t;
}

static void thread_exit(nd_tls_t *thr) {
  (void)thr;
  nd_replay_tab_t *t = nd_replay_tab;
  if (!t) return;
  nd_replay_tab = NULL;
  nd_spin_lock(&replay.lock);
  t->next_free = replay.free;
  replay.free = t;
  nd_spin_unlock(&replay.lock);
}

// ---------------------------------------------------------------- recording

// The slots of the stack the capture at sp unwound: a cursor walk from here finds the frame whose
// stack pointer is sp (the capturing function's), then each caller's return address with where
// it was saved, which must be frames[1..n) one for one. A frame whose size is not fixed (alloca,
// arrays of variable length, a realigned stack) finds its caller by its frame pointer, so that is
// checked too: in the slot it was saved in, or, where no frame from the capture's up saved it, in
// the register at the capture (rbp). A frame whose caller is found by another register, or by
// memory that is neither, is not told apart from one of a fixed size: GCC and Clang make none
// (hand-written assembly or a JIT's code with such unwind rules could). 0 and e filled, or -1.
static int walk(nd_replay_t *e, uintptr_t sp, uintptr_t rbp, const uintptr_t *frames, int n,
                uintptr_t hi) {
  unw_context_t uc;
  unw_cursor_t c;
  if (n - 1 > ND_REPLAY_FRAMES || unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0)
    return -1;
  unw_word_t v;
  int found = 0;
  for (int step = 0; step < 8; step++) { // the capturing function is a caller of this one
    if (unw_step(&c) <= 0) return -1;
    if (unw_get_reg(&c, UNW_REG_SP, &v) == 0 && v == sp) {
      found = 1;
      break;
    }
  }
  if (!found) return -1;
  // The capturing function's own frame is ndmem's, of a fixed size: its frame pointer, if it
  // has one, follows from sp; the frames above it are checked.
  (void)rbp;
  unw_word_t fsp = sp, fbp = 0;
  unw_save_loc_t bloc;
  int k = 0, nb = 0;
  e->rbp_reg = 0;
  for (int i = 1; i < n; i++) {
    if (unw_step(&c) <= 0 || unw_is_signal_frame(&c) > 0) return -1;
    unw_word_t ip, csp;
    unw_save_loc_t loc;
    if (unw_get_reg(&c, UNW_REG_IP, &ip) != 0 || ip != frames[i] ||
        unw_get_reg(&c, UNW_REG_SP, &csp) != 0)
      return -1;
    if (unw_get_save_loc(&c, UNW_X86_64_RIP, &loc) != 0 || loc.type != UNW_SLT_MEMORY) return -1;
    uintptr_t at = (uintptr_t)loc.u.addr;
    // A slot above the capture's stack pointer, in the thread's stack, holding the address now.
    if (at <= sp || at + sizeof(uintptr_t) > hi || at - sp > UINT32_MAX ||
        *(const uintptr_t *)at != ip)
      return -1;
    e->off[k] = (uint32_t)(at - sp);
    e->ra[k] = ip;
    k++;
    // The callee's frame pointer, wherever it points into the callee's own frame [fsp, csp):
    // a frame that finds its caller by it has it there (16 bytes below the caller's stack pointer
    // after push rbp; mov rsp, rbp, or elsewhere with other prologues), and one that uses the
    // register for something else and leaves it pointing into its frame is checked too (an extra
    // miss at worst, never a false replay). A frame realigned with a dynamic realignment pointer
    // (GCC's DRAP) keeps the caller's stack pointer just below its frame pointer: checked too.
    int fp = i > 1 && fbp >= fsp && fbp < csp;
    int drap = fp && fbp + 16 != csp && fbp >= fsp + 8 && *(const uintptr_t *)(fbp - 8) == csp;
    if (fp) {
      uintptr_t b = (uintptr_t)bloc.u.addr;
      if (bloc.type == UNW_SLT_MEMORY && b > sp) {
        if (nb + 2 > ND_REPLAY_FRAMES || b + sizeof(uintptr_t) > hi || b - sp > UINT32_MAX ||
            *(const uintptr_t *)b != fbp)
          return -1;
        e->boff[nb] = (uint32_t)(b - sp);
        e->bval[nb++] = fbp;
      } else {
        if (e->rbp_reg && e->rbp != fbp) return -1;
        e->rbp_reg = 1;
        e->rbp = fbp;
      }
      if (drap) { // a realigned frame: the caller's stack pointer saved below the frame pointer
        e->boff[nb] = (uint32_t)(fbp - 8 - sp);
        e->bval[nb++] = csp;
      }
    }
    fsp = csp;
    if (unw_get_reg(&c, UNW_X86_64_RBP, &fbp) != 0 || unw_get_save_loc(&c, UNW_X86_64_RBP, &bloc) != 0)
      return -1;
  }
  e->n = (uint16_t)k;
  e->nb = (uint8_t)nb;
  return 0;
}

// The site e stands for with the Python frames of trail (NULL or n -2: the process runs no
// interpreter; n -1: more records than an entry holds, so only the native frames are replayed).
static void python(nd_replay_t *e, void *site, const nd_py_trail_t *trail) {
  e->site = site;
  e->npy = -1;
  if (!trail || trail->n == -2) return;
  if (trail->n < 0) {
    e->npy = -2;
    return;
  }
  e->npy = (int16_t)trail->n;
  e->pyn = trail->frames;
  e->pydrop = trail->dropped;
  e->py_ts = trail->ts;
  e->py_end = trail->end;
  memcpy(e->py, trail->node, (size_t)trail->n * sizeof e->py[0]);
}

static int record(nd_replay_tab_t *t, uint32_t set, uintptr_t sp, uintptr_t rbp, uint32_t what,
                   void *site, const uintptr_t *frames, int n, const nd_py_trail_t *trail) {
  int w = 0;
  while (w < ND_REPLAY_WAYS && t->key[set][w]) w++;
  if (w == ND_REPLAY_WAYS) w = t->next[set]++ % ND_REPLAY_WAYS;
  nd_replay_t *e = &t->e[set][w];
  t->key[set][w] = 0; // not found while it is written
  int ok = -1;
  if (nd_unw_begin() == 0) {
    ok = walk(e, sp, rbp, frames, n, t->stk_hi);
    nd_unw_end();
  }
  if (ok != 0) goto refused;
  e->what = what;
  e->ip0 = frames[0];
  python(e, site, trail);
  t->key[set][w] = sp;
  __atomic_fetch_add(&replay.recorded, 1, __ATOMIC_RELAXED);
  return 0;
refused:
  __atomic_fetch_add(&replay.refused, 1, __ATOMIC_RELAXED);
  return -1;
}

// The native frames' identity for the candidates: their hash.
static uint64_t native_hash(const uintptr_t *frames, int n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
  for (int i = 0; i < n; i++) h = (h ^ frames[i]) * 0xff51afd7ed558ccdull, h ^= h >> 29;
  return h ? h : 1;
}

void nd_replay_note(uintptr_t sp, uintptr_t rbp, uint32_t what, void *site,
                    const uintptr_t *frames, int n, const nd_py_trail_t *trail,
                    nd_replay_t *native) {
  if (!native) __atomic_fetch_add(&replay.misses, 1, __ATOMIC_RELAXED); // unwound
  if (!ND_REPLAY || !nd_replay_on || !site || n < 1) return;
  nd_replay_tab_t *t = table();
  if (!t) return;
  if (native) { // the native frames were replayed: the entry now stands for these Python frames
    t->native_hits++;
    python(native, site, trail);
    return;
  }
  if (sp < t->stk_lo || sp >= t->stk_hi) return; // not on the thread's own stack
  uint32_t set = nd_replay_set(sp);
  uint64_t h = native_hash(frames, n);
  nd_replay_seen_t *s = t->seen[set];
  int i = 0;
  while (i < ND_REPLAY_SEEN && !(s[i].sp == sp && s[i].what == what && s[i].native == h)) i++;
  nd_replay_seen_t e = {sp, what, i < ND_REPLAY_SEEN ? s[i].times + 1 : 1, h};
  if (i == ND_REPLAY_SEEN) i--; // the least recent makes room
  memmove(&s[1], &s[0], (size_t)i * sizeof *s);
  if (e.times != ND_REPLAY_AFTER) { // not yet, or refused before (a count far past it)
    s[0] = e;
    return;
  }
  memmove(&s[0], &s[1], (ND_REPLAY_SEEN - 1) * sizeof *s); // recorded: no longer a candidate
  s[ND_REPLAY_SEEN - 1].sp = 0;
  if (record(t, set, sp, rbp, what, site, frames, n, trail) != 0) {
    // Not replayable: stays a candidate that never reaches its count, so the walk is not tried
    // again while it is remembered.
    memmove(&s[1], &s[0], (ND_REPLAY_SEEN - 1) * sizeof *s);
    s[0] = (nd_replay_seen_t){sp, what, UINT32_MAX / 2, h};
  }
}

// ---------------------------------------------------------------- module

// One line of the exit summary where stacks were captured: how many were replayed, and what
// libunwind's patches spared (stacks/unwind.c).
static void summary(int fd) {
  nd_replay_stats_t r;
  nd_replay_stats(&r);
  nd_unwind_stats_t u;
  nd_unwind_stats(&u);
  int stacks = r.hits || r.native_hits || r.misses;
  int masks = u.masks_skipped || u.masks_made || u.searches_recent || u.searches_walked ||
              u.searches_lockfree ||
              u.gated || u.forks_cut;
  if (!stacks && !masks) return;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_fmt(&b, "ndmem[%d]: ", (int)nd_os_getpid());
  if (stacks)
    nd_buf_fmt(&b, "stacks: %llu replayed, %llu with their native frames replayed, %llu unwound "
                   "(%llu recorded for replay, %llu not replayable)",
               (unsigned long long)r.hits, (unsigned long long)r.native_hits,
               (unsigned long long)r.misses, (unsigned long long)r.recorded,
               (unsigned long long)r.refused);
  nd_threads_stats_t th;
  nd_threads_stats(&th);
  if (stacks && th.unknown)
    nd_buf_fmt(&b, "; %llu threads of unknown stack (made without pthread_create: their stacks "
                   "unwound every time)%s",
               (unsigned long long)th.unknown, masks ? "; " : "");
  else if (stacks && masks)
    nd_buf_str(&b, "; ");
  if (masks)
    nd_buf_fmt(&b, "libunwind: %llu signal masks skipped, %llu made, %llu object searches answered "
                   "without the loader's lock, %llu by a recent object, %llu walked",
               (unsigned long long)u.masks_skipped, (unsigned long long)u.masks_made,
               (unsigned long long)u.searches_lockfree, (unsigned long long)u.searches_recent,
               (unsigned long long)u.searches_walked);
  if (u.gated || u.forks_cut)
    nd_buf_fmt(&b, "; fork: %llu stacks not captured while a fork was prepared, %llu forks made "
                   "while an unwind ran (the child captures none)",
               (unsigned long long)u.gated, (unsigned long long)u.forks_cut);
  nd_buf_line(&b, fd);
}

static void setup(char *const *envp) {
  (void)envp;
  nd_replay_on = nd_cfg.replay;
}

// The forking thread's table is the child's (the same stack); a table list cut by the fork loses
// a table.
static void atfork_child(nd_tls_t *t) { (void)t, replay.lock = 0; }

ND_MODULE(nd_replay_module) = {.name = "replay", .rank = 13, .order = 6, .setup = setup,
                               .atfork_child = atfork_child, .thread_exit = thread_exit,
                               .summary = summary};
