// SPDX-License-Identifier: MIT
// module.h: how a room of the shim joins the runtime. Each room that keeps state declares one
// nd_module_t with ND_MODULE; the runtime (init.c) finds them all in the linker section
// "nd_modules" and calls them, so neither init.c nor the trace writer names any room's setup,
// fork handler or records (the dependencies run from the rooms to the runtime, never back).
//
// Order: `rank` is the module's place in the shim's lock order (init.c lists it). The fork
// prepares run by ascending rank (each takes its locks), the parents and children by descending
// rank; a module without a lock takes a rank that puts its child handler where it must run.
// `order` places its setup, its summary lines and its records: ascending.
#ifndef ND_MODULE_H
#define ND_MODULE_H

#include <stdint.h>

struct nd_tls;
struct nd_buf;
struct nd_rec_exec;

// One trace record of a module's (output/trace.c writes it, with its tag, into the next flush).
typedef void (*nd_record_fn)(void *ctx, uint16_t tag, const void *payload, uint32_t size);

typedef struct nd_module {
  const char *name;
  uint16_t rank;  // lock order (fork handlers)
  uint16_t order; // setup, summary, records
  void (*setup)(char *const *envp); // accounting on; envp NULL in a secure (setuid) process
  void (*atfork_prepare)(void);
  void (*atfork_parent)(void);
  void (*atfork_child)(struct nd_tls *t); // t: the forking thread, the child's only one
  void (*thread_init)(struct nd_tls *t);  // a thread starts accounting
  void (*thread_exit)(struct nd_tls *t);  // a thread other than the main one ends
  void (*forked)(void);                   // a fork child's first call: what it writes is made
  void (*exit_wait)(void);                // a normal exit, before the end is written
  void (*finish)(int how, int code);      // the end (enum nd_exit_how): what is left is written
  // Words of its own for the summary's exit line (summary.c), appended to `line`: 1 when it added
  // some (the line is then said even for a normal exit). code: the exit status (-1: not known) or
  // the signal.
  int (*exit_note)(struct nd_buf *line, int how, int code);
  void (*flush)(void);                    // write what is pending now (a snapshot asked for)
  // An exec (exec.c): about to be made (r->err 0: what is pending is written with the record,
  // and nothing after it until the exec fails), or failed (r->err: the process goes on). path:
  // r->path_len bytes.
  void (*exec)(const struct nd_rec_exec *r, const char *path);
  int (*writing)(void);                   // a trace is being written
  uint64_t (*relieve)(void);              // memory held for reuse given back: its bytes
  void (*summary)(int fd);                // its lines of the exit summary
  void (*write_records)(nd_record_fn rec, void *ctx); // its records, at every flush
} nd_module_t;

#define ND_MODULE(var)                                                                            \
  __attribute__((used, section("nd_modules"), aligned(sizeof(void *)))) const nd_module_t var

// The registered modules, setup order (ascending `order`); n is set to their number.
const nd_module_t *const *nd_modules(int *n);
void nd_modules_write_records(nd_record_fn rec, void *ctx);
void nd_modules_flush(void);  // every module's flush: what is pending is written now
void nd_modules_exec(const struct nd_rec_exec *r, const char *path); // every module's exec
int nd_modules_writing(void); // a module writes a trace
uint64_t nd_modules_relieve(void); // every module's relief (a limit is near): the bytes given back

#endif
