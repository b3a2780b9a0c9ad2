// SPDX-License-Identifier: MIT
// dlsym.c: the exported dlsym and ndmem's own lookups. A dlsym with a handle never sees a
// preloaded library, so ndmem exports dlsym (a tail-jumping stub) and lets the device room answer
// lookups of the CUDA driver's hooked names (nd_dlsym_filter, device/fns.c); every other lookup
// goes to libc's dlsym untouched. nd_dlsym_own is the lookup the shim's rooms make themselves
// (the driver's functions, CPython's and the C++ runtime's symbols).
#include "hooks/dlsym.h"
#include "runtime/shim.h"

#include <dlfcn.h>

// dlsym's object pointers are function pointers (POSIX requires the conversion to work).
#pragma GCC diagnostic ignored "-Wpedantic"

__attribute__((visibility("hidden"))) void *(*nd_dlsym_next)(void *, const char *);

// glibc's dlsym finds RTLD_NEXT relative to its caller's return address, so the stub must not
// be a frame of its own when it forwards: it asks the filter, restores the arguments and jumps to
// libc's dlsym with the program's return address still on the stack.
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "  .cfi_startproc\n"
        "  push %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  push %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  sub $24, %rsp\n" // 16-byte aligned for the call; 0(%rsp) receives *out
        "  .cfi_adjust_cfa_offset 24\n"
        "  mov %rsp, %rdx\n"
        "  call nd_dlsym_filter\n"
        "  mov (%rsp), %rcx\n"
        "  add $24, %rsp\n"
        "  .cfi_adjust_cfa_offset -24\n"
        "  pop %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  pop %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  test %eax, %eax\n"
        "  jz 1f\n"
        "  mov %rcx, %rax\n"
        "  ret\n"
        "1:\n"
        "  jmp *nd_dlsym_next(%rip)\n"
        "  .cfi_endproc\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        "dlsym:\n"
        "  stp x29, x30, [sp, #-48]!\n"
        "  mov x29, sp\n"
        "  stp x0, x1, [sp, #16]\n"
        "  add x2, sp, #32\n"
        "  bl nd_dlsym_filter\n"
        "  ldr x3, [sp, #32]\n"
        "  ldp x0, x1, [sp, #16]\n"
        "  ldp x29, x30, [sp], #48\n"
        "  cbz w0, 1f\n"
        "  mov x0, x3\n"
        "  ret\n"
        "1:\n"
        "  adrp x16, nd_dlsym_next\n"
        "  ldr x16, [x16, :lo12:nd_dlsym_next]\n"
        "  br x16\n"
        ".size dlsym, .-dlsym\n");
#else
#error "the dlsym stub is written for x86-64 and aarch64"
#endif

void nd_dlsym_resolve(void) {
  void *f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!f) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (!f) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); // aarch64's first version
  __atomic_store_n(&nd_dlsym_next, (void *(*)(void *, const char *))f, __ATOMIC_RELEASE);
}

// ndmem's own lookups (not the program's): out of the program's books (BUSY mode: glibc
// allocates a failed lookup's message, which the program's heap counters must not see).
// `clear`: a lookup on one of the program's threads (its own dlsym and cuGetProcAddress calls,
// which are hooked) also leaves nothing for that thread's dlerror: glibc frees the message at the
// second dlerror that reads it, both here. The first dlerror translates the message through
// gettext, which takes glibc's setlocale lock and reads the environment: never from a malloc or
// mmap hook (a hook may run inside setlocale holding that lock: python.h), never from ndmem's
// threads (a shell replaces `environ` as it likes; bash crashed in gettext's getenv). On those
// threads a failed lookup's message stays in the thread's own dlerror state, which nothing reads.
void *nd_dlsym_own(void *handle, const char *name, int clear) {
  if (!__atomic_load_n(&nd_dlsym_next, __ATOMIC_ACQUIRE)) nd_dlsym_resolve();
  if (!nd_dlsym_next) return NULL;
  nd_tls_t *t = &nd_tls;
  unsigned char mode = t->mode;
  if (mode == ND_T_COUNT) t->mode = ND_T_BUSY;
  void *r = nd_dlsym_next(handle, name);
  if (!r && clear) {
    dlerror();
    dlerror();
  }
  if (mode == ND_T_COUNT) t->mode = mode;
  return r;
}

