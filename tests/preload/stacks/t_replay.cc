// SPDX-License-Identifier: MIT
// t_replay: stacks that a replay could take for one another (interpose/stacks/replay.c). Every
// scenario allocates through leaf() at one stack pointer from paths that differ in one frame,
// in turn, often enough that each path is recorded and replayed; t_replay.sh runs it with the
// replay on and off and checks that the sites are the same, allocation for allocation, with the
// counts marked PATH below. Built -O0: every frame keeps a frame pointer.
//   turns     two callers of the same size alternate: the slot above leaf differs
//   far       two paths that differ only in the outermost frame but one
//   shifted   two wrappers reached from one call site through a function pointer, each padding
//             the stack so that a frame of variable length (alloca) above leaf lands leaf at the same
//             stack pointer: the return addresses that differ move, and the old slot keeps the
//             old address (only the frame pointers tell the stacks apart)
//   longjmp   an allocation deep in a call that longjmps out, then another path at its depth
//   throw     the same with a C++ exception
//   signal    allocations in signal handlers, on the thread's stack and on an alternate one:
//             stacks through a signal frame are never recorded
//   threads   4 threads at a time, 3 rounds (a thread's table goes to the next one emptied)
//   odd_fp    the same with a frame whose caller is found at its frame pointer + 24, not + 16 (x86-64
//             assembly with its unwind rules: rbx pushed before rbp)
//   coroutine allocations on stacks of the program's own (makecontext), one freed and another of
//             another size made in its place: never recorded (a slot could lie past the new one)
#include <alloca.h>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <ucontext.h>
#include <stdexcept>

#define N 200
#define NOINLINE __attribute__((noinline))

extern "C" {

NOINLINE void leaf(size_t n) {
  void *p = malloc(n); // every scenario's allocation
  __asm__ volatile("" : : "r"(p) : "memory");
  free(p);
}

// ---- turns
NOINLINE void turn_a(void) { leaf(16); }
NOINLINE void turn_b(void) { leaf(16); }
NOINLINE void turns(void) {
  for (int i = 0; i < N; i++) {
    if (i & 1) turn_a(); // PATH:turn_a 100
    else turn_b();       // PATH:turn_b 100
  }
}

// ---- far
NOINLINE void far1(void) { leaf(24); }
NOINLINE void far2(void) { far1(); }
NOINLINE void far3(void) { far2(); }
NOINLINE void far_a(void) { far3(); } // PATH:far_a 150
NOINLINE void far_b(void) { far3(); } // PATH:far_b 50
NOINLINE void far(void) {
  for (int i = 0; i < N; i++) (i % 4 == 3 ? far_b : far_a)();
}

// ---- shifted
NOINLINE void vla_leaf(void) { leaf(32); }
NOINLINE void vla(int k) {
  volatile char *buf = (volatile char *)alloca((size_t)k); // k bytes: the frame moves with k
  buf[0] = 0;
  vla_leaf();
}
NOINLINE void pad_a(int k) {
  volatile char *pad = (volatile char *)alloca((size_t)(128 - k));
  pad[0] = 0;
  vla(k); // PATH:pad_a 120
}
NOINLINE void pad_b(int k) {
  volatile char *pad = (volatile char *)alloca((size_t)(128 - k));
  pad[0] = 0;
  vla(k); // PATH:pad_b 80
}
NOINLINE void shifted(void) {
  for (int i = 0; i < N; i++) {
    int b = i >= 120; // 120 through pad_a (recorded, replayed), then 80 through pad_b
    void (*w)(int) = b ? pad_b : pad_a;
    w(b ? 112 : 16); // one call site for both: vla's frame moves by 96 bytes, its old return
                     // address slot lands in the alloca area, which nothing writes
  }
}

// ---- odd_fp: odd_frame(k, fn) makes a frame of k bytes and more whose CFA is rbp + 24, calls fn
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl odd_frame\n"
        ".type odd_frame, @function\n"
        "odd_frame:\n"
        "  .cfi_startproc\n"
        "  push %rbx\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset rbx, -16\n"
        "  push %rbp\n"
        "  .cfi_def_cfa_offset 24\n"
        "  .cfi_offset rbp, -24\n"
        "  mov %rsp, %rbp\n"
        "  .cfi_def_cfa_register rbp\n"
        "  sub %rdi, %rsp\n"
        "  and $-16, %rsp\n"
        "  call *%rsi\n"
        "  mov %rbp, %rsp\n"
        "  pop %rbp\n"
        "  .cfi_def_cfa rsp, 16\n"
        "  pop %rbx\n"
        "  .cfi_def_cfa_offset 8\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size odd_frame, .-odd_frame\n");
