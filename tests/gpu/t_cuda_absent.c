// SPDX-License-Identifier: MIT
// t_cuda_absent: a program that never loads libcuda, run under the shim (with the driver test
// double findable through LD_LIBRARY_PATH, so that loading it would succeed): after host
// allocations, a thread and a fork, libcuda is not mapped, dlopen(RTLD_NOLOAD) does not find
// it, and no cu* driver entry point is visible through dlsym(RTLD_DEFAULT): ndmem neither loads
// CUDA nor makes it look present. "control" loads the double first (RTLD_GLOBAL) and expects
// every check to see it, so the checks are known to be able to fail.
#include "../check.h"
#include "ndmem.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const names[] = {"cuInit", "cuMemAlloc_v2", "cuMemFree_v2",
    "cuGetProcAddress", "cuGetProcAddress_v2", "cuMemAllocAsync", "cuMemCreate", "cuMemGetInfo_v2",
    "cuMemAllocHost_v2"};

static int maps_libcuda(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) found |= strstr(line, "libcuda") != NULL;
  fclose(f);
  return found;
}

// 0 when nothing of CUDA is present, else how many signs of it were seen.
static int signs_of_cuda(int verbose) {
  int n = 0;
  if (maps_libcuda() != 0) {
    if (verbose) fprintf(stderr, "libcuda is in /proc/self/maps\n");
    n++;
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h) {
    if (verbose) fprintf(stderr, "dlopen(libcuda.so.1, RTLD_NOLOAD) found it loaded\n");
    dlclose(h);
    n++;
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (dlsym(RTLD_DEFAULT, names[i])) {
      if (verbose) fprintf(stderr, "dlsym(RTLD_DEFAULT, %s) is not NULL\n", names[i]);
      n++;
    }
  return n;
}

// What signs_of_cuda must count: none, or (control) every one.
static int expected(int control) { return control ? 2 + (int)(sizeof names / sizeof names[0]) : 0; }

static void *thread_main(void *arg) {
  void *p = malloc(100000);
  free(p);
  return arg;
}

int main(int argc, char **argv) {
  setvbuf(stderr, NULL, _IONBF, 0);
  int control = argc > 1 && strcmp(argv[1], "control") == 0;
  if (argc > 1 && strcmp(argv[1], "shim") == 0 && !ndmem_stats) {
    fprintf(stderr, "run with \"shim\" but libndmem.so is not loaded\n");
    return 1;
  }
  if (control) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h || !dlsym(h, "fakecuda_is_a_test_double")) {
      fprintf(stderr, "control: the test double is not found as libcuda.so.1 (LD_LIBRARY_PATH?)\n");
      return 1;
    }
  }
  CHECK_EQ(signs_of_cuda(!control), expected(control));
  for (int i = 0; i < 100; i++) free(malloc((size_t)i * 4099 + 1));
  void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED);
  munmap(m, 1 << 20);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, thread_main, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(signs_of_cuda(!control) == expected(control) ? 0 : 1);
  int status = 0;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ(signs_of_cuda(!control), expected(control));
  printf("t_cuda_absent%s: %s\n", control ? " control" : "",
         control ? "a loaded libcuda is seen by every check" : "no sign of CUDA");
  return CHECK_DONE();
}
