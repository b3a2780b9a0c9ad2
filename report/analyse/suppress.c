// SPDX-License-Identifier: MIT
// suppress.c: leak suppression rules (see suppress.h): the LeakSanitizer/heaptrack file format,
// a wildcard matcher, and the built-in rules for allocations the C and C++ runtimes (and CPython
// and OpenBLAS) make once and keep for the life of the process. A file's rule matches any field of any frame, as
// LeakSanitizer's do; a built-in says which field of which frame must match, so that it cannot
// hide a leak of the program's own code (no built-in names a whole library).
#include "analyse/suppress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------- matching

// Whether p[0, pe) matches s[0, se): `*` matches any run of characters, anything else itself.
// any_head / any_tail: as if the pattern began / ended with `*` (no anchor there).
static bool wild(const char *p, const char *pe, const char *s, const char *se, bool any_head,
                 bool any_tail) {
  const char *star = any_head ? p : NULL, *retry = s;
  for (;;) {
    if (p == pe && (s == se || any_tail)) return true;
    if (s == se) {
      while (p < pe && *p == '*') p++;
      return p == pe;
    }
    if (p < pe && *p == '*') {
      star = ++p;
      retry = s;
    } else if (p < pe && *p == *s) {
      p++;
      s++;
    } else if (star) {
      p = star;
      s = ++retry;
    } else {
      return false;
    }
  }
}

// `pattern` against s[0, n). An empty name never matches (LeakSanitizer's rule).
static bool match_n(const char *pattern, const char *s, size_t n) {
  if (!s || !n) return false;
  size_t pl = strlen(pattern);
  bool head = pl && pattern[0] == '^';
  const char *p = pattern + head, *pe = pattern + pl;
  bool tail = pe > p && pe[-1] == '$';
  return wild(p, pe - tail, s, s + n, !head, !tail);
}

bool nd_supp_pattern_match(const char *pattern, const char *str) {
  return pattern && str && match_n(pattern, str, strlen(str));
}

// A function name as symbolized, and without its symbol version ("setlocale@@GLIBC_2.2.5"
// matches "^setlocale$" too); either may match.
static bool match_function(const char *pattern, const char *name) {
  if (!name) return false;
  size_t n = strlen(name);
  if (match_n(pattern, name, n)) return true;
  const char *at = strchr(name, '@');
  return at && at > name && match_n(pattern, name, (size_t)(at - name));
}

static bool match_names(const char *pattern, const nd_frame_view_t *f) {
  return match_function(pattern, f->function) || match_function(pattern, f->mangled);
}

// ---------------------------------------------------------------- built-in rules

// What one frame of a built-in must be: every field given must match (a function pattern as a
// file's rule matches names); `unnamed`: the function is unknown (a stripped library's static
// function).
typedef struct frame_pat {
  const char *function, *file, *module;
  bool unnamed;
  bool python; // a Python frame (function: its qualname, file: its file), never a native one
} frame_pat_t;

// One way a built-in matches: frames f[0] and (with n == 2) the next one, its caller. Anywhere in
// the stack, or only at its innermost frame (the one that called the allocator).
typedef struct alt {
  frame_pat_t f[2];
  int n;
  bool innermost;
} alt_t;

typedef struct builtin {
  const char *name, *reason;
  alt_t alt[6];
  int nalt;
} builtin_t;

// A frame's function anywhere in the stack; the same in a module (a path's part); the same at the
// stack's innermost frame only.
#define ANY(fn) {{{.function = (fn)}}, 1, false}
#define IN(fn, mod) {{{.function = (fn), .module = (mod)}}, 1, false}
#define INNERMOST(fn) {{{.function = (fn)}}, 1, true}

