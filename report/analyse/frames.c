// SPDX-License-Identifier: MIT
// frames.c: a stack's frames by name (frames.h): the one rule the text report and merge name a
// frame by (nd_rep_frame_text); the names collapsed stacks, diff and the flame graphs give each
// frame and the functions it was inlined into (nd_rep_frame_name), walked outermost first;
// stacks ordered by those names; what a site weighs; and a stack's stable key from its symbolized
// frames (nd_rep_stack_key), which diff and merge match sites on.
#include "analyse/frames.h"

#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- weights

const char *const nd_rep_weight_names[ND_WEIGHTS] = {"site-peak", "total", "live", "peak"};

int nd_rep_parse_weight(const char *word) {
  for (int i = 0; word && i < ND_WEIGHTS; i++)
    if (!strcmp(word, nd_rep_weight_names[i])) return i;
  return -1;
}

uint64_t nd_rep_site_weight(const nd_trace_t *t, const nd_site_t *site, enum nd_weight w) {
  const nd_rec_site_t *s = &site->rec;
  switch (w) {
  case ND_BY_TOTAL: return s->alloc_bytes;
  case ND_BY_LIVE: return nd_rep_site_live(s);
  case ND_BY_PEAK: return nd_rep_site_at_peak(t, site);
  default: return nd_rep_site_peak_touched(site);
  }
}

bool nd_rep_peak_known(const nd_trace_t *t, unsigned kind) {
  return kind < ND_TRACE_KINDS && t->peak[ND_PEAK_GROUP(kind)].epoch;
}

uint64_t nd_rep_site_at_peak(const nd_trace_t *t, const nd_site_t *s) {
  // Without a SITE_PEAK of the moment's epoch the site has not changed since: what it holds.
  // Without a moment (a trace before version 15, or a group whose total never passed the
  // counters' first publish): what it holds at the end (nd_flame_measure says so).
  uint64_t v = nd_rep_peak_known(t, s->rec.kind) &&
                       s->at_peak_epoch == t->peak[ND_PEAK_GROUP(s->rec.kind)].epoch
                   ? s->at_peak
                   : nd_rep_site_live(&s->rec);
  uint64_t u = nd_rep_site_untouched(s);
  return v > u ? v - u : 0;
}

uint64_t nd_rep_site_untouched(const nd_site_t *s) {
  return nd_rep_site_live(&s->rec) ? s->untouched : s->untouched_last;
}

uint64_t nd_rep_site_peak_touched(const nd_site_t *s) {
  uint64_t p = s->rec.peak_live_bytes, u = nd_rep_site_untouched(s);
  return p > u ? p - u : 0;
}

// ---------------------------------------------------------------- the text report's names

// A frame's name: the one rule for the text report and merge (frames.h, ND_NAME_*).
void nd_rep_loc_text(sbuf_t *b, const nd_frame_t *f, const nd_loc_t *l, unsigned how) {
  bool base = how & ND_NAME_BASE;
  const char *module = base ? nd_rep_base_name(f->module) : f->module;
  if (l->function && l->file && (how & ND_NAME_MODULE)) {
    sb_put(b, module, strlen(module));
    sb_put(b, "!", 1);
  }
  if (l->function) {
    sb_put(b, l->function, strlen(l->function));
    sb_put(b, " (", 2);
  }
  if (l->file) {
    const char *file = base ? nd_rep_base_name(l->file) : l->file;
    sb_put(b, file, strlen(file));
    sb_fmt(b, ":%d", l->line);
  } else {
    sb_put(b, module, strlen(module));
    sb_fmt(b, "+0x%llx", (unsigned long long)f->offset);
  }
  if (l->function) sb_put(b, ")", 1);
}

void nd_rep_frame_text(sbuf_t *b, const nd_frame_t *f, unsigned how) {
  sb_put(b, "", 0);
  if (f->python) {
    const char *fn = f->at.function && *f->at.function ? f->at.function : "?";
    const char *file = f->at.file && *f->at.file ? f->at.file : "?";
    if (how & ND_NAME_PY) sb_put(b, "py ", 3);
    sb_put(b, fn, strlen(fn));
    sb_put(b, " (", 2);
    sb_put(b, file, strlen(file));
    if (f->at.line) sb_fmt(b, ":%d", f->at.line);
    sb_put(b, ")", 1);
  } else if (f->module) {
    nd_rep_loc_text(b, f, &f->at, how);
  } else if (f->at.function) { // no module: the mark of native frames cut at NDMEM_DEPTH
    sb_put(b, f->at.function, strlen(f->at.function));
  } else {
    sb_fmt(b, "0x%llx", (unsigned long long)f->ip);
  }
}

// ---------------------------------------------------------------- one name per function

// A name as collapsed stacks can hold it: ';' (the frame separator) becomes ':', and control
// characters (a newline ends the line) a space.
static void sb_name(sbuf_t *b, const char *s) {
  size_t at = b->len;
  sb_put(b, s, strlen(s));
  if (b->oom) return;
  for (char *c = b->p + at; *c; c++) {
    if (*c == ';') *c = ':';
    else if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
  }
}

