// SPDX-License-Identifier: MIT
// t_live_cxx: C++ allocation sites that ndmem names on stderr while the program runs
// (t_live_lines.sh checks the lines). Built -O0 with its symbols exported (-rdynamic), so each
// allocating function keeps its frame and the loader can name it. Modes:
//   limit  under NDMEM_MAX_BYTES=32m: 4 blocks of 1 MiB from a class template's method whose name
//          demangles to well over a line's share (demo::Wide<...>::make), then 1 MiB blocks from
//          demo::Pool::grab(unsigned long) until operator new throws std::bad_alloc
//   grow   demo::Cache::keep(unsigned long) keeps 1 MiB every 5th iteration among per-iteration
//          temporaries (ndmem's cycles), 100 iterations of 8 ms: a site found growing
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <new>
#include <string>
#include <vector>

namespace demo {
struct Pool {
  char *grab(unsigned long n);
};

char *Pool::grab(unsigned long n) {
  char *p = new char[n];
  memset(p, 1, n);
  return p;
}

template <class K, class V> struct Wide {
  static char *make(unsigned long n);
};

template <class K, class V> char *Wide<K, V>::make(unsigned long n) {
  char *p = new char[n];
  memset(p, 2, n);
  return p;
}
template struct Wide<std::map<std::string, std::vector<int>>, std::map<std::string, std::vector<long>>>;
using wide_t = Wide<std::map<std::string, std::vector<int>>, std::map<std::string, std::vector<long>>>;

struct Cache {
  char *keep(unsigned long n);
};

char *Cache::keep(unsigned long n) {
  char *p = new char[n];
  memset(p, 3, n);
  return p;
}
} // namespace demo

static void pause_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, nullptr);
}

// One iteration's temporaries, all freed before it ends: ndmem's cycles.
static void step(int i) {
  char *a = new char[256 * 1024];
  char *b = new char[128 * 1024];
  memset(a, i, 256 * 1024);
  memset(b, i, 128 * 1024);
  delete[] b;
  delete[] a;
}

static std::vector<char *> kept;

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const char *mode = argc > 1 ? argv[1] : "";
  kept.reserve(4096);
  if (!strcmp(mode, "limit")) {
    for (int i = 0; i < 4; i++) kept.push_back(demo::wide_t::make(1 << 20));
    demo::Pool pool;
    try {
      for (int i = 0; i < 4096; i++) kept.push_back(pool.grab(1 << 20));
      std::puts("no bad_alloc");
      return 1;
    } catch (const std::bad_alloc &) {
      std::printf("bad_alloc after %zu blocks\n", kept.size());
    }
  } else if (!strcmp(mode, "grow")) {
    demo::Cache cache;
    for (int i = 0; i < 100; i++) {
      step(i);
      if (i % 5 == 3) kept.push_back(cache.keep(1 << 20));
      pause_ms(8);
    }
    std::printf("kept %zu blocks\n", kept.size());
  } else {
    std::fprintf(stderr, "usage: t_live_cxx limit|grow\n");
    return 2;
  }
  for (char *p : kept) delete[] p;
  return 0;
}
