// SPDX-License-Identifier: MIT
// trace_read.c: the streaming trace reader (see trace_read.h). One fixed buffer of
// ND_BUF_SIZE bytes holds at least one whole record; records are validated before they are
// used (tag, size for the tag, internal lengths, references to earlier records), payloads are
// copied out with memcpy (they may be unaligned), and all arithmetic on values read from the file
// is unsigned or range-checked, so a garbled trace can only produce an error or odd numbers.
#include "read/trace_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef ND_HAVE_ZSTD
#include <zstd.h>
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the trace is little-endian; this reader reads it in host order"
#endif

#define ND_BUF_SIZE (4u << 20) // > ND_TRACE_MAX_RECORD + sizeof(nd_rec_t)
_Static_assert(ND_BUF_SIZE >= ND_TRACE_MAX_RECORD + sizeof(nd_rec_t), "buffer holds a record");

static const char *const tag_names[ND_REC_TAG_MAX] = {
    "?",   "MODULE",    "STACK",     "SITE",   "COUNTERS", "BLOCK",    "FLUSH",
    "END", "WORKSPACE", "WS_ESCAPE", "LIMITS", "BREACH",   "SNAPSHOT", "SNAP_SITE", "EXIT",
    "GROWTH", "DEVICE", "CUDA", "PYCODE", "PYTHON", "RESIDENT", "DEVICE_WS", "DEVICE_SPILL", "SCAN"};
_Static_assert(ND_REC_TAG_MAX == 24, "a name for every record tag");

static int fail(nd_trace_t *t, uint64_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->err, sizeof t->err, fmt, ap);
  va_end(ap);
  t->err_off = off;
  return -1;
}

// ---------------------------------------------------------------- growable arrays and maps

// Grows *p (elements of `size` bytes, capacity *cap) to hold `need` elements. 0 or -1 (ENOMEM).
static int grow(void *p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 16;
  while (n < need) {
    if (n > SIZE_MAX / 2 / size) return -1;
    n *= 2;
  }
  void *q = realloc(*(void **)p, n * size);
  if (!q) return -1;
  *(void **)p = q;
  *cap = n;
  return 0;
}

static uint64_t mix64(uint64_t x) { // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Index of `key`, or -1.
static long map_get(const nd_map_t *m, uint64_t key) {
  if (!m->cap) return -1;
  size_t mask = m->cap - 1;
  for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
    if (!m->vals[i]) return -1;
    if (m->keys[i] == key) return (long)m->vals[i] - 1;
  }
}

