// SPDX-License-Identifier: MIT
// records.c: the reader's records (internal.h): each one validated (its fields in range, the
// records it refers to read before it) and folded into the latest state (trace_read.h): module
// map, interned stacks, sites and their floor history, blocks live at exit by stack and kind,
// workspaces, escapes, growth, limits, breaches and snapshots, devices, Python code objects, the
// timeline's points. Payloads are copied out with memcpy (they may be unaligned).
#include "read/internal.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- records

// The index of the stack a `tag` record names by `id` (into t->stacks), or -1 with t->err set:
// a record refers only to stacks written before it.
static long stack_of(nd_trace_t *t, uint64_t off, unsigned tag, uint32_t id) {
  long st = nd_map_get(&t->stack_ids, id);
  if (st < 0) nd_read_fail(t, off, "%s names unknown stack %u", nd_read_tag_names[tag], id);
  return st;
}

// A `tag` record's memory kind in range: 0, or -1 with t->err set.
static int check_kind(nd_trace_t *t, uint64_t off, unsigned tag, uint16_t kind) {
  if (kind < ND_TRACE_KINDS) return 0;
  return nd_read_fail(t, off, "%s memory kind %u out of range", nd_read_tag_names[tag], kind);
}

// A device a record names (`what`: its words before the number) one the trace can hold: 0, or -1
// with t->err set.
static int check_device(nd_trace_t *t, uint64_t off, const char *what, uint32_t device) {
  if (device < ND_TRACE_MAX_DEVICES) return 0;
  return nd_read_fail(t, off, "%s %u out of range", what, device);
}

static uint64_t module_hash(uint64_t base, uint64_t lo, uint64_t hi, const char *p, size_t n) {
  uint64_t h = nd_mix64(base ^ nd_mix64(lo ^ nd_mix64(hi)));
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
  return nd_mix64(h);
}

// A MODULE record: a module already known (same range, bias and path; ids are not compared, as
// nothing refers to them) only becomes the most recent again, so re-written maps cost no memory.
static int on_module(nd_trace_t *t, uint64_t off, const char *p, uint32_t size) {
  nd_rec_module_t m;
  memcpy(&m, p, sizeof m);
  if (m.path_len != size - sizeof m)
    return nd_read_fail(t, off, "MODULE path length %u does not match its record size %u",
                        m.path_len, size);
  if (m.lo > m.hi)
    return nd_read_fail(t, off, "MODULE range [0x%llx, 0x%llx) is inverted",
                        (unsigned long long)m.lo, (unsigned long long)m.hi);
  const char *path = p + sizeof m;
  size_t n = strnlen(path, m.path_len);
  uint64_t h = module_hash(m.base, m.lo, m.hi, path, n);
  if ((t->nmods + 1) * 2 > t->mod_slots_cap) { // rehash at load 1/2
    size_t ncap = t->mod_slots_cap ? t->mod_slots_cap * 2 : 64;
    uint32_t *ns = calloc(ncap, sizeof *ns);
    if (!ns) return nd_read_fail(t, off, "out of memory");
    for (size_t k = 0; k < t->nmods; k++) {
      nd_module_t *x = &t->mods[k];
      size_t i = module_hash(x->base, x->lo, x->hi, x->path, x->path_len) & (ncap - 1);
      while (ns[i]) i = (i + 1) & (ncap - 1);
      ns[i] = (uint32_t)k + 1;
    }
    free(t->mod_slots);
    t->mod_slots = ns;
    t->mod_slots_cap = ncap;
  }
  size_t mask = t->mod_slots_cap - 1, i = h & mask;
  for (; t->mod_slots[i]; i = (i + 1) & mask) {
    nd_module_t *x = &t->mods[t->mod_slots[i] - 1];
    if (x->base == m.base && x->lo == m.lo && x->hi == m.hi && x->path_len == n &&
        !memcmp(x->path, path, n)) {
      x->seq = t->records;
      x->id = m.id;
      return 0;
    }
  }
  if (nd_read_grow(&t->mods, &t->mods_cap, t->nmods + 1, sizeof *t->mods))
    return nd_read_fail(t, off, "out of memory");
  char *copy = malloc(n + 1);
  if (!copy) return nd_read_fail(t, off, "out of memory");
  memcpy(copy, path, n);
  copy[n] = 0;
  t->mods[t->nmods] = (nd_module_t){.base = m.base, .lo = m.lo, .hi = m.hi, .seq = t->records,
                                    .id = m.id, .path_len = (uint32_t)n, .path = copy};
  t->mod_slots[i] = (uint32_t)++t->nmods;
  return 0;
}

static int on_stack(nd_trace_t *t, uint64_t off, const char *p, uint32_t size) {
  nd_rec_stack_t s;
  memcpy(&s, p, sizeof s);
  uint32_t n = (size - (uint32_t)sizeof s) / 8;
  if (s.depth != n)
    return nd_read_fail(t, off, "STACK depth %u does not match its record size %u", s.depth, size);
  // Version 7: a Python frame names a PYCODE record written before the stack, so that the
  // renderers never meet a frame they cannot name.
  bool python = false;
  for (uint32_t i = 0; t->has.python && i < n; i++) {
    uint64_t ip;
    memcpy(&ip, p + sizeof s + (size_t)i * 8, sizeof ip);
    if (!nd_is_pyframe(ip)) continue;
    uint64_t code = nd_pyframe_code(ip); // 39 bits: ids are 32
    if (code > UINT32_MAX || nd_map_get(&t->pycode_ids, code) < 0)
      return nd_read_fail(t, off, "STACK names unknown Python code %llu", (unsigned long long)code);
    python = true;
  }
  long known = nd_map_get(&t->stack_ids, s.id);
  if (known >= 0) { // written once by the shim; an identical repeat is harmless
    const nd_stack_t *k = &t->stacks[known];
    if (k->depth != n || (n && memcmp(t->frames + k->first, p + sizeof s, (size_t)n * 8)))
      return nd_read_fail(t, off, "STACK %u redefined with different frames", s.id);
    return 0;
  }
  if (t->nstacks >= UINT32_MAX - 1 ||
      nd_read_grow(&t->stacks, &t->stacks_cap, t->nstacks + 1, sizeof *t->stacks) ||
      nd_read_grow(&t->frames, &t->frames_cap, t->nframes + n, sizeof *t->frames) ||
      nd_map_put(&t->stack_ids, s.id, (uint32_t)t->nstacks))
    return nd_read_fail(t, off, "out of memory");
  if (n) memcpy(t->frames + t->nframes, p + sizeof s, (size_t)n * 8);
  t->stacks[t->nstacks++] = (nd_stack_t){.id = s.id, .depth = n, .first = t->nframes};
  t->nframes += n;
  t->py_stacks += python;
  return 0;
}

