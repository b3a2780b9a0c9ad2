// SPDX-License-Identifier: MIT
// test_suppress: leak suppressions (report/analyse/suppress.c). The pattern matcher (wildcards, anchors,
// substrings, empty and NULL names), rules matching a frame's function (demangled, mangled, with
// and without a symbol version), file or module, any frame of a stack, the first rule winning;
// files with comments, blank lines and CRLF endings; bad lines named by file and line number;
// and each built-in rule on the stacks it was written from, and not on stacks like them that
// are the program's own leaks. Python frames: a file's rule matches their function (qualified
// name) and file; no built-in matches a Python function that shares a C function's name.
#include "../../check.h"
#include "analyse/suppress.h"

#include <unistd.h>

#define V(fn, file, module) {(fn), NULL, (file), (module), false}
#define PYF(fn, file) {(fn), NULL, (file), NULL, true} // a Python frame (trace version 7)
#define N(a) (sizeof(a) / sizeof *(a))

static char dir[] = "/tmp/test_suppress.XXXXXX";

// A file with `text` in the test's folder; its path.
static const char *file_with(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return path;
}

// The name of the rule matching the stack, or "-".
static const char *match(const nd_supp_t *s, const nd_frame_view_t *f, size_t n) {
  const nd_supp_rule_t *r = nd_supp_match(s, f, n);
  return r ? r->name : "-";
}

static void patterns(void) {
  bool (*m)(const char *, const char *) = nd_supp_pattern_match;
  // substring unless anchored
  CHECK(m("bar", "ns::Foo::bar(int)"));
  CHECK(m("ns::Foo", "ns::Foo::bar(int)"));
  CHECK(!m("baz", "ns::Foo::bar(int)"));
  CHECK(m("^ns::", "ns::Foo::bar(int)"));
  CHECK(!m("^Foo", "ns::Foo::bar(int)"));
  CHECK(m("(int)$", "ns::Foo::bar(int)"));
  CHECK(!m("bar$", "ns::Foo::bar(int)"));
  CHECK(m("^main$", "main"));
  CHECK(!m("^main$", "main2"));
  CHECK(!m("^main$", "xmain"));
  CHECK(m("foo$", "foofoo")); // the last occurrence, not the first, meets the anchor
  CHECK(m("^foo", "foofoo"));
  // wildcards
  CHECK(m("foo*bar", "fooXYZbar"));
  CHECK(m("foo*bar", "foobar"));
  CHECK(m("foo*bar", "xxfooYbarxx"));
  CHECK(!m("foo*bar", "fooXbaz"));
  CHECK(m("^a*b*c$", "aXXbYYc"));
  CHECK(!m("^a*b*c$", "aXXcYYb"));
  CHECK(m("^*.so$", "/usr/lib/libfoo.so"));
  CHECK(m("lib*.so.6", "/lib/x86_64-linux-gnu/libstdc++.so.6"));
  CHECK(m("*", "x"));
  CHECK(m("**", "x"));
  CHECK(m("^ab**cd$", "abcd"));
  // '^' and '$' are anchors only at the ends
  CHECK(m("a$b", "xa$by"));
  CHECK(m("a^b", "a^b"));
  CHECK(!m("a^b", "ab"));
  // an empty or unknown name never matches
  CHECK(!m("*", ""));
  CHECK(!m("^$", ""));
  CHECK(!m("x", NULL));
  CHECK(!m(NULL, "x"));
}