// A native position: its function, or module+0xOFF.
static void sb_loc(sbuf_t *b, const nd_loc_t *l, const nd_frame_t *f) {
  if (l->function) {
    sb_name(b, l->function);
  } else {
    sb_name(b, f->module);
    sb_fmt(b, "+0x%llx", (unsigned long long)f->offset);
  }
}

void nd_rep_free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

void nd_rep_frame_name(sbuf_t *b, const nd_frame_t *f, size_t j) {
  b->len = 0;
  sb_put(b, "", 0);
  if (!f) {
    sb_put(b, "[no frames]", 11);
  } else if (f->python) {
    sb_name(b, f->at.function && *f->at.function ? f->at.function : "?");
    sb_put(b, " (", 2);
    sb_name(b, f->at.file && *f->at.file ? f->at.file : "?");
    if (f->at.line) sb_fmt(b, ":%d", f->at.line);
    sb_put(b, ")", 1);
  } else if (!f->module && f->at.function) { // the mark of native frames cut at NDMEM_DEPTH
    sb_name(b, f->at.function);
  } else if (!f->module) {
    sb_fmt(b, "0x%llx", (unsigned long long)f->ip);
  } else {
    sb_loc(b, j ? &f->inlined_into[j - 1] : &f->at, f);
  }
}

size_t nd_rep_frame_parts(const nd_frame_t *f) {
  return 1 + (f->module && !f->python ? f->ninlined : 0);
}

int nd_rep_frame_names(report_t *r, uint32_t stack, char ***names, size_t *n) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only = nd_rep_python_only(r, s);
  size_t cap = 0, k = 0;
  for (size_t i = 0; i < s->depth; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    cap += nd_rep_frame_parts(f);
  }
  char **v = calloc(cap ? cap : 1, sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < s->depth; i++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[i])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) goto oom;
    for (size_t j = 0, parts = nd_rep_frame_parts(f); j < parts; j++) {
      sbuf_t b = {0};
      nd_rep_frame_name(&b, f, j);
      if (b.oom) {
        free(b.p);
        goto oom;
      }
      v[k++] = b.p;
    }
  }
  *names = v;
  *n = k;
  return 0;
oom:
  nd_rep_free_names(v, k);
  return -1;
}

size_t nd_rep_frames_shown(const report_t *r, const nd_stack_t *s, bool *py_only, size_t *show) {
  const uint64_t *ips = nd_stack_frames(r->t, s);
  size_t n = 0;
  *py_only = nd_rep_python_only(r, s);
  for (size_t i = 0; i < s->depth; i++) n += !*py_only || nd_trace_is_pyframe(r->t, ips[i]);
  *show = r->o->frames && r->o->frames < n ? r->o->frames : n;
  return n;
}

// ---------------------------------------------------------------- walks, outermost first

void nd_rep_walk_init(nd_rep_walk_t *w, report_t *r, uint32_t stack) {
  const nd_stack_t *s = &r->t->stacks[stack];
  *w = (nd_rep_walk_t){.r = r, .ips = nd_stack_frames(r->t, s), .i = s->depth,
                .py_only = nd_rep_python_only(r, s), .none = !s->depth};
}

bool nd_rep_walk_next(nd_rep_walk_t *w, const nd_frame_t **f, size_t *j) {
  if (w->none) {
    w->none = false;
    *f = NULL, *j = 0;
    return true;
  }
  while (!w->j) {
    if (!w->i) return false;
    uint64_t ip = w->ips[--w->i];
    if (w->py_only && !nd_trace_is_pyframe(w->r->t, ip)) continue;
    if (!(w->f = nd_sym_frame(w->r->sym, ip))) return false;
    w->j = nd_rep_frame_parts(w->f);
  }
  *f = w->f, *j = --w->j;
  return true;
}

// Whether a name follows the one last given.
static bool walk_more(const nd_rep_walk_t *w) {
  if (w->j) return true;
  for (size_t i = w->i; i-- > 0;)
    if (!w->py_only || nd_trace_is_pyframe(w->r->t, w->ips[i])) return true;
  return false;
}
static int longest_name(report_t *r, uint32_t stack, sbuf_t *b, size_t *longest) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  bool py_only = nd_rep_python_only(r, s);
  for (size_t k = 0; k < s->depth; k++) {
    if (py_only && !nd_trace_is_pyframe(r->t, ips[k])) continue;
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[k]);
    if (!f) return -1;
    for (size_t j = 0, parts = nd_rep_frame_parts(f); j < parts; j++) {
      nd_rep_frame_name(b, f, j);
      if (b->oom) return -1;
      *longest = b->len > *longest ? b->len : *longest;
    }
  }
  return 0;
}

// ---------------------------------------------------------------- stacks in name order

void nd_rep_names_init(nd_rep_names_t *c, report_t *r) { *c = (nd_rep_names_t){.r = r}; }

void nd_rep_names_free(nd_rep_names_t *c) {
  free(c->a.p);
  free(c->b.p);
  *c = (nd_rep_names_t){.r = c->r};
}