// ---------------------------------------------------------------- Python (version 7)

static char *dup_str(const char *p, uint32_t len) {
  size_t n = strnlen(p, len);
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, p, n);
    s[n] = 0;
  }
  return s;
}

// A PYCODE record: the struct, then qualname_len and filename_len bytes. Ids are the writer's
// (from 0, but a reader must not rely on that: they are mapped as stack ids are). A code object
// is written once; a second record of an id is an error even when it is identical, as a stack
// already read may name the first.
static int on_pycode(nd_trace_t *t, uint64_t off, const char *p, uint32_t size) {
  nd_rec_pycode_t c;
  memcpy(&c, p, sizeof c);
  if (c.qualname_len > ND_PYCODE_MAX_STR)
    return nd_read_fail(t, off, "PYCODE qualname length %u above the maximum %u", c.qualname_len,
                ND_PYCODE_MAX_STR);
  if (c.filename_len > ND_PYCODE_MAX_STR)
    return nd_read_fail(t, off, "PYCODE filename length %u above the maximum %u", c.filename_len,
                ND_PYCODE_MAX_STR);
  if (sizeof c + c.qualname_len + c.filename_len != size) // both <= 1024: no overflow
    return nd_read_fail(t, off, "PYCODE string lengths %u + %u do not match its record size %u",
                c.qualname_len, c.filename_len, size);
  if (nd_map_get(&t->pycode_ids, c.id) >= 0)
    return nd_read_fail(t, off, "PYCODE %u written twice", c.id);
  if (t->npycodes >= UINT32_MAX - 1 ||
      nd_read_grow(&t->pycodes, &t->pycodes_cap, t->npycodes + 1, sizeof *t->pycodes))
    return nd_read_fail(t, off, "out of memory");
  char *q = dup_str(p + sizeof c, c.qualname_len);
  char *f = dup_str(p + sizeof c + c.qualname_len, c.filename_len);
  if (!q || !f || nd_map_put(&t->pycode_ids, c.id, (uint32_t)t->npycodes)) {
    free(q);
    free(f);
    return nd_read_fail(t, off, "out of memory");
  }
  t->pycodes[t->npycodes++] =
      (nd_pycode_t){.id = c.id, .firstlineno = c.firstlineno, .qualname = q, .filename = f};
  return 0;
}

static int on_python(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_python_t py;
  memcpy(&py, p, sizeof py);
  if (py.state > (t->has.py_depth ? ND_PY_LAYOUT_DIFFERS : ND_PY_OFF))
    return nd_read_fail(t, off, "PYTHON state %u out of range", py.state);
  t->python = py; // the latest wins
  t->have_python = true;
  return 0;
}

const nd_pycode_t *nd_trace_pycode(const nd_trace_t *t, uint64_t ip) {
  if (!nd_trace_is_pyframe(t, ip)) return NULL;
  long i = nd_map_get(&t->pycode_ids, nd_pyframe_code(ip)); // > UINT32_MAX: never a key
  return i < 0 ? NULL : &t->pycodes[i];
}

static uint64_t site_key(uint32_t stack_id, uint16_t kind) {
  return (uint64_t)stack_id << 16 | kind;
}

// Folds a SITE record into its site's history (nd_site_hist_t).
static void site_history(const nd_trace_t *t, nd_site_hist_t *h, const nd_rec_site_t *s) {
  uint64_t live = h->live, win = h->win, cycle = h->cycle; // the previous record's
  uint64_t now = s->alloc_bytes > s->free_bytes ? s->alloc_bytes - s->free_bytes : 0;
  // A rise: its floor rose, or, at a site that never freed, its live bytes did (each record of
  // such a site is a window it allocated in). After one in a window without a rise, a pause.
  if ((h->records && s->floor_bytes > h->floor) || (!s->frees && now > live)) {
    uint64_t pause = s->cycle > h->rise_cycle ? s->cycle - h->rise_cycle : 0;
    if (h->rise_cycle && t->flushes > h->rise_at && pause > h->max_pause) h->max_pause = pause;
    h->rise_cycle = s->cycle;
    h->rise_at = t->flushes + 1;
  }
  if (h->records) { // the previous latest record's move now belongs to the run
    if (h->move > 0) h->rises_any++;
    if (h->move < 0) h->drops_any++;
    if (h->cycle >= 1 && h->move > 0) h->rises++;
    if (h->cycle >= 1 && h->move < 0) h->drops++;
    h->move = s->floor_bytes > h->floor ? 1 : s->floor_bytes < h->floor ? -1 : 0;
    // A rise happened in a window after the previous record: a site is written only where it
    // changed, so at the latest in the window just before this record's (seq - 1).
    if (h->move > 0 && !h->rising) h->rise_seq = t->flushes, h->rising = true;
    if (h->move < 0) h->rising = false;
    if (h->move > 0) {
      h->tail_drops = 0;
    } else if (h->move < 0 && !h->tail_drops++) {
      h->tail_floor = h->floor;
      h->tail_cycle = s->cycle;
      h->held_allocs = h->allocs; // the record before the falls: what was held until them
      h->held_alloc_bytes = h->alloc_bytes;
      h->held_frees = h->frees;
      h->held_live = h->live;
      h->held_cycle = h->cycle;
      h->held_quiet = t->flushes + 1 > h->seq + 1;
    }
    h->prev_floor = h->floor;
    h->prev_cycle = h->cycle;
    h->prev_live = h->live;
    h->prev_seq = h->seq;
  }
  if (!h->records) h->first_floor = s->floor_bytes;
  h->records++;
  h->seq = t->flushes + 1;
  if (h->records == 1) h->rise_seq = h->seq;
  h->floor = s->floor_bytes;
  h->cycle = s->cycle;
  h->win = t->steady_windows;
  h->allocs = s->allocs;
  h->alloc_bytes = s->alloc_bytes;
  h->frees = s->frees;
  h->live = now;
  if (s->cycle >= 1 && !h->steady) {
    h->steady = true;
    h->steady_floor = s->floor_bytes;
    h->steady_cycle = s->cycle;
    h->steady_rec = h->records;
    h->steady_allocs = s->allocs;
    h->steady_alloc_bytes = s->alloc_bytes;
    h->steady_frees = s->frees;
  }
  if (s->floor_bytes > h->peak_floor || h->records == 1) {
    h->peak_floor = s->floor_bytes;
    h->peak_cycle = s->cycle;
    h->peak_rec = h->records;
    h->peak_seq = h->seq;
    // Its live bytes stood at the new floor at the previous record already (they fell no lower
    // since): flat from there, in the windows after its flush.
    bool since = h->records > 1 && live == s->floor_bytes;
    h->peak_since = since ? cycle : s->cycle;
    h->peak_since_win = since ? win + 1 : h->win;
  }
}

