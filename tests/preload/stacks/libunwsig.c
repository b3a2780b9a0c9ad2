// SPDX-License-Identifier: MIT
// libunwsig: a library that links libunwind and installs a SIGUSR1 handler that unwinds with it,
// as glog's failure handler and gperftools' profiler do (t_unwind_masks: with such a handler
// installed, libunwind must mask signals as it always did).
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <signal.h>
#include <string.h>

static volatile int frames;

static void on_usr1(int sig) {
  (void)sig;
  void *buf[64];
  frames = unw_backtrace(buf, 64);
}

int unwsig_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  return sigaction(SIGUSR1, &sa, NULL);
}
