// SPDX-License-Identifier: MIT
// symbolize.c: IP -> function, file:line with libdwfl (see symbolize.h). Every trace module gets
// its own Dwfl session holding that one ELF file, so modules that overlapped in the process over
// time (dlclose, then dlopen of another library at the same address) never conflict. Only
// absolute paths to regular files are opened; anything else prints as path+offset. Function
// names are demangled here, once per frame (frames are cached per IP).
//
// Symbol names come from libdwfl's reading of each module's symbol tables, looked up in a sorted
// index made once per module (nd_symidx_*): dwfl_module_addrinfo scans the whole table on every
// call, which for a library of a million symbols (libtorch_cuda.so) and an exact trace's tens of
// thousands of distinct return addresses took minutes. The index gives libdwfl's answers (see
// nd_symidx_lookup); test_symidx compares the two on real libraries, address by address.
#include "analyse/symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MOD_UNTRIED = 0, MOD_OPEN, MOD_FAILED };

typedef struct nd_mod_dw {
  int state;
  Dwfl *dwfl;
  nd_symidx_t *syms; // made at the module's first lookup; NULL when it could not be
} nd_mod_dw_t;

#define FRAME_CHUNK 4096

struct nd_sym {
  const nd_trace_t *t;
  bool debuginfo;
  nd_mod_dw_t *mods; // parallel to t->mods as they were at nd_sym_new
  size_t nmods;      // their number then (t->nmods grows as a followed trace is read on)
  // The frames, in chunks of FRAME_CHUNK that never move (a frame's pointer lives until
  // nd_sym_free): no allocation per frame, and no array of pointers beside them.
  nd_frame_t **chunks;
  size_t nframes, nchunks, chunks_cap;
  nd_map_t cache; // ip -> index of its frame
};

static char *debuginfo_path; // NULL: libdwfl's default search path
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

nd_sym_t *nd_sym_new(const nd_trace_t *t, bool debuginfo) {
  nd_sym_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->t = t;
  s->debuginfo = debuginfo;
  s->nmods = t->nmods;
  s->mods = calloc(t->nmods ? t->nmods : 1, sizeof *s->mods);
  if (!s->mods) {
    free(s);
    return NULL;
  }
  return s;
}

// Frees the frames' strings and empties the cache; the chunks are kept for the next frames.
static void forget(nd_sym_t *s) {
  for (size_t i = 0; i < s->nframes; i++) {
    nd_frame_t *f = &s->chunks[i / FRAME_CHUNK][i % FRAME_CHUNK];
    free((char *)f->at.function);
    free((char *)f->at.mangled);
    free((char *)f->at.file);
    for (size_t k = 0; k < f->ninlined; k++) {
      free((char *)f->inlined_into[k].function);
      free((char *)f->inlined_into[k].mangled);
      free((char *)f->inlined_into[k].file);
    }
    free(f->inlined_into);
  }
  s->nframes = 0;
  nd_map_clear(&s->cache);
}

void nd_sym_trim(nd_sym_t *s, size_t max_frames) {
  if (s->nframes > max_frames) forget(s);
}

void nd_sym_free(nd_sym_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nmods; i++) {
    nd_symidx_free(s->mods[i].syms);
    if (s->mods[i].dwfl) dwfl_end(s->mods[i].dwfl);
  }
  forget(s);
  for (size_t i = 0; i < s->nchunks; i++) free(s->chunks[i]);
  free(s->chunks);
  nd_map_free(&s->cache);
  free(s->mods);
  free(s);
}

static nd_mod_dw_t *module_dwfl(nd_sym_t *s, const nd_module_t *m) {
  nd_mod_dw_t *d = &s->mods[m - s->t->mods];
  if (d->state == MOD_UNTRIED) {
    d->state = MOD_FAILED;
    if (m->path[0] != '/') return NULL; // "[vdso]", "linux-vdso.so.1", "": nothing to open
    // O_NONBLOCK and the S_ISREG check: a path naming a FIFO or a device must not hang us.
    int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
      close(fd);
      return NULL;
    }
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (!dwfl) {
      close(fd);
      return NULL;
    }
    const char *name = strrchr(m->path, '/') + 1;
    if (!dwfl_report_elf(dwfl, *name ? name : m->path, m->path, fd, m->base, true)) {
      close(fd); // consumed only on success
      dwfl_end(dwfl);
      return NULL;
    }
    dwfl_report_end(dwfl, NULL, NULL);
    d->dwfl = dwfl;
    d->state = MOD_OPEN;
  }
  return d->state == MOD_OPEN ? d : NULL;
}

