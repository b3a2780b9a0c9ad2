// SPDX-License-Identifier: MIT
// t_cxx: C++ operator new and delete are counted exactly, both or neither, under glibc and with
// an allocator chained behind ndmem (jemalloc defines its own operator new, which once bypassed
// the malloc hooks while its delete reached free: "live at exit -10.60 MiB in -99998 blocks").
// Every form (array, nothrow, aligned, sized delete) and the C++ contract: a failing new calls the
// new_handler until it gives up, then throws std::bad_alloc; the nothrow form returns nullptr.
#include "../shimcheck.h"

#include <cstdint>
#include <malloc.h>
#include <new>

static int handler_calls;
static void give_up() {
  handler_calls++;
  if (handler_calls == 3) std::set_new_handler(nullptr); // the third call gives up
}

struct alignas(256) Wide {
  char bytes[1000];
};

int main() {
  setvbuf(stderr, nullptr, _IONBF, 0);
  // The reproduction from the report: 100 000 x delete[] new char[100].
  ndmem_stats_t s0 = THREAD_SNAP();
  for (int i = 0; i < 100000; i++) {
    char *p = new char[100];
    p[99] = 1;
    delete[] p;
  }
  ndmem_stats_t s1 = THREAD_SNAP();
  CHECK_EQ(D(s1, s0, HEAP, allocs), 100000);
  CHECK_EQ(D(s1, s0, HEAP, frees), 100000);
  CHECK_EQ(D(s1, s0, HEAP, live_count), 0);
  CHECK_EQ(D(s1, s0, HEAP, live_bytes), 0);

  // Every form, and what it holds while live.
  ndmem_stats_t s2 = THREAD_SNAP();
  int *one = new int(7);
  int *arr = new int[1000];
  int *nt = new (std::nothrow) int[10];
  Wide *w = new Wide;
  Wide *wa = new Wide[3];
  Wide *wnt = new (std::nothrow) Wide;
  void *zero = ::operator new(0); // a unique non-null pointer
  ndmem_stats_t s3 = THREAD_SNAP();
  CHECK(nt != nullptr && wnt != nullptr && zero != nullptr);
  CHECK_EQ((uintptr_t)w % 256, 0);
  CHECK_EQ((uintptr_t)wa % 256, 0);
  CHECK_EQ((uintptr_t)wnt % 256, 0);
  CHECK_EQ(D(s3, s2, HEAP, allocs), 7);
  CHECK_EQ(D(s3, s2, HEAP, live_count), 7);
  CHECK_EQ(D(s3, s2, HEAP, live_bytes),
           (long long)(malloc_usable_size(one) + malloc_usable_size(arr) + malloc_usable_size(nt) +
                       malloc_usable_size(w) + malloc_usable_size(wa) + malloc_usable_size(wnt) +
                       malloc_usable_size(zero)));
  delete one; // sized delete (C++14) where the compiler chose it
  delete[] arr;
  delete[] nt;
  delete w; // aligned delete
  delete[] wa;
  ::operator delete(wnt, std::align_val_t(256), std::nothrow);
  ::operator delete(zero);
  ndmem_stats_t s4 = THREAD_SNAP();
  CHECK_EQ(D(s4, s2, HEAP, live_count), 0);
  CHECK_EQ(D(s4, s2, HEAP, live_bytes), 0);
  CHECK_EQ(D(s4, s3, HEAP, frees), 7);

  // A request no allocator can serve: the handler runs until it gives up, then bad_alloc.
  static volatile size_t big = SIZE_MAX / 4; // at run time: the compiler cannot refuse it
  std::set_new_handler(give_up);
  bool thrown = false;
  try {
    char *huge = new char[big];
    huge[0] = 1;
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  CHECK(thrown);
  CHECK_EQ(handler_calls, 3);
  char *none = new (std::nothrow) char[big]; // no handler now: nullptr at once
  CHECK(none == nullptr);
  handler_calls = 0;
  std::set_new_handler(give_up);
  none = new (std::nothrow) char[big]; // the handler runs, gives up: nullptr
  CHECK(none == nullptr);
  CHECK_EQ(handler_calls, 3);
  ndmem_stats_t s5 = THREAD_SNAP();
  CHECK_EQ(D(s5, s4, HEAP, live_count), 0);
  CHECK(s5.kind[HEAP].live_count >= 0);
  return CHECK_DONE();
}
