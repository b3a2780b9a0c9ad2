// SPDX-License-Identifier: MIT
// python.c: the Python frames behind a tracked allocation. When the process runs CPython 3.10 to
// 3.14, the stack of every tracked block (exact or sampled; the fast path never comes here) gets
// the calling thread's Python frames in place of the evaluator frames that run them, as py-spy's
// and memray's native modes show them, and the interpreter's own frames between an evaluator and
// the allocation are left out, so that one line is one site whichever specialised path of the
// evaluator reached it. Frames are read from the interpreter's structures directly, as py-spy
// and austin read them from outside: the allocating thread reads its own frame stack, which no
// other thread changes, so neither the GIL nor an allocation is needed. The layouts are per
// minor version (py_layout.h; tests/unit/test_py_layout checks them against the headers where
// they exist, and from 3.13 detection compares them with the interpreter's own debug offsets).
// A free-threaded build is detected and left unread. Python frames are kept whatever NDMEM_DEPTH
// cut of the native frames: the thread's frames beyond the native capture follow a cut marker,
// up to NDMEM_PY_DEPTH. Code objects become PYCODE records once, by identity (a code object that
// died and whose address was reused is a new one).
#include "stacks/python.h"
#include "stacks/replay.h"
#include "stacks/unwind.h"
#include "runtime/module.h"

#include "runtime/config.h"
#include "common/fmt.h"
#include "common/os.h"
#include "runtime/shim.h"
#include "runtime/lookup.h"
#include "common/trace_format.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

// Function pointers travel as void *, as dlsym hands them out.
#pragma GCC diagnostic ignored "-Wpedantic"

#include "stacks/py_layout.h"

static struct {
  int state; // enum nd_python_state (atomic)
  unsigned version_hex;
  const py_layout_t *layout;
  int (*initialized)(void);
  void *(*this_tstate)(void);
  int (*addr2line)(void *code, int addr);
  const void *code_type, *str_type;
  const void *long_type; // PyLong_Type, for the reachability scan (nd_py_long_type)
  uintptr_t eval_lo, eval_hi;     // _PyEval_EvalFrameDefault
  uintptr_t interp_lo, interp_hi; // the object that holds it: the interpreter
  uint64_t stacks, with_python, frames, dropped; // atomic
  int py_max; // NDMEM_PY_DEPTH
  int said;
  int tried; // detection ran since the module map last changed (atomic)
} py;

static int nd_py_on; // a supported interpreter was found and NDMEM_PYTHON is on (atomic)

// ---------------------------------------------------------------- code objects

typedef struct code_ent {
  const void *code, *qualname, *filename; // identity: a reused address has other fields
  int firstlineno;
  uint32_t id; // UINT32_MAX: empty slot
} code_ent_t;

typedef struct pending { // a PYCODE record waiting for the trace writer
  nd_rec_pycode_t rec;
  char *str; // qualname then filename
} pending_t;

static struct {
  int lock;
  code_ent_t *v;
  size_t cap, n;
  pending_t *pend;
  size_t pend_cap, written; // records [written, n) are not in the trace yet
} codes;