static char *dup_or_null(const char *p) { return p ? strdup(p) : NULL; }

#ifdef ND_HAVE_CXA_DEMANGLE
// The Itanium C++ ABI's demangler, from the C++ runtime ndmemreport is linked with (libstdc++;
// libc++abi has the same), declared here so that this file stays C. It returns a malloc'd string.
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);
#endif

char *nd_sym_demangle(const char *name) {
#ifdef ND_HAVE_CXA_DEMANGLE
  if (!name || name[0] != '_' || name[1] != 'Z') return NULL;
  // "_Znwm@@GLIBCXX_3.4": the version is not part of the mangling; demangled without it, then
  // appended as it was ("operator new(unsigned long)@@GLIBCXX_3.4").
  const char *at = strchr(name, '@');
  char *base = at ? strndup(name, (size_t)(at - name)) : NULL;
  if (at && !base) return NULL;
  int status = -1;
  char *d = __cxa_demangle(base ? base : name, NULL, NULL, &status);
  free(base);
  if (status != 0 || !d) {
    free(d);
    return NULL;
  }
  if (at) {
    size_t dl = strlen(d), vl = strlen(at);
    char *v = realloc(d, dl + vl + 1);
    if (!v) {
      free(d);
      return NULL;
    }
    memcpy(v + dl, at, vl + 1);
    d = v;
  }
  return d;
#else
  (void)name;
  return NULL;
#endif
}

// l->function from a symbol or linkage name: demangled, with the name kept in l->mangled.
static void set_function(nd_loc_t *l, const char *name) {
  char *d = nd_sym_demangle(name);
  char *m = d ? strdup(name) : NULL;
  if (d && !m) { // out of memory: the name as it is
    free(d);
    d = NULL;
  }
  l->function = d ? d : dup_or_null(name);
  l->mangled = m;
}

// A DWARF function's name, following abstract origins; the linkage name first, which matches
// the ELF symbol names used for frames that are not inlined.
static const char *die_name(Dwarf_Die *die) {
  Dwarf_Attribute a;
  const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
  if (!n) n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
  if (!n) n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
  return n;
}

#define MAX_INLINE 64 // inlining levels shown per frame

// Fills f->at.function from an inlined function and f->inlined_into from the scopes around pc,
// when pc is in inlined code. Leaves f untouched otherwise (or without DWARF).
static void inline_chain(Dwfl_Module *mod, Dwarf_Addr pc, nd_frame_t *f, const char *symbol) {
  Dwarf_Addr bias = 0;
  Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
  if (!cu) return;
  Dwarf_Die *scopes = NULL, inl;
  int n = dwarf_getscopes(cu, pc - bias, &scopes);
  // The innermost function-like scope. Past an inlined instance dwarf_getscopes goes on in the
  // inlined function's own (abstract) context; the concrete callers come from
  // dwarf_getscopes_die on the instance, as eu-addr2line -i does.
  int first = -1;
  for (int i = 0; i < n && first < 0; i++) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram ||
        tag == DW_TAG_entry_point)
      first = i;
  }
  if (first < 0 || dwarf_tag(&scopes[first]) != DW_TAG_inlined_subroutine) {
    free(scopes);
    return;
  }
  inl = scopes[first];
  free(scopes);
  scopes = NULL;
  n = dwarf_getscopes_die(&inl, &scopes);
  Dwarf_Die *fn[MAX_INLINE + 1];
  int nfn = 0;
  for (int i = 0; i < n && nfn <= MAX_INLINE; i++) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram ||
        tag == DW_TAG_entry_point)
      fn[nfn++] = &scopes[i];
    if (tag != DW_TAG_inlined_subroutine && nfn) break; // reached the real function
  }
  // fn[0 .. nfn-1]: the inlined instances, innermost first, then (normally) the real function;
  // without it (no DWARF for it, or too deep) the ELF symbol stands for the real function.
  bool real = nfn && dwarf_tag(fn[nfn - 1]) != DW_TAG_inlined_subroutine;
  size_t callers = (size_t)nfn - (real ? 1 : 0);
  if (nfn && callers && (f->inlined_into = calloc(callers, sizeof *f->inlined_into))) {
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(cu, &files, &nfiles)) nfiles = 0;
    free((char *)f->at.function);
    free((char *)f->at.mangled);
    set_function(&f->at, die_name(fn[0]));
    for (size_t i = 0; i < callers; i++) {
      nd_loc_t *l = &f->inlined_into[i];
      bool outermost = i + 1 == callers;
      set_function(l, outermost && symbol ? symbol : die_name(fn[i + 1]));
      // fn[i] was inlined at its DW_AT_call_file:DW_AT_call_line, in its caller
      Dwarf_Attribute a;
      Dwarf_Word file = 0, line = 0;
      if (!dwarf_formudata(dwarf_attr(fn[i], DW_AT_call_file, &a), &file) && file < nfiles)
        l->file = dup_or_null(dwarf_filesrc(files, file, NULL, NULL));
      if (l->file && !dwarf_formudata(dwarf_attr(fn[i], DW_AT_call_line, &a), &line))
        l->line = line > 0x7fffffff ? 0 : (int)line;
      f->ninlined++;
    }
  }
  free(scopes);
}

