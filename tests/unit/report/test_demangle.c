// SPDX-License-Identifier: MIT
// test_demangle: ndmemreport's demangling of frame names (symbolize.c): C++ linkage names become
// readable, a symbol version and a clone suffix are kept, and anything that is not a C++ name or
// does not demangle gives NULL, so the frame keeps the name as it is.
#include "../../check.h"
#include "analyse/symbolize.h"

static void is(const char *name, const char *want) {
  char *got = nd_sym_demangle(name);
  if (!want) {
    if (got) fprintf(stderr, "'%s' demangled to '%s', want none\n", name, got);
    CHECK(got == NULL);
  } else {
    CHECK(got != NULL);
    if (got) CHECK_STR(got, want);
  }
  free(got);
}

int main(void) {
#ifndef ND_HAVE_CXA_DEMANGLE
  is("_Z3foov", NULL);
  fputs("built without a demangler: names are kept as they are\n", stderr);
  return 77;
#else
  is("_ZN2ns3Foo3barEi", "ns::Foo::bar(int)");
  is("_Z3foov", "foo()");
  is("_ZNSt6vectorIiSaIiEE9push_backERKi",
     "std::vector<int, std::allocator<int> >::push_back(int const&)");
  is("_ZN12_GLOBAL__N_14pool8allocateEm", "(anonymous namespace)::pool::allocate(unsigned long)");
  is("_Znwm@@GLIBCXX_3.4", "operator new(unsigned long)@@GLIBCXX_3.4");
  is("_ZdlPvm@GLIBCXX_3.4.21", "operator delete(void*, unsigned long)@GLIBCXX_3.4.21");
  is("_ZN2ns3Foo3barEi.cold", "ns::Foo::bar(int) [clone .cold]");
  // not C++, or not valid: kept as they are
  is("main", NULL);
  is("__libc_start_main@@GLIBC_2.34", NULL);
  is("_start", NULL);
  is("_Z", NULL);
  is("_Zfoo!", NULL);
  is("", NULL);
  is(NULL, NULL);
  return CHECK_DONE();
#endif
}