// Each built-in is an allocation glibc, libstdc++ or CPython makes once (or once per thread) and
// keeps until exit, with the stacks it was observed with under the shim (Debian 12: glibc 2.36 with
// libc6-dbg, GCC 12's libstdc++.so.6, stripped; NDMEM_TRACK_MIN=0; innermost frame first).
// Without glibc's debug info only exported names appear; the alternatives say which is which.
static const builtin_t builtins[] = {
    // 72704 B, one block, allocated by libstdc++'s own constructor when it is loaded:
    //   #0 libstdc++.so.6+0xa57ba  (malloc(0x11c00) in eh_alloc.cc's static initializer)
    //   #1 call_init (elf/dl-init.c:74)  #2 _dl_init  #3 _dl_start_user   [ld-linux-x86-64.so.2]
    // and, with libstdc++ linked statically (-static-libstdc++, so its symbols are there):
    //   #0 _GLOBAL__sub_I_eh_alloc.cc  #1 call_init (csu/libc-start.c:145)  #2 _start
    {"libstdc++-eh-pool",
     "libstdc++'s emergency exception pool (eh_alloc.cc), allocated once when it is loaded",
     {ANY("^_GLOBAL__sub_I_eh_alloc.cc$"),
      // the pool's constructor as libstdc++'s debug info names it (inlined in the above)
      {{{.function = "^(anonymous namespace)::pool::pool(", .file = "eh_alloc.cc$"}}, 1, false},
      // stripped: a function of libstdc++ without a name, called by the loader's call_init
      {{{.module = "/libstdc++.so", .unnamed = true}, {.module = "/ld-linux"}}, 2, true}},
     3},
    // Every stack of the loader's own allocations has its innermost frame in ld.so: dlopen
    // (no dlclose) of a library with a __thread array, and a thread created and joined:
    //   #0 malloc (include/rtld-malloc.h:56) inlined into _dl_new_object (elf/dl-object.c:199)
    //   #1 _dl_map_object_from_fd  #2 _dl_map_object  #3 dl_open_worker_begin ... #11 dlopen
    //   (and _dl_map_object_deps, _dl_check_map_versions, _dl_find_object_update, strdup in
    //   _dl_map_object: the same way)
    //   #0 calloc (rtld-malloc.h:44) inlined into allocate_dtv (elf/dl-tls.c:401)
    //   #1 _dl_allocate_tls  #2 allocate_stack inlined into pthread_create
    //   #0 malloc (rtld-malloc.h:56) inlined into tls_get_addr_tail (elf/dl-tls.c:721)
    //   #1 __tls_get_addr  #2 the library's function reading its __thread variable
    // ld.so allocates only its own state; a library's constructors run outside these frames.
    {"dynamic-loader",
     "the dynamic loader's own state: loaded libraries' link maps, thread DTVs, TLS blocks",
     {{{{.module = "/ld-linux"}}, 1, true}},
     1},
    //   #0 _IO_file_doallocate (libio/filedoalloc.c:101)  #1 _IO_doallocbuf
    //   #2 _IO_file_overflow  #3 _IO_file_xsputn  #4 _IO_puts / printf / fwrite  ... main
    // (exported: _IO_file_doallocate@@GLIBC_2.2.5). A FILE the program never closed still shows
    // as its own allocation (fopen's); only the buffer is the runtime's.
    {"libc-stdio-buffers",
     "glibc's stdio buffers (stdout, stderr, each FILE), allocated at a stream's first use",
     {ANY("^_IO_file_doallocate$")},
     1},
    // setlocale(LC_ALL, "C.UTF-8"): 30 stacks, all through setlocale (exported):
    //   #0 _nl_intern_locale_data  #1 _nl_load_locale  #2 _nl_find_locale  #3 setlocale  #4 main
    //   #0 read_alias_file  #1 _nl_expand_alias  #2 _nl_find_locale  #3 setlocale
    //   #0 _nl_make_l10nflist  ...  #2 _nl_find_locale  #3 setlocale; #0 strdup #1 setlocale
    // gettext's catalogs, looked up by strerror in that locale:
    //   #0 _nl_make_l10nflist  #1 _nl_find_domain  #2 __dcigettext  #3 translate inlined into
    //   strerror_l  #4 main
    // (newlocale's own allocation, the locale_t, is the program's to freelocale: not here.)
    {"libc-locale",
     "glibc's locale data and message catalogs, loaded once and kept for the process",
     {ANY("^setlocale$"), ANY("^_nl_find_locale$"), ANY("^_nl_find_domain$")},
     3},
    //   #0 __vasprintf_internal  #1 __asprintf  #2 strerror_l (string/strerror_l.c:45)  #3 main
    // (strerror(12345): "Unknown error 12345", kept per thread until the next call)
    {"libc-strerror",
     "strerror's message buffer, kept per thread until its next call",
     {ANY("^strerror$"), ANY("^strerror_l$")},
     2},
    // getpwuid(0), getpwnam("root"), getgrgid(0):
    //   #0 __nss_module_allocate  #1 nss_action_parse  #2 process_line inlined into
    //   nss_database_check_reload_and_get  #3 __nss_passwd_lookup2  #4 getpwuid_r  #5 getpwuid
    //   (and __nss_action_allocate, global_state_allocate under __nss_passwd_lookup2)
    //   #0 getpwuid (nss/getXXbyYY.c:121)  #1 main     (the result buffer the call reuses)
    //   #0 getgrgid (nss/getXXbyYY.c:121)  #1 main
    {"libc-nss",
     "glibc's NSS state (nsswitch.conf, modules) and getpwnam-style reused result buffers",
     {ANY("^__nss_*_lookup2$"),
      INNERMOST("^getpwnam$"),
      INNERMOST("^getpwuid$"),
      INNERMOST("^getgrnam$"),
      INNERMOST("^getgrgid$")},
     5},
    // localtime(&t) with TZ=Europe/Paris, and with TZ=UTC0 (no file):
    //   #0 __tzfile_read (time/tzfile.c:279)  #1 tzset_internal  #2 __tz_convert  #3 main
    //   #0 __tzstring_len  #1 __tzfile_read  #2 tzset_internal  #3 __tz_convert
    //   #0 strdup  #1 tzset_internal (time/tzset.c:402)  #2 __tz_convert  #3 main
    // tzset_internal and __tz_convert are glibc-internal: without its debug info these frames
    // have no names (tzset is matched where the program called it).
    {"libc-tz",
     "glibc's time zone data (TZ, /etc/localtime), loaded once by tzset and localtime",
     {ANY("^tzset_internal$"), ANY("^__tz_convert$"), ANY("^tzset$")},
     3},
    // OpenBLAS 0.3.21 (Debian's libopenblas0-pthread, exported names), numpy's matmul in each
    // of a ThreadPoolExecutor's threads: one 128 MiB mapping per thread that calls BLAS (more
    // for its own workers), made at the thread's first call and kept in OpenBLAS's table of
    // buffers for the next one, to the end of the process:
    //   #0 libopenblas.so.0+0x3738f6 (alloc_mmap)  #1 blas_memory_alloc  #2 cblas_dgemm
    //   #3 _multiarray_umath...so  ... task (numpy_pool.py:24)
    //   #0 libopenblas.so.0+0x3738f6  #1 blas_memory_alloc  #2 libopenblas.so.0+0x374844
    //   #3 start_thread   (its own worker threads)
    // blas_memory_alloc is OpenBLAS's (libopenblas, or its libblas.so.3 where that is OpenBLAS
    // itself) and hands out nothing but these buffers, which the program never sees.
    {"openblas-buffers",
     "OpenBLAS's work buffers (blas_memory_alloc), one per thread that calls it, kept for reuse",
     {IN("^blas_memory_alloc$", "/libopenblas"), IN("^blas_memory_alloc$", "/libblas.so")},
     2},
    // CPython 3.11 (Debian's /usr/bin/python3.11, exported names) ending a PyTorch loop; 1 MiB
    // allocated while the interpreter was torn down and left for exit:
    //   #0 python3.11+0x..  #1 python3.11+0x..  #2 _PyObject_GC_NewVar  #3 python3.11+0x..
    //   #4 python3.11+0x..  #5 Py_FinalizeEx  ... Py_RunMain
    // Whatever the interpreter allocates during its own shutdown outlives the program's work by
    // definition; a leak of the program's shows with the program's frames, born before it.
    {"python-finalize",
     "CPython's interpreter shutdown (Py_FinalizeEx): what it allocates while tearing down",
     {ANY("^Py_FinalizeEx$")},
     1},
    // PyTorch's CPU loop under --exact (python3-torch 1.13), 8 B from a static destructor that
    // glibc's exit() ran after main returned:
    //   #0 c10::impl::PyInterpreter::disarm() (libc10.so)
    //   #1 __run_exit_handlers (stdlib/exit.c:116)  #2 exit (stdlib/exit.c:146)
    //   #3 __libc_start_call_main  #4 __libc_start_main  #5 _start
    // Whatever exit() runs (atexit handlers, static destructors, _dl_fini's library destructors)
    // allocates after the program's work is over and can never accumulate; a leak of the
    // program's shows with its own frames, born before it. Only glibc's frames (exit is exported;
    // __run_exit_handlers is named with libc6-dbg), never a program's function of that name.
    {"exit-handlers",
     "what exit() runs after the program's work: atexit handlers and static destructors",
     {IN("^exit$", "/libc.so"), IN("^__run_exit_handlers$", "/libc.so")},
     2},
    // PyTorch 1.13's DataLoader (python3-torch): the main process rebuilds every storage a fork
    // worker shared (file_descriptor strategy), and torch.multiprocessing's SharedCache keeps a
    // weak reference to each (an 80 B handle, its address held in a Python int), freed once the
    // cache passes its limit (128, then twice the live ones) and at no fixed time before exit:
    //   #0 libtorch_python.so+0x573104  #1 libtorch_python.so+0x574273
    //   #2 rebuild_storage_fd (torch/multiprocessing/reductions.py:310)  #3 Queue.get ...
    //   #8 <module> (train.py:18)
    // Only these Python functions of torch's own file, never a program's of that name.
    {"torch-shared-cache",
     "PyTorch's cache of the storages fork workers shared (torch.multiprocessing SharedCache)",
     {{{{.function = "^rebuild_storage_fd$", .file = "/torch/multiprocessing/reductions.py$",
         .python = true}}, 1, false},
      {{{.function = "^rebuild_storage_filename$",
         .file = "/torch/multiprocessing/reductions.py$", .python = true}}, 1, false}},
     2},
    // OpenJDK 17's launcher (Debian's openjdk-17-jre-headless), `java -cp . Hello`: its copies of
    // the command line, the options and the JVM's type, made once before the VM starts and
    // never freed (the launcher ends by exit):
    //   #0 JLI_MemAlloc (libjli.so)  #1 CheckJvmType  #2 CreateExecutionEnvironment  #3 JLI_Launch
    //   #0 JLI_MemAlloc  #1 JLI_List_new  #2 java+0x110a (main)
    //   #0 malloc  #1 JLI_StringDup (libjli.so)  #2 java+0x1220 (main)
    // Both are the launcher's own allocators (libjli); a program's JNI code never calls them.
    {"jvm-launcher",
     "the java launcher's copies of its command line and options (libjli), kept to exit",
     {IN("^JLI_MemAlloc$", "/libjli.so"), IN("^JLI_StringDup$", "/libjli.so")},
     2},
    // OpenJDK 17's VM (libjvm.so), `java -cp . Hello` under --exact: HotSpot's own state, made
    // once, that nothing holds at exit once the threads that used it ended at the VM's shutdown
    // (their Thread objects, handle blocks and compiler arenas then held only by what the ended
    // threads left) or the VM dropped it (its performance data):
    //   #0 os::malloc  #1 AllocateHeap  #2 Thread::allocate  #3 WatcherThread::start()
    //   #4 Threads::create_vm(JavaVMInitArgs*, bool*)  #5 JNI_CreateJavaVM  #6 JavaMain
    //   #0 os::malloc  #1 AllocateHeap  #2 JNIHandleBlock::allocate_block  #3 WatcherThread::run()
    //   #0 os::malloc  #1 AllocateHeap  #2 Arena::operator new  #3 Compiler::initialize()
    //   #4 CompileBroker::init_compiler_runtime()  #5 CompileBroker::compiler_thread_loop()
    //   #0 os::malloc  #1 ChunkPool::allocate  #2 Arena::Arena  #3 ciEnv::ciEnv
    //   #4 ciObjectFactory::initialize()  #5 CompileBroker::compiler_thread_loop()
    //   #0 os::malloc  #1 AllocateHeap  #2 PerfMemory::create_memory_region(unsigned long)
    //   #0 os::malloc  #1 AllocateHeap  #2 StatSampler::create_sampled_perfdata()
    // and, once methods are compiled, the holders of inline caches (CompiledICHolder), which
    // compiled code points to from its instructions' immediates, at offsets no aligned word
    // holds (memcheck's scan misses them alike):
    //   #0 os::malloc  #1 AllocateHeap  #2 CompiledIC::compute_monomorphic_entry
    //   #3 SharedRuntime::resolve_sub_helper_internal  ... SharedRuntime::resolve_virtual_call_C
    // Each names HotSpot's own classes (the compiler's one-time set-up only, not its
    // compilations); a program's native memory comes through its JNI library's frames.
    {"hotspot-vm",
     "HotSpot's own state: its watcher thread, each compiler thread's set-up, its performance "
     "data, the inline caches compiled code points to",
     {IN("^WatcherThread::", "/libjvm.so"), IN("^CompileBroker::init_compiler_runtime(", "/libjvm.so"),
      IN("^ciObjectFactory::initialize(", "/libjvm.so"), IN("^PerfMemory::", "/libjvm.so"),
      IN("^StatSampler::", "/libjvm.so"), IN("^CompiledIC::", "/libjvm.so")},
     6},
};