// ---- The symbol index: one module's symbols, sorted, for dwfl_module_addrinfo's answers in
// O(log n). The rules are libdwfl's (elfutils' __libdwfl_addrsym): symbols without a name, not
// defined, or of type SECTION, FILE or TLS never match; the global symbols are searched first and
// the local ones only when no global one matched; a symbol with a size matches the addresses it
// covers, the one that starts closest below the address winning (at the same start, the stronger
// binding, then the smaller size, then the first in the table); a symbol without a size (an
// assembly label) matches only where no sized symbol covers the address, it is the closest
// symbol start below it, no sized symbol below ends above it, and it is in the address's section
// (an absolute one: at its address only). Where libdwfl's answer depends on the table's order
// among nested or coinciding symbols, the index takes the closest start. A lookup that would
// walk far (a symbol spanning thousands of others) asks libdwfl instead.

typedef struct nd_symrange {
  uint64_t lo, hi;  // [lo, hi): a sized symbol's bytes; a label's hi is lo
  const char *name; // in libelf's string table: lives as long as the module's Dwfl
  uint32_t ndx;     // its index in the symbol table: ties go to the first
  uint32_t sec;     // a label's section, by its address (absolute labels: ND_SEC_ABS)
  int bind;         // libdwfl's order: 3 global, 2 weak, 1 local, 0 other
} nd_symrange_t;

typedef struct nd_symtab { // the global symbols, or the local ones
  nd_symrange_t *sized;
  uint64_t *maxhi; // maxhi[i]: the highest end among sized[0 .. i]
  size_t nsized;
  nd_symrange_t *labels;
  size_t nlabels;
} nd_symtab_t;

typedef struct nd_secrange {
  uint64_t lo, hi; // [lo, hi] as loaded: libdwfl counts a section's end in it
  uint32_t ndx;
} nd_secrange_t;

struct nd_symidx {
  nd_symtab_t tab[2]; // [0] globals, [1] locals
  bool locals;        // the module has a separate local part (libdwfl searches it second)
  nd_secrange_t *secs; // the loaded (SHF_ALLOC) sections of the main file, by address
  size_t nsecs;
};

#define ND_SEC_ABS UINT32_MAX
#define WALK_MAX 256 // sized symbols visited below an address before libdwfl is asked instead

static int binding(const GElf_Sym *sym) {
  switch (GELF_ST_BIND(sym->st_info)) {
  case STB_GLOBAL: return 3;
  case STB_WEAK: return 2;
  case STB_LOCAL: return 1;
  default: return 0;
  }
}