static int map_put(nd_map_t *m, uint64_t key, uint32_t idx) {
  if ((m->len + 1) * 4 > m->cap * 3) { // keep the load factor under 3/4
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    uint64_t *nk = malloc(ncap * sizeof *nk);
    uint32_t *nv = calloc(ncap, sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      return -1;
    }
    for (size_t j = 0; j < m->cap; j++) {
      if (!m->vals[j]) continue;
      size_t i = mix64(m->keys[j]) & (ncap - 1);
      while (nv[i]) i = (i + 1) & (ncap - 1);
      nk[i] = m->keys[j];
      nv[i] = m->vals[j];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
  }
  size_t mask = m->cap - 1, i = mix64(key) & mask;
  while (m->vals[i]) i = (i + 1) & mask;
  m->keys[i] = key;
  m->vals[i] = idx + 1;
  m->len++;
  return 0;
}

static void map_free(nd_map_t *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

// ---------------------------------------------------------------- records

static uint64_t module_hash(uint64_t base, uint64_t lo, uint64_t hi, const char *p, size_t n) {
  uint64_t h = mix64(base ^ mix64(lo ^ mix64(hi)));
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
  return mix64(h);
}

// A MODULE record: a module already known (same range, bias and path; ids are not compared, as
// nothing refers to them) only becomes the most recent again, so re-written maps cost no memory.
static int on_module(nd_trace_t *t, uint64_t off, const char *p, uint32_t size) {
  nd_rec_module_t m;
  memcpy(&m, p, sizeof m);
  if (m.path_len != size - sizeof m)
    return fail(t, off, "MODULE path length %u does not match its record size %u", m.path_len,
                size);
  if (m.lo > m.hi)
    return fail(t, off, "MODULE range [0x%llx, 0x%llx) is inverted", (unsigned long long)m.lo,
                (unsigned long long)m.hi);
  const char *path = p + sizeof m;
  size_t n = strnlen(path, m.path_len);
  uint64_t h = module_hash(m.base, m.lo, m.hi, path, n);
  if ((t->nmods + 1) * 2 > t->mod_slots_cap) { // rehash at load 1/2
    size_t ncap = t->mod_slots_cap ? t->mod_slots_cap * 2 : 64;
    uint32_t *ns = calloc(ncap, sizeof *ns);
    if (!ns) return fail(t, off, "out of memory");
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
  if (grow(&t->mods, &t->mods_cap, t->nmods + 1, sizeof *t->mods))
    return fail(t, off, "out of memory");
  char *copy = malloc(n + 1);
  if (!copy) return fail(t, off, "out of memory");
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
    return fail(t, off, "STACK depth %u does not match its record size %u", s.depth, size);
  // Version 7: a Python frame names a PYCODE record written before the stack, so that the
  // renderers never meet a frame they cannot name.
  bool python = false;
  for (uint32_t i = 0; t->has.python && i < n; i++) {
    uint64_t ip;
    memcpy(&ip, p + sizeof s + (size_t)i * 8, sizeof ip);
    if (!nd_is_pyframe(ip)) continue;
    uint64_t code = nd_pyframe_code(ip); // 39 bits: ids are 32
    if (code > UINT32_MAX || map_get(&t->pycode_ids, code) < 0)
      return fail(t, off, "STACK names unknown Python code %llu", (unsigned long long)code);
    python = true;
  }
  long known = map_get(&t->stack_ids, s.id);
  if (known >= 0) { // written once by the shim; an identical repeat is harmless
    const nd_stack_t *k = &t->stacks[known];
    if (k->depth != n || (n && memcmp(t->frames + k->first, p + sizeof s, (size_t)n * 8)))
      return fail(t, off, "STACK %u redefined with different frames", s.id);
    return 0;
  }
  if (t->nstacks >= UINT32_MAX - 1 ||
      grow(&t->stacks, &t->stacks_cap, t->nstacks + 1, sizeof *t->stacks) ||
      grow(&t->frames, &t->frames_cap, t->nframes + n, sizeof *t->frames) ||
      map_put(&t->stack_ids, s.id, (uint32_t)t->nstacks))
    return fail(t, off, "out of memory");
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
    return fail(t, off, "PYCODE qualname length %u above the maximum %u", c.qualname_len,
                ND_PYCODE_MAX_STR);
  if (c.filename_len > ND_PYCODE_MAX_STR)
    return fail(t, off, "PYCODE filename length %u above the maximum %u", c.filename_len,
                ND_PYCODE_MAX_STR);
  if (sizeof c + c.qualname_len + c.filename_len != size) // both <= 1024: no overflow
    return fail(t, off, "PYCODE string lengths %u + %u do not match its record size %u",
                c.qualname_len, c.filename_len, size);
  if (map_get(&t->pycode_ids, c.id) >= 0) return fail(t, off, "PYCODE %u written twice", c.id);
  if (t->npycodes >= UINT32_MAX - 1 ||
      grow(&t->pycodes, &t->pycodes_cap, t->npycodes + 1, sizeof *t->pycodes))
    return fail(t, off, "out of memory");
  char *q = dup_str(p + sizeof c, c.qualname_len);
  char *f = dup_str(p + sizeof c + c.qualname_len, c.filename_len);
  if (!q || !f || map_put(&t->pycode_ids, c.id, (uint32_t)t->npycodes)) {
    free(q);
    free(f);
    return fail(t, off, "out of memory");
  }
  t->pycodes[t->npycodes++] =
      (nd_pycode_t){.id = c.id, .firstlineno = c.firstlineno, .qualname = q, .filename = f};
  return 0;
}

static int on_python(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_python_t py;
  memcpy(&py, p, sizeof py);
  if (py.state > (t->has.py_depth ? ND_PY_LAYOUT_DIFFERS : ND_PY_OFF))
    return fail(t, off, "PYTHON state %u out of range", py.state);
  t->python = py; // the latest wins
  t->have_python = true;
  return 0;
}

const nd_pycode_t *nd_trace_pycode(const nd_trace_t *t, uint64_t ip) {
  if (!nd_trace_is_pyframe(t, ip)) return NULL;
  long i = map_get(&t->pycode_ids, nd_pyframe_code(ip)); // > UINT32_MAX: never a key
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
    }
    h->prev_floor = h->floor;
    h->prev_cycle = h->cycle;
  }
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
  if (s.kind >= ND_TRACE_KINDS) return fail(t, off, "SITE memory kind %u out of range", s.kind);
  uint64_t key = site_key(s.stack_id, s.kind);
  long i = map_get(&t->site_keys, key);
  if (i >= 0) { // a site's stack is known: it was checked when the site first appeared
    t->sites[i].rec = s;
    site_history(t, &t->sites[i].h, &s);
    return 0;
  }
  long st = map_get(&t->stack_ids, s.stack_id);
  if (st < 0) return fail(t, off, "SITE names unknown stack %u", s.stack_id);
  if (t->nsites >= UINT32_MAX - 1 ||
      grow(&t->sites, &t->sites_cap, t->nsites + 1, sizeof *t->sites) ||
      map_put(&t->site_keys, key, (uint32_t)t->nsites))
    return fail(t, off, "out of memory");
  t->sites[t->nsites] = (nd_site_t){.stack = (uint32_t)st, .rec = s};
  site_history(t, &t->sites[t->nsites++].h, &s);
  return 0;
}

long nd_trace_site_of(const nd_trace_t *t, uint32_t stack_id, uint16_t kind) {
  return map_get((nd_map_t *)&t->site_keys, site_key(stack_id, kind));
}

static int on_block(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_block_t b;
  memcpy(&b, p, sizeof b);
  if (b.kind >= ND_TRACE_KINDS) return fail(t, off, "BLOCK memory kind %u out of range", b.kind);
  // A fork child's block born at or before its trace's start (the fork) is its parent's: the
  // child inherited it (the shim dates the child's own births after the fork). Kept apart.
  bool inherited = t->hdr.origin == ND_ORIGIN_FORK && b.mono_ns && b.mono_ns <= t->hdr.start_mono_ns;
  // Version 14: the reachability scan's class (0: not scanned), one entry per class.
  unsigned reach = t->has.reach ? nd_block_reach(b.flags) : ND_REACH_NONE;
  if (reach > ND_REACH_MAX)
    return fail(t, off, "BLOCK with an unknown reachability class (%u)", reach);
  uint64_t key = site_key(b.stack_id, b.kind) | (uint64_t)inherited << 63 | (uint64_t)reach << 60;
  long i = map_get(&t->leak_keys, key);
  if (i < 0) {
    long st = map_get(&t->stack_ids, b.stack_id);
    if (st < 0) return fail(t, off, "BLOCK names unknown stack %u", b.stack_id);
    if (t->nleaks >= UINT32_MAX - 1 ||
        grow(&t->leaks, &t->leaks_cap, t->nleaks + 1, sizeof *t->leaks) ||
        map_put(&t->leak_keys, key, (uint32_t)t->nleaks))
      return fail(t, off, "out of memory");
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
  if (grow(arr, cap, *n + 1, size)) return fail(t, off, "out of memory");
  *slot = (char *)*arr + (*n)++ * size;
  return 0;
}

// A workspace name must end within its 32 bytes; what follows the NUL is zeroed, so that names
// compare (and hash) by their bytes.
static int check_name(nd_trace_t *t, uint64_t off, const char *what, char *name, size_t n) {
  size_t len = strnlen(name, n);
  if (len == n) return fail(t, off, "%s workspace name is not NUL-terminated", what);
  memset(name + len, 0, n - len);
  return 0;
}

static uint64_t ws_hash(uint32_t tid, const char *name, size_t n) {
  uint64_t h = mix64(tid);
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
  return mix64(h);
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
    return fail(t, off, "WORKSPACE record whose trims gave back %llu B in %llu trims, at most "
                "%llu B at once", (unsigned long long)w.learn_trim_bytes,
                (unsigned long long)w.learn_trims, (unsigned long long)w.learn_trim_max_bytes);
  uint64_t key = ws_hash(w.tid, w.name, sizeof w.name);
  for (size_t tries = 0;; tries++) { // a chain longer than the table can only be a cycle
    long i = map_get(&t->ws_keys, key);
    if (i < 0) break;
    if (tries > t->nws) return fail(t, off, "WORKSPACE table cannot place this workspace");
    if (t->ws[i].tid == w.tid && !memcmp(t->ws[i].name, w.name, sizeof w.name)) {
      t->ws[i] = w;
      return 0;
    }
    key = mix64(key + 1);
  }
  if (t->nws >= UINT32_MAX - 1 || grow(&t->ws, &t->ws_cap, t->nws + 1, sizeof *t->ws) ||
      map_put(&t->ws_keys, key, (uint32_t)t->nws))
    return fail(t, off, "out of memory");
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
    long st = e->rec.stack_id == UINT32_MAX ? -1 : map_get(&t->stack_ids, e->rec.stack_id);
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
  if (g.kind >= ND_TRACE_KINDS) return fail(t, off, "GROWTH memory kind %u out of range", g.kind);
  if (g.floor_bytes < g.base_bytes || g.cycle < g.base_cycle)
    return fail(t, off, "GROWTH record that does not grow");
  long st = map_get(&t->stack_ids, g.stack_id);
  if (st < 0) return fail(t, off, "GROWTH names unknown stack %u", g.stack_id);
  saw_time(t, g.mono_ns);
  nd_growth_t *slot;
  if (keep(t, off, (void **)&t->growth, &t->ngrowth, &t->growth_cap, sizeof *slot,
           ND_TRACE_MAX_GROWTH, &t->growth_dropped, (void **)&slot))
    return -1;
  if (slot) *slot = (nd_growth_t){.rec = g, .stack = (uint32_t)st};
  return 0;
}

// ---------------------------------------------------------------- limits (version 3)

// The timeline's thinning, shared by the counters series (on_counters) and the top sites'
// (nd_trace_site_series), which must keep the same points: each COUNTERS record is a point; the
// latest is always kept, replaced by the next one when it is off the stride; when `cap` points
// (on the stride) are held, every other one goes (keep_even(arg, n): point i becomes point 2i)
// and the stride doubles. Returns the index of the new point, which the caller fills.
typedef struct thin {
  uint64_t *seen, *stride; // records counted; every stride-th record is kept
  bool *extra;             // the last point is off the stride
  size_t *npoints;
} thin_t;
static size_t thin_step(thin_t th, size_t cap, void (*keep_even)(void *arg, size_t n), void *arg) {
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
  if (grow(&t->series, &t->series_cap, t->npoints + 1, sizeof *t->series))
    return fail(t, off, "out of memory");
  thin_t th = {&t->series_seen, &t->series_stride, &t->series_extra, &t->npoints};
  nd_point_t *pt = &t->series[thin_step(th, ND_TRACE_MAX_POINTS, series_keep_even, t->series)];
  pt->mono_ns = t->counters.mono_ns;
  pt->cycle = t->flush.cycles;
  for (int i = 0; i < ND_TRACE_KINDS; i++) pt->live[i] = t->counters.kind[i].live_bytes;
  pt->resident = t->have_resident ? (int64_t)t->resident.anon_bytes : -1;
  // The allocator's free bytes that are surely resident: less those a trim may have given back.
  pt->alloc_free = t->have_resident && t->resident.alloc_ns
                       ? (int64_t)(t->resident.alloc_free_bytes - t->resident.alloc_trimmed_bytes)
                       : -1;
  pt->alloc_trimmed = pt->alloc_free >= 0 ? (int64_t)t->resident.alloc_trimmed_bytes : -1;
  t->series_open = true;
  return 0;
}

static int on_limits(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_limits_t l;
  memcpy(&l, p, sizeof l);
  if (l.action > ND_ON_LIMIT_ABORT) return fail(t, off, "LIMITS action %u out of range", l.action);
  t->limits = l; // unknown flag bits are ignored, as SITE flags are
  t->have_limits = true;
  return 0;
}

static int on_breach(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_breach_t b;
  memcpy(&b, p, sizeof b);
  int device = b.limit == ND_LIMIT_DEVICE && t->has.devices;
  if (b.limit >= ND_LIMIT_COUNT && !device)
    return fail(t, off, "BREACH limit %u out of range", b.limit);
  if (b.action > (device && t->has.device_ws ? ND_ON_LIMIT_HOST : ND_ON_LIMIT_ABORT))
    return fail(t, off, "BREACH action %u out of range", b.action);
  if (b.fn >= (device ? ND_CUDA_FN_USED : ND_TRACE_FNS))
    return fail(t, off, "BREACH function %u out of range", b.fn);
  if (device && b.device >= ND_TRACE_MAX_DEVICES)
    return fail(t, off, "BREACH device %u out of range", b.device);
  long st = -1;
  if (b.flags & ND_BREACH_STACK) {
    st = map_get(&t->stack_ids, b.stack_id);
    if (st < 0) return fail(t, off, "BREACH names unknown stack %u", b.stack_id);
  }
  if ((b.flags & ND_BREACH_RETRY_LOOP) && (b.action != ND_ON_LIMIT_ABORT || !b.retries))
    return fail(t, off, "BREACH marks a retry loop but did not stop the process");
  saw_time(t, b.mono_ns);
  nd_breach_t *slot;
  if (keep(t, off, (void **)&t->breaches, &t->nbreaches, &t->breaches_cap, sizeof *slot,
           ND_TRACE_MAX_BREACHES, &t->breaches_dropped, (void **)&slot))
    return -1;
  if (slot) *slot = (nd_breach_t){.rec = b, .stack = st};
  return 0;
}

// ---------------------------------------------------------------- device memory (version 6)

static int on_device(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_device_t d;
  memcpy(&d, p, sizeof d);
  if (d.device >= ND_TRACE_MAX_DEVICES) return fail(t, off, "DEVICE %u out of range", d.device);
  t->devices[d.device] = d; // the latest wins; unknown flag bits are ignored
  t->have_device |= 1u << d.device;
  return 0;
}

// ---------------------------------------------------------------- version 11

static int on_device_ws(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_device_ws_t w;
  memcpy(&w, p, sizeof w);
  if (w.device >= ND_TRACE_MAX_DEVICES) return fail(t, off, "DEVICE_WS device %u out of range", w.device);
  if (w.mode > 4 || w.sync > 1 || w.streams > 2 || w.learning > 2 || w.allocation > 1 ||
      w.spill > 2 || w.reset > 1)
    return fail(t, off, "DEVICE_WS record with a mode or policy out of range");
  if (w.hit_bytes < w.hits || w.frees > w.hits || w.arena_frees > w.arena_allocs ||
      w.deviations > w.spills)
    return fail(t, off, "DEVICE_WS record whose counts contradict each other");
  t->device_ws[w.device] = w; // the latest wins
  t->have_device_ws |= 1u << w.device;
  return 0;
}

static int on_device_spill(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_device_spill_t r;
  memcpy(&r, p, sizeof r);
  if (r.device >= ND_TRACE_MAX_DEVICES)
    return fail(t, off, "DEVICE_SPILL device %u out of range", r.device);
  if (r.frees > r.allocs || r.live_bytes < 0 || r.live_bytes > r.peak_bytes ||
      (uint64_t)r.peak_bytes > r.alloc_bytes || r.over_limit + r.device_full != r.allocs)
    return fail(t, off, "DEVICE_SPILL record whose counts contradict each other");
  if (r.stack_id == ND_SPILL_TOTAL) {
    t->spill_total[r.device] = r;
    t->have_spill |= 1u << r.device;
    return 0;
  }
  long st = map_get(&t->stack_ids, r.stack_id);
  if (st < 0) return fail(t, off, "DEVICE_SPILL names unknown stack %u", r.stack_id);
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
  if (r.reason > ND_SNAP_BREACH) return fail(t, off, "SNAPSHOT reason %u out of range", r.reason);
  saw_time(t, r.mono_ns);
  uint64_t seq = ++t->snap_records;
  nd_snapshot_t *s = snap_slot(t, seq);
  s->rec = r;
  s->seq = seq;
  s->read = 0;
  s->nsites = 0;
  t->snap_open = r.sites ? s : NULL;
  return 0;
}

// A SNAP_SITE record: check_header has made sure that a snapshot is open.
static int on_snap_site(nd_trace_t *t, uint64_t off, const char *p) {
  nd_rec_snap_site_t x;
  memcpy(&x, p, sizeof x);
  if (x.kind >= ND_TRACE_KINDS)
    return fail(t, off, "SNAP_SITE memory kind %u out of range", x.kind);
  long st = map_get(&t->stack_ids, x.stack_id);
  if (st < 0) return fail(t, off, "SNAP_SITE names unknown stack %u", x.stack_id);
  nd_snapshot_t *s = t->snap_open;
  if (s->nsites < ND_TRACE_MAX_SNAP_SITES) {
    if (grow(&s->sites, &s->sites_cap, s->nsites + 1, sizeof *s->sites))
      return fail(t, off, "out of memory");
    s->sites[s->nsites++] = (nd_snap_site_t){.stack = (uint32_t)st, .rec = x};
  }
  if (++s->read == s->rec.sites) t->snap_open = NULL;
  return 0;
}

// A snapshot's sites follow it without any other record in between: a SNAP_SITE record needs an
// open snapshot, and any other record needs none. Checked from the header, before the payload.
static int check_snap_run(nd_trace_t *t, uint64_t off, const nd_rec_t *r) {
  const nd_snapshot_t *s = t->snap_open;
  if (r->tag != ND_REC_SNAP_SITE) {
    if (!s) return 0;
    return fail(t, off, "%s record where SNAP_SITE %u of %u was expected", tag_names[r->tag],
                s->read + 1, s->rec.sites);
  }
  if (s) return 0;
  if (t->prev_tag == ND_REC_SNAPSHOT || t->prev_tag == ND_REC_SNAP_SITE) {
    const nd_snapshot_t *last = snap_slot(t, t->snap_records);
    return fail(t, off, "SNAP_SITE record beyond the %u %s its SNAPSHOT announced",
                last->rec.sites, last->rec.sites == 1 ? "site" : "sites");
  }
  return fail(t, off, "SNAP_SITE record without a SNAPSHOT before it");
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

// The payload size a tag allows in a trace of `version`: exact for fixed records, a minimum (and
// *var set) otherwise. Version 5 lengthened four records (trace_format.h).
static uint32_t fixed_size(unsigned tag, uint32_t version, int *var) {
  *var = 0;
  int old = version < 5;
  switch (tag) {
  case ND_REC_MODULE: *var = 1; return sizeof(nd_rec_module_t);
  case ND_REC_STACK: *var = 1; return sizeof(nd_rec_stack_t);
  case ND_REC_SITE: return old ? ND_REC_SITE_V4_SIZE : sizeof(nd_rec_site_t);
  case ND_REC_COUNTERS: return sizeof(nd_rec_counters_t);
  case ND_REC_BLOCK: return old ? ND_REC_BLOCK_V4_SIZE : sizeof(nd_rec_block_t);
  case ND_REC_FLUSH: return old ? ND_REC_FLUSH_V4_SIZE : sizeof(nd_rec_flush_t);
  case ND_REC_WORKSPACE:
    return old ? ND_REC_WORKSPACE_V4_SIZE
               : version < 10 ? ND_REC_WORKSPACE_V9_SIZE : sizeof(nd_rec_workspace_t);
  case ND_REC_GROWTH: return sizeof(nd_rec_growth_t);
  case ND_REC_WS_ESCAPE: return sizeof(nd_rec_ws_escape_t);
  case ND_REC_LIMITS: return version < 10 ? ND_REC_LIMITS_V9_SIZE : sizeof(nd_rec_limits_t);
  case ND_REC_BREACH: return version < 10 ? ND_REC_BREACH_V9_SIZE : sizeof(nd_rec_breach_t);
  case ND_REC_SNAPSHOT: return sizeof(nd_rec_snapshot_t);
  case ND_REC_SNAP_SITE: return sizeof(nd_rec_snap_site_t);
  case ND_REC_EXIT: return sizeof(nd_rec_exit_t);
  case ND_REC_DEVICE: return sizeof(nd_rec_device_t);
  case ND_REC_CUDA: return sizeof(nd_rec_cuda_t);
  case ND_REC_PYCODE: *var = 1; return sizeof(nd_rec_pycode_t);
  case ND_REC_PYTHON: return sizeof(nd_rec_python_t);
  case ND_REC_RESIDENT: return version < 9 ? ND_REC_RESIDENT_V8_SIZE : sizeof(nd_rec_resident_t);
  case ND_REC_DEVICE_WS: return sizeof(nd_rec_device_ws_t);
  case ND_REC_DEVICE_SPILL: return sizeof(nd_rec_device_spill_t);
  case ND_REC_SCAN: return sizeof(nd_rec_scan_t);
  default: return sizeof(nd_rec_end_t);
  }
}

// Checks a record header before its payload is needed, so an impossible size is an error even
// when the file ends before the payload would.
static int check_header(nd_trace_t *t, uint64_t off, const nd_rec_t *r) {
  if (t->ended) return fail(t, off, "%s record after END", r->tag > 0 && r->tag < ND_REC_TAG_MAX
                                                              ? tag_names[r->tag] : "a");
  if (r->tag == 0 || r->tag >= ND_REC_TAG_MAX)
    return fail(t, off, "unknown record tag %u", r->tag);
  if (t->hdr.version < 2 && (r->tag == ND_REC_WORKSPACE || r->tag == ND_REC_WS_ESCAPE))
    return fail(t, off, "%s record in a version %u trace (version 2 introduced it)",
                tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 3 && r->tag >= ND_REC_LIMITS)
    return fail(t, off, "%s record in a version %u trace (version 3 introduced it)",
                tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 4 && r->tag == ND_REC_EXIT)
    return fail(t, off, "EXIT record in a version %u trace (version 4 introduced it)",
                t->hdr.version);
  if (t->hdr.version < 5 && r->tag == ND_REC_GROWTH)
    return fail(t, off, "GROWTH record in a version %u trace (version 5 introduced it)",
                t->hdr.version);
  if (t->hdr.version < 8 && r->tag == ND_REC_RESIDENT)
    return fail(t, off, "RESIDENT record in a version %u trace (version 8 introduced it)",
                t->hdr.version);
  if (t->hdr.version < 7 && (r->tag == ND_REC_PYCODE || r->tag == ND_REC_PYTHON))
    return fail(t, off, "%s record in a version %u trace (version 7 introduced it)",
                tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 11 && (r->tag == ND_REC_DEVICE_WS || r->tag == ND_REC_DEVICE_SPILL))
    return fail(t, off, "%s record in a version %u trace (version 11 introduced it)",
                tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 6 && (r->tag == ND_REC_DEVICE || r->tag == ND_REC_CUDA))
    return fail(t, off, "%s record in a version %u trace (version 6 introduced it)",
                tag_names[r->tag], t->hdr.version);
  if (t->hdr.version < 14 && r->tag == ND_REC_SCAN)
    return fail(t, off, "SCAN record in a version %u trace (version 14 introduced it)",
                t->hdr.version);
  if (r->tag == ND_REC_EXIT && t->have_exit) return fail(t, off, "a second EXIT record");
  if (r->tag == ND_REC_SCAN && t->have_scan) return fail(t, off, "a second SCAN record");
  if (r->size > ND_TRACE_MAX_RECORD)
    return fail(t, off, "%s record size %u above the maximum %u", tag_names[r->tag], r->size,
                ND_TRACE_MAX_RECORD);
  int var;
  uint32_t want = fixed_size(r->tag, t->hdr.version, &var);
  if (var ? r->size < want : r->size != want)
    return fail(t, off, "%s record size %u impossible (%s%u)", tag_names[r->tag], r->size,
                var ? "at least " : "", want);
  if (r->tag == ND_REC_STACK) {
    if ((r->size - want) % 8)
      return fail(t, off, "STACK record size %u is not a whole number of frames", r->size);
    uint32_t max = t->hdr.version >= 12 ? ND_TRACE_MAX_STACK : ND_TRACE_MAX_DEPTH;
    if ((r->size - want) / 8 > max)
      return fail(t, off, "STACK depth %u above the maximum %u", (r->size - want) / 8, max);
  }
  return check_snap_run(t, off, r);
}

static int on_record(nd_trace_t *t, uint64_t off, const nd_rec_t *r, const char *p) {
  // A record a later version lengthened, in its older short form (check_header let through only
  // the trace version's size): the new fields read as 0. Version 5 lengthened SITE, BLOCK, FLUSH
  // and WORKSPACE; version 9 RESIDENT (the allocator's view: none in the short form); version 10
  // LIMITS and BREACH, and WORKSPACE again (bytes served, learning trims: none known in the short
  // form).
  char full[sizeof(nd_rec_workspace_t)]; // the largest of them
  _Static_assert(sizeof full >= sizeof(nd_rec_site_t) && sizeof full >= sizeof(nd_rec_block_t) &&
                     sizeof full >= sizeof(nd_rec_flush_t) &&
                     sizeof full >= sizeof(nd_rec_resident_t) &&
                     sizeof full >= sizeof(nd_rec_limits_t) && sizeof full >= sizeof(nd_rec_breach_t),
                 "room for every lengthened record");
  int var;
  uint32_t now = fixed_size(r->tag, ND_TRACE_VERSION, &var);
  if (!var && r->size < now && now <= sizeof full) {
    memset(full, 0, sizeof full);
    memcpy(full, p, r->size);
    if (r->tag == ND_REC_RESIDENT) // reserved in version 8
      ((nd_rec_resident_t *)(void *)full)->alloc_trimmed_bytes = 0;
    p = full;
  }
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
  case ND_REC_EXIT:
    memcpy(&t->exit, p, sizeof t->exit);
    if (t->exit.how > ND_EXIT_LIMIT_ABORT)
      return fail(t, off, "EXIT record with an unknown way of ending (%u)", t->exit.how);
    t->have_exit = true;
    saw_time(t, t->exit.mono_ns);
    return 0;
  case ND_REC_SCAN:
    memcpy(&t->scan, p, sizeof t->scan);
    if (t->scan.status > ND_SCAN_STATUS_MAX)
      return fail(t, off, "SCAN record with an unknown status (%u)", t->scan.status);
    if (t->scan.unheld > t->scan.threads)
      return fail(t, off, "SCAN record with more threads not held than threads");
    t->have_scan = true;
    saw_time(t, t->scan.mono_ns);
    return 0;
  case ND_REC_GROWTH: return on_growth(t, off, p);
  case ND_REC_DEVICE: return on_device(t, off, p);
  case ND_REC_CUDA: return on_cuda(t, p);
  case ND_REC_DEVICE_WS: return on_device_ws(t, off, p);
  case ND_REC_DEVICE_SPILL: return on_device_spill(t, off, p);
  case ND_REC_PYCODE: return on_pycode(t, off, p, r->size);
  case ND_REC_PYTHON: return on_python(t, off, p);
  case ND_REC_RESIDENT: // the latest reading; the next COUNTERS' point carries it
    memcpy(&t->resident, p, sizeof t->resident);
    if (t->resident.allocator > ND_ALLOCATOR_MAX)
      return fail(t, off, "RESIDENT record with an unknown allocator (%u)", t->resident.allocator);
    if (t->resident.alloc_ns && t->resident.allocator == ND_ALLOCATOR_UNKNOWN)
      return fail(t, off, "RESIDENT record with an unknown allocator's reading");
    if (t->resident.alloc_free_bytes > t->resident.alloc_system_bytes)
      return fail(t, off, "RESIDENT record with more free bytes than the allocator holds");
    if (t->resident.alloc_top_bytes > t->resident.alloc_free_bytes)
      return fail(t, off, "RESIDENT record with a top chunk larger than the free bytes");
    if (t->resident.alloc_trimmed_bytes > t->resident.alloc_free_bytes)
      return fail(t, off, "RESIDENT record with more trimmed bytes than free bytes");
    saw_time(t, t->resident.mono_ns);
    if (!t->have_resident || t->resident.anon_bytes > t->resident_peak)
      t->resident_peak = t->resident.anon_bytes;
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
      return fail(t, off, "END counts %llu blocks but %llu BLOCK records precede it",
                  (unsigned long long)t->end.blocks, (unsigned long long)t->block_records);
    t->ended = true;
    saw_time(t, t->end.mono_ns);
    return 0;
  }
}

// ---------------------------------------------------------------- the stream

typedef struct nd_in {
  int fd;
  char *buf;
  size_t cap;      // ND_BUF_SIZE, or less for a small regular file (grown if it grows)
  size_t pos, len; // unread bytes are buf[pos, len)
  uint64_t base;   // stream offset of buf[0] (the file's, unless compressed)
  bool eof;
  uint64_t reads; // read(2) calls that returned data, for progress reports
  // A compressed stream (zstd_begin): the file's bytes go through zd into buf.
  void *zd;          // ZSTD_DStream *, NULL when the records are plain
  char *zbuf;        // file bytes read, zbuf[zpos, zlen) not yet given to zd
  size_t zpos, zlen, zcap;
  uint64_t zread;    // file bytes read (header included)
  const char *zerr;  // why decompression failed (errno is then EBADMSG)
} nd_in_t;

#define ND_ZBUF_SIZE (128u << 10)

// Up to cap - len more bytes into buf: read(2), or read and decompressed. The bytes added
// (0: the file ended), or -1 (errno set).
static ssize_t more(nd_in_t *in) {
  for (;;) {
    if (!in->zd) return read(in->fd, in->buf + in->len, in->cap - in->len);
#ifdef ND_HAVE_ZSTD
    // zd may hold output from input already given: ask it first, then read.
    ZSTD_inBuffer zi = {in->zbuf, in->zlen, in->zpos};
    ZSTD_outBuffer zo = {in->buf + in->len, in->cap - in->len, 0};
    size_t r = ZSTD_decompressStream(in->zd, &zo, &zi);
    in->zpos = zi.pos;
    if (ZSTD_isError(r)) {
      in->zerr = ZSTD_getErrorName(r);
      errno = EBADMSG;
      return -1;
    }
    if (zo.pos) return (ssize_t)zo.pos;
    if (in->zpos < in->zlen) continue; // consumed input without output yet (a frame header)
    ssize_t n = read(in->fd, in->zbuf, in->zcap);
    if (n <= 0) return n;
    in->zread += (uint64_t)n;
    in->zpos = 0;
    in->zlen = (size_t)n;
#endif
  }
}

// Makes at least `want` (<= ND_BUF_SIZE) unread bytes available unless the file ends first. 0,
// or -1 on a read error, a corrupt compressed stream or out of memory (errno set).
static int fill(nd_in_t *in, size_t want) {
  if (in->len - in->pos >= want || in->eof) return 0;
  if (want > in->cap) { // a small file that grew while we read it
    char *p = realloc(in->buf, ND_BUF_SIZE);
    if (!p) return -1;
    in->buf = p;
    in->cap = ND_BUF_SIZE;
  }
  if (in->pos) {
    memmove(in->buf, in->buf + in->pos, in->len - in->pos);
    in->base += in->pos;
    in->len -= in->pos;
    in->pos = 0;
  }
  while (in->len < want && !in->eof) {
    ssize_t n = more(in);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) in->eof = true;
    else in->reads++;
    in->len += (size_t)n;
  }
  return 0;
}

// The reason of a failed fill: strerror, or the decompressor's own words.
static const char *in_error(const nd_in_t *in) {
  return in->zerr && errno == EBADMSG ? in->zerr : strerror(errno);
}

// The records after the header are a zstd stream (ND_TRACE_ZSTD): the bytes read past the header
// are compressed, and from here on fill decompresses. `zd` continues an earlier read's stream
// (nd_trace_update) or is NULL for a new one. 0, or -1 with t->err set.
static int zstd_begin(nd_trace_t *t, nd_in_t *in, void *zd) {
#ifdef ND_HAVE_ZSTD
  size_t raw = in->len - in->pos; // file bytes already in buf: the stream's first
  in->zcap = raw > ND_ZBUF_SIZE ? raw : ND_ZBUF_SIZE;
  in->zbuf = malloc(in->zcap);
  if (!zd) zd = ZSTD_createDStream();
  if (!in->zbuf || !zd) {
    if (zd && zd != t->zd) ZSTD_freeDStream(zd);
    return fail(t, UINT64_MAX, "out of memory");
  }
  in->zd = zd;
  memcpy(in->zbuf, in->buf + in->pos, raw);
  in->zpos = 0;
  in->zlen = raw;
  in->zread = in->base + in->len;
  in->len = in->pos;
  in->eof = false;
  return 0;
#else
  (void)in, (void)zd;
  return fail(t, offsetof(nd_trace_header_t, flags),
              "compressed trace (zstd), and this ndmemreport was built without libzstd");
#endif
}

static void zstd_end(nd_in_t *in, nd_trace_t *keep) {
  free(in->zbuf);
  in->zbuf = NULL;
#ifdef ND_HAVE_ZSTD
  if (in->zd && (!keep || keep->zd != in->zd)) ZSTD_freeDStream(in->zd);
#endif
  (void)keep;
  in->zd = NULL;
}

// The version 12 fields of a header that has them (where the process stands in its job), checked;
// a shorter header's read as unknown. 0 or -1.
// What is wrong with a version 12 header's job fields (the offset of the field at *at), or NULL.
static const char *job_problem(const nd_trace_header_t *h, size_t *at) {
  if (h->rank_from > ND_RANK_FROM_MAX)
    return *at = offsetof(nd_trace_header_t, rank_from), "header rank source %u out of range";
  if (h->origin > ND_ORIGIN_MAX)
    return *at = offsetof(nd_trace_header_t, origin), "header origin %u out of range";
  // -1 is unknown; a size is at least 1 (the writer writes -1 for a size of 0)
  if (h->rank_from != ND_RANK_FROM_NONE &&
      (h->rank < -1 || h->local_rank < -1 || h->world_size < -1 || h->local_world_size < -1 ||
       !h->world_size || !h->local_world_size))
    return *at = offsetof(nd_trace_header_t, rank),
           "impossible rank %d, world size %d, local rank %d or local world size %d";
  return NULL;
}

static int header_job(nd_trace_t *t) {
  nd_trace_header_t *h = &t->hdr;
  if (h->version < 12 || h->header_size < sizeof *h) {
    h->ppid = 0;
    h->rank = h->world_size = h->local_rank = h->local_world_size = -1;
    h->rank_from = ND_RANK_FROM_NONE;
    h->origin = ND_ORIGIN_UNKNOWN;
    return 0;
  }
  size_t at = 0;
  const char *why = job_problem(h, &at);
  if (why && at == offsetof(nd_trace_header_t, rank_from)) return fail(t, at, why, h->rank_from);
  if (why && at == offsetof(nd_trace_header_t, origin)) return fail(t, at, why, h->origin);
  if (why)
    return fail(t, at, why, h->rank, h->world_size, h->local_rank, h->local_world_size);
  if (h->rank_from == ND_RANK_FROM_NONE) // no variable named: no rank (a zeroed header's 0s)
    h->rank = h->world_size = h->local_rank = h->local_world_size = -1;
  return 0;
}

bool nd_trace_header_valid(const nd_trace_header_t *h) {
  size_t at;
  return !memcmp(h->magic, ND_TRACE_MAGIC, sizeof h->magic) && h->version >= 12 &&
         h->version <= ND_TRACE_VERSION && h->header_size >= sizeof *h &&
         h->header_size <= ND_TRACE_MAX_RECORD && h->depth <= ND_TRACE_MAX_DEPTH &&
         !job_problem(h, &at) &&
         !((h->version >= 13 ? h->flags : 0) & ~(uint32_t)ND_TRACE_FLAGS_KNOWN);
}

// A failed fill at offset off: the read error, or what the decompressor found wrong.
static int fill_fail(nd_trace_t *t, uint64_t off, const nd_in_t *in) {
  if (in->zerr && errno == EBADMSG)
    return fail(t, off, "compressed records corrupt (zstd: %s)", in->zerr);
  return fail(t, off, "read error: %s", strerror(errno));
}

// What a trace of `version` has room for (nd_trace_has_t): the one place that maps version
// numbers to the facts the rest of ndmemreport tests.
static void version_facts(nd_trace_has_t *has, uint32_t version) {
  *has = (nd_trace_has_t){
      .workspaces = version >= 2,
      .limits = version >= 3,
      .exit_record = version >= 4,
      .site_history = version >= 5,
      .devices = version >= 6,
      .python = version >= 7,
      .resident = version >= 8,
      .allocator_view = version >= 9,
      .ws_served = version >= 10,
      .limit_details = version >= 10,
      .device_ws = version >= 11,
      .job = version >= 12,
      .py_depth = version >= 12,
      .reach = version >= 14,
      .cuda_fns = version >= 11 ? ND_CUDA_FN_USED : ND_CUDA_FN_USED_V10};
}

static int read_header(nd_trace_t *t, nd_in_t *in) {
  if (fill(in, sizeof t->hdr)) return fill_fail(t, 0, in);
  size_t have = in->len;
  if (have == 0) return fail(t, 0, "empty file, not an ndmem trace");
  if (have < sizeof t->hdr.magic ||
      memcmp(in->buf, ND_TRACE_MAGIC, sizeof t->hdr.magic))
    return fail(t, 0, "not an ndmem trace (bad magic)");
  // Every version's header is at least as long as version 1's (ND_TRACE_HEADER_V11_SIZE); version
  // 12 lengthened it, and header_size says how long this one is.
  if (have < ND_TRACE_HEADER_V11_SIZE)
    return fail(t, have, "trace header cut short (%zu of %u bytes)", have,
                ND_TRACE_HEADER_V11_SIZE);
  memset(&t->hdr, 0, sizeof t->hdr);
  memcpy(&t->hdr, in->buf, have < sizeof t->hdr ? have : sizeof t->hdr);
  if (t->hdr.version < 1 || t->hdr.version > ND_TRACE_VERSION)
    return fail(t, 8, "unsupported trace version %u (this reader knows 1 to %u)", t->hdr.version,
                ND_TRACE_VERSION);
  version_facts(&t->has, t->hdr.version);
  // A later writer may append header fields: skip them, within reason.
  uint32_t least = t->hdr.version >= 12 ? sizeof t->hdr : ND_TRACE_HEADER_V11_SIZE;
  if (t->hdr.header_size < least || t->hdr.header_size > ND_TRACE_MAX_RECORD)
    return fail(t, 12, "impossible header size %u", t->hdr.header_size);
  if (t->hdr.header_size < sizeof t->hdr) // the bytes after it are records
    memset((char *)&t->hdr + t->hdr.header_size, 0, sizeof t->hdr - t->hdr.header_size);
  if (t->hdr.depth > ND_TRACE_MAX_DEPTH)
    return fail(t, 56, "header stack depth %u above the maximum %u", t->hdr.depth,
                ND_TRACE_MAX_DEPTH);
  if (fill(in, t->hdr.header_size)) return fill_fail(t, 0, in);
  if (in->len < t->hdr.header_size)
    return fail(t, in->len, "trace header cut short (%zu of %u bytes)", in->len,
                t->hdr.header_size);
  if (header_job(t)) return -1;
  if (t->hdr.version < 13) t->hdr.flags = 0; // reserved before
  if (t->hdr.flags & ~(uint32_t)ND_TRACE_FLAGS_KNOWN)
    return fail(t, offsetof(nd_trace_header_t, flags), "unknown header flags 0x%x",
                t->hdr.flags & ~(uint32_t)ND_TRACE_FLAGS_KNOWN);
  in->pos = t->hdr.header_size;
  t->compressed = t->hdr.flags & ND_TRACE_ZSTD;
  if (t->compressed && zstd_begin(t, in, NULL)) return -1;
  memcpy(t->host, t->hdr.host, sizeof t->hdr.host);
  t->host[sizeof t->hdr.host] = 0;
  memcpy(t->exe, t->hdr.exe, sizeof t->hdr.exe);
  t->exe[sizeof t->hdr.exe] = 0;
  return 0;
}

static int cmp_lo(const void *a, const void *b, void *arg) {
  const nd_module_t *m = arg;
  const nd_module_t *x = &m[*(const uint32_t *)a], *y = &m[*(const uint32_t *)b];
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int build_module_index(nd_trace_t *t) {
  free(t->mod_order); // nd_trace_update: built again over the modules read since
  free(t->mod_maxhi);
  t->mod_order = NULL;
  t->mod_maxhi = NULL;
  if (!t->nmods) return 0;
  t->mod_order = malloc(t->nmods * sizeof *t->mod_order);
  t->mod_maxhi = malloc(t->nmods * sizeof *t->mod_maxhi);
  if (!t->mod_order || !t->mod_maxhi) return fail(t, UINT64_MAX, "out of memory");
  for (size_t i = 0; i < t->nmods; i++) t->mod_order[i] = (uint32_t)i;
  qsort_r(t->mod_order, t->nmods, sizeof *t->mod_order, cmp_lo, t->mods);
  uint64_t hi = 0;
  for (size_t i = 0; i < t->nmods; i++) {
    if (t->mods[t->mod_order[i]].hi > hi) hi = t->mods[t->mod_order[i]].hi;
    t->mod_maxhi[i] = hi;
  }
  return 0;
}

const nd_module_t *nd_trace_module_of(const nd_trace_t *t, uint64_t ip) {
  // The last module (by lo) starting at or below ip; then walk down while an earlier module
  // could still reach ip (prefix maximum of hi), keeping the most recent one that holds it.
  size_t lo = 0, hi = t->nmods;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->mods[t->mod_order[mid]].lo <= ip) lo = mid + 1;
    else hi = mid;
  }
  const nd_module_t *best = NULL;
  for (size_t i = lo; i-- > 0 && t->mod_maxhi[i] > ip;) {
    const nd_module_t *m = &t->mods[t->mod_order[i]];
    if (ip < m->hi && (!best || m->seq > best->seq)) best = m;
  }
  return best;
}