static bool frame_is(const frame_pat_t *p, const nd_frame_view_t *f) {
  // The built-ins name C and C++ runtime functions; a Python function may share a name
  // ("setlocale", "tzset") and is the program's own code, unless the rule names its file too.
  if ((bool)f->python != p->python) return false;
  if (p->unnamed && f->function) return false;
  if (p->function && !match_names(p->function, f)) return false;
  if (p->file && !match_n(p->file, f->file, f->file ? strlen(f->file) : 0)) return false;
  if (p->module && !match_n(p->module, f->module, f->module ? strlen(f->module) : 0))
    return false;
  return true;
}

static bool builtin_matches(const builtin_t *b, const nd_frame_view_t *frames, size_t n) {
  for (int a = 0; a < b->nalt; a++) {
    const alt_t *alt = &b->alt[a];
    size_t last = alt->innermost ? 1 : n;
    for (size_t i = 0; i < last && i + (size_t)alt->n <= n; i++) {
      bool ok = true;
      for (int k = 0; ok && k < alt->n; k++) ok = frame_is(&alt->f[k], &frames[i + (size_t)k]);
      if (ok) return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------- rule sets

typedef struct rule {
  nd_supp_rule_t pub;
  char *pattern;       // a file's rule: the text after "leak:"; NULL for a built-in
  const builtin_t *b;  // a built-in
  char *buf;           // owns pub.name and pub.text
} rule_t;

struct nd_supp {
  rule_t *rules;
  size_t n, cap;
};

nd_supp_t *nd_supp_new(void) { return calloc(1, sizeof(nd_supp_t)); }

void nd_supp_free(nd_supp_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    free(s->rules[i].pattern);
    free(s->rules[i].buf);
  }
  free(s->rules);
  free(s);
}

static rule_t *add_rule(nd_supp_t *s) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    rule_t *r = realloc(s->rules, cap * sizeof *r);
    if (!r) return NULL;
    s->rules = r;
    s->cap = cap;
  }
  rule_t *r = &s->rules[s->n];
  *r = (rule_t){.pub.index = s->n};
  return r;
}