// Sized symbols by start; at one start the least preferred first, so that a walk down from the
// top meets the preferred one first: weaker binding, then larger size, then later in the table.
static int cmp_sized(const void *pa, const void *pb) {
  const nd_symrange_t *a = pa, *b = pb;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  if (a->bind != b->bind) return a->bind < b->bind ? -1 : 1;
  if (a->hi - a->lo != b->hi - b->lo) return a->hi - a->lo > b->hi - b->lo ? -1 : 1;
  return a->ndx > b->ndx ? -1 : a->ndx < b->ndx;
}

// Labels by start; at one start the one libdwfl keeps (its last in the table) last.
static int cmp_labels(const void *pa, const void *pb) {
  const nd_symrange_t *a = pa, *b = pb;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  return a->ndx < b->ndx ? -1 : a->ndx > b->ndx;
}

static bool push(nd_symrange_t **v, size_t *n, size_t *cap, const nd_symrange_t *r) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 256;
    nd_symrange_t *p = realloc(*v, c * sizeof *p);
    if (!p) return false;
    *v = p;
    *cap = c;
  }
  (*v)[(*n)++] = *r;
  return true;
}

static int cmp_secs(const void *pa, const void *pb) {
  const nd_secrange_t *a = pa, *b = pb;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  return a->hi < b->hi ? -1 : a->hi > b->hi;
}

// The section holding a (libdwfl's __libdwfl_find_section_ndx): its index, or SHN_UNDEF for an
// address in none. A section's end counts as in it, unless the next one starts there.
static uint32_t section_of(const nd_symidx_t *x, uint64_t a) {
  size_t l = 0, u = x->nsecs;
  while (l < u) {
    size_t i = (l + u) / 2;
    if (a < x->secs[i].lo) u = i;
    else if (a > x->secs[i].hi) l = i + 1;
    else {
      if (a == x->secs[i].hi && i + 1 < x->nsecs && a == x->secs[i + 1].lo) i++;
      return x->secs[i].ndx;
    }
  }
  return SHN_UNDEF;
}

static bool load_sections(nd_symidx_t *x, Dwfl_Module *mod) {
  Dwarf_Addr bias = 0;
  Elf *elf = dwfl_module_getelf(mod, &bias);
  if (!elf) return true; // no sections: every address is in none, as for libdwfl
  size_t n = 0, cap = 0;
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(elf, scn))) {
    GElf_Shdr mem, *sh = gelf_getshdr(scn, &mem);
    if (!sh || !(sh->sh_flags & SHF_ALLOC)) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      nd_secrange_t *p = realloc(x->secs, cap * sizeof *p);
      if (!p) return false;
      x->secs = p;
    }
    x->secs[n++] = (nd_secrange_t){sh->sh_addr + bias, sh->sh_addr + bias + sh->sh_size,
                                   (uint32_t)elf_ndxscn(scn)};
  }
  x->nsecs = n;
  qsort(x->secs, n, sizeof *x->secs, cmp_secs);
  return true;
}

static bool fill(nd_symidx_t *x, nd_symtab_t *t, Dwfl_Module *mod, int from, int to) {
  size_t cap_s = 0, cap_l = 0;
  for (int i = from; i < to; i++) {
    GElf_Sym sym;
    GElf_Addr value;
    GElf_Word shndx;
    const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, NULL, NULL);
    int type = GELF_ST_TYPE(sym.st_info);
    if (!name || !*name || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
        type == STT_FILE || type == STT_TLS)
      continue;
    nd_symrange_t r = {.lo = value, .hi = value + sym.st_size, .name = name, .ndx = (uint32_t)i,
                       .bind = binding(&sym)};
    if (!sym.st_size) r.sec = shndx >= SHN_LORESERVE ? ND_SEC_ABS : section_of(x, value);
    if (r.hi < r.lo) r.hi = UINT64_MAX; // a size past the address space: covers the rest
    if (!(sym.st_size ? push(&t->sized, &t->nsized, &cap_s, &r)
                      : push(&t->labels, &t->nlabels, &cap_l, &r)))
      return false;
  }
  qsort(t->sized, t->nsized, sizeof *t->sized, cmp_sized);
  qsort(t->labels, t->nlabels, sizeof *t->labels, cmp_labels);
  if (t->nsized && !(t->maxhi = malloc(t->nsized * sizeof *t->maxhi))) return false;
  uint64_t m = 0;
  for (size_t i = 0; i < t->nsized; i++) t->maxhi[i] = m = t->sized[i].hi > m ? t->sized[i].hi : m;
  return true;
}