static int on_site(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_site_t s;
  memcpy(&s, p, sizeof s);
  if (check_kind(t, off, ND_REC_SITE, s.kind)) return -1;
  uint64_t key = site_key(s.stack_id, s.kind);
  long i = nd_map_get(&t->site_keys, key);
  if (i >= 0) { // a site's stack is known: it was checked when the site first appeared
    t->sites[i].rec = s;
    site_history(t, &t->sites[i].h, &s);
    return 0;
  }
  long st = stack_of(t, off, ND_REC_SITE, s.stack_id);
  if (st < 0) return -1;
  if (t->nsites >= UINT32_MAX - 1 ||
      nd_read_grow(&t->sites, &t->sites_cap, t->nsites + 1, sizeof *t->sites) ||
      nd_map_put(&t->site_keys, key, (uint32_t)t->nsites))
    return nd_read_fail(t, off, "out of memory");
  t->sites[t->nsites] = (nd_site_t){.stack = (uint32_t)st, .rec = s};
  site_history(t, &t->sites[t->nsites++].h, &s);
  return 0;
}

static void saw_time(nd_trace_t *t, uint64_t ns);

static int on_peak(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_peak_t m;
  memcpy(&m, p, sizeof m);
  if (m.group >= ND_TRACE_PEAK_GROUPS)
    return nd_read_fail(t, off, "PEAK record for an unknown group of kinds (%u)", m.group);
  if (!m.epoch || m.bytes > m.max)
    return nd_read_fail(t, off, "PEAK record with %s", m.epoch ? "more bytes than its maximum"
                                                               : "epoch 0");
  if (m.epoch < t->peak[m.group].epoch)
    return nd_read_fail(t, off, "PEAK record going back (epoch %u after %u)", m.epoch,
                        t->peak[m.group].epoch);
  t->peak[m.group] = m;
  saw_time(t, m.mono_ns);
  return 0;
}

static int on_site_peak(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_site_peak_t sp;
  memcpy(&sp, p, sizeof sp);
  if (check_kind(t, off, ND_REC_SITE_PEAK, sp.kind)) return -1;
  long i = nd_map_get(&t->site_keys, site_key(sp.stack_id, sp.kind));
  if (i < 0) return nd_read_fail(t, off, "SITE_PEAK record before its site's SITE record");
  if (!sp.epoch) return nd_read_fail(t, off, "SITE_PEAK record with epoch 0");
  t->sites[i].at_peak_epoch = sp.epoch;
  t->sites[i].at_peak = sp.live_bytes;
  return 0;
}

long nd_trace_site_of(const nd_trace_t *t, uint32_t stack_id, uint16_t kind) {
  return nd_map_get((nd_map_t *)&t->site_keys, site_key(stack_id, kind));
}

static int on_block(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_block_t b;
  memcpy(&b, p, sizeof b);
  if (check_kind(t, off, ND_REC_BLOCK, b.kind)) return -1;
  // A fork child's block born at or before its trace's start (the fork) is its parent's: the
  // child inherited it (the shim dates the child's own births after the fork). Kept apart.
  bool inherited =
      t->hdr.origin == ND_ORIGIN_FORK && b.mono_ns && b.mono_ns <= t->hdr.start_mono_ns;
  // Version 14: the reachability scan's class (0: not scanned), one entry per class.
  unsigned reach = t->has.reach ? nd_block_reach(b.flags) : ND_REACH_NONE;
  if (reach > ND_REACH_MAX)
    return nd_read_fail(t, off, "BLOCK with an unknown reachability class (%u)", reach);
  uint64_t key = site_key(b.stack_id, b.kind) | (uint64_t)inherited << 63 | (uint64_t)reach << 60;
  long i = nd_map_get(&t->leak_keys, key);
  if (i < 0) {
    long st = stack_of(t, off, ND_REC_BLOCK, b.stack_id);
    if (st < 0) return -1;
    if (t->nleaks >= UINT32_MAX - 1 ||
        nd_read_grow(&t->leaks, &t->leaks_cap, t->nleaks + 1, sizeof *t->leaks) ||
        nd_map_put(&t->leak_keys, key, (uint32_t)t->nleaks))
      return nd_read_fail(t, off, "out of memory");
    i = (long)t->nleaks++;
    t->leaks[i] = (nd_leak_t){.stack = (uint32_t)st, .kind = b.kind, .inherited = inherited,
                              .reach = (uint8_t)reach};
  }
  nd_leak_t *l = &t->leaks[i];
  bool first = !l->exact_blocks && !l->sampled_blocks;
  if (first || b.mono_ns < l->born_first_ns) l->born_first_ns = b.mono_ns;
  if (first || b.mono_ns > l->born_last_ns) l->born_last_ns = b.mono_ns;
  if (first || b.cycle > l->born_last_cycle) l->born_last_cycle = b.cycle;
  // The steady state: from the first closed cycle, by the block's birth cycle (exact, whatever
  // the resolution of its birth time); every block in a job without cycles.
  if (!t->flush.steady_ns || b.cycle >= 1) {
    if (!l->steady_blocks || b.mono_ns < l->steady_first_ns) l->steady_first_ns = b.mono_ns;
    if (!l->steady_blocks || b.cycle < l->steady_first_cycle) l->steady_first_cycle = b.cycle;
    if (!l->steady_blocks || b.cycle > l->steady_last_cycle) l->steady_last_cycle = b.cycle;
    l->steady_blocks++;
    l->steady_bytes += b.flags & ND_SITE_SAMPLED ? b.weight : b.size;
  }
  if (b.flags & ND_SITE_SAMPLED) {
    l->est_bytes += b.weight;
    l->sampled_blocks++;
    l->sampled_bytes += b.size;
    l->est_blocks += b.size ? (double)b.weight / (double)b.size : 1.0;
  } else {
    l->exact_bytes += b.size;
    l->exact_blocks++;
  }
  t->block_records++;
  return 0;
}

