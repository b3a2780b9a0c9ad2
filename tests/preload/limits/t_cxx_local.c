// SPDX-License-Identifier: MIT
// t_cxx_local: a C program (no C++ runtime of its own, as the python3 executable) that dlopens a
// C++ library RTLD_LOCAL, under NDMEM_MAX_BYTES=16m: an operator new over the limit throws
// std::bad_alloc that the library catches, the nothrow form returns NULL, and an installed
// new_handler is called until it gives up, in a process where the C++ runtime is not globally
// visible (ndmem used to find no thrower there and abort()).
// usage: t_cxx_local LIBCXXLOCAL
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  // The case under test: libstdc++ is not in the global scope.
  if (dlsym(RTLD_DEFAULT, "_ZSt17__throw_bad_allocv")) {
    fprintf(stderr, "the C++ runtime is globally visible: nothing tested\n");
    return 2;
  }
  dlerror();
  int (*cx_new)(unsigned long) = __extension__(int (*)(unsigned long))dlsym(h, "cx_new");
  int (*cx_nothrow)(unsigned long) = __extension__(int (*)(unsigned long))dlsym(h, "cx_new_nothrow");
  int (*cx_handler)(unsigned long) = __extension__(int (*)(unsigned long))dlsym(h, "cx_new_handler");
  if (!cx_new || !cx_nothrow || !cx_handler) return 2;
  unsigned long big = 64ul << 20;
  printf("new small %d\n", cx_new(1000));
  printf("new big %d\n", cx_new(big));
  printf("nothrow small %d\n", cx_nothrow(1000));
  printf("nothrow big %d\n", cx_nothrow(big));
  printf("handler calls %d\n", cx_handler(big));
  return 0;
}