void nd_symidx_free(nd_symidx_t *x) {
  if (!x) return;
  for (int k = 0; k < 2; k++) {
    free(x->tab[k].sized);
    free(x->tab[k].maxhi);
    free(x->tab[k].labels);
  }
  free(x->secs);
  free(x);
}

nd_symidx_t *nd_symidx_new(Dwfl_Module *mod) {
  int n = dwfl_module_getsymtab(mod);
  int first_global = dwfl_module_getsymtab_first_global(mod);
  if (n < 0 || first_global < 0) return NULL;
  nd_symidx_t *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  // As libdwfl: the globals from first_global (0: a table with no local part, from 1), then
  // the locals [1, first_global).
  x->locals = first_global > 1;
  if (!load_sections(x, mod) || !fill(x, &x->tab[0], mod, first_global ? first_global : 1, n) ||
      (x->locals && !fill(x, &x->tab[1], mod, 1, first_global))) {
    nd_symidx_free(x);
    return NULL;
  }
  return x;
}

// How many of v (sorted by lo) start at or below pc.
static size_t upto(const nd_symrange_t *v, size_t n, uint64_t pc) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].lo <= pc) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The sized symbol of t covering pc with the closest start, or NULL; *far when the walk was cut.
// *label_floor: the highest end among the sized symbols that start at or below pc.
static const nd_symrange_t *covering(const nd_symtab_t *t, uint64_t pc, uint64_t *label_floor,
                                     bool *far) {
  size_t i = upto(t->sized, t->nsized, pc);
  if (!i) return NULL;
  if (t->maxhi[i - 1] > *label_floor) *label_floor = t->maxhi[i - 1];
  for (size_t j = i, steps = 0; j-- > 0 && t->maxhi[j] > pc;) {
    if (t->sized[j].hi > pc) return &t->sized[j];
    if (++steps == WALK_MAX) {
      *far = true;
      return NULL;
    }
  }
  return NULL;
}

// The label of t closest below pc (the last at its start), or NULL.
static const nd_symrange_t *label_below(const nd_symtab_t *t, uint64_t pc) {
  size_t i = upto(t->labels, t->nlabels, pc);
  return i ? &t->labels[i - 1] : NULL;
}

// Whether pc lies in the label's section (libdwfl's same_section, which for dwfl_module_addrinfo
// finds both sections by address): an absolute label only at its own address.
static bool in_section(const nd_symidx_t *x, const nd_symrange_t *l, uint64_t pc) {
  if (l->sec == ND_SEC_ABS) return l->lo == pc;
  return l->sec == section_of(x, pc);
}

const char *nd_symidx_lookup(nd_symidx_t *x, Dwfl_Module *mod, uint64_t pc) {
  GElf_Off off;
  GElf_Sym sym;
  uint64_t floor = 0; // the lowest start a label may have (libdwfl's min_label)
  bool far = false;
  const nd_symrange_t *hit = x ? covering(&x->tab[0], pc, &floor, &far) : NULL;
  if (!x || far) return dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
  if (hit) return hit->name;
  const nd_symrange_t *label = label_below(&x->tab[0], pc);
  // the locals, unless a global label sits exactly at pc
  if (x->locals && !(label && label->lo == pc && in_section(x, label, pc))) {
    hit = covering(&x->tab[1], pc, &floor, &far);
    if (far) return dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
    if (hit) return hit->name;
    const nd_symrange_t *l = label_below(&x->tab[1], pc);
    if (l && (!label || l->lo >= label->lo)) label = l; // at one start the local one, read later
  }
  if (label && label->lo >= floor && in_section(x, label, pc)) return label->name;
  return NULL;
}