static uint64_t LDU(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

#define AT(p, off, type) (*(type const *)((const char *)(p) + (off)))

// A compact str as UTF-8 into out (at most cap - 1 bytes, NUL-terminated); "?" when it is not one.
static size_t py_str(const void *o, char *out, size_t cap) {
  size_t k = 0;
  if (!o || AT(o, 8, const void *) != py.str_type) {
    out[0] = '?', out[1] = 0;
    return 1;
  }
  int64_t len = AT(o, 16, int64_t);
  uint32_t state = AT(o, 32, uint32_t);
  unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || len < 0 || (kind != 1 && kind != 2 && kind != 4)) {
    out[0] = '?', out[1] = 0;
    return 1;
  }
  const unsigned char *d = (const unsigned char *)o + (ascii ? py.layout->str_ascii : py.layout->str_compact);
  for (int64_t i = 0; i < len; i++) {
    uint32_t c = kind == 1 ? d[i] : kind == 2 ? ((const uint16_t *)d)[i] : ((const uint32_t *)d)[i];
    unsigned char b[4];
    size_t m = 0;
    if (c < 0x80) b[m++] = (unsigned char)c;
    else if (c < 0x800) b[m++] = (unsigned char)(0xC0 | c >> 6), b[m++] = (unsigned char)(0x80 | (c & 0x3F));
    else if (c < 0x10000)
      b[m++] = (unsigned char)(0xE0 | c >> 12), b[m++] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)),
      b[m++] = (unsigned char)(0x80 | (c & 0x3F));
    else
      b[m++] = (unsigned char)(0xF0 | c >> 18), b[m++] = (unsigned char)(0x80 | ((c >> 12) & 0x3F)),
      b[m++] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)), b[m++] = (unsigned char)(0x80 | (c & 0x3F));
    if (k + m >= cap) break;
    memcpy(out + k, b, m);
    k += m;
  }
  out[k] = 0;
  return k;
}