static void fields(void) {
  nd_supp_t *s = nd_supp_new();
  char err[512] = "";
  CHECK_EQ(nd_supp_add_line(s, "leak:^ns::Foo::bar(int)$", "f:1", err, sizeof err), 0);
  CHECK_EQ(nd_supp_add_line(s, "leak:_ZN5other", "f:2", err, sizeof err), 0);
  CHECK_EQ(nd_supp_add_line(s, "leak:^legacy_init$", "f:3", err, sizeof err), 0);
  CHECK_EQ(nd_supp_add_line(s, "leak:vendor/*.c", "f:4", err, sizeof err), 0);
  CHECK_EQ(nd_supp_add_line(s, "leak:libquirky.so", "f:5", err, sizeof err), 0);
  CHECK_EQ(nd_supp_count(s), 5);
  // by demangled name, at any depth
  nd_frame_view_t a[] = {V("helper", "src/h.c", "/bin/app"),
                         {"ns::Foo::bar(int)", "_ZN2ns3Foo3barEi", "src/foo.cc", "/bin/app", false},
                         V("main", "src/main.c", "/bin/app")};
  CHECK_STR(match(s, a, N(a)), "f:1");
  // by mangled name
  nd_frame_view_t b[] = {{"other::make()", "_ZN5other4makeEv", "src/o.cc", "/bin/app", false}};
  CHECK_STR(match(s, b, N(b)), "f:2");
  // without the symbol version
  nd_frame_view_t c[] = {V("legacy_init@@LIB_1.0", NULL, "/usr/lib/liblegacy.so.1")};
  CHECK_STR(match(s, c, N(c)), "f:3");
  // by source file
  nd_frame_view_t d[] = {V("parse", "/src/vendor/json.c", "/bin/app"), V("main", NULL, NULL)};
  CHECK_STR(match(s, d, N(d)), "f:4");
  // by module
  nd_frame_view_t e[] = {V(NULL, NULL, "/opt/lib/libquirky.so.2"), V("main", "m.c", "/bin/a")};
  CHECK_STR(match(s, e, N(e)), "f:5");
  // none
  nd_frame_view_t g[] = {V("ns::Foo::bar(long)", "src/foo.cc", "/bin/app"),
                         V("legacy_init2", "src/l.c", "/bin/app"), V(NULL, NULL, NULL)};
  CHECK_STR(match(s, g, N(g)), "-");
  CHECK_STR(match(s, g, 0), "-");
  // the first rule added wins
  nd_frame_view_t h[] = {V("legacy_init", "vendor/x.c", "/bin/app")};
  CHECK_STR(match(s, h, N(h)), "f:3");
  const nd_supp_rule_t *r = nd_supp_rule(s, 3);
  CHECK(r != NULL && r->index == 3 && r->reason == NULL);
  if (r) CHECK_STR(r->text, "leak:vendor/*.c");
  CHECK(nd_supp_rule(s, 5) == NULL);
  nd_supp_free(s);
}

