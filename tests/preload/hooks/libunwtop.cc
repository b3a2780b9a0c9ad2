// SPDX-License-Identifier: MIT
// libunwtop: C++ code that a C program loads with dlopen(RTLD_LOCAL), as CPython loads torch
// (t_unwind.c): each function exercises one way the C++ runtime's unwinder is used, and returns
// what the language promises, so that a run under ndmem can be compared with one without.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
int mid_call(int (*fn)(int), int v);
extern int mid_cleanups;
int top_throw_through(int rounds);
int top_cancel(void);
int top_signal_throw(void);
int top_nested(void);
}

static int thrower(int v) {
  if (v > 0) throw std::runtime_error("thrown through libunwmid " + std::to_string(v));
  return v;
}

// An exception thrown here, through libunwmid's frame (its cleanup runs), caught here: the
// number caught over `rounds` rounds, each with a new message string (allocations while
// unwinding, which ndmem tracks and unwinds for as well).
extern "C" int top_throw_through(int rounds) {
  int caught = 0;
  for (int i = 1; i <= rounds; i++) {
    try {
      mid_call(thrower, i);
    } catch (const std::runtime_error &e) {
      caught += std::string(e.what()) == "thrown through libunwmid " + std::to_string(i);
    }
  }
  return caught;
}

// pthread_cancel: glibc unwinds the cancelled thread with _Unwind_ForcedUnwind (libgcc_s's,
// which it loads itself); the C++ frames' cleanups on the way run and resume it.
static std::atomic<int> unwound;
namespace {
struct Mark {
  ~Mark() { unwound++; }
};
} // namespace
static int wait_forever(int) {
  for (;;) pause(); // a cancellation point
}
static void *worker(void *) {
  Mark m;
  std::vector<int> held(1000, 1); // freed by its destructor as the thread unwinds
  mid_call(wait_forever, 0);
  return nullptr;
}

// The cleanups that ran in the cancelled thread (its own Mark, libunwmid's guard), or -1.
extern "C" int top_cancel(void) {
  int before = mid_cleanups;
  pthread_t t;
  if (pthread_create(&t, nullptr, worker, nullptr)) return -1;
  usleep(20000);
  pthread_cancel(t);
  void *ret = nullptr;
  pthread_join(t, &ret);
  if (ret != PTHREAD_CANCELED) return -1;
  return unwound.load() + (mid_cleanups - before);
}

// An exception thrown from a signal handler, through the kernel's signal frame and libc's
// raise(), caught by the frame that raised the signal.
static void on_usr1(int) { throw std::runtime_error("from a signal handler"); }
// glibc declares raise() noexcept (__THROW): called through a plain pointer, it may throw.
static int (*volatile raise_may_throw)(int) = raise;
extern "C" int top_signal_throw(void) {
  struct sigaction sa = {};
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_NODEFER; // the handler never returns: leave the signal unblocked
  sigaction(SIGUSR1, &sa, nullptr);
  int caught = 0;
  for (int i = 0; i < 3; i++) {
    try {
      raise_may_throw(SIGUSR1);
    } catch (const std::runtime_error &e) {
      caught += std::string(e.what()) == "from a signal handler";
    }
  }
  signal(SIGUSR1, SIG_DFL);
  return caught;
}

// A rethrow from a catch block, and an exception thrown and caught inside a destructor that runs
// during another's unwinding: 2 when both arrive where the language says.
namespace {
struct ThrowsInside {
  int *ok;
  ~ThrowsInside() {
    try {
      throw 7;
    } catch (int v) {
      *ok += v == 7;
    }
  }
};
} // namespace
extern "C" int top_nested(void) {
  int ok = 0;
  try {
    try {
      ThrowsInside t{&ok};
      throw std::logic_error("inner");
    } catch (const std::logic_error &) {
      throw;
    }
  } catch (const std::logic_error &e) {
    ok += std::string(e.what()) == "inner";
  }
  return ok;
}