int nd_supp_builtin(nd_supp_t *s) {
  for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++) {
    rule_t *r = add_rule(s);
    size_t len = strlen(builtins[i].name);
    char *buf = r ? malloc(len + sizeof "builtin:") : NULL;
    if (!buf) return -1;
    memcpy(buf, "builtin:", 8);
    memcpy(buf + 8, builtins[i].name, len + 1);
    r->buf = buf;
    r->b = &builtins[i];
    r->pub.name = builtins[i].name;
    r->pub.text = buf;
    r->pub.reason = builtins[i].reason;
    s->n++;
  }
  return 0;
}

static void set_err(char *err, size_t errlen, const char *where, const char *what) {
  if (err && errlen) snprintf(err, errlen, "%s: %s", where, what);
}

int nd_supp_add_line(nd_supp_t *s, const char *line, const char *where, char *err,
                     size_t errlen) {
  const char *b = line, *e = line + strlen(line);
  while (b < e && (*b == ' ' || *b == '\t')) b++;
  while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) e--;
  if (b == e || *b == '#') return 0;
  if ((size_t)(e - b) < 5 || memcmp(b, "leak:", 5)) {
    set_err(err, errlen, where, "expected 'leak:PATTERN'");
    return -1;
  }
  const char *p = b + 5;
  while (p < e && (*p == ' ' || *p == '\t')) p++;
  if (p == e) {
    set_err(err, errlen, where, "expected 'leak:PATTERN'");
    return -1;
  }
  rule_t *r = add_rule(s);
  size_t wl = strlen(where), tl = (size_t)(e - b);
  char *buf = r ? malloc(wl + 1 + tl + 1) : NULL;
  char *pat = buf ? strndup(p, (size_t)(e - p)) : NULL;
  if (!pat) {
    free(buf);
    set_err(err, errlen, where, strerror(ENOMEM));
    return -1;
  }
  memcpy(buf, where, wl + 1);
  memcpy(buf + wl + 1, b, tl);
  buf[wl + 1 + tl] = 0;
  r->buf = buf;
  r->pattern = pat;
  r->pub.name = buf;
  r->pub.text = buf + wl + 1;
  s->n++;
  return 0;
}

