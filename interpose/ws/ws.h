// SPDX-License-Identifier: MIT
// ws.h: workspaces in the shim: routing a thread's learned cyclic allocations into planned
// arenas (the engine, in workspace/, learns the cycles and decides offsets; this room owns the
// memory, the threads' spaces, escapes and guard mode: ws.c, arena.c, trim.c, policy.c, guard.c,
// stats.c, sharing space.h).
#ifndef ND_WS_H
#define ND_WS_H

#include <stddef.h>
#include <stdint.h>

struct nd_tls;

extern size_t nd_ws_min;          // routed allocation size; SIZE_MAX when workspaces are off
extern uintptr_t nd_ws_lo, nd_ws_hi; // bounds of every arena ever mapped (atomic)

#define ND_WS_FAIL ((void *)1) // spill policy "fail": the allocation must fail with ENOMEM

void nd_ws_setup(void);
void nd_ws_thread_exit(struct nd_tls *t); // the thread ends: its state may serve the next one
// A routed allocation (req >= nd_ws_min) on a COUNT thread. Returns the block from an arena,
// ND_WS_FAIL, or NULL: then the caller allocates normally and calls nd_ws_external(t, p) so a
// learning cycle can record it.
void *nd_ws_alloc(struct nd_tls *t, size_t req, size_t align, uintptr_t ra, uint64_t *usable);
void nd_ws_external(struct nd_tls *t, void *p);
static inline int nd_ws_owns(const void *p) {
  uintptr_t a = (uintptr_t)p;
  return a >= __atomic_load_n(&nd_ws_lo, __ATOMIC_RELAXED) &&
         a < __atomic_load_n(&nd_ws_hi, __ATOMIC_RELAXED);
}
// Frees an arena block (any thread): 1 and its usable size; 0 when p is inside an arena but not
// a live block (dropped, with a message); -1 when p is not in any arena.
int nd_ws_free(void *p, uint64_t *usable);
uint64_t nd_ws_usable(const void *p); // 0 if p is not an arena block
extern int nd_ws_recording;           // some workspace records a learning cycle (atomic)
void nd_ws_free_external(void *p);    // a heap block of routed size is freed: learning sees it
void nd_ws_note_free(uint64_t bytes); // this thread freed a routed-size block (either kind)
void nd_ws_heap_freed(uint64_t bytes); // ... and it went back to the allocator (bounded trims)
void nd_ws_cycle_begin(const char *name); // NULL: the thread's default marked workspace
void nd_ws_cycle_end(void);
int nd_ws_configure(const char *name, const char *options);
struct ws_config;
// One key=value of a workspace policy list, shared with the device workspaces: 1 applied, 0
// unknown key, -1 bad value. And the next item of such a list (its length; *p moves past it).
int nd_ws_option(struct ws_config *c, const char *key, size_t keylen, const char *val);
size_t nd_ws_next_item(const char **p, char *item, size_t cap);
int nd_ws_stats(void *out, int max);
void nd_ws_atfork_prepare(void);
void nd_ws_atfork_parent(void);
void nd_ws_atfork_child(void);
// Relief for the limits (the ws module's relieve): unmaps the calling thread's arenas that hold
// no live block (a planned workspace keeps its plan and maps its arena again when next used).
// Returns the bytes released.
uint64_t nd_ws_relieve(void);
typedef void (*nd_ws_record_fn)(void *ctx, uint16_t tag, const void *payload, uint32_t size);
void nd_ws_write_records(nd_ws_record_fn rec, void *ctx); // for the trace writer, at each flush
// Totals over every thread's workspaces (the metrics file, the summary): allocations served from
// arenas and their bytes, routed ones served externally, the arenas' planned bytes, and ndmem's
// measured trims while they learned (count, resident memory's fall across them, the largest).
typedef struct nd_ws_totals {
  uint64_t hits, spills, spill_bytes, arena_bytes;
  uint64_t hit_bytes, trims, trim_bytes, trim_max;
} nd_ws_totals_t;
void nd_ws_totals(nd_ws_totals_t *out);
// The summary's lines about what workspaces did to resident memory (nd_print_summary), when they
// served anything or their learning trims gave back enough to matter.
void nd_ws_summary(int fd);

#endif
