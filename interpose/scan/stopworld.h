// SPDX-License-Identifier: MIT
// stopworld.h: the program's other threads held still, their registers and stack pointers read
// (stopworld.c), for the reachability scan at exit (reach.c).
#ifndef ND_STOPWORLD_H
#define ND_STOPWORLD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ND_STOP_REGS 64 // general registers, then the vector ones (x86-64: xmm0-15)

enum nd_thr_state {
  ND_THR_ASKED = 0,  // sent the signal, not stopped (yet)
  ND_THR_HELD = 1,   // stopped in the handler: regs and sp are read
  ND_THR_LET_GO = 2, // left the handler
  ND_THR_GONE = 3,   // ended meanwhile
  ND_THR_BLOCKS = 4, // blocks the signal while it waits in a system call: never stops
  ND_THR_BUSY = 5    // was inside ndmem: asked again
};

typedef struct nd_thr {
  pid_t tid;
  int state;   // enum nd_thr_state
  int blocked; // checks in a row that found it blocking the signal in a system call
  uintptr_t sp, tls; // its stack pointer and its nd_tls (held threads)
  uint64_t regs[ND_STOP_REGS];
} nd_thr_t;

// The thread table and the signal (once): 0; -1 no memory; -2 no real-time signal is free.
int nd_stop_setup(void);
// Asks every thread of the process but `self` and ndmem's own to stop and waits for them (500 ms
// at most); the threads and their states are then nd_stop_threads's.
void nd_stop_world(pid_t self);
nd_thr_t *nd_stop_threads(size_t *n);
// Lets them go and waits (1 s at most) until each has left the handler.
void nd_stop_let_go(void);
// A thread's stack pointer where it waits in a system call (/proc/self/task/T/syscall), or 0.
uintptr_t nd_stop_waiting_sp(pid_t tid);
// The thread table's mapping: it holds the threads' registers, never a root of the scan.
void nd_stop_table(uintptr_t *lo, uintptr_t *hi);

#endif