// Reads records from in->fd (positioned at in->base, the end of the last complete record read so
// far) up to the file's end or its last complete record, folding them into `t`, then derives
// what is built after reading (escapes' stacks, the snapshots' order, the module index). Each
// of those is rebuilt from the state kept, so that reading on later gives what one read of the
// longer file gives. 0, or -1 with t->err set.
static int read_records(nd_trace_t *t, nd_in_t *in, uint64_t size, nd_progress_fn progress,
                        void *arg) {
  t->truncated = false;
  for (;;) {
    uint64_t reads = in->reads;
    if (fill(in, sizeof(nd_rec_t))) return fill_fail(t, in->base + in->pos, in);
    uint64_t off = in->base + in->pos;
    size_t avail = in->len - in->pos;
    if (avail == 0) break; // clean end
    if (avail < sizeof(nd_rec_t)) {
      t->truncated = true;
      break;
    }
    nd_rec_t r;
    memcpy(&r, in->buf + in->pos, sizeof r);
    if (check_header(t, off, &r)) return -1;
    if (avail < sizeof r + r.size) {
      if (fill(in, sizeof r + r.size)) return fill_fail(t, off, in);
      if (in->len - in->pos < sizeof r + r.size) {
        t->truncated = true;
        break;
      }
    }
    if (on_record(t, off, &r, in->buf + in->pos + sizeof r)) return -1;
    in->pos += sizeof r + r.size;
    t->records++;
    t->rec_count[r.tag]++;
    t->prev_tag = r.tag;
    t->after_flush = r.tag == ND_REC_FLUSH ? 0 : t->after_flush + 1;
    t->good_end = in->base + in->pos;
    if (progress && in->reads != reads) progress(arg, in->zd ? in->zread : t->good_end, size);
  }
  if (!t->records) t->good_end = t->hdr.header_size;
  t->file_size = in->base + in->len;
  t->stored_size = in->zd ? in->zread : t->file_size;
  resolve_escapes(t);
  order_snapshots(t); // a snapshot still open keeps the sites read: the file ended in its run
  return build_module_index(t);
}

