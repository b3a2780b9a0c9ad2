// SPDX-License-Identifier: MIT
// symbolize.c: IP -> function, file:line with libdwfl (see symbolize.h). Every trace module gets
// its own Dwfl session holding that one ELF file, so modules that overlapped in the process over
// time (dlclose, then dlopen of another library at the same address) never conflict. Only
// absolute paths to regular files are opened; anything else prints as path+offset. Function
// names are demangled here, once per frame (frames are cached per IP).
#include "symbolize.h"

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
  uint64_t *keys; // ip cache: open addressing, value = index + 1
  uint32_t *vals;
  size_t slots;
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
  if (s->vals) memset(s->vals, 0, s->slots * sizeof *s->vals);
}

void nd_sym_trim(nd_sym_t *s, size_t max_frames) {
  if (s->nframes > max_frames) forget(s);
}

void nd_sym_free(nd_sym_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nmods; i++)
    if (s->mods[i].dwfl) dwfl_end(s->mods[i].dwfl);
  forget(s);
  for (size_t i = 0; i < s->nchunks; i++) free(s->chunks[i]);
  free(s->chunks);
  free(s->keys);
  free(s->vals);
  free(s->mods);
  free(s);
}

static Dwfl *module_dwfl(nd_sym_t *s, const nd_module_t *m) {
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
  return d->dwfl;
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
  Dwfl *dwfl = module_dwfl(s, m);
  if (!dwfl) return;
  // A return address: the call is the instruction before it.
  Dwarf_Addr pc = f->ip ? f->ip - 1 : 0;
  Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
  if (!mod) return; // the file on disk does not cover this address: not what was loaded
  GElf_Off off;
  GElf_Sym sym;
  const char *symbol = dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
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

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

static nd_frame_t *frame_at(const nd_sym_t *s, size_t i) {
  return &s->chunks[i / FRAME_CHUNK][i % FRAME_CHUNK];
}

const nd_frame_t *nd_sym_frame(nd_sym_t *s, uint64_t ip) {
  if (s->slots) {
    for (size_t i = mix64(ip) & (s->slots - 1); s->vals[i]; i = (i + 1) & (s->slots - 1))
      if (s->keys[i] == ip) return frame_at(s, s->vals[i] - 1);
  }
  if ((s->nframes + 1) * 2 > s->slots) {
    size_t n = s->slots ? s->slots * 2 : 256;
    uint64_t *k = malloc(n * sizeof *k);
    uint32_t *v = calloc(n, sizeof *v);
    if (!k || !v) {
      free(k);
      free(v);
      return NULL;
    }
    for (size_t j = 0; j < s->slots; j++) {
      if (!s->vals[j]) continue;
      size_t i = mix64(s->keys[j]) & (n - 1);
      while (v[i]) i = (i + 1) & (n - 1);
      k[i] = s->keys[j];
      v[i] = s->vals[j];
    }
    free(s->keys);
    free(s->vals);
    s->keys = k;
    s->vals = v;
    s->slots = n;
  }
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
  nd_frame_t *f = frame_at(s, s->nframes);
  *f = (nd_frame_t){.ip = ip};
  resolve(s, f);
  size_t i = mix64(ip) & (s->slots - 1);
  while (s->vals[i]) i = (i + 1) & (s->slots - 1);
  s->keys[i] = ip;
  s->vals[i] = (uint32_t)++s->nframes;
  return f;
}
