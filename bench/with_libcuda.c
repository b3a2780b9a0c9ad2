// SPDX-License-Identifier: MIT
// with_libcuda.c: linked into churn to make churn_libcuda, the same host malloc churn in a
// process that has the CUDA driver loaded but makes no device call: before main, libcuda.so.1 is
// dlopen'ed and its cuGetProcAddress_v2 looked up, as the static CUDA runtime does when a
// framework is imported. bench/cuda_bench.sh compares its ndmem/plain ratio with churn's: what
// ndmem's host hooks cost once CUDA is in the process. No driver: exit 77 before main.
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void load_libcuda(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib || !dlsym(lib, "cuGetProcAddress_v2")) {
    fprintf(stderr, "churn_libcuda: libcuda.so.1 with cuGetProcAddress_v2 not loadable: %s\n",
            lib ? "no cuGetProcAddress_v2" : dlerror());
    _exit(77);
  }
}
