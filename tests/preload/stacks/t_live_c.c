// SPDX-License-Identifier: MIT
// t_live_c: a C program (no C++ runtime linked) whose allocating functions carry C++ linkage
// names (asm labels), so that what ndmem's live lines print tells whether a demangler was used.
// t_live_lines.sh runs it under NDMEM_MAX_BYTES=32m. Built -O0 with its symbols exported. Modes:
//   plain   1 MiB blocks from _ZN4demo4grabEm (a static caller) until malloc returns NULL, then
//           says which C++ runtime the process has mapped (/proc/self/maps): none, since ndmem
//           must not load one
//   dlopen  libstdc++.so.6 dlopen'ed first, then the same: the runtime is there to demangle with
//   late    the same as plain (the breach finds no runtime), then the blocks are freed,
//           libstdc++.so.6 is dlopen'ed, and _ZN4demo4keepEm keeps 1 MiB every 5th iteration among
//           per-iteration temporaries: the growth line, after the loader's map changed
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *grab(size_t n) __asm__("_ZN4demo4grabEm");
char *keep(size_t n) __asm__("_ZN4demo4keepEm");

char *grab(size_t n) {
  char *p = malloc(n);
  if (p) memset(p, 1, n);
  return p;
}

char *keep(size_t n) {
  char *p = malloc(n);
  memset(p, 3, n);
  return p;
}

static char *kept[4096];
static int nkept;

static void fill(void) {
  char *p;
  while (nkept < 4096 && (p = grab(1 << 20)) != NULL) kept[nkept++] = p;
  printf("NULL after %d blocks\n", nkept);
}

static void release(void) {
  while (nkept) free(kept[--nkept]);
}

// The C++ runtimes mapped into this process, from /proc/self/maps: "none", "libstdc++", ...
static void say_runtime(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) {
    perror("/proc/self/maps");
    exit(1);
  }
  char line[4096];
  int stdcxx = 0, cxxabi = 0;
  while (fgets(line, sizeof line, f)) {
    stdcxx |= strstr(line, "/libstdc++.so") != NULL;
    cxxabi |= strstr(line, "/libc++abi.so") != NULL || strstr(line, "/libc++.so") != NULL;
  }
  fclose(f);
  printf("C++ runtime: %s\n", stdcxx ? "libstdc++" : cxxabi ? "libc++" : "none");
}

static void load_runtime(void) {
  if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL)) {
    fprintf(stderr, "dlopen libstdc++.so.6: %s\n", dlerror());
    exit(1);
  }
}

static void pause_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "plain")) {
    fill();
    say_runtime();
  } else if (!strcmp(mode, "dlopen")) {
    load_runtime();
    fill();
    say_runtime();
  } else if (!strcmp(mode, "late")) {
    fill();
    release();
    load_runtime();
    say_runtime();
    for (int i = 0; i < 100; i++) {
      char *a = malloc(256 * 1024), *b = malloc(128 * 1024);
      memset(a, i, 256 * 1024);
      memset(b, i, 128 * 1024);
      free(b);
      free(a);
      if (i % 5 == 3) kept[nkept++] = keep(1 << 20);
      pause_ms(8);
    }
    printf("kept %d blocks\n", nkept);
  } else {
    fprintf(stderr, "usage: t_live_c plain|dlopen|late\n");
    return 2;
  }
  release();
  return 0;
}