// A bounded list of records (escapes, growth, breaches): *slot is the next element of *arr, or
// NULL when `max` are kept already (then *dropped counts it). 0, or -1 out of memory.
static int keep(nd_trace_t *t, uint64_t off, void **arr, size_t *n, size_t *cap, size_t size,
                size_t max, uint64_t *dropped, void **slot) {
  *slot = NULL;
  if (*n >= max) {
    (*dropped)++;
    return 0;
  }
  if (nd_read_grow(arr, cap, *n + 1, size)) return nd_read_fail(t, off, "out of memory");
  *slot = (char *)*arr + (*n)++ * size;
  return 0;
}

// A workspace name must end within its 32 bytes; what follows the NUL is zeroed, so that names
// compare (and hash) by their bytes.
static int check_name(nd_trace_t *t, uint64_t off, const char *what, char *name, size_t n) {
  size_t len = strnlen(name, n);
  if (len == n) return nd_read_fail(t, off, "%s workspace name is not NUL-terminated", what);
  memset(name + len, 0, n - len);
  return 0;
}

static uint64_t ws_hash(uint32_t tid, const char *name, size_t n) {
  uint64_t h = nd_mix64(tid);
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
  return nd_mix64(h);
}

// A WORKSPACE record: the latest of each (tid, name) wins. The map is keyed by a hash of the
// pair; a key taken by another pair is re-hashed until a free or matching one is found, which
// gives every pair one fixed chain of keys, so lookups are exact.
static int on_workspace(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_workspace_t w;
  memcpy(&w, p, sizeof w);
  if (check_name(t, off, "WORKSPACE", w.name, sizeof w.name)) return -1;
  // Version 10: the largest fall across one trim is part of the falls across all of them.
  if (w.learn_trim_max_bytes > w.learn_trim_bytes || (w.learn_trim_bytes && !w.learn_trims))
    return nd_read_fail(t, off,
                        "WORKSPACE record whose trims gave back %llu B in %llu trims, at most "
                        "%llu B at once",
                        (unsigned long long)w.learn_trim_bytes, (unsigned long long)w.learn_trims,
                        (unsigned long long)w.learn_trim_max_bytes);
  // WORKSPACE records come at every flush, after its COUNTERS: the first with a hit dates, to a
  // flush, when arenas began to serve (the resident points before it are the heap's alone).
  if (w.hits && !t->ws_served_ns) t->ws_served_ns = t->last_ns ? t->last_ns : 1;
  uint64_t key = ws_hash(w.tid, w.name, sizeof w.name);
  for (size_t tries = 0;; tries++) { // a chain longer than the table can only be a cycle
    long i = nd_map_get(&t->ws_keys, key);
    if (i < 0) break;
    if (tries > t->nws) return nd_read_fail(t, off, "WORKSPACE table cannot place this workspace");
    if (t->ws[i].tid == w.tid && !memcmp(t->ws[i].name, w.name, sizeof w.name)) {
      t->ws[i] = w;
      return 0;
    }
    key = nd_mix64(key + 1);
  }
  if (t->nws >= UINT32_MAX - 1 || nd_read_grow(&t->ws, &t->ws_cap, t->nws + 1, sizeof *t->ws) ||
      nd_map_put(&t->ws_keys, key, (uint32_t)t->nws))
    return nd_read_fail(t, off, "out of memory");
  t->ws[t->nws++] = w;
  return 0;
}

// A WS_ESCAPE record: kept (up to ND_TRACE_MAX_ESCAPES) with its stack unresolved; see
// resolve_escapes.
static int on_ws_escape(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_ws_escape_t e;
  memcpy(&e, p, sizeof e);
  if (check_name(t, off, "WS_ESCAPE", e.name, sizeof e.name)) return -1;
  nd_ws_escape_t *slot;
  if (keep(t, off, (void **)&t->escapes, &t->nescapes, &t->escapes_cap, sizeof *slot,
           ND_TRACE_MAX_ESCAPES, &t->escapes_dropped, (void **)&slot))
    return -1;
  if (slot) *slot = (nd_ws_escape_t){.rec = e, .stack = UINT32_MAX};
  return 0;
}

// After reading: an escape's STACK record may come after it, or never (the writer lost it, or the
// trace was cut short); such an escape keeps stack UINT32_MAX and prints its frames as unknown.
static void resolve_escapes(nd_trace_t *t) {
  for (size_t i = 0; i < t->nescapes; i++) {
    nd_ws_escape_t *e = &t->escapes[i];
    long st = e->rec.stack_id == UINT32_MAX ? -1 : nd_map_get(&t->stack_ids, e->rec.stack_id);
    e->stack = st < 0 ? UINT32_MAX : (uint32_t)st;
  }
}

static void saw_time(nd_trace_t *t, uint64_t ns) {
  if (ns > t->last_ns) t->last_ns = ns;
}

// A GROWTH record (version 5): kept (up to ND_TRACE_MAX_GROWTH). The writer puts it after the
// SITE record of its site, so its stack is known.
static int on_growth(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_growth_t g;
  memcpy(&g, p, sizeof g);
  if (check_kind(t, off, ND_REC_GROWTH, g.kind)) return -1;
  if (g.floor_bytes < g.base_bytes || g.cycle < g.base_cycle)
    return nd_read_fail(t, off, "GROWTH record that does not grow");
  long st = stack_of(t, off, ND_REC_GROWTH, g.stack_id);
  if (st < 0) return -1;
  saw_time(t, g.mono_ns);
  nd_growth_t *slot;
  if (keep(t, off, (void **)&t->growth, &t->ngrowth, &t->growth_cap, sizeof *slot,
           ND_TRACE_MAX_GROWTH, &t->growth_dropped, (void **)&slot))
    return -1;
  if (slot) *slot = (nd_growth_t){.rec = g, .stack = (uint32_t)st};
  return 0;
}

// ---------------------------------------------------------------- the timeline, limits (version 3)

// The timeline's thinning (internal.h): on_counters and nd_trace_site_series keep the same points.
size_t nd_read_thin_step(nd_read_thin_t th, size_t cap, void (*keep_even)(void *arg, size_t n),
                         void *arg) {
  uint64_t k = (*th.seen)++;
  if (!*th.stride) *th.stride = 1;
  if (*th.extra) --*th.npoints; // the previous latest, off the stride: this one replaces it
  if (*th.npoints == cap) {
    keep_even(arg, *th.npoints);
    *th.npoints = (*th.npoints + 1) / 2;
    *th.stride *= 2;
  }
  *th.extra = k % *th.stride != 0;
  return (*th.npoints)++;
}

static void series_keep_even(void *arg, size_t n) {
  nd_point_t *v = arg;
  for (size_t i = 0; 2 * i < n; i++) v[i] = v[2 * i];
}

