// SPDX-License-Identifier: MIT
// t_unwind: a C program (no C++ runtime of its own, as the python3 executable) that dlopens a
// C++ library RTLD_LOCAL and has it throw: through another library's frames, a cancelled
// thread's forced unwinding, from a signal handler, nested and rethrown. It prints what each
// returned; t_unwind.sh compares the lines with and without ndmem, at default and every-block
// tracking, and the loader's bindings of the _Unwind_* entry points.
// usage: t_unwind LIBUNWTOP
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  // The case under test: the C++ runtime and its unwinder are not in the global scope.
  if (dlsym(RTLD_DEFAULT, "__cxa_throw")) {
    fprintf(stderr, "the C++ runtime is globally visible: nothing tested\n");
    return 2;
  }
  int (*through)(int) = __extension__(int (*)(int))dlsym(h, "top_throw_through");
  int (*cancel)(void) = __extension__(int (*)(void))dlsym(h, "top_cancel");
  int (*sig)(void) = __extension__(int (*)(void))dlsym(h, "top_signal_throw");
  int (*nested)(void) = __extension__(int (*)(void))dlsym(h, "top_nested");
  if (!through || !cancel || !sig || !nested) return 2;
  printf("thrown through another library, caught %d of 200\n", through(200));
  printf("cancelled thread, cleanups run %d of 2\n", cancel());
  printf("thrown from a signal handler, caught %d of 3\n", sig());
  printf("rethrown and nested, %d of 2\n", nested());
  return 0;
}