// The buffer for reading `size` bytes of a regular file (0: unknown): ND_BUF_SIZE, or less for
// a small file (fill grows it if the file grows).
static int in_alloc(nd_trace_t *t, nd_in_t *in, uint64_t size) {
  in->cap = ND_BUF_SIZE;
  if (size && size < ND_BUF_SIZE - 4096) in->cap = size + 4096 > 65536 ? size + 4096 : 65536;
  in->buf = malloc(in->cap);
  return in->buf ? 0 : fail(t, UINT64_MAX, "out of memory");
}

// Opens `path` for reading: 0 with *fd and *st, or -1 with t->err set.
static int open_trace(nd_trace_t *t, const char *path, int *fd, struct stat *st) {
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) return fail(t, UINT64_MAX, "cannot open: %s", strerror(errno));
  if (fstat(*fd, st)) {
    fail(t, UINT64_MAX, "cannot stat: %s", strerror(errno));
  } else if (S_ISDIR(st->st_mode)) {
    fail(t, UINT64_MAX, "is a directory, not a trace");
  } else {
    return 0;
  }
  close(*fd);
  *fd = -1;
  return -1;
}

// A compressed trace read to its end keeps its decompressor for nd_trace_update: the stream
// goes on where the file did, with the bytes decompressed past the last whole record. 0 or -1.
static int zstd_keep(nd_trace_t *t, nd_in_t *in) {
  if (!in->zd) return 0;
  size_t n = in->len - in->pos;
  char *tail = n ? malloc(n) : NULL;
  if (n && !tail) return fail(t, UINT64_MAX, "out of memory");
  if (n) memcpy(tail, in->buf + in->pos, n);
  free(t->ztail);
  t->ztail = tail;
  t->nztail = n;
  t->zd = in->zd;
  t->zfed = in->zread - (in->zlen - in->zpos);
  return 0;
}