int nd_supp_load(nd_supp_t *s, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "re");
  if (!f) {
    set_err(err, errlen, path, strerror(errno));
    return -1;
  }
  char *line = NULL, where[4096 + 32];
  size_t cap = 0;
  unsigned long no = 0;
  int rc = 0;
  errno = 0;
  while (!rc && getline(&line, &cap, f) >= 0) {
    snprintf(where, sizeof where, "%s:%lu", path, ++no);
    rc = nd_supp_add_line(s, line, where, err, errlen);
  }
  if (!rc && ferror(f)) {
    set_err(err, errlen, path, strerror(errno ? errno : EIO));
    rc = -1;
  }
  free(line);
  fclose(f);
  return rc;
}

const nd_supp_rule_t *nd_supp_match(const nd_supp_t *s, const nd_frame_view_t *frames, size_t n) {
  for (size_t r = 0; r < s->n; r++) {
    const rule_t *rule = &s->rules[r];
    if (rule->b) {
      if (builtin_matches(rule->b, frames, n)) return &rule->pub;
      continue;
    }
    for (size_t i = 0; i < n; i++) {
      const nd_frame_view_t *f = &frames[i];
      if (match_names(rule->pattern, f) ||
          match_n(rule->pattern, f->file, f->file ? strlen(f->file) : 0) ||
          match_n(rule->pattern, f->module, f->module ? strlen(f->module) : 0))
        return &rule->pub;
    }
  }
  return NULL;
}

size_t nd_supp_count(const nd_supp_t *s) { return s->n; }

const nd_supp_rule_t *nd_supp_rule(const nd_supp_t *s, size_t index) {
  return index < s->n ? &s->rules[index].pub : NULL;
}

size_t nd_supp_views(const nd_frame_t *f, nd_frame_view_t *out, size_t cap) {
  size_t n = 1 + f->ninlined;
  for (size_t i = 0; i < n && i < cap; i++) {
    const nd_loc_t *l = i ? &f->inlined_into[i - 1] : &f->at;
    out[i] = (nd_frame_view_t){l->function, l->mangled, l->file, f->module, f->python};
  }
  return n;
}
