// SPDX-License-Identifier: MIT
// stats.c: what is said about the host workspaces: the cycle clock, blocks that outlived their
// cycle (escapes are said and queued for the trace), ndmem_ws_stats, the totals the metrics and
// the summary use, the summary's lines, and the trace's WORKSPACE and WS_ESCAPE records.
#include "ws/space.h"

#include "account/sites.h"
#include "common/fmt.h"
#include "common/os.h"
#include "common/trace_format.h"
#include "runtime/allocstat.h"

#include <string.h>

static nd_rec_ws_escape_t pending[256]; // escapes not yet written to the trace (under nd_ws_lock)
static unsigned npending;

// A block still live after its cycle ended (once per block): kept valid, its bytes pinned while it
// lives. An automatic workspace counts it as outlived and says nothing: the cycle was ndmem's
// guess. A declared cycle's block is an escape: counted, said once on stderr (with its allocation
// stack's id when it is tracked) and queued for the trace. Takes nd_ws_lock: call without it.
void nd_ws_outlived(void *ctx, ws_learn_t *l, uint64_t addr, uint64_t size, uint64_t born) {
  space_t *s = ctx;
  s->pinned_bytes += size;
  if (l->automatic) {
    s->outlived++;
    return;
  }
  s->escapes++;
  nd_block_t blk;
  uint32_t stack = nd_blocks_find(addr, &blk) ? blk.site->id : UINT32_MAX;
  nd_buf_t b;
  nd_ws_say(&b, "ndmem: leaked workspace pointer from workspace [", s, "]: a block of ");
  nd_buf_u64(&b, size);
  nd_buf_str(&b, " B allocated in cycle ");
  nd_buf_u64(&b, born);
  nd_buf_str(&b, " is still live in cycle ");
  nd_buf_u64(&b, l->st.cycles + 1);
  nd_buf_str(&b, "; it stays valid and is no longer routed");
  if (stack != UINT32_MAX) {
    nd_buf_str(&b, " (allocation stack ");
    nd_buf_u64(&b, stack);
    nd_buf_str(&b, ": ndmemreport shows its file:line)");
  }
  nd_buf_line(&b, 2);
  nd_spin_lock(&nd_ws_lock);
  if (npending < sizeof pending / sizeof pending[0]) {
    nd_rec_ws_escape_t *r = &pending[npending++];
    memset(r, 0, sizeof *r);
    r->tid = (uint32_t)s->tid;
    r->stack_id = stack;
    memcpy(r->name, s->name, sizeof r->name);
    r->addr = addr;
    r->size = size;
    r->cycle_born = born;
    r->cycle_seen = l->st.cycles + 1;
  } // else: more escapes than the buffer holds between two flushes; the count stays exact
  nd_spin_unlock(&nd_ws_lock);
}

// ndmem_ws_stats's view of a space.
static void space_stats(const space_t *s, ndmem_ws_stats_t *o) {
  const ws_learn_stats_t *st = &s->learn.st;
  memset(o, 0, sizeof *o);
  memcpy(o->name, s->name, sizeof o->name);
  o->cycles = st->cycles;
  o->learned_cycles = st->learned_cycles;
  o->arena_bytes = st->arena_bytes;
  o->plan_peak_bytes = st->plan_peak_bytes;
  o->plan_sum_bytes = st->plan_sum_bytes;
  o->hits = st->hits;
  o->spills = st->spills;
  o->spill_bytes = st->spill_bytes;
  o->escapes = s->escapes;
  o->relearns = st->relearns;
  o->deviations = st->deviations;
  o->pinned_bytes = s->pinned_bytes;
}

int nd_ws_stats(void *out, int max) {
  ndmem_ws_stats_t *o = out;
  ws_thread_t *w = nd_tls.ws;
  if (!w) return 0;
  int n = 0;
  if (w->auto_space) {
    if (n < max) space_stats(w->auto_space, &o[n]);
    n++;
  }
  for (space_t *s = w->named; s; s = s->next) {
    if (n < max) space_stats(s, &o[n]);
    n++;
  }
  return n;
}

// Every space ever made is on nd_ws_spaces (append-only, never freed), so the walk takes no lock; its
// owner thread updates the counters with plain stores, so a sum read meanwhile may lag by one.
void nd_ws_totals(nd_ws_totals_t *out) {
  memset(out, 0, sizeof *out);
  for (space_t *s = __atomic_load_n(&nd_ws_spaces, __ATOMIC_ACQUIRE); s; s = s->all) {
    out->hits += s->learn.st.hits;
    out->spills += s->learn.st.spills;
    out->spill_bytes += s->learn.st.spill_bytes;
    out->arena_bytes += s->learn.st.arena_bytes;
    out->hit_bytes += s->learn.st.hit_bytes;
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
    // Arenas all released by relief near a limit: said so, not "arenas of 0 B".
    nd_buf_str(&b, w.arena_bytes ? ") from arenas of " : ") from arenas released since");
    if (w.arena_bytes) nd_buf_ubytes(&b, w.arena_bytes);
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
  for (space_t *s = __atomic_load_n(&nd_ws_spaces, __ATOMIC_ACQUIRE); s; s = s->all) {
    nd_rec_workspace_t r;
    memset(&r, 0, sizeof r);
    r.tid = (uint32_t)s->tid;
    memcpy(r.name, s->name, sizeof r.name);
    r.name[sizeof r.name - 1] = 0;
    r.cycles = s->learn.st.cycles;
    r.learned_cycles = s->learn.st.learned_cycles;
    r.arena_bytes = s->learn.st.arena_bytes;
    r.plan_peak_bytes = s->learn.st.plan_peak_bytes;
    r.plan_sum_bytes = s->learn.st.plan_sum_bytes;
    r.hits = s->learn.st.hits;
    r.spills = s->learn.st.spills;
    r.spill_bytes = s->learn.st.spill_bytes;
    r.escapes = s->escapes;
    r.relearns = s->learn.st.relearns;
    r.deviations = s->learn.st.deviations;
    r.pinned_bytes = s->pinned_bytes;
    r.outlived = s->outlived;
    r.hit_bytes = s->learn.st.hit_bytes;
    r.learn_trims = s->trims;
    r.learn_trim_bytes = s->trim_bytes;
    r.learn_trim_max_bytes = s->trim_max;
    r.learn_held_max_bytes = s->held_max;
    r.learn_held_reads = s->held_reads;
    r.plan_trims = s->plan_trims;
    r.plan_trim_bytes = s->plan_trim_bytes;
    rec(ctx, ND_REC_WORKSPACE, &r, sizeof r);
  }
  nd_rec_ws_escape_t copy[sizeof pending / sizeof pending[0]];
  nd_spin_lock(&nd_ws_lock);
  unsigned n = npending;
  memcpy(copy, pending, n * sizeof copy[0]);
  npending = 0;
  nd_spin_unlock(&nd_ws_lock);
  for (unsigned i = 0; i < n; i++) rec(ctx, ND_REC_WS_ESCAPE, &copy[i], sizeof copy[i]);
}