int nd_trace_read(nd_trace_t *t, const char *path, nd_progress_fn progress, void *arg) {
  memset(t, 0, sizeof *t);
  t->path = path;
  t->err_off = UINT64_MAX;
  nd_in_t in = {.fd = -1};
  struct stat st;
  if (open_trace(t, path, &in.fd, &st)) return -1;
  int rc = -1;
  t->regular = S_ISREG(st.st_mode);
  t->dev = (uint64_t)st.st_dev;
  t->ino = (uint64_t)st.st_ino;
  uint64_t size = t->regular ? (uint64_t)st.st_size : 0;
  if (in_alloc(t, &in, size) || read_header(t, &in)) goto out;
  rc = read_records(t, &in, size, progress, arg);
  if (!rc) rc = zstd_keep(t, &in);
out:
  t->last_read = in.zd ? in.zread : in.len + in.base;
  zstd_end(&in, t);
  free(in.buf);
  close(in.fd);
  return rc;
}

int nd_trace_update(nd_trace_t *t, nd_progress_fn progress, void *arg) {
  const char *path = t->path;
  nd_in_t in = {.fd = -1};
  struct stat st;
  if (open_trace(t, path, &in.fd, &st)) return -1;
  // The same file, no shorter than what was read, with the same header: else another trace was
  // written there (a new job, a copy, the file cut), and it is read from its start.
  nd_trace_header_t hdr;
  bool same = t->regular && S_ISREG(st.st_mode) && (uint64_t)st.st_dev == t->dev &&
              (uint64_t)st.st_ino == t->ino &&
              (uint64_t)st.st_size >= (t->compressed ? t->zfed : t->good_end) &&
              pread(in.fd, &hdr, ND_TRACE_HEADER_V11_SIZE, 0) == ND_TRACE_HEADER_V11_SIZE &&
              !memcmp(&hdr, &t->hdr, ND_TRACE_HEADER_V11_SIZE); // its part as read, unchanged
  if (!same) {
    close(in.fd);
    nd_trace_free(t);
    int rc = nd_trace_read(t, path, progress, arg);
    return rc ? rc : 1;
  }
  int rc = -1;
  uint64_t size = (uint64_t)st.st_size;
  uint64_t start = in.base = t->good_end;
  uint64_t from = t->compressed ? t->zfed : t->good_end; // the file offset to read on from
  if (lseek(in.fd, (off_t)from, SEEK_SET) < 0) {
    fail(t, from, "cannot seek: %s", strerror(errno));
    goto out;
  }
  if (in_alloc(t, &in, t->compressed ? ND_BUF_SIZE : size - in.base)) goto out;
  if (t->compressed) { // the stream goes on: the bytes it gave past good_end first
    if (zstd_begin(t, &in, t->zd)) goto out;
    if (t->nztail) memcpy(in.buf, t->ztail, t->nztail);
    in.len = t->nztail;
    in.zread = from;
  }
  rc = read_records(t, &in, size, progress, arg);
  if (!rc) rc = zstd_keep(t, &in);
out:
  // in.base moved on as the buffer was reused
  t->last_read = in.zd ? in.zread - from : in.base + in.len - start;
  zstd_end(&in, t);
  free(in.buf);
  close(in.fd);
  return rc;
}