static void files(void) {
  nd_supp_t *s = nd_supp_new();
  char err[512] = "";
  const char *p = file_with("ok.supp", "# a comment\n"
                                       "\n"
                                       "   \t\n"
                                       "  leak:first  \n"
                                       "leak: spaced\r\n"
                                       "\t# indented comment\n"
                                       "leak:last");
  CHECK_EQ(nd_supp_load(s, p, err, sizeof err), 0);
  CHECK_STR(err, "");
  CHECK_EQ(nd_supp_count(s), 3);
  char want[300];
  snprintf(want, sizeof want, "%s:4", p);
  CHECK_STR(nd_supp_rule(s, 0)->name, want);
  CHECK_STR(nd_supp_rule(s, 0)->text, "leak:first");
  snprintf(want, sizeof want, "%s:5", p);
  CHECK_STR(nd_supp_rule(s, 1)->name, want);
  CHECK_STR(nd_supp_rule(s, 1)->text, "leak: spaced");
  snprintf(want, sizeof want, "%s:7", p);
  CHECK_STR(nd_supp_rule(s, 2)->name, want);
  nd_frame_view_t a[] = {V("spaced_out", NULL, NULL)};
  CHECK_STR(match(s, a, N(a)), nd_supp_rule(s, 1)->name);

  // bad lines: the first one is named, with its line number
  static const struct {
    const char *text;
    int line;
  } bad[] = {
      {"leak:ok\n# fine\nleek:typo\n", 3},
      {"\n\nrace:tsan_rule\n", 3},
      {"leak:\n", 1},
      {"leak:   \n", 1},
      {"just_a_name\n", 1},
      {"leak:a\nleak:b\n\nLEAK:c\n", 4},
      {"leak\n", 1},
  };
  for (size_t i = 0; i < N(bad); i++) {
    nd_supp_t *t = nd_supp_new();
    p = file_with("bad.supp", bad[i].text);
    err[0] = 0;
    CHECK_EQ(nd_supp_load(t, p, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:%d: expected 'leak:PATTERN'", p, bad[i].line);
    CHECK_STR(err, want);
    nd_supp_free(t);
  }
  snprintf(want, sizeof want, "%s/none.supp", dir);
  err[0] = 0;
  CHECK_EQ(nd_supp_load(s, want, err, sizeof err), -1);
  char want_err[400];
  snprintf(want_err, sizeof want_err, "%s: No such file or directory", want);
  CHECK_STR(err, want_err);
  CHECK_EQ(nd_supp_count(s), 3); // rules from before the error are kept
  nd_supp_free(s);
}

#define LD "/lib64/ld-linux-x86-64.so.2"
#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define STDCXX "/lib/x86_64-linux-gnu/libstdc++.so.6"

// The built-ins on the stacks in suppress.c's table, as ndmemreport symbolized them (inlined
// functions are views of their own), and on look-alikes that are leaks of the program.
static void builtins(void) {
  nd_supp_t *s = nd_supp_new();
  CHECK_EQ(nd_supp_builtin(s), 0);
  CHECK_EQ(nd_supp_count(s), 13);
  for (size_t i = 0; i < nd_supp_count(s); i++) {
    const nd_supp_rule_t *r = nd_supp_rule(s, i);
    CHECK(r->reason && *r->reason);
    CHECK(!strncmp(r->text, "builtin:", 8) && !strcmp(r->text + 8, r->name));
  }
  nd_frame_view_t pool[] = {V(NULL, NULL, STDCXX), V("call_init", "./elf/dl-init.c", LD),
                            V("call_init", "./elf/dl-init.c", LD),
                            V("_dl_init", "./elf/dl-init.c", LD),
                            V("_dl_start_user", NULL, LD)};
  CHECK_STR(match(s, pool, N(pool)), "libstdc++-eh-pool");
  nd_frame_view_t pool_static[] = {V("_GLOBAL__sub_I_eh_alloc.cc", NULL, "/tmp/io_static"),
                                   V("call_init", "../csu/libc-start.c", LIBC),
                                   V("__libc_start_main@@GLIBC_2.34", "../csu/libc-start.c", LIBC),
                                   V("_start", NULL, "/tmp/io_static")};
  CHECK_STR(match(s, pool_static, N(pool_static)), "libstdc++-eh-pool");
  nd_frame_view_t pool_dwarf[] = {
      {"(anonymous namespace)::pool::pool()", "_ZN12_GLOBAL__N_14poolC2Ev",
       "../../../../src/libstdc++-v3/libsupc++/eh_alloc.cc", STDCXX, false},
      V("_GLOBAL__sub_I_eh_alloc.cc", "../../../../src/libstdc++-v3/libsupc++/eh_alloc.cc",
        STDCXX),
      V("call_init", "./elf/dl-init.c", LD)};
  CHECK_STR(match(s, pool_dwarf, N(pool_dwarf)), "libstdc++-eh-pool");
  // a program's own pool class, a libstdc++ function the loader did not call, a named one it did
  nd_frame_view_t own_pool[] = {V("(anonymous namespace)::pool::pool()", "src/pool.cc", "/bin/a"),
                                V("main", "src/main.cc", "/bin/a")};
  CHECK_STR(match(s, own_pool, N(own_pool)), "-");
  nd_frame_view_t cxx_unnamed[] = {V(NULL, NULL, STDCXX), V("main", "m.cc", "/bin/a")};
  CHECK_STR(match(s, cxx_unnamed, N(cxx_unnamed)), "-");
  nd_frame_view_t cxx_named[] = {V("std::locale::locale()", NULL, STDCXX),
                                 V("call_init", "./elf/dl-init.c", LD)};
  CHECK_STR(match(s, cxx_named, N(cxx_named)), "-");

  nd_frame_view_t dlopen_obj[] = {
      V("malloc", "../include/rtld-malloc.h", LD), V("_dl_new_object", "./elf/dl-object.c", LD),
      V("_dl_map_object_from_fd", "./elf/dl-load.c", LD), V("_dl_map_object", NULL, LD),
      V("dl_open_worker_begin", NULL, LD), V("dlopen@GLIBC_2.2.5", NULL, LIBC),
      V("main", "dl.c", "/bin/dl")};
  CHECK_STR(match(s, dlopen_obj, N(dlopen_obj)), "dynamic-loader");
  nd_frame_view_t dtv[] = {V("calloc", "../include/rtld-malloc.h", LD),
                           V("allocate_dtv", "../elf/dl-tls.c", LD),
                           V("_dl_allocate_tls", "../elf/dl-tls.c", LD),
                           V("allocate_stack", "./nptl/allocatestack.c", LIBC),
                           V("pthread_create@GLIBC_2.2.5", NULL, LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, dtv, N(dtv)), "dynamic-loader");
  nd_frame_view_t tls[] = {V(NULL, NULL, LD), V("__tls_get_addr", NULL, LD),
                           V("f", "lib1.c", "/tmp/lib1.so")};
  CHECK_STR(match(s, tls, N(tls)), "dynamic-loader");
  // a library's constructor, run by the loader, that leaks: its own
  nd_frame_view_t ctor[] = {V("plugin_init", "plugin.c", "/opt/libplugin.so"),
                            V("call_init", "./elf/dl-init.c", LD), V("_dl_init", NULL, LD),
                            V("dl_open_worker", NULL, LD), V("main", NULL, "/a")};
  CHECK_STR(match(s, ctor, N(ctor)), "-");

  nd_frame_view_t stdio[] = {V("_IO_file_doallocate", "./libio/filedoalloc.c", LIBC),
                             V("__GI__IO_doallocbuf", NULL, LIBC),
                             V("_IO_file_overflow@@GLIBC_2.2.5", NULL, LIBC),
                             V("_IO_puts", NULL, LIBC), V("main", "loc.c", "/a")};
  CHECK_STR(match(s, stdio, N(stdio)), "libc-stdio-buffers");
  nd_frame_view_t stdio_nodebug[] = {V("_IO_file_doallocate@@GLIBC_2.2.5", NULL, LIBC),
                                     V(NULL, NULL, LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, stdio_nodebug, N(stdio_nodebug)), "libc-stdio-buffers");
  nd_frame_view_t fopen_file[] = {V("__fopen_internal", "./libio/iofopen.c", LIBC),
                                  V("_IO_new_fopen", NULL, LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, fopen_file, N(fopen_file)), "-");

  nd_frame_view_t locale[] = {V("_nl_intern_locale_data", "./locale/loadlocale.c", LIBC),
                              V("_nl_load_locale", NULL, LIBC), V("_nl_find_locale", NULL, LIBC),
                              V("setlocale", "./locale/setlocale.c", LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, locale, N(locale)), "libc-locale");
  nd_frame_view_t locale_nodebug[] = {V(NULL, NULL, LIBC), V("setlocale@@GLIBC_2.2.5", NULL, LIBC),
                                      V("main", NULL, "/a")};
  CHECK_STR(match(s, locale_nodebug, N(locale_nodebug)), "libc-locale");
  nd_frame_view_t catalog[] = {V("_nl_make_l10nflist.localalias", NULL, LIBC),
                               V("_nl_find_domain", "./intl/finddomain.c", LIBC),
                               V("__dcigettext", NULL, LIBC), V("translate", NULL, LIBC),
                               V("strerror_l", NULL, LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, catalog, N(catalog)), "libc-locale");
  nd_frame_view_t newlocale[] = {V("__newlocale", "./locale/newlocale.c", LIBC),
                                 V("main", NULL, "/a")};
  CHECK_STR(match(s, newlocale, N(newlocale)), "-");

  nd_frame_view_t strerror_buf[] = {V("__vasprintf_internal", NULL, LIBC),
                                    V("__asprintf", NULL, LIBC), V("strerror_l", NULL, LIBC),
                                    V("main", NULL, "/a")};
  CHECK_STR(match(s, strerror_buf, N(strerror_buf)), "libc-strerror");

  nd_frame_view_t nss[] = {V("__nss_module_allocate", "./nss/nss_module.c", LIBC),
                           V("nss_action_parse", NULL, LIBC), V("__nss_action_parse", NULL, LIBC),
                           V("process_line", NULL, LIBC),
                           V("nss_database_check_reload_and_get", NULL, LIBC),
                           V("__nss_passwd_lookup2", "./nss/XXX-lookup.c", LIBC),
                           V("getpwuid_r@@GLIBC_2.2.5", NULL, LIBC), V("getpwuid", NULL, LIBC),
                           V("main", NULL, "/a")};
  CHECK_STR(match(s, nss, N(nss)), "libc-nss");
  nd_frame_view_t pwbuf[] = {V("getpwuid", "../nss/getXXbyYY.c", LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, pwbuf, N(pwbuf)), "libc-nss");
  nd_frame_view_t grbuf[] = {V("getgrgid", "../nss/getXXbyYY.c", LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, grbuf, N(grbuf)), "libc-nss");
  // a program's own function that calls getpwnam and then leaks: not the result buffer
  nd_frame_view_t pw_user[] = {V("copy_user", "u.c", "/a"), V("getpwnam_wrapper", "u.c", "/a")};
  CHECK_STR(match(s, pw_user, N(pw_user)), "-");

  nd_frame_view_t tz[] = {V("__tzfile_read", "./time/tzfile.c", LIBC),
                          V("tzset_internal", "./time/tzset.c", LIBC),
                          V("__tz_convert", "./time/tzset.c", LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, tz, N(tz)), "libc-tz");
  nd_frame_view_t tz_strdup[] = {V("__strdup", NULL, LIBC), V("tzset_internal", NULL, LIBC),
                                 V("__tz_convert", NULL, LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, tz_strdup, N(tz_strdup)), "libc-tz");

  // CPython's shutdown; a program's Python-level work (Py_RunMain, no Py_FinalizeEx) is not
#define PY "/usr/bin/python3.11"
  nd_frame_view_t fin[] = {V(NULL, NULL, PY), V(NULL, NULL, PY), V("_PyObject_GC_NewVar", NULL, PY),
                           V(NULL, NULL, PY), V(NULL, NULL, PY), V("Py_FinalizeEx", NULL, PY),
                           V("Py_RunMain", NULL, PY)};
  CHECK_STR(match(s, fin, N(fin)), "python-finalize");
  nd_frame_view_t run[] = {V("_PyObject_GC_NewVar", NULL, PY),
                           V("_PyEval_EvalFrameDefault", NULL, PY), V("Py_RunMain", NULL, PY)};
  CHECK_STR(match(s, run, N(run)), "-");

  // a static destructor that exit() ran (PyTorch's, as --exact recorded it; and without
  // libc6-dbg); a program's own function named like glibc's, and its atexit-free main
  nd_frame_view_t dtor[] = {V("c10::impl::PyInterpreter::disarm()", NULL, "/usr/lib/libc10.so"),
                            V("__run_exit_handlers", "./stdlib/exit.c", LIBC),
                            V("exit", "./stdlib/exit.c", LIBC),
                            V("__libc_start_call_main", NULL, LIBC), V("_start", NULL, PY)};
  CHECK_STR(match(s, dtor, N(dtor)), "exit-handlers");
  nd_frame_view_t dtor_nodebug[] = {V("Registry::~Registry()", NULL, "/opt/libplugin.so"),
                                    V(NULL, NULL, LIBC), V("exit@@GLIBC_2.2.5", NULL, LIBC),
                                    V(NULL, NULL, LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, dtor_nodebug, N(dtor_nodebug)), "exit-handlers");
  nd_frame_view_t own_exit[] = {V("make_buffer", "g.c", "/a"), V("exit", "g.c", "/a"),
                                V("main", "g.c", "/a")};
  CHECK_STR(match(s, own_exit, N(own_exit)), "-");

  // OpenBLAS's per-thread buffer, from numpy's matmul and from OpenBLAS's own worker (stripped:
  // its static alloc_mmap unnamed); a program's function that allocates beside a BLAS call is not
#define OB "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"
  nd_frame_view_t blas[] = {V(NULL, NULL, OB), V("blas_memory_alloc", NULL, OB),
                            V("cblas_dgemm", NULL, OB), V(NULL, NULL, "/numpy/_multiarray_umath.so")};
  CHECK_STR(match(s, blas, N(blas)), "openblas-buffers");
  nd_frame_view_t blas_worker[] = {V(NULL, NULL, OB), V("blas_memory_alloc", NULL, "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"),
                                   V(NULL, NULL, OB), V("start_thread", NULL, LIBC)};
  CHECK_STR(match(s, blas_worker, N(blas_worker)), "openblas-buffers");
  nd_frame_view_t blas_user[] = {V("make_matrix", "m.c", "/a"), V("cblas_dgemm_wrapper", "m.c", "/a")};
  CHECK_STR(match(s, blas_user, N(blas_user)), "-");
  nd_frame_view_t blas_own[] = {V("blas_memory_alloc", "my_blas.c", "/a"), V("main", NULL, "/a")};
  CHECK_STR(match(s, blas_own, N(blas_own)), "-");

  // the java launcher's and HotSpot's own (OpenJDK 17), and a JNI library's leak under the VM
#define JLI "/usr/lib/jvm/java-17-openjdk-amd64/lib/libjli.so"
#define JVM "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
  nd_frame_view_t jli[] = {V("JLI_MemAlloc", NULL, JLI), V("CheckJvmType", NULL, JLI),
                           V("CreateExecutionEnvironment", NULL, JLI), V("JLI_Launch", NULL, JLI)};
  CHECK_STR(match(s, jli, N(jli)), "jvm-launcher");
  nd_frame_view_t jli_dup[] = {V("malloc", NULL, LIBC), V("JLI_StringDup", NULL, JLI),
                               V(NULL, NULL, "/usr/lib/jvm/java-17-openjdk-amd64/bin/java")};
  CHECK_STR(match(s, jli_dup, N(jli_dup)), "jvm-launcher");
  nd_frame_view_t watcher[] = {V("os::malloc(unsigned long, MEMFLAGS, NativeCallStack const&)", NULL, JVM),
                               V("Thread::allocate(unsigned long, bool, MEMFLAGS)", NULL, JVM),
                               V("WatcherThread::start()", NULL, JVM),
                               V("Threads::create_vm(JavaVMInitArgs*, bool*)", NULL, JVM),
                               V("JNI_CreateJavaVM", NULL, JVM), V("JavaMain", NULL, JLI)};
  CHECK_STR(match(s, watcher, N(watcher)), "hotspot-vm");
  nd_frame_view_t compiler[] = {V("os::malloc(unsigned long, MEMFLAGS, NativeCallStack const&)", NULL, JVM),
                                V("Arena::Arena(MEMFLAGS)", NULL, JVM),
                                V("ciObjectFactory::initialize()", NULL, JVM),
                                V("CompileBroker::compiler_thread_loop()", NULL, JVM),
                                V("JavaThread::thread_main_inner()", NULL, JVM)};
  CHECK_STR(match(s, compiler, N(compiler)), "hotspot-vm");
  nd_frame_view_t jni[] = {V("make_buffer", "native.c", "/opt/app/libnative.so"),
                           V("Java_App_run", "native.c", "/opt/app/libnative.so"),
                           V(NULL, NULL, NULL), V("JavaCalls::call_helper(JavaValue*, methodHandle const&, JavaCallArguments*, JavaThread*)", NULL, JVM),
                           V("JavaMain", NULL, JLI)};
  CHECK_STR(match(s, jni, N(jni)), "-");
  nd_frame_view_t ic[] = {V("os::malloc(unsigned long, MEMFLAGS, NativeCallStack const&)", NULL, JVM),
                          V("CompiledIC::set_to_megamorphic(CallInfo*, Bytecodes::Code, bool&, JavaThread*)", NULL, JVM),
                          V("SharedRuntime::handle_ic_miss_helper(JavaThread*)", NULL, JVM)};
  CHECK_STR(match(s, ic, N(ic)), "hotspot-vm");
  nd_frame_view_t compiled[] = {V("os::malloc(unsigned long, MEMFLAGS, NativeCallStack const&)", NULL, JVM),
                                V("CompileBroker::invoke_compiler_on_method(CompileTask*)", NULL, JVM),
                                V("CompileBroker::compiler_thread_loop()", NULL, JVM)};
  CHECK_STR(match(s, compiled, N(compiled)), "-");
  nd_frame_view_t own_create_vm[] = {V("Threads::create_vm(int)", "vm.c", "/a"), V("main", NULL, "/a")};
  CHECK_STR(match(s, own_create_vm, N(own_create_vm)), "-");

  // a plain leak of the program, and a program's strdup
  nd_frame_view_t own[] = {V("make_buffer", "t_leaks.c", "/a"), V("main", "t_leaks.c", "/a"),
                           V("__libc_start_call_main", NULL, LIBC),
                           V("__libc_start_main@@GLIBC_2.34", NULL, LIBC), V("_start", NULL, "/a")};
  CHECK_STR(match(s, own, N(own)), "-");
  nd_frame_view_t own_strdup[] = {V("__strdup", "./string/strdup.c", LIBC), V("main", NULL, "/a")};
  CHECK_STR(match(s, own_strdup, N(own_strdup)), "-");
  nd_supp_free(s);
}

static void python(void) {
  nd_supp_t *s = nd_supp_new();
  char err[512] = "";
  CHECK_EQ(nd_supp_builtin(s), 0);
  CHECK_EQ(nd_supp_add_line(s, "leak:^Cache.warm$", "f:1", err, sizeof err), 0);
  CHECK_EQ(nd_supp_add_line(s, "leak:site-packages/vendored/*.py", "f:2", err, sizeof err), 0);
  // by qualified name, in the middle of native frames
  nd_frame_view_t a[] = {V("PyMem_Malloc", NULL, "/usr/bin/python3.11"),
                         PYF("Cache.warm", "/app/cache.py"), PYF("<module>", "/app/main.py"),
                         V("Py_RunMain", NULL, "/usr/bin/python3.11")};
  CHECK_STR(match(s, a, N(a)), "f:1");
  // by file
  nd_frame_view_t b[] = {PYF("load", "/venv/lib/site-packages/vendored/io.py"),
                         PYF("<module>", "/app/main.py")};
  CHECK_STR(match(s, b, N(b)), "f:2");
  // Python functions named as glibc's and CPython's are the program's: no built-in takes them
  nd_frame_view_t c[] = {PYF("setlocale", "/app/l10n.py"), PYF("tzset", "/app/tz.py"),
                         PYF("getpwnam", "/app/users.py"), PYF("Py_FinalizeEx", "/app/x.py")};
  CHECK_STR(match(s, c, N(c)), "-");
  CHECK_STR(match(s, c + 2, 1), "-"); // an innermost-only built-in, at the innermost frame
  // the native frame of the same name still is
  nd_frame_view_t d[] = {PYF("shutdown", "/app/main.py"),
                         V("Py_FinalizeEx", NULL, "/usr/bin/python3")};
  CHECK_STR(match(s, d, N(d)), "python-finalize");
  // the views of a symbolized Python frame
  nd_frame_t f = {.ip = nd_pyframe(3, 12), .python = true,
                  .at = {"Cache.warm", NULL, "/app/cache.py", 12}};
  nd_frame_view_t v[2];
  CHECK_EQ(nd_supp_views(&f, v, 2), 1);
  CHECK(v[0].python && v[0].module == NULL && v[0].mangled == NULL);
  CHECK_STR(v[0].function, "Cache.warm");
  CHECK_STR(v[0].file, "/app/cache.py");
  nd_supp_free(s);
}

static void views(void) {
  nd_loc_t into[2] = {{"outer_inline()", "_Z12outer_inlinev", "b.h", 7}, {"real", NULL, "c.c", 9}};
  nd_frame_t f = {.ip = 0x1234, .module = "/bin/a", .offset = 0x234,
                  .at = {"inner(int)", "_Z5inneri", "a.h", 3}, .ninlined = 2, .inlined_into = into};
  nd_frame_view_t v[3];
  CHECK_EQ(nd_supp_views(&f, v, 3), 3);
  CHECK_STR(v[0].function, "inner(int)");
  CHECK_STR(v[0].mangled, "_Z5inneri");
  CHECK_STR(v[0].file, "a.h");
  CHECK_STR(v[1].function, "outer_inline()");
  CHECK_STR(v[2].function, "real");
  CHECK(v[2].mangled == NULL);
  for (int i = 0; i < 3; i++) CHECK_STR(v[i].module, "/bin/a");
  nd_frame_view_t one[1] = {{0}};
  CHECK_EQ(nd_supp_views(&f, one, 1), 3); // only the first written
  CHECK_STR(one[0].function, "inner(int)");
  nd_frame_t bare = {.ip = 0x99};
  CHECK_EQ(nd_supp_views(&bare, v, 3), 1);
  CHECK(v[0].function == NULL && v[0].module == NULL);
}

int main(void) {
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  patterns();
  fields();
  files();
  builtins();
  python();
  views();
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fputs("could not remove the test folder\n", stderr);
  return CHECK_DONE();
}
