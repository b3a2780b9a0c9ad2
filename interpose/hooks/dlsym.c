// SPDX-License-Identifier: MIT
// dlsym.c: the exported dlsym. A dlsym with a handle never sees a preloaded library, so ndmem
// exports dlsym (a tail-jumping stub) and lets the device room answer lookups of the CUDA
// driver's hooked names (nd_dlsym_filter, device/fns.c); every other lookup goes to libc's dlsym
// (nd_dlsym_next, runtime/lookup.c) untouched. A lookup of libunwind's names tells the stacks
// room that the program may unwind itself (nd_unwind_program_lookup, stacks/unwind.c).
#include "device/cuda_hooks.h"
#include "runtime/lookup.h"
#include "stacks/unwind.h"

// What the stub asks before it forwards: 1 and *out when the lookup is answered here.
int nd_dlsym_ask(void *handle, const char *name, void **out);
int nd_dlsym_ask(void *handle, const char *name, void **out) {
  nd_unwind_program_lookup(name);
  return nd_dlsym_filter(handle, name, out);
}

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
        "  call nd_dlsym_ask\n"
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
        "  bl nd_dlsym_ask\n"
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
