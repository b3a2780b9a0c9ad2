// SPDX-License-Identifier: MIT
// arena.c: the host workspaces' arenas. An arena is mapped once per plan (anonymous memory, or a
// file under NDMEM_WS_MMAP_DIR with location=mmap) and registered by address, so a free from any
// thread finds its instance; it counts towards NDMEM_MAX_BYTES whole. A plan whose arena would
// exceed maxBytes is shrunk to what fits (ws_plan_fit); relief unmaps idle arenas under a limit's
// pressure and the engine maps them again when next used.
#include "ws/space.h"

#include "common/fmt.h"
#include "common/os.h"
#include "limits/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_ARENAS 256

// Every arena mapped, by address (under nd_ws_lock; read without it). A slot released by relief
// reads lo == hi == 0 until it is reused.
static struct {
  uintptr_t lo, hi;
  ws_inst_t *inst;
  int which;
} arenas[MAX_ARENAS];
static int narenas;

// "ndmem: workspace [NAME]: an arena of SIZE would exceed maxBytes (NDMEM_MAX_BYTES); "
static void say_over(nd_buf_t *b, const space_t *s, uint64_t size) {
  nd_ws_say(b, "ndmem: workspace [", s, "]: an arena of ");
  nd_buf_bytes(b, (int64_t)size);
  nd_buf_str(b, " would exceed maxBytes (NDMEM_MAX_BYTES); ");
}

// Said once per space: the planned arena did not fit under maxBytes, and what was done instead.
static void say_fit(space_t *s, uint64_t want, uint64_t cut, uint32_t spilled, uint32_t n) {
  nd_buf_t b;
  say_over(&b, s, want);
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

// Under maxBytes an arena counts whole. One that does not fit beside what is tracked now (the
// cycle's temporaries are gone) is not refused outright, which sent the whole cycle to the heap
// and let glibc keep what it freed (a limit that raised resident memory): the plan shrinks to the
// largest arena that, with the heap's share of the cycle, stays under the limit (ws_plan_fit);
// the rest spills every cycle (counted), and the heap is trimmed at the cycle's frees as while
// learning. Guard mode's double arenas are refused as before (nd_ws_arena_new).
uint64_t nd_ws_fit(void *ctx, ws_learn_t *l, const ws_req_t *reqs, ws_plan_t *plan, uint64_t want) {
  space_t *s = ctx;
  uint64_t room = nd_limit_room_left();
  if (nd_ws_guard || want <= room) return want;
  uint64_t total = 0, cut = ws_plan_fit(reqs, plan, 4096, room, l->ops->mem, &total);
  if (cut == UINT64_MAX) cut = 0;
  uint32_t spilled = ws_plan_spill_past(plan, reqs, cut);
  s->heap_trims = 1;
  if (!s->limited++) say_fit(s, want, cut, spilled, plan->n);
  return cut;
}

uint64_t nd_ws_arena_new(void *ctx, ws_learn_t *l, ws_inst_t *pi, int which, uint64_t size) {
  space_t *s = ctx;
  char *p = NULL;
  if (!nd_limit_room(size)) { // an arena counts towards NDMEM_MAX_BYTES whole
    if (!s->limited++) {
      nd_buf_t b;
      say_over(&b, s, size);
      nd_buf_str(&b, "its allocations go to the heap");
      nd_buf_line(&b, 2);
    }
    return 0;
  }
  if (l->cfg.location == WS_LOC_MMAP) {
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
  if (!p) return 0;
  nd_spin_lock(&nd_ws_lock);
  int slot = 0; // a slot released by relief (lo == hi == 0), else a new one
  while (slot < narenas && (arenas[slot].lo || arenas[slot].hi)) slot++;
  if (slot < MAX_ARENAS) {
    arenas[slot].inst = pi;
    arenas[slot].which = which;
    __atomic_store_n(&arenas[slot].lo, (uintptr_t)p, __ATOMIC_RELEASE);
    __atomic_store_n(&arenas[slot].hi, (uintptr_t)p + size, __ATOMIC_RELEASE);
    if (slot == narenas) __atomic_store_n(&narenas, slot + 1, __ATOMIC_RELEASE);
    if ((uintptr_t)p < nd_ws_lo) __atomic_store_n(&nd_ws_lo, (uintptr_t)p, __ATOMIC_RELEASE);
    if ((uintptr_t)p + size > nd_ws_hi) __atomic_store_n(&nd_ws_hi, (uintptr_t)p + size, __ATOMIC_RELEASE);
    __atomic_fetch_add(&nd_ws_arena_total, (int64_t)size, __ATOMIC_RELAXED);
  } else {
    nd_os_unmap(p, size); // no slot to find it again by address: do without
    p = NULL;
  }
  nd_spin_unlock(&nd_ws_lock);
  return (uintptr_t)p;
}

// Only relief unmaps arenas (those without a live block), and a released slot reads lo == hi == 0
// until it is reused.
int nd_ws_arena_find(uintptr_t p, ws_inst_t **pi, int *which, uintptr_t *lo) {
  int n = __atomic_load_n(&narenas, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++)
    if (p >= arenas[i].lo && p < arenas[i].hi) {
      *pi = arenas[i].inst;
      *which = arenas[i].which;
      *lo = arenas[i].lo;
      return 0;
    }
  return -1;
}

// ---------------------------------------------------------------- relief (limits)

static int space_of_thread(ws_thread_t *w, space_t *s) {
  if (s == w->auto_space) return 1;
  for (space_t *n = w->named; n; n = n->next)
    if (n == s) return 1;
  return 0;
}

static int inst_idle(ws_inst_t *pi) {
  if (pi->bump) return pi->nb == 0; // under nd_ws_lock
  for (uint32_t e = 0; e < pi->plan.n; e++)
    if (__atomic_load_n(&pi->live[e], __ATOMIC_ACQUIRE)) return 0;
  return 1;
}

// Only this thread serves from its spaces, so an arena of its own with no live block stays
// without one while it is released; frees from other threads cannot name a block in it.
uint64_t nd_ws_relieve(void) {
  ws_thread_t *w = nd_tls.ws;
  if (!w || nd_ws_guard) return 0; // guard mode keeps its generations where they are
  struct { uintptr_t lo, hi; ws_inst_t *pi; int which; } gone[32];
  int n = 0;
  nd_spin_lock(&nd_ws_lock);
  for (int i = 0; i < narenas && n < 32; i++) {
    ws_inst_t *pi = arenas[i].inst;
    if (!arenas[i].hi || !space_of_thread(w, nd_ws_space_of(pi->learn)) || !inst_idle(pi)) continue;
    gone[n].lo = arenas[i].lo;
    gone[n].hi = arenas[i].hi;
    gone[n].pi = pi;
    gone[n].which = arenas[i].which;
    n++;
    __atomic_store_n(&arenas[i].hi, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&arenas[i].lo, 0, __ATOMIC_RELEASE);
  }
  nd_spin_unlock(&nd_ws_lock);
  uint64_t bytes = 0;
  for (int i = 0; i < n; i++) {
    uint64_t size = gone[i].hi - gone[i].lo;
    ws_inst_t *pi = gone[i].pi;
    ws_learn_t *l = pi->learn;
    nd_os_unmap((void *)gone[i].lo, size);
    pi->arena[gone[i].which] = 0;
    if (l->cur == pi) {
      l->st.arena_bytes -= size;
      if (pi->bump) l->cur = NULL; // the next cycle maps a new arena at the model's size
    }
    __atomic_fetch_sub(&nd_ws_arena_total, (int64_t)size, __ATOMIC_RELAXED);
    bytes += size;
  }
  return bytes;
}