static void resolve(nd_sym_t *s, nd_frame_t *f) {
  if (nd_trace_is_cut(s->t, f->ip)) { // no module: the renderers print the function alone
    f->at.function = strdup("[native frames past NDMEM_DEPTH not recorded]");
    return;
  }
  if (nd_trace_is_pyframe(s->t, f->ip)) {
    const nd_pycode_t *c = nd_trace_pycode(s->t, f->ip);
    f->python = true;
    f->at.function = c ? strdup(c->qualname) : NULL;
    f->at.file = c ? strdup(c->filename) : NULL;
    f->at.line = (int)nd_pyframe_line(f->ip); // 24 bits
    return;
  }
  const nd_module_t *m = s->t->nmods ? nd_trace_module_of(s->t, f->ip) : NULL;
  if (!m) return;
  f->module = m->path;
  f->offset = f->ip - m->base;
  if (!s->debuginfo) return;
  nd_mod_dw_t *d = module_dwfl(s, m);
  if (!d) return;
  // A return address: the call is the instruction before it.
  Dwarf_Addr pc = f->ip ? f->ip - 1 : 0;
  Dwfl_Module *mod = dwfl_addrmodule(d->dwfl, pc);
  if (!mod) return; // the file on disk does not cover this address: not what was loaded
  if (!d->syms) d->syms = nd_symidx_new(mod);
  const char *symbol = nd_symidx_lookup(d->syms, mod, pc);
  set_function(&f->at, symbol);
  Dwfl_Line *line = dwfl_module_getsrc(mod, pc);
  if (line) {
    int lineno = 0;
    const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
    if (file) {
      f->at.file = strdup(file);
      f->at.line = lineno;
    }
  }
  inline_chain(mod, pc, f, symbol);
}

char *nd_sym_path_norm(char *out, size_t cap, const char *path) {
  if (!cap) return out;
  size_t n = strlen(path);
  if (n >= cap) { // as it is
    memcpy(out, path, cap - 1);
    out[cap - 1] = 0;
    return out;
  }
  bool abs = path[0] == '/';
  size_t len = 0, kept = 0; // kept: components written that a ".." may take back
  if (abs) out[len++] = '/';
  for (const char *p = path; *p;) {
    while (*p == '/') p++;
    const char *c = p;
    while (*p && *p != '/') p++;
    size_t cl = (size_t)(p - c);
    if (!cl || (cl == 1 && c[0] == '.')) continue;
    if (cl == 2 && c[0] == '.' && c[1] == '.') {
      if (kept) { // take the last component back, with its '/'
        while (len > (abs ? 1 : 0) && out[len - 1] != '/') len--;
        if (len > (abs ? 1 : 0)) len--;
        kept--;
        continue;
      }
      if (abs) continue; // "/.." is "/"
    }
    if (len > (abs ? 1 : 0)) out[len++] = '/';
    memcpy(out + len, c, cl);
    len += cl;
    if (!(cl == 2 && c[0] == '.' && c[1] == '.')) kept++;
  }
  if (!len) out[len++] = '.';
  out[len] = 0;
  return out;
}

static nd_frame_t *frame_at(const nd_sym_t *s, size_t i) {
  return &s->chunks[i / FRAME_CHUNK][i % FRAME_CHUNK];
}

const nd_frame_t *nd_sym_frame(nd_sym_t *s, uint64_t ip) {
  long known = nd_map_get(&s->cache, ip);
  if (known >= 0) return frame_at(s, (size_t)known);
  if (s->nframes >= UINT32_MAX - 1) return NULL; // the cache's values are 32-bit
  if (s->nframes == s->nchunks * FRAME_CHUNK) {
    if (s->nchunks == s->chunks_cap) {
      size_t n = s->chunks_cap ? s->chunks_cap * 2 : 16;
      nd_frame_t **p = realloc(s->chunks, n * sizeof *p);
      if (!p) return NULL;
      s->chunks = p;
      s->chunks_cap = n;
    }
    if (!(s->chunks[s->nchunks] = malloc(FRAME_CHUNK * sizeof(nd_frame_t)))) return NULL;
    s->nchunks++;
  }
  if (nd_map_put(&s->cache, ip, (uint32_t)s->nframes)) return NULL;
  nd_frame_t *f = frame_at(s, s->nframes++);
  *f = (nd_frame_t){.ip = ip};
  resolve(s, f); // never fails: a frame is named as far as it can be
  return f;
}