void odd_frame(long k, void (*fn)(void));
NOINLINE void odd_leaf(void) { leaf(80); }
NOINLINE void odd_a(int k) {
  volatile char *pad = (volatile char *)alloca((size_t)(128 - k));
  pad[0] = 0;
  odd_frame(k, odd_leaf); // PATH:odd_a 120
}
NOINLINE void odd_b(int k) {
  volatile char *pad = (volatile char *)alloca((size_t)(128 - k));
  pad[0] = 0;
  odd_frame(k, odd_leaf); // PATH:odd_b 80
}
NOINLINE void odd_fp(void) {
  for (int i = 0; i < N; i++) {
    int b = i >= 120;
    void (*w)(int) = b ? odd_b : odd_a;
    w(b ? 112 : 16);
  }
}
#else
NOINLINE void odd_fp(void) {
  for (int i = 0; i < N; i++) leaf(80);
}
#endif

// ---- longjmp
static jmp_buf env;
NOINLINE void jump_out(void) {
  leaf(40); // PATH:jump_out 200
  longjmp(env, 1);
}
NOINLINE void jumper(int d) {
  if (d > 0) jumper(d - 1);
  else jump_out();
}
NOINLINE void after_jump(void) { leaf(40); } // PATH:after_jump 200
NOINLINE void jumps(void) {
  for (int i = 0; i < N; i++) {
    if (!setjmp(env)) jumper(3);
    else after_jump();
  }
}

// ---- throw
NOINLINE void throw_out(void) {
  leaf(48); // PATH:throw_out 200
  throw std::runtime_error("t_replay");
}
NOINLINE void thrower(int d) {
  if (d > 0) thrower(d - 1);
  else throw_out();
}
NOINLINE void after_throw(void) { leaf(48); } // PATH:after_throw 200
NOINLINE void throws(void) {
  for (int i = 0; i < N; i++) {
    try {
      thrower(4);
    } catch (const std::exception &) {
      after_throw();
    }
  }
}

// ---- signal
static void on_usr1(int sig) {
  (void)sig;
  leaf(56); // PATH:on_usr1 200
}
static void on_usr2(int sig) {
  (void)sig;
  leaf(56); // PATH:on_usr2 200
}
NOINLINE int signals(void) {
  static char alt[1 << 16];
  stack_t ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_sp = alt;
  ss.ss_size = sizeof alt;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0) return -1;
  sa.sa_handler = on_usr2;
  sa.sa_flags = SA_ONSTACK;
  if (sigaction(SIGUSR2, &sa, NULL) != 0) return -1;
  for (int i = 0; i < N; i++) {
    raise(SIGUSR1);
    raise(SIGUSR2);
  }
  return 0;
}

// ---- threads
NOINLINE void thread_a(void) { leaf(64); }
NOINLINE void thread_b(void) { leaf(64); }
static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < N; i++) {
    if (i % 3) thread_a(); // PATH:thread_a 1596
    else thread_b();       // PATH:thread_b 804
  }
  return NULL;
}
NOINLINE int threads(void) {
  for (int round = 0; round < 3; round++) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
      if (pthread_create(&t[i], NULL, worker, NULL) != 0) return -1;
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  }
  return 0;
}

// ---- coroutine
static ucontext_t main_ctx, co_ctx;
NOINLINE static void co_body(void) {
  for (int i = 0; i < N / 4; i++) {
    leaf(72); // PATH:co_body 100
    swapcontext(&co_ctx, &main_ctx);
  }
}
NOINLINE int coroutines(void) {
  for (int round = 0; round < 2; round++) {
    size_t size = round ? 48 * 1024 : 64 * 1024; // the second stack smaller, maybe in the first's place
    char *stack = (char *)malloc(size);
    if (!stack || getcontext(&co_ctx) != 0) return -1;
    co_ctx.uc_stack.ss_sp = stack;
    co_ctx.uc_stack.ss_size = size;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, co_body, 0);
    for (int i = 0; i < N / 4 + 1; i++)
      if (swapcontext(&main_ctx, &co_ctx) != 0) return -1;
    free(stack);
  }
  return 0;
}

} // extern "C"

int main(void) {
  turns();
  far();
  shifted();
  odd_fp();
  jumps();
  throws();
  if (signals() != 0 || threads() != 0 || coroutines() != 0) {
    perror("t_replay");
    return 1;
  }
  printf("t_replay: done\n");
  return 0;
}
