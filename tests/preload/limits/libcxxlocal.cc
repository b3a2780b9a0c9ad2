// SPDX-License-Identifier: MIT
// libcxxlocal: C++ code in a library that a C program loads with dlopen(RTLD_LOCAL), as CPython
// loads an extension (torch): its C++ runtime is not in the process's global scope.
// t_cxx_local.c calls these under a limit; each returns what the C++ contract promised.
#include <cstddef>
#include <new>

char *volatile cx_keep; // keeps the compiler from eliding a new/delete pair

static int handler_calls;
static void handler() {
  if (++handler_calls == 2) std::set_new_handler(nullptr); // the second call gives up
}

// 0: allocated; 1: std::bad_alloc caught
extern "C" int cx_new(size_t n) {
  try {
    cx_keep = new char[n];
    cx_keep[0] = 1;
    delete[] cx_keep;
    return 0;
  } catch (const std::bad_alloc &) {
    return 1;
  }
}

// 0: allocated; 1: NULL
extern "C" int cx_new_nothrow(size_t n) {
  cx_keep = new (std::nothrow) char[n];
  if (!cx_keep) return 1;
  delete[] cx_keep;
  return 0;
}

// The new_handler runs until it gives up (twice), then bad_alloc: the handler's calls, or -1
extern "C" int cx_new_handler(size_t n) {
  handler_calls = 0;
  std::set_new_handler(handler);
  int r = cx_new(n);
  std::set_new_handler(nullptr);
  return r == 1 ? handler_calls : -1;
}
