// SPDX-License-Identifier: MIT
// guard.c: guard mode (NDMEM_WS_GUARD=1, for debugging). A plan gets two arenas that alternate
// per cycle, and the arena of the cycle that ended is made inaccessible (blocks that escaped or
// outlived it excepted), so a use of a stale workspace pointer faults; the handler names the
// dead block and its cycle in ND4J's words ("uses leaked workspace pointer"), then re-raises.
#include "ws/space.h"

#include "common/fmt.h"
#include "common/os.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>

int nd_ws_guard;
static struct sigaction old_segv;

static void guard_protect(space_t *s, int which, int prot) {
  ws_inst_t *pi = s->learn.cur;
  char *a = (char *)(uintptr_t)pi->arena[which];
  if (!a) return;
  mprotect(a, pi->size, prot);
  if (prot != PROT_NONE) return;
  // Blocks that escaped or outlived the cycle stay valid: their pages stay accessible (a stale
  // pointer into a dead block that shares a page with one of them does not fault).
  long page = (long)nd_os_page_size();
  for (uint32_t e = 0; e < pi->plan.n; e++) {
    if (!pi->escaped[e] || pi->which[e] != which || !__atomic_load_n(&pi->live[e], __ATOMIC_ACQUIRE)) continue;
    uintptr_t lo = (uintptr_t)a + pi->plan.offset[e], hi = lo + pi->preqs[e].size;
    lo &= ~(uintptr_t)(page - 1);
    hi = (hi + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE);
  }
}

static void segv_handler(int sig, siginfo_t *si, void *uc) {
  uintptr_t addr = (uintptr_t)si->si_addr, lo;
  ws_inst_t *pi;
  int w;
  if (nd_ws_arena_find(addr, &pi, &w, &lo) == 0) {
    space_t *s = nd_ws_space_of(pi->learn);
    uint64_t off = addr - lo;
    // The dead block: of the entries whose range holds the address, the one served last in this
    // arena (its entry may have been served again since, in the other one).
    int64_t hit = -1;
    for (uint32_t e = 0; e < pi->plan.n; e++)
      if (pi->plan.offset[e] < WS_PLAN_TOO_BIG && off >= pi->plan.offset[e] &&
          off < pi->plan.offset[e] + pi->preqs[e].size && pi->born[2 * e + w] &&
          (hit < 0 || pi->born[2 * e + w] > pi->born[2 * hit + w]))
        hit = e;
    nd_buf_t b;
    nd_ws_say(&b, "ndmem: uses leaked workspace pointer from workspace [", s, "]: address ");
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
    nd_buf_u64(&b, s->learn.st.cycles + 1);
    nd_buf_str(&b, " (NDMEM_WS_GUARD=1 made that generation inaccessible)");
    nd_buf_line(&b, 2);
    // Re-raise with the default action: returning re-executes the faulting access.
    sigaction(SIGSEGV, &old_segv, NULL);
    if (old_segv.sa_handler == SIG_IGN) signal(SIGSEGV, SIG_DFL);
    return;
  }
  // Not ours: hand it to the handler that was there before.
  if (old_segv.sa_flags & SA_SIGINFO) {
    if (old_segv.sa_sigaction) old_segv.sa_sigaction(sig, si, uc);
    return;
  }
  if (old_segv.sa_handler == SIG_DFL || old_segv.sa_handler == SIG_IGN) {
    signal(SIGSEGV, SIG_DFL);
    return;
  }
  old_segv.sa_handler(sig);
}

void nd_ws_guard_setup(void) {
  nd_ws_guard = (int)nd_cfg.ws_guard;
  if (!nd_ws_guard) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = segv_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
}

// The cycle that ended served from the other arena than the next one (l->cur_which): that one
// becomes inaccessible, the next one usable again.
void nd_ws_guard_cycle(space_t *s) {
  guard_protect(s, s->learn.cur_which ^ 1, PROT_NONE);
  guard_protect(s, s->learn.cur_which, PROT_READ | PROT_WRITE);
}