// A COUNTERS record: the latest counters, and a point of the timeline (ND_TRACE_MAX_POINTS).
static int on_counters(nd_trace_t *t, uint64_t off, const char *p) {
  memcpy(&t->counters, p, sizeof t->counters);
  t->have_counters = true;
  saw_time(t, t->counters.mono_ns);
  // room for one more first: the step below adds it
  if (nd_read_grow(&t->series, &t->series_cap, t->npoints + 1, sizeof *t->series))
    return nd_read_fail(t, off, "out of memory");
  nd_read_thin_t th = {&t->series_seen, &t->series_stride, &t->series_extra, &t->npoints};
  nd_point_t *pt =
      &t->series[nd_read_thin_step(th, ND_TRACE_MAX_POINTS, series_keep_even, t->series)];
  pt->mono_ns = t->counters.mono_ns;
  pt->cycle = t->flush.cycles;
  for (int i = 0; i < ND_TRACE_KINDS; i++) pt->live[i] = t->counters.kind[i].live_bytes;
  pt->resident = t->have_resident ? (int64_t)t->resident.anon_bytes : -1;
  // The allocator's free bytes that are surely resident: less those a trim may have given back.
  pt->alloc_free = t->have_resident && t->resident.alloc_ns
                       ? (int64_t)(t->resident.alloc_free_bytes - t->resident.alloc_trimmed_bytes)
                       : -1;
  pt->alloc_trimmed = pt->alloc_free >= 0 ? (int64_t)t->resident.alloc_trimmed_bytes : -1;
  pt->alloc_top = pt->alloc_free >= 0 ? (int64_t)t->resident.alloc_top_bytes : -1;
  pt->alloc_ns = pt->alloc_free >= 0 ? t->resident.alloc_ns : 0;
  pt->rss = t->have_rss ? (int64_t)t->rss.now.rss : -1;
  pt->untouched = t->have_rss ? (int64_t)t->rss.now.maps_untouched_bytes : -1;
  t->series_open = true;
  return 0;
}

// One peak of anonymous resident memory, over every reading the trace holds: the flushes'
// (RESIDENT), the limit checks' (LIMITS: they read far more often, at allocations and on their
// poll, and so see peaks between two flushes), a physical breach's and a snapshot's. The
// resident line and maxPhysicalBytes' peak are this one figure (`peak resident`).
static void saw_resident(nd_trace_t *t, uint64_t v) {
  if (!t->have_resident_peak || v > t->resident_peak) t->resident_peak = v;
  t->have_resident_peak = true;
}

// The kernel's figures (version 18): VmRSS is its three parts' sum (the kernel adds them up for
// the line), the peak reading holds the highest VmRSS, and no peak is below a reading.
static int check_parts(nd_trace_t *t, uint64_t off, const nd_rss_parts_t *p, const char *which) {
  if (!p->mono_ns) return 0;
  if (p->anon > p->rss || p->file > p->rss - p->anon || p->shmem != p->rss - p->anon - p->file)
    return nd_read_fail(t, off, "RSS record whose %s parts do not add up to its VmRSS", which);
  if (p->maps_touched_bytes > UINT64_MAX / 4 || p->heap_bytes > UINT64_MAX / 4 ||
      p->maps_untouched_bytes > UINT64_MAX / 4 || p->alloc_free_bytes > UINT64_MAX / 4 ||
      p->ws_idle_bytes > UINT64_MAX / 4 || p->self_bytes > UINT64_MAX / 4)
    return nd_read_fail(t, off, "RSS record with an impossible %s part", which);
  return 0;
}

static int on_rss(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_rss_t r;
  memcpy(&r, p, sizeof r);
  if (!r.now.mono_ns) return nd_read_fail(t, off, "RSS record without a reading");
  if (check_parts(t, off, &r.now, "current") || check_parts(t, off, &r.at_peak, "peak"))
    return -1;
  if (r.at_peak.rss < r.now.rss)
    return nd_read_fail(t, off, "RSS record whose peak reading is below its current one");
  // No order is checked between ru_maxrss, VmHWM and the readings: the kernel keeps its RSS
  // counters per CPU and reads them exactly for /proc's lines but not for ru_maxrss and the
  // high-water mark it keeps at an unmap, so each may stand a counter batch below another.
  saw_time(t, r.now.mono_ns);
  t->rss = r;
  t->have_rss = true;
  return 0;
}

static int on_site_untouched(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_site_untouched_t r;
  memcpy(&r, p, sizeof r);
  if (r.kind >= ND_TRACE_KINDS)
    return nd_read_fail(t, off, "SITE_UNTOUCHED kind %u out of range", r.kind);
  long i = nd_trace_site_of(t, r.stack_id, r.kind);
  if (i < 0) {
    t->untouched_unplaced++;
    return 0;
  }
  t->sites[i].untouched = r.untouched_bytes;
  if (r.untouched_bytes) t->sites[i].untouched_last = r.untouched_bytes;
  return 0;
}

static int on_limits(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_limits_t l;
  memcpy(&l, p, sizeof l);
  if (l.action > ND_ON_LIMIT_ABORT)
    return nd_read_fail(t, off, "LIMITS action %u out of range", l.action);
  t->limits = l; // unknown flag bits are ignored, as SITE flags are
  t->have_limits = true;
  if (l.physical_reads) saw_resident(t, l.peak_physical); // the limit checks' own readings
  return 0;
}

static int on_breach(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_breach_t b;
  memcpy(&b, p, sizeof b);
  int device = b.limit == ND_LIMIT_DEVICE && t->has.devices;
  if (b.limit >= ND_LIMIT_COUNT && !device)
    return nd_read_fail(t, off, "BREACH limit %u out of range", b.limit);
  if (b.action > (device && t->has.device_ws ? ND_ON_LIMIT_HOST : ND_ON_LIMIT_ABORT))
    return nd_read_fail(t, off, "BREACH action %u out of range", b.action);
  if (b.fn >= (device ? ND_CUDA_FN_USED : ND_TRACE_FNS))
    return nd_read_fail(t, off, "BREACH function %u out of range", b.fn);
  if (device && check_device(t, off, "BREACH device", b.device)) return -1;
  long st = -1;
  if (b.flags & ND_BREACH_STACK) {
    st = stack_of(t, off, ND_REC_BREACH, b.stack_id);
    if (st < 0) return -1;
  }
  if ((b.flags & ND_BREACH_RETRY_LOOP) && (b.action != ND_ON_LIMIT_ABORT || !b.retries))
    return nd_read_fail(t, off, "BREACH marks a retry loop but did not stop the process");
  // Why it could be refused (version 16): always said, but for a device's request served from
  // host memory (NDMEM_ON_DEVICE_LIMIT=host serves whoever asks); before, every request over a
  // limit could be refused.
  if (t->has.admissions ? !(b.flags & ND_BREACH_WHY) && b.action != ND_ON_LIMIT_HOST
                        : (b.flags & ND_BREACH_WHY) != 0)
    return nd_read_fail(t, off, t->has.admissions ? "BREACH without why the request could be refused"
                                                  : "BREACH flags %#x unknown before version 16",
                        b.flags);
  saw_time(t, b.mono_ns);
  nd_breach_t *slot;
  if (keep(t, off, (void **)&t->breaches, &t->nbreaches, &t->breaches_cap, sizeof *slot,
           ND_TRACE_MAX_BREACHES, &t->breaches_dropped, (void **)&slot))
    return -1;
  if (slot) *slot = (nd_breach_t){.rec = b, .stack = st};
  if (b.limit == ND_LIMIT_PHYSICAL) saw_resident(t, b.value);
  return 0;
}