static size_t slot_of(const void *code, size_t cap) {
  return (size_t)(((uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

static int grow(void) {
  size_t cap = codes.cap ? codes.cap * 2 : 1024;
  code_ent_t *v = nd_os_map(cap * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < cap; i++) v[i].id = UINT32_MAX;
  for (size_t i = 0; i < codes.cap; i++) {
    if (codes.v[i].id == UINT32_MAX) continue;
    size_t j = slot_of(codes.v[i].code, cap);
    while (v[j].id != UINT32_MAX) j = (j + 1) & (cap - 1);
    v[j] = codes.v[i];
  }
  if (codes.v) nd_os_unmap(codes.v, codes.cap * sizeof *codes.v);
  codes.v = v;
  codes.cap = cap;
  return 0;
}

// n bytes for a code object's names, from chunks of ndmem's own pages (never freed: the PYCODE
// records and ndmem's lines read them for the life of the process). A page each made 4.8 MiB
// for the 1 227 code objects an `import torch` names.
static char *strings(size_t n) {
  static char *chunk;
  static size_t left;
  if (n > left) {
    size_t size = n > 65536 ? n : 65536;
    if (!(chunk = nd_os_map(size))) return left = 0, NULL;
    left = size;
  }
  char *r = chunk;
  chunk += n;
  left -= n;
  return r;
}

// The id of a live code object, interned on first sight; UINT32_MAX when out of memory.
static uint32_t code_id(const void *code) {
  const void *q = AT(code, py.layout->co_qualname, const void *), *f = AT(code, py.layout->co_filename, const void *);
  int first = AT(code, py.layout->co_firstlineno, int);
  nd_spin_lock(&codes.lock);
  uint32_t id = UINT32_MAX;
  if ((codes.n + 1) * 2 > codes.cap && grow() != 0) goto out;
  size_t j = slot_of(code, codes.cap);
  for (; codes.v[j].id != UINT32_MAX; j = (j + 1) & (codes.cap - 1)) {
    code_ent_t *e = &codes.v[j];
    if (e->code != code) continue;
    if (e->qualname == q && e->filename == f && e->firstlineno == first) {
      id = e->id;
      goto out;
    }
    break; // the address of a code object that died: this slot becomes the new one
  }
  if (codes.n >= codes.pend_cap) {
    size_t cap = codes.pend_cap ? codes.pend_cap * 2 : 1024;
    pending_t *p = nd_os_map(cap * sizeof *p);
    if (!p) goto out;
    // The old table stays mapped (the tables together are at most twice the last): ndmem's
    // lines read it without the lock (nd_py_code_names).
    if (codes.pend) memcpy(p, codes.pend, codes.n * sizeof *p);
    __atomic_store_n(&codes.pend, p, __ATOMIC_RELEASE);
    codes.pend_cap = cap;
  }
  char qs[ND_PYCODE_MAX_STR + 1], fs[ND_PYCODE_MAX_STR + 1];
  size_t ql = py_str(q, qs, sizeof qs), fl = py_str(f, fs, sizeof fs);
  char *str = strings(ql + fl);
  if (!str) goto out;
  memcpy(str, qs, ql);
  memcpy(str + ql, fs, fl);
  id = (uint32_t)codes.n;
  codes.pend[codes.n] = (pending_t){{id, first > 0 ? (uint32_t)first : 0, (uint32_t)ql, (uint32_t)fl}, str};
  codes.v[j] = (code_ent_t){code, q, f, first, id};
  __atomic_store_n(&codes.n, codes.n + 1, __ATOMIC_RELEASE);
out:
  nd_spin_unlock(&codes.lock);
  return id;
}

void nd_py_write_pending(nd_py_record_fn rec, void *ctx) {
  if (!__atomic_load_n(&codes.n, __ATOMIC_ACQUIRE)) return;
  nd_spin_lock(&codes.lock);
  for (; codes.written < codes.n; codes.written++) {
    pending_t *p = &codes.pend[codes.written];
    rec(ctx, &p->rec, p->str);
  }
  nd_spin_unlock(&codes.lock);
}

// Without the lock, so that a line written from a fatal signal's final flush never waits for
// it or reads a table it was moving: entries and tables are never unmapped, an entry is complete
// before codes.n counts it, and a table that moved (before the entry was written, or holding a copy
// of it) was published before that count: whichever table is read holds entry id.
int nd_py_code_names(uint64_t id, const char **qualname, size_t *qlen, const char **filename,
                     size_t *flen) {
  if (id >= __atomic_load_n(&codes.n, __ATOMIC_ACQUIRE)) return -1;
  const pending_t *p = &__atomic_load_n(&codes.pend, __ATOMIC_ACQUIRE)[id];
  *qualname = p->str;
  *qlen = p->rec.qualname_len;
  *filename = p->str + p->rec.qualname_len;
  *flen = p->rec.filename_len;
  return 0;
}

void nd_py_mark_unwritten(void) {
  codes.lock = 0;
  codes.written = 0;
}

// ---------------------------------------------------------------- detection

// The one stderr line for an interpreter whose frames are not read (py.version_hex), and why.
static void say_not_read(const char *why) {
  if (py.said++ || nd_quiet()) return;
  nd_buf_t b;
  nd_buf_reset(&b);
  nd_buf_str(&b, "ndmem: Python ");
  nd_buf_u64(&b, py.version_hex >> 24);
  nd_buf_char(&b, '.');
  nd_buf_u64(&b, (py.version_hex >> 16) & 0xff);
  nd_buf_char(&b, '.');
  nd_buf_u64(&b, (py.version_hex >> 8) & 0xff);
  nd_buf_str(&b, why);
  nd_buf_str(&b, ": native frames only");
  nd_buf_line(&b, 2);
}

// The extent [lo, hi) of the function at f, from its symbol's size.
static int extent(const void *f, uintptr_t *lo, uintptr_t *hi) {
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size) return -1;
  *lo = (uintptr_t)info.dli_saddr;
  *hi = *lo + sym->st_size;
  return 0;
}

// The PT_LOAD extent of the object holding ctx[0], into ctx[1], ctx[2].
static int range_of(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  uintptr_t *r = ctx;
  uintptr_t lo, hi;
  nd_module_range(info, &lo, &hi);
  if (r[0] >= lo && r[0] < hi) {
    r[1] = lo, r[2] = hi;
    return 1;
  }
  return 0;
}

const void *nd_py_long_type(unsigned *minor) {
  *minor = (py.version_hex >> 16) & 0xff;
  return py.long_type;
}

void nd_py_modules_changed(void) { __atomic_store_n(&py.tried, 0, __ATOMIC_RELEASE); }

// A symbol of the interpreter, from ndmem's thread or the last flush: a failed look-up leaves its
// message in the thread's dlerror state (nd_dlsym_own tells why it is not cleared).
static void *look(const char *name) { return nd_dlsym_own(RTLD_DEFAULT, name, 0); }

void nd_py_setup(void) {
  if (!nd_cfg.python) __atomic_store_n(&py.state, ND_PY_OFF, __ATOMIC_RELEASE);
  py.py_max = (int)nd_cfg.py_depth;
}

// PY_VERSION_HEX of the interpreter: Py_Version from 3.11, Py_GetVersion's text before (3.10).
static unsigned version_hex(void) {
  const unsigned long *ver = look("Py_Version");
  if (ver) return (unsigned)*ver;
  const char *(*getver)(void) = (const char *(*)(void))look("Py_GetVersion");
  const char *v = getver ? getver() : NULL;
  if (!v) return 0;
  unsigned part[3] = {0, 0, 0};
  for (int i = 0; i < 3; i++) {
    while (*v >= '0' && *v <= '9') part[i] = part[i] * 10 + (unsigned)(*v++ - '0');
    if (*v != '.') break;
    v++;
  }
  return part[0] << 24 | (part[1] & 0xff) << 16 | (part[2] & 0xff) << 8 | 0xf0;
}

// Whether objects have the free-threaded build's header (ob_tid, ob_mutex, ob_gc_bits,
// ob_ref_local, ob_ref_shared: ob_type at 24, not 8): PyType_Type's own type is itself.
static int free_threaded(void) {
  const char *type = look("PyType_Type");
  return type && AT(type, 8, const void *) != type && AT(type, 24, const void *) == type;
}

// From 3.13 the interpreter publishes where its own fields lie (_PyRuntime.debug_offsets, for
// debuggers and profilers): a build that says free-threaded, or whose offsets differ from the
// layout's (another build option, a patched interpreter), is not read. 1: agrees; 0: differs;
// -1: free-threaded.
static int debug_offsets_agree(const py_layout_t *L) {
  if (L->dbg_version == ND_PY_NO_FIELD) return 1; // before 3.13: none published
  const char *rt = look("_PyRuntime");
  if (!rt || memcmp(rt, "xdebugpy", 8) != 0) return 0;
  if (AT(rt, L->dbg_free_threaded, uint64_t)) return -1;
  if ((AT(rt, L->dbg_version, uint64_t) >> 16) != (py.version_hex >> 16)) return 0;
  const size_t have[DBG_N] = {L->ts_frame,       L->fr_previous, L->fr_code,        L->fr_instr,
                              L->fr_owner,       L->co_filename, L->co_qualname,    L->co_firstlineno,
                              L->co_code,        L->str_ascii};
  for (int i = 0; i < DBG_N; i++)
    if (AT(rt, L->dbg[i], uint64_t) != have[i]) return 0;
  return 1;
}

void nd_py_detect(void) {
  int st = __atomic_load_n(&py.state, __ATOMIC_ACQUIRE), zero = 0;
  if (st != ND_PY_NONE ||
      !__atomic_compare_exchange_n(&py.tried, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return; // decided, or another thread is looking
  py.version_hex = version_hex();
  if (!py.version_hex) return; // no interpreter (yet)
  unsigned minor = (py.version_hex >> 16) & 0xff, major = py.version_hex >> 24;
  if (major == 3 && minor >= 10 && !free_threaded()) py.long_type = look("PyLong_Type");
  const py_layout_t *L = NULL;
  for (size_t i = 0; i < sizeof nd_py_layouts / sizeof nd_py_layouts[0]; i++)
    if (major == 3 && nd_py_layouts[i].minor == minor) L = &nd_py_layouts[i];
  int state = ND_PY_UNSUPPORTED, agree = 0;
  if (free_threaded()) {
    state = ND_PY_FREE_THREADED;
  } else if (L && (agree = debug_offsets_agree(L)) != 1) {
    state = agree < 0 ? ND_PY_FREE_THREADED : ND_PY_LAYOUT_DIFFERS;
  } else if (L) {
    py.layout = L;
    py.initialized = (int (*)(void))look("Py_IsInitialized");
    py.this_tstate = (void *(*)(void))look("PyGILState_GetThisThreadState");
    py.addr2line = (int (*)(void *, int))look("PyCode_Addr2Line");
    py.code_type = look("PyCode_Type");
    py.str_type = look("PyUnicode_Type");
    void *eval = look("_PyEval_EvalFrameDefault");
    int ok = py.initialized && py.this_tstate && py.addr2line && py.code_type && py.str_type && eval &&
             extent(eval, &py.eval_lo, &py.eval_hi) == 0;
    if (ok) {
      uintptr_t r[3] = {(uintptr_t)eval, 0, 0};
      dl_iterate_phdr(range_of, r);
      py.interp_lo = r[1], py.interp_hi = r[2];
      ok = r[2] > r[1];
    }
    if (ok) state = ND_PY_ON;
  }
  switch (state) {
  case ND_PY_ON:
    __atomic_store_n(&nd_py_on, 1, __ATOMIC_RELEASE);
    nd_replay_invalidate(); // stacks replayed until now were read without Python frames
    break;
  case ND_PY_FREE_THREADED: say_not_read(" is a free-threaded build (not read)"); break;
  case ND_PY_LAYOUT_DIFFERS:
    say_not_read(" lays out its frames otherwise than its version's (_PyRuntime.debug_offsets)");
    break;
  default: say_not_read(" is not supported (3.10 to 3.14 are)"); break;
  }
  __atomic_store_n(&py.state, state, __ATOMIC_RELEASE);
}

// ---------------------------------------------------------------- frames

// Each thread remembers the frames it read, by (code object, last instruction): a loop's stacks
// repeat, and a line costs a walk of the code object's line table (PyCode_Addr2Line, linear in
// the table). The code object's name is compared too, so an entry of a code object that died and
// whose address and instruction were reused by another is not taken for it. The cache holds
// PY_CACHE entries: a training step's frames are thousands of (code, instruction) pairs (`import
// torch` alone reads 7 000 distinct ones, each about 350 times), so a few dozen slots missed
// nearly always. A thread's cache is ndmem's own memory, made at its first Python frame and kept
// for the next thread when it ends (nd_py_thread_exit).
typedef struct py_cached {
  const void *code, *instr, *qualname;
  uint64_t frame;
} py_cached_t;
#define PY_CACHE_BITS 11
#define PY_CACHE (1u << PY_CACHE_BITS) // 64 KiB a thread
typedef struct py_tcache {
  struct py_tcache *next; // in tcaches.free
  struct py_tcache *all;  // every cache (never freed): their counts are summed (nd_py_record)
  uint64_t stacks, with_python, frames, dropped; // this cache's threads' (plain stores)
  py_cached_t e[PY_CACHE];
} py_tcache_t;
static __thread py_tcache_t *py_tc __attribute__((tls_model("initial-exec")));
static struct {
  int lock;
  py_tcache_t *free;
  py_tcache_t *all; // atomic
} tcaches;

static py_tcache_t *tcache(void) {
  py_tcache_t *c = py_tc;
  if (ND_LIKELY(c != NULL)) return c;
  nd_spin_lock(&tcaches.lock);
  c = tcaches.free;
  if (c) tcaches.free = c->next;
  nd_spin_unlock(&tcaches.lock);
  if (!c && (c = nd_os_map(sizeof *c)) != NULL) { // zero-filled; NULL: read without a cache
    py_tcache_t *head = __atomic_load_n(&tcaches.all, __ATOMIC_RELAXED);
    do c->all = head;
    while (!__atomic_compare_exchange_n(&tcaches.all, &head, c, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
  }
  return py_tc = c;
}

static void thread_exit(nd_tls_t *t) {
  (void)t;
  py_tcache_t *c = py_tc;
  if (!c) return;
  py_tc = NULL;
  nd_spin_lock(&tcaches.lock);
  c->next = tcaches.free;
  tcaches.free = c;
  nd_spin_unlock(&tcaches.lock);
}

// The child's only thread: no other can hold the lock (a list cut by the fork loses a cache).
static void atfork_child(nd_tls_t *t) { (void)t, tcaches.lock = 0; }

#define PY_WALK_MAX 100000 // frames one stack's walk may visit (Python's own limit is ~1000 deep)

static uint64_t frame_of(const char *code, const char *instr, const char *start) {
  const void *q = AT(code, py.layout->co_qualname, const void *);
  py_tcache_t *tc = tcache();
  py_cached_t scratch, *c = &scratch;
  if (tc) {
    // 3.10's "instruction" is a small offset shared by every code object: both are hashed
    uint64_t h = ((uintptr_t)instr ^ (uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull;
    c = &tc->e[h >> (64 - PY_CACHE_BITS)];
    if (c->code == code && c->instr == instr && c->qualname == q) return c->frame;
  }
  uint32_t id = code_id(code);
  if (id == UINT32_MAX) return 0;
  int line = py.addr2line((void *)code, (int)(instr - start));
  *c = (py_cached_t){code, instr, q, nd_pyframe(id, line > 0 ? (uint32_t)line : 0)};
  return c->frame;
}

static int in_eval(uintptr_t ip) { return ip >= py.eval_lo && ip < py.eval_hi; }
static int in_interp(uintptr_t ip) { return ip >= py.interp_lo && ip < py.interp_hi; }

// A frame's code object, or NULL when what the frame holds is not one.
static const char *code_of(const char *f) {
  const char *code = (const char *)(AT(f, py.layout->fr_code, uintptr_t) & ~(uintptr_t)py.layout->code_tag);
  return code && AT(code, 8, const void *) == py.code_type ? code : NULL;
}

// Whether f is the frame a C entry into the evaluator pushed (3.12 on), not a Python one.
static int entry_frame(const char *f) {
  return py.layout->owner_entry >= 0 && AT(f, py.layout->fr_owner, char) >= py.layout->owner_entry;
}

// Keeps the frame of code at instr (out[*k], while room) or counts it lost. Only a frame kept is
// named: one past NDMEM_PY_DEPTH costs neither the code table's lock nor a line-table walk, and
// its code object no PYCODE record.
static void keep(const char *code, const char *instr, const char *start, uint64_t *out, int *k,
                 int room, uint64_t *dropped) {
  uint64_t fr = *k < room ? frame_of(code, instr, start) : 0;
  if (fr) out[(*k)++] = fr;
  else (*dropped)++;
}

// The frame record f was read (its code, instruction and owner): kept in the trail, which the
// replay checks against the thread's records later (nd_py_trail_same).
static uintptr_t owner_word(const char *f) {
  const py_layout_t *L = py.layout;
  uintptr_t w = 0;
  if (L->fr_owner != ND_PY_NO_FIELD) w |= (unsigned char)AT(f, L->fr_owner, char);
  if (L->fr_is_entry != ND_PY_NO_FIELD) w |= (uintptr_t)(unsigned char)AT(f, L->fr_is_entry, char) << 8;
  return w;
}
static uintptr_t instr_word(const char *f) {
  const py_layout_t *L = py.layout;
  return L->model == PY_FRAME_OBJECTS ? (uintptr_t)(unsigned)AT(f, L->fr_instr, int)
                                      : AT(f, L->fr_instr, uintptr_t);
}
static inline void visit(nd_py_trail_t *t, const char *f) {
  if (!t || t->n < 0) return;
  if (t->n == ND_REPLAY_PY) {
    t->n = -1;
    return;
  }
  t->node[t->n++] = (nd_py_node_t){(uintptr_t)f, AT(f, py.layout->fr_code, uintptr_t),
                                   instr_word(f), owner_word(f)};
}

// One evaluator's run of Python frames, innermost first, from *fp into out (at most room; the
// rest counted in *dropped); *fp moves past the run. 3.10: one frame object per evaluator call;
// 3.11: the run ends with the frame the C entry pushed (is_entry); 3.12 on: at the frame the C
// entry pushed (owned by the C stack, or the interpreter in 3.14), which is skipped. *budget
// bounds the frames one stack's walk visits: a chain that loops (a corrupt or half-built frame)
// ends the walk instead of the process.
static int run(const char **fp, uint64_t *out, int room, uint64_t *dropped, int *budget,
               nd_py_trail_t *trail) {
  const py_layout_t *L = py.layout;
  const char *f = *fp;
  int k = 0;
  if (L->model == PY_FRAME_OBJECTS) {
    if (f && --*budget >= 0) {
      visit(trail, f);
      const char *code = AT(f, L->fr_code, const char *);
      if (code && AT(code, 8, const void *) == py.code_type) {
        intptr_t lasti = AT(f, L->fr_instr, int); // code units; -1 before the first
        keep(code, (const char *)(lasti * 2), NULL, out, &k, room, dropped);
        *fp = AT(f, L->fr_previous, const char *);
        return k;
      }
    }
    if (f) (*dropped)++;
    *fp = NULL; // not a frame as expected, or a loop: stop
    return k;
  }
  while (f && entry_frame(f)) {
    visit(trail, f);
    f = AT(f, L->fr_previous, const char *);
  }
  while (f) {
    if (--*budget < 0) {
      (*dropped)++;
      f = NULL;
      break;
    }
    visit(trail, f);
    if (entry_frame(f)) {
      f = AT(f, L->fr_previous, const char *);
      break;
    }
    const char *code = code_of(f);
    if (!code) { // not a frame as expected: stop
      (*dropped)++;
      f = NULL;
      break;
    }
    const char *instr = AT(f, L->fr_instr, const char *), *start = code + L->co_code;
    int incomplete = AT(f, L->fr_owner, char) != OWNED_BY_GENERATOR &&
                     instr < start + 2 * (size_t)AT(code, L->co_firsttraceable, int);
    int entry = L->fr_is_entry != ND_PY_NO_FIELD && AT(f, L->fr_is_entry, char);
    if (!incomplete) keep(code, instr, start, out, &k, room, dropped);
    f = AT(f, L->fr_previous, const char *);
    if (entry) break;
  }
  *fp = f;
  return k;
}

// The thread's innermost frame record (NULL: none), from its thread state.
static const char *top_frame(const char *ts) {
  const char *f = AT(ts, py.layout->ts_frame, const char *);
  if (f && py.layout->cf_current != ND_PY_NO_FIELD) f = AT(f, py.layout->cf_current, const char *);
  return f;
}

int nd_py_trail_same(const nd_replay_t *e) {
  if (!py.initialized()) return e->py_ts == 0;
  const char *ts = py.this_tstate();
  if ((uintptr_t)ts != e->py_ts) return 0;
  if (!ts) return 1;
  const py_layout_t *L = py.layout;
  const char *f = top_frame(ts);
  for (int i = 0; i < e->npy; i++) {
    const nd_py_node_t *r = &e->py[i];
    if ((uintptr_t)f != r->f || AT(f, L->fr_code, uintptr_t) != r->code ||
        instr_word(f) != r->instr || owner_word(f) != r->owner)
      return 0;
    f = AT(f, L->fr_previous, const char *);
  }
  return (uintptr_t)f == e->py_end;
}

int nd_py_rewrite(const uintptr_t *ips, int n, int depth, uintptr_t *out, nd_py_trail_t *trail) {
  if (trail) trail->ts = 0, trail->n = 0, trail->end = 0, trail->frames = trail->dropped = 0;
  if (!__atomic_load_n(&nd_py_on, __ATOMIC_ACQUIRE)) {
    if (trail) trail->n = -2; // no interpreter: nothing to check
    return -1;
  }
  py_tcache_t *tc = tcache(); // its counts: no line shared with other threads
  if (tc) ND_BUMP(tc->stacks, 1);
  else __atomic_fetch_add(&py.stacks, 1, __ATOMIC_RELAXED);
  if (!py.initialized()) return -1;
  const char *ts = py.this_tstate();
  if (trail) trail->ts = (uintptr_t)ts;
  if (!ts) return -1;
  const char *f = top_frame(ts);
  if (!f) return -1;
  // Native frames are kept up to NDMEM_DEPTH, Python frames up to NDMEM_PY_DEPTH, each within its
  // own bound. From the first native frame left out, only Python frames follow, after the cut
  // marker (once: at most 128 + 1 + 112 frames, ND_STACK_MAX). Python frames are read straight
  // into out (a marker put ahead of a run is taken back when the run had none).
  uint64_t dropped = 0;
  int npy = 0, nat = 0, k = 0, cut = 0, marked = 0, budget = PY_WALK_MAX, room = py.py_max;
  for (int i = 0; i < n; i++) {
    uintptr_t ip = ips[i];
    if (in_eval(ip - 1)) { // a return address: the call is the byte before it
      int mark = cut && !marked;
      if (mark) out[k] = (uintptr_t)ND_FRAME_CUT;
      int m = run(&f, (uint64_t *)out + k + mark, room - npy, &dropped, &budget, trail);
      if (m) k += m + mark, npy += m, marked |= mark;
      continue;
    }
    if (in_interp(ip - 1)) continue; // the interpreter's own frames
    if (nat < depth) out[k++] = ip, nat++;
    else cut = 1;
  }
  // The thread's Python frames beyond the native frames captured (NDMEM_DEPTH reached, or the
  // unwinder stopped): kept after the cut marker, for the frames between were not recorded.
  while (f) {
    int mark = !marked;
    if (mark) out[k] = (uintptr_t)ND_FRAME_CUT;
    int m = run(&f, (uint64_t *)out + k + mark, room - npy, &dropped, &budget, trail);
    if (m) k += m + mark, npy += m, marked |= mark;
    else if (!f) break;
  }
  if (trail) {
    trail->end = (uintptr_t)f;
    trail->frames = (uint16_t)npy;
    trail->dropped = dropped > UINT16_MAX ? UINT16_MAX : (uint16_t)dropped;
  }
  if (tc) {
    ND_BUMP(tc->with_python, npy != 0);
    ND_BUMP(tc->frames, (uint64_t)npy);
    ND_BUMP(tc->dropped, dropped);
  } else {
    if (npy) __atomic_fetch_add(&py.with_python, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&py.frames, (uint64_t)npy, __ATOMIC_RELAXED);
    if (dropped) __atomic_fetch_add(&py.dropped, dropped, __ATOMIC_RELAXED);
  }
  return npy ? k : -1; // no Python frame: the native frames as they were
}

void nd_py_record(nd_rec_python_t *r) {
  memset(r, 0, sizeof *r);
  r->version_hex = py.version_hex;
  r->state = (uint32_t)__atomic_load_n(&py.state, __ATOMIC_ACQUIRE);
  r->stacks = LDU(&py.stacks);
  r->with_python = LDU(&py.with_python);
  r->frames = LDU(&py.frames);
  r->dropped = LDU(&py.dropped);
  for (const py_tcache_t *c = __atomic_load_n(&tcaches.all, __ATOMIC_ACQUIRE); c; c = c->all) {
    r->stacks += LDU(&c->stacks);
    r->with_python += LDU(&c->with_python);
    r->frames += LDU(&c->frames);
    r->dropped += LDU(&c->dropped);
  }
  uint64_t rp[4]; // the replayed stacks: read once, counted as read each time
  nd_replay_py_counts(rp);
  r->stacks += rp[0], r->with_python += rp[1], r->frames += rp[2], r->dropped += rp[3];
  r->codes = __atomic_load_n(&codes.n, __ATOMIC_ACQUIRE);
}

int nd_py_state(void) { return __atomic_load_n(&py.state, __ATOMIC_ACQUIRE); }

ND_MODULE(nd_py_module) = {.name = "python", .rank = 12, .order = 6, .atfork_child = atfork_child,
                           .thread_exit = thread_exit};