int nd_rep_names_fit(nd_rep_names_t *c, uint32_t stack) {
  size_t longest = 11; // "[no frames]"
  if (longest_name(c->r, stack, &c->a, &longest)) return -1;
  for (int i = 0; i < 2; i++) {
    sbuf_t *b = i ? &c->b : &c->a;
    if (b->cap > longest) continue;
    b->len = 0;
    while (b->len <= longest) sb_put(b, "[no frames]", 11); // room, then emptied by each use
    if (b->oom) return -1;
  }
  return 0;
}

bool nd_rep_names_differ(nd_rep_names_t *c, const nd_frame_t *f, size_t j, const nd_frame_t *g,
                         size_t k) {
  if (f == g && j == k) return false;
  nd_rep_frame_name(&c->a, f, j);
  nd_rep_frame_name(&c->b, g, k);
  return strcmp(c->a.p, c->b.p) != 0;
}

// Name by name from the outermost, the same (frame, part) being the same name; at the first two
// names that differ their bytes decide. Joined, a name's end counts as the ';' that follows it in
// its line (names hold no ';': it became ':', and no control character) or as the line's end (0):
// the order strcmp gives the joined text ("a;b;c"). Else a name's end is its end: the sites that
// share a name at a depth stay together ("a;b" and "a;b;c" are never split by "a;b+0x10").
// Either way a stack that another starts comes first.
int nd_rep_names_cmp(nd_rep_names_t *c, uint32_t x, uint32_t y, bool joined) {
  if (x == y) return 0;
  nd_rep_walk_t u, v;
  nd_rep_walk_init(&u, c->r, x);
  nd_rep_walk_init(&v, c->r, y);
  for (;;) {
    const nd_frame_t *f, *g;
    size_t j, k;
    bool more_u = nd_rep_walk_next(&u, &f, &j), more_v = nd_rep_walk_next(&v, &g, &k);
    if (!more_u || !more_v) return more_u - more_v;
    if (f == g && j == k) continue;
    nd_rep_frame_name(&c->a, f, j);
    nd_rep_frame_name(&c->b, g, k);
    const unsigned char *s = (const unsigned char *)c->a.p, *t = (const unsigned char *)c->b.p;
    size_t p = 0;
    while (s[p] && s[p] == t[p]) p++;
    if (s[p] == t[p]) continue; // the same name from another frame
    unsigned cs = s[p], ct = t[p];
    if (joined && !cs) cs = walk_more(&u) ? ';' : 0;
    if (joined && !ct) ct = walk_more(&v) ? ';' : 0;
    return cs < ct ? -1 : cs > ct;
  }
}

// ---------------------------------------------------------------- stable stack identity

// FNV-1a 64 over what a frame is, never its address: a trace's stack ids and its modules' load
// addresses change from run to run (ASLR), the symbolized frames do not. Every field ends in a
// byte no string holds (0) so that ("ab", "c") and ("a", "bc") differ.
#define FNV_OFF 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * FNV_PRIME;
  return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) {
  if (s) h = fnv_bytes(h, s, strlen(s) + 1);
  else h = fnv_bytes(h, "\1", 2); // NULL: unknown, unlike ""
  return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i)); // little-endian everywhere
  return fnv_bytes(h, b, sizeof b);
}

// A native position: its function, then file:line when known, else the module offset.
static uint64_t key_loc(uint64_t h, const nd_loc_t *l, uint64_t offset) {
  h = fnv_str(h, l->function);
  if (l->file) return fnv_u64(fnv_str(fnv_bytes(h, "L", 1), l->file), (uint64_t)l->line);
  return fnv_u64(fnv_bytes(h, "O", 1), offset);
}

int nd_rep_stack_key(report_t *r, uint32_t stack, uint64_t *key) {
  const nd_stack_t *s = &r->t->stacks[stack];
  const uint64_t *ips = nd_stack_frames(r->t, s);
  uint64_t h = FNV_OFF;
  for (size_t i = 0; i < s->depth; i++) {
    const nd_frame_t *f = nd_sym_frame(r->sym, ips[i]);
    if (!f) return -1;
    if (f->python) { // qualname, file (as a path, normalised), line
      char file[4096];
      h = fnv_str(fnv_bytes(h, "P", 1), f->at.function);
      h = fnv_str(h, f->at.file ? nd_sym_path_norm(file, sizeof file, f->at.file) : NULL);
      h = fnv_u64(h, (uint64_t)f->at.line);
    } else if (!f->module) { // outside every module: only the address is known (not stable)
      h = fnv_u64(fnv_bytes(h, "A", 1), f->ip);
    } else {
      h = fnv_str(fnv_bytes(h, "N", 1), nd_rep_base_name(f->module));
      h = key_loc(h, &f->at, f->offset);
      for (size_t k = 0; k < f->ninlined; k++) h = key_loc(h, &f->inlined_into[k], f->offset);
    }
  }
  *key = fnv_u64(h, s->depth);
  return 0;
}