// ---------------------------------------------------------------- admissions (version 16)

static const char *limit_words(unsigned limit) {
  return limit == ND_LIMIT_BYTES ? "maxBytes" : limit == ND_LIMIT_PHYSICAL ? "maxPhysicalBytes"
                                                                          : "a device's limit";
}

// The limit an ADMITTED or ADMIT_SITE record names, checked: its slot, or -1 with t->err set.
static int admit_slot(nd_trace_t *t, uint64_t off, unsigned tag, unsigned limit, unsigned device) {
  if (limit > ND_LIMIT_DEVICE)
    return nd_read_fail(t, off, "%s limit %u out of range", nd_read_tag_names[tag], limit);
  if (limit == ND_LIMIT_DEVICE) {
    if (check_device(t, off, tag == ND_REC_ADMITTED ? "ADMITTED device" : "ADMIT_SITE device",
                     device))
      return -1;
  } else if (device) {
    return nd_read_fail(t, off, "%s names device %u for a host limit", nd_read_tag_names[tag],
                        device);
  }
  return nd_admit_slot(limit, device);
}

static int on_admitted(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_admitted_t r;
  memcpy(&r, p, sizeof r);
  int s = admit_slot(t, off, ND_REC_ADMITTED, r.limit, r.device);
  if (s < 0) return -1;
  t->admitted[s] = r;
  t->have_admitted |= 1u << s;
  return 0;
}

static int on_admit_site(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_admit_site_t r;
  memcpy(&r, p, sizeof r);
  if (admit_slot(t, off, ND_REC_ADMIT_SITE, r.limit, r.device) < 0) return -1;
  if (check_kind(t, off, ND_REC_ADMIT_SITE, r.kind)) return -1;
  // a host limit's requests are heap blocks or mappings, a device's its own memory kind
  if (r.limit == ND_LIMIT_DEVICE ? r.kind != ND_TRACE_KINDS - ND_TRACE_MAX_DEVICES + r.device
                                 : r.kind > 1)
    return nd_read_fail(t, off, "ADMIT_SITE memory kind %u for %s", r.kind,
                        limit_words(r.limit));
  if (r.flags & ~(unsigned)ND_ADMIT_STACK)
    return nd_read_fail(t, off, "ADMIT_SITE flags %#x unknown", r.flags);
  if (!r.admitted || r.first_ns > r.last_ns)
    return nd_read_fail(t, off, "ADMIT_SITE record whose counts contradict each other");
  long st = -1;
  if (r.flags & ND_ADMIT_STACK) {
    st = stack_of(t, off, ND_REC_ADMIT_SITE, r.stack_id);
    if (st < 0) return -1;
  }
  saw_time(t, r.last_ns);
  for (size_t i = 0; i < t->nadmit_sites; i++) { // few sites: found by a scan
    nd_admit_site_t *e = &t->admit_sites[i];
    if (e->rec.limit == r.limit && e->rec.device == r.device && e->rec.ip == r.ip) {
      e->rec = r;
      if (st >= 0) e->stack = st;
      return 0;
    }
  }
  nd_admit_site_t *slot;
  if (keep(t, off, (void **)&t->admit_sites, &t->nadmit_sites, &t->admit_sites_cap, sizeof *slot,
           ND_TRACE_MAX_ADMIT_SITES, &t->admit_sites_dropped, (void **)&slot))
    return -1;
  if (slot) *slot = (nd_admit_site_t){.rec = r, .stack = st};
  return 0;
}

// ---------------------------------------------------------------- ends' causes (version 16)

// The last refused request (latest wins): its stack was written before it.
static int on_refusal(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_refusal_t r;
  memcpy(&r, p, sizeof r);
  if (r.limit > ND_LIMIT_DEVICE)
    return nd_read_fail(t, off, "REFUSAL of an unknown limit (%u)", r.limit);
  if (r.limit == ND_LIMIT_DEVICE && check_device(t, off, "REFUSAL device", r.device)) return -1;
  if (r.fn >= (r.limit == ND_LIMIT_DEVICE ? ND_CUDA_FN_USED : ND_TRACE_FNS))
    return nd_read_fail(t, off, "REFUSAL of an unknown function (%u)", r.fn);
  if (!r.refusals) return nd_read_fail(t, off, "REFUSAL counting no refusal");
  long st = -1;
  if (r.flags & ND_REFUSAL_STACK) {
    st = stack_of(t, off, ND_REC_REFUSAL, r.stack_id);
    if (st < 0) return -1;
  }
  t->refusal = r;
  t->refusal_stack = st;
  t->have_refusal = true;
  saw_time(t, r.mono_ns);
  return 0;
}

// An exec: about to be made (the latest such is the trace's end unless its failure follows), or
// failed (the process went on). The program's path follows the record.
static int on_exec(nd_trace_t *t, uint64_t off, const char *p, uint32_t size) {
  nd_rec_exec_t e;
  memcpy(&e, p, sizeof e);
  if (e.path_len > ND_EXEC_PATH_MAX || size != sizeof e + e.path_len)
    return nd_read_fail(t, off, "EXEC record of %u bytes with a path of %u", size, e.path_len);
  if (e.follow > ND_EXEC_FOLLOW_MAX || e.fn > ND_EXEC_FN_MAX)
    return nd_read_fail(t, off, "EXEC record with an unknown %s (%u)",
                        e.follow > ND_EXEC_FOLLOW_MAX ? "reason" : "function",
                        e.follow > ND_EXEC_FOLLOW_MAX ? e.follow : e.fn);
  saw_time(t, e.mono_ns);
  if (e.err) {
    t->exec_failures++;
    t->have_exec = false;
    return 0;
  }
  t->exec = e;
  memcpy(t->exec_path, p + sizeof e, e.path_len); // read up to its first NUL, as a MODULE's path
  t->exec_path[e.path_len] = 0;
  t->have_exec = true;
  return 0;
}

