// SPDX-License-Identifier: MIT
// libunwmid: the library an exception passes through (t_unwind). mid_call runs a callback with
// a guard on its own frame: when the callback throws, or its thread is cancelled, the guard's
// destructor runs on the way out and the unwinding goes on with _Unwind_Resume from this
// library's code, bound as the loader binds it.
extern "C" {
int mid_cleanups;
int mid_call(int (*fn)(int), int v);
}

namespace {
struct Guard {
  ~Guard() { mid_cleanups++; }
};
} // namespace

extern "C" int mid_call(int (*fn)(int), int v) {
  Guard g;
  int r = fn(v);
  return r + 1;
}