void nd_trace_free(nd_trace_t *t) {
#ifdef ND_HAVE_ZSTD
  if (t->zd) ZSTD_freeDStream(t->zd);
#endif
  free(t->ztail);
  for (size_t i = 0; i < t->nmods; i++) free(t->mods[i].path);
  free(t->mods);
  free(t->mod_slots);
  free(t->mod_order);
  free(t->mod_maxhi);
  free(t->stacks);
  free(t->frames);
  map_free(&t->stack_ids);
  for (size_t i = 0; i < t->npycodes; i++) {
    free(t->pycodes[i].qualname);
    free(t->pycodes[i].filename);
  }
  free(t->pycodes);
  map_free(&t->pycode_ids);
  free(t->sites);
  map_free(&t->site_keys);
  free(t->leaks);
  map_free(&t->leak_keys);
  free(t->ws);
  map_free(&t->ws_keys);
  free(t->escapes);
  free(t->growth);
  free(t->breaches);
  free(t->spills);
  free(t->series);
  for (size_t i = 0; i < 1 + ND_TRACE_SNAP_LAST; i++) free(t->snap[i].sites);
  memset(t, 0, sizeof *t);
}

// ---------------------------------------------------------------- sites over time

// A second pass (trace_read.h, nd_trace_site_series): the file was checked by nd_trace_read up
// to t->good_end, but it may have changed since (a job still writing it appends, which the
// bound ignores; one replaced is caught by its header, a record that no longer fits, or a
// different count of COUNTERS records). Every size is still checked before it is used.

