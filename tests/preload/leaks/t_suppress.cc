// SPDX-License-Identifier: MIT
// t_suppress: a program whose blocks live at exit are, but for two, the C and C++ runtimes'
// lifetime allocations that ndmemreport's built-in suppressions name: libstdc++'s exception
// pool, stdout's buffer, the locale, strerror's buffer, NSS state and getpwuid's and getgrgid's
// buffers, the time zone, the loader's state for a dlopen'ed library and a thread. The two
// others are leaks: one here, one in the dlopen'ed library's constructor (run by the loader,
// yet the library's own). What exit() runs allocates too: a static destructor and an atexit
// handler keep a block each (as PyTorch's c10 does at interpreter exit). Exit status 77 without
// the C.UTF-8 locale.
#include <clocale>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <grp.h>
#include <iostream>
#include <pthread.h>
#include <pwd.h>

static void *thread_main(void *arg) { return arg; }

static void *kept_at_exit[2];
static void keep_at_exit() { kept_at_exit[0] = std::malloc(40); }
static struct Teardown {
  ~Teardown() { kept_at_exit[1] = std::malloc(24); }
} teardown;

int main(int argc, char **argv) {
  if (argc < 2 || !std::setlocale(LC_ALL, "C.UTF-8")) return 77;
  std::cout << "runtime state" << std::endl;
  std::cout << std::strerror(12345) << std::endl;
  struct passwd *pw = getpwuid(0);
  struct group *gr = getgrgid(0);
  std::time_t now = std::time(nullptr);
  std::tm *tm = std::localtime(&now);
  void *lib = dlopen(argv[1], RTLD_NOW);
  pthread_t th;
  if (pthread_create(&th, nullptr, thread_main, nullptr) == 0) pthread_join(th, nullptr);
  std::atexit(keep_at_exit);
  void *leak = std::malloc(12345); // LEAK
  return !(pw && gr && tm && lib && leak);
}