// ---------------------------------------------------------------- device memory (version 6)

static int on_device(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_device_t d;
  memcpy(&d, p, sizeof d);
  if (check_device(t, off, "DEVICE", d.device)) return -1;
  t->devices[d.device] = d; // the latest wins; unknown flag bits are ignored
  t->have_device |= 1u << d.device;
  return 0;
}

// ---------------------------------------------------------------- version 11

static int on_device_ws(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_device_ws_t w;
  memcpy(&w, p, sizeof w);
  if (check_device(t, off, "DEVICE_WS device", w.device)) return -1;
  if (w.mode > 4 || w.sync > 1 || w.streams > 2 || w.learning > 2 || w.allocation > 1 ||
      w.spill > 2 || w.reset > 1)
    return nd_read_fail(t, off, "DEVICE_WS record with a mode or policy out of range");
  if (w.hit_bytes < w.hits || w.frees > w.hits || w.arena_frees > w.arena_allocs ||
      w.deviations > w.spills)
    return nd_read_fail(t, off, "DEVICE_WS record whose counts contradict each other");
  t->device_ws[w.device] = w; // the latest wins
  t->have_device_ws |= 1u << w.device;
  return 0;
}

static int on_device_spill(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_device_spill_t r;
  memcpy(&r, p, sizeof r);
  if (check_device(t, off, "DEVICE_SPILL device", r.device)) return -1;
  if (r.frees > r.allocs || r.live_bytes < 0 || r.live_bytes > r.peak_bytes ||
      (uint64_t)r.peak_bytes > r.alloc_bytes || r.over_limit + r.device_full != r.allocs)
    return nd_read_fail(t, off, "DEVICE_SPILL record whose counts contradict each other");
  if (r.stack_id == ND_SPILL_TOTAL) {
    t->spill_total[r.device] = r;
    t->have_spill |= 1u << r.device;
    return 0;
  }
  long st = stack_of(t, off, ND_REC_DEVICE_SPILL, r.stack_id);
  if (st < 0) return -1;
  for (size_t i = 0; i < t->nspills; i++) // few sites spill: found by a scan
    if (t->spills[i].rec.device == r.device && t->spills[i].rec.stack_id == r.stack_id) {
      t->spills[i].rec = r;
      return 0;
    }
  nd_spill_site_t *slot;
  if (keep(t, off, (void **)&t->spills, &t->nspills, &t->spills_cap, sizeof *slot,
           ND_TRACE_MAX_SPILL_SITES, &t->spills_dropped, (void **)&slot))
    return -1;
  if (slot) *slot = (nd_spill_site_t){.rec = r, .stack = st};
  return 0;
}

static int on_cuda(nd_trace_t *t, const char *p) {
  memcpy(&t->cuda, p, sizeof t->cuda);
  t->have_cuda = true;
  return 0;
}

// The slot of the seq-th SNAPSHOT record (from 1): the first, or the ring slot of the oldest of
// the latest ones. A slot's site buffer is reused, so snapshots cost at most
// (1 + ND_TRACE_SNAP_LAST) buffers of ND_TRACE_MAX_SNAP_SITES sites whatever their number.
static nd_snapshot_t *snap_slot(nd_trace_t *t, uint64_t seq) {
  return &t->snap[seq == 1 ? 0 : 1 + (seq - 2) % ND_TRACE_SNAP_LAST];
}

static int on_snapshot(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_snapshot_t r;
  memcpy(&r, p, sizeof r);
  if (r.reason > ND_SNAP_BREACH)
    return nd_read_fail(t, off, "SNAPSHOT reason %u out of range", r.reason);
  saw_time(t, r.mono_ns);
  uint64_t seq = ++t->snap_records;
  nd_snapshot_t *s = snap_slot(t, seq);
  s->rec = r;
  s->seq = seq;
  s->read = 0;
  s->nsites = 0;
  t->snap_open = r.sites ? s : NULL;
  if (r.physical) saw_resident(t, r.physical); // 0: no reading yet
  return 0;
}

// A SNAP_SITE record: nd_read_check has made sure that a snapshot is open.
static int on_snap_site(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_snap_site_t x;
  memcpy(&x, p, sizeof x);
  if (check_kind(t, off, ND_REC_SNAP_SITE, x.kind)) return -1;
  long st = stack_of(t, off, ND_REC_SNAP_SITE, x.stack_id);
  if (st < 0) return -1;
  nd_snapshot_t *s = t->snap_open;
  if (s->nsites < ND_TRACE_MAX_SNAP_SITES) {
    if (nd_read_grow(&s->sites, &s->sites_cap, s->nsites + 1, sizeof *s->sites))
      return nd_read_fail(t, off, "out of memory");
    s->sites[s->nsites++] = (nd_snap_site_t){.stack = (uint32_t)st, .rec = x};
  }
  if (++s->read == s->rec.sites) t->snap_open = NULL;
  return 0;
}

// A snapshot's sites follow it without any other record in between: a SNAP_SITE record needs an
// open snapshot, and any other record needs none. Checked from the header, before the payload.
int nd_read_check_snap_run(nd_trace_t *t, uint64_t off, const nd_rec_t *r) {
  const nd_snapshot_t *s = t->snap_open;
  if (r->tag != ND_REC_SNAP_SITE) {
    if (!s) return 0;
    return nd_read_fail(t, off, "%s record where SNAP_SITE %u of %u was expected",
                        nd_read_tag_names[r->tag], s->read + 1, s->rec.sites);
  }
  if (s) return 0;
  if (t->prev_tag == ND_REC_SNAPSHOT || t->prev_tag == ND_REC_SNAP_SITE) {
    const nd_snapshot_t *last = snap_slot(t, t->snap_records);
    return nd_read_fail(t, off, "SNAP_SITE record beyond the %u %s its SNAPSHOT announced",
                last->rec.sites, last->rec.sites == 1 ? "site" : "sites");
  }
  return nd_read_fail(t, off, "SNAP_SITE record without a SNAPSHOT before it");
}

static int cmp_snap_site(const void *a, const void *b) {
  const nd_rec_snap_site_t *x = &((const nd_snap_site_t *)a)->rec;
  const nd_rec_snap_site_t *y = &((const nd_snap_site_t *)b)->rec;
  if (x->live_bytes != y->live_bytes) return x->live_bytes > y->live_bytes ? -1 : 1;
  if (x->stack_id != y->stack_id) return x->stack_id < y->stack_id ? -1 : 1;
  return (x->kind > y->kind) - (x->kind < y->kind);
}