static int series_fail(nd_site_series_t *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err, sizeof s->err, fmt, ap);
  va_end(ap);
  return -1;
}

#define SERIES_SLOTS ND_TRACE_MAX_POINTS // points per site; on_counters never holds more

static void sites_keep_even(void *arg, size_t n) {
  nd_site_series_t *s = arg;
  for (size_t i = 0; 2 * i < n; i++) {
    s->mono_ns[i] = s->mono_ns[2 * i];
    for (size_t j = 0; j < s->nsites; j++)
      s->live[j * SERIES_SLOTS + i] = s->live[j * SERIES_SLOTS + 2 * i];
  }
}

// A point at each COUNTERS record, kept or dropped as on_counters keeps t->series (thin_step).
static void series_point(nd_site_series_t *s, const uint64_t *cur, uint64_t ns, uint64_t *stride,
                         bool *extra) {
  thin_t th = {&s->seen, stride, extra, &s->npoints};
  size_t i = thin_step(th, SERIES_SLOTS, sites_keep_even, s);
  s->mono_ns[i] = ns;
  for (size_t j = 0; j < s->nsites; j++) s->live[j * SERIES_SLOTS + i] = cur[j];
}

int nd_trace_site_series(const nd_trace_t *t, const uint32_t *sites, size_t n,
                         nd_site_series_t *s) {
  memset(s, 0, sizeof *s);
  s->nsites = n;
  nd_in_t in = {.fd = -1};
  uint64_t *cur = NULL; // each site's latest value
  int rc = -1;
  // A pipe (or a named one) was read once; opening a named one again would wait for a writer.
  // O_NONBLOCK for a file replaced by one since: fstat below says so without waiting.
  if (!t->regular) return 1;
  in.fd = open(t->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (in.fd < 0) return series_fail(s, "cannot open it again: %s", strerror(errno));
  struct stat st;
  if (fstat(in.fd, &st)) {
    series_fail(s, "cannot stat: %s", strerror(errno));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = 1;
    goto out;
  }
  if ((uint64_t)st.st_size < (t->compressed ? t->zfed : t->good_end)) {
    series_fail(s, "the file is shorter than when it was read");
    goto out;
  }
  s->mono_ns = malloc(SERIES_SLOTS * sizeof *s->mono_ns);
  s->live = calloc(n ? n * SERIES_SLOTS : 1, sizeof *s->live);
  s->peak = calloc(n ? n : 1, sizeof *s->peak);
  cur = calloc(n ? n : 1, sizeof *cur);
  uint64_t size = t->compressed ? ND_BUF_SIZE : t->good_end;
  in.cap = size < ND_BUF_SIZE - 4096 ? size + 4096 : ND_BUF_SIZE;
  in.buf = malloc(in.cap);
  if (!s->mono_ns || !s->live || !s->peak || !cur || !in.buf) {
    series_fail(s, "out of memory");
    goto out;
  }
  if (fill(&in, t->hdr.header_size)) {
    series_fail(s, "read error: %s", strerror(errno));
    goto out;
  }
  // The header's first part as read (the reader fills in a later part that was unknown or
  // normalizes it): its pid, start times, host and program say whether this is the same trace.
  if (in.len < t->hdr.header_size || memcmp(in.buf, &t->hdr, ND_TRACE_HEADER_V11_SIZE)) {
    series_fail(s, "the file changed since it was read");
    goto out;
  }
  in.pos = t->hdr.header_size;
  if (t->compressed) {
    nd_trace_t tmp = {.err_off = 0};
    if (zstd_begin(&tmp, &in, NULL)) {
      series_fail(s, "%s", tmp.err);
      goto out;
    }
  }
  uint64_t stride = 1;
  bool extra = false;
  while (in.base + in.pos < t->good_end) {
    nd_rec_t r;
    if (fill(&in, sizeof r)) {
      series_fail(s, "read error: %s", in_error(&in));
      goto out;
    }
    if (in.len - in.pos < sizeof r) break; // checked below: the counts differ
    memcpy(&r, in.buf + in.pos, sizeof r);
    if (r.size > ND_TRACE_MAX_RECORD) break;
    if (fill(&in, sizeof r + r.size)) {
      series_fail(s, "read error: %s", in_error(&in));
      goto out;
    }
    if (in.len - in.pos < sizeof r + r.size) break;
    const char *p = in.buf + in.pos + sizeof r;
    int var;
    if (r.tag == ND_REC_SITE && r.size == fixed_size(r.tag, t->hdr.version, &var)) {
      nd_rec_site_t x;
      memset(&x, 0, sizeof x);
      memcpy(&x, p, r.size); // the version 4 form holds both byte counts
      for (size_t j = 0; j < n; j++) {
        const nd_rec_site_t *k = &t->sites[sites[j]].rec;
        if (k->stack_id == x.stack_id && k->kind == x.kind)
          cur[j] = x.alloc_bytes > x.free_bytes ? x.alloc_bytes - x.free_bytes : 0;
      }
    } else if (r.tag == ND_REC_COUNTERS && r.size == sizeof(nd_rec_counters_t)) {
      uint64_t ns;
      memcpy(&ns, p, sizeof ns); // mono_ns comes first
      series_point(s, cur, ns, &stride, &extra);
    }
    in.pos += sizeof r + r.size;
  }
  if (s->seen != t->series_seen || s->npoints != t->npoints) {
    series_fail(s, "the file changed since it was read");
    goto out;
  }
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < s->npoints; i++)
      if (s->live[j * SERIES_SLOTS + i] > s->peak[j]) s->peak[j] = s->live[j * SERIES_SLOTS + i];
  rc = 0;
out:
  zstd_end(&in, NULL);
  free(cur);
  free(in.buf);
  if (in.fd >= 0) close(in.fd);
  return rc;
}

void nd_site_series_free(nd_site_series_t *s) {
  free(s->mono_ns);
  free(s->live);
  free(s->peak);
  s->mono_ns = s->live = s->peak = NULL;
  s->npoints = s->nsites = 0;
}