// After reading: the kept snapshots in trace order, each one's sites by live bytes.
static void order_snapshots(nd_trace_t *t) {
  uint64_t n = t->snap_records;
  t->nsnaps = 0;
  if (n) t->snaps[t->nsnaps++] = snap_slot(t, 1);
  for (uint64_t seq = n > 1 + ND_TRACE_SNAP_LAST ? n - ND_TRACE_SNAP_LAST + 1 : 2; seq <= n; seq++)
    t->snaps[t->nsnaps++] = snap_slot(t, seq);
  for (size_t i = 0; i < t->nsnaps; i++) {
    nd_snapshot_t *s = &t->snap[t->snaps[i] - t->snap];
    if (s->nsites) qsort(s->sites, s->nsites, sizeof *s->sites, cmp_snap_site);
  }
}

int nd_read_record(nd_trace_t *t, uint64_t off, const nd_rec_t *r, const char *p) {
  char full[ND_READ_LONGEST];
  p = nd_read_lengthen(r, p, full);
  switch (r->tag) {
  case ND_REC_MODULE: return on_module(t, off, p, r->size);
  case ND_REC_STACK: return on_stack(t, off, p, r->size);
  case ND_REC_SITE: return on_site(t, off, p);
  case ND_REC_COUNTERS: return on_counters(t, off, p);
  case ND_REC_BLOCK: return on_block(t, off, p);
  case ND_REC_WORKSPACE: return on_workspace(t, off, p);
  case ND_REC_WS_ESCAPE: return on_ws_escape(t, off, p);
  case ND_REC_LIMITS: return on_limits(t, off, p);
  case ND_REC_BREACH: return on_breach(t, off, p);
  case ND_REC_SNAPSHOT: return on_snapshot(t, off, p);
  case ND_REC_SNAP_SITE: return on_snap_site(t, off, p);
  case ND_REC_REFUSAL: return on_refusal(t, off, p);
  case ND_REC_EXEC: return on_exec(t, off, p, r->size);
  case ND_REC_EXIT:
    memcpy(&t->exit, p, sizeof t->exit);
    if (t->exit.how > ND_EXIT_LIMIT_ABORT)
      return nd_read_fail(t, off, "EXIT record with an unknown way of ending (%u)", t->exit.how);
    if (!t->has.end_causes) t->exit.flags = 0; // reserved before version 16
    t->have_exit = true;
    saw_time(t, t->exit.mono_ns);
    return 0;
  case ND_REC_SCAN:
    memcpy(&t->scan, p, sizeof t->scan);
    if (t->scan.status > ND_SCAN_STATUS_MAX)
      return nd_read_fail(t, off, "SCAN record with an unknown status (%u)", t->scan.status);
    if (t->scan.unheld > t->scan.threads)
      return nd_read_fail(t, off, "SCAN record with more threads not held than threads");
    t->have_scan = true;
    saw_time(t, t->scan.mono_ns);
    return 0;
  case ND_REC_GROWTH: return on_growth(t, off, p);
  case ND_REC_RSS: return on_rss(t, off, p);
  case ND_REC_SITE_UNTOUCHED: return on_site_untouched(t, off, p);
  case ND_REC_PEAK: return on_peak(t, off, p);
  case ND_REC_SITE_PEAK: return on_site_peak(t, off, p);
  case ND_REC_ADMITTED: return on_admitted(t, off, p);
  case ND_REC_ADMIT_SITE: return on_admit_site(t, off, p);
  case ND_REC_DEVICE: return on_device(t, off, p);
  case ND_REC_CUDA: return on_cuda(t, p);
  case ND_REC_DEVICE_WS: return on_device_ws(t, off, p);
  case ND_REC_DEVICE_SPILL: return on_device_spill(t, off, p);
  case ND_REC_PYCODE: return on_pycode(t, off, p, r->size);
  case ND_REC_PYTHON: return on_python(t, off, p);
  case ND_REC_RESIDENT: // the latest reading; the next COUNTERS' point carries it
    memcpy(&t->resident, p, sizeof t->resident);
    if (t->resident.allocator > ND_ALLOCATOR_MAX)
      return nd_read_fail(t, off, "RESIDENT record with an unknown allocator (%u)",
                          t->resident.allocator);
    if (t->resident.alloc_ns && t->resident.allocator == ND_ALLOCATOR_UNKNOWN)
      return nd_read_fail(t, off, "RESIDENT record with an unknown allocator's reading");
    if (t->resident.alloc_free_bytes > t->resident.alloc_system_bytes)
      return nd_read_fail(t, off, "RESIDENT record with more free bytes than the allocator holds");
    if (t->resident.alloc_top_bytes > t->resident.alloc_free_bytes)
      return nd_read_fail(t, off, "RESIDENT record with a top chunk larger than the free bytes");
    if (t->resident.alloc_trimmed_bytes > t->resident.alloc_free_bytes)
      return nd_read_fail(t, off, "RESIDENT record with more trimmed bytes than free bytes");
    saw_time(t, t->resident.mono_ns);
    saw_resident(t, t->resident.anon_bytes);
    t->have_resident = true;
    return 0;
  case ND_REC_FLUSH: {
    uint64_t before = t->flush.cycles; // 0 before the first
    memcpy(&t->flush, p, sizeof t->flush);
    bool moved = t->flush.cycles != before;
    if (!t->flush.cycles || moved || ++t->win_still >= ND_WINDOW_FLUSHES) { // windows closed
      if (t->flush.cycles) {
        t->steady_windows++;
        t->stalled_windows += !moved;
        t->steady_window_ns = t->flush.mono_ns;
      }
      t->win_still = 0;
    }
    t->have_flush = true;
    t->flushes++;
    if (t->series_open) t->series[t->npoints - 1].cycle = t->flush.cycles;
    t->series_open = false;
    saw_time(t, t->flush.mono_ns);
    return 0;
  }
  default: // ND_REC_END
    memcpy(&t->end, p, sizeof t->end);
    if (t->end.blocks != t->block_records)
      return nd_read_fail(t, off, "END counts %llu blocks but %llu BLOCK records precede it",
                  (unsigned long long)t->end.blocks, (unsigned long long)t->block_records);
    t->ended = true;
    saw_time(t, t->end.mono_ns);
    return 0;
  }
}

void nd_read_after(nd_trace_t *t) {
  resolve_escapes(t);
  order_snapshots(t); // a snapshot still open keeps the sites read: the file ended in its run
}
