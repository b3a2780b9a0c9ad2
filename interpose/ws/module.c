// SPDX-License-Identifier: MIT
// module.c: host workspaces in the runtime (runtime/module.h): their setup, fork handlers (the
// workspace tables are last in the lock order), thread ends, summary lines and records.
#include "runtime/module.h"
#include "runtime/shim.h"
#include "ws/ws.h"

static void setup(char *const *envp) { (void)envp, nd_ws_setup(); }
static void atfork_child(nd_tls_t *t) { (void)t, nd_ws_atfork_child(); }
static void write_records(nd_record_fn rec, void *ctx) { nd_ws_write_records(rec, ctx); }

ND_MODULE(nd_ws_module) = {.name = "ws", .rank = 80, .order = 20, .setup = setup,
                           .atfork_prepare = nd_ws_atfork_prepare,
                           .atfork_parent = nd_ws_atfork_parent, .atfork_child = atfork_child,
                           .thread_exit = nd_ws_thread_exit, .summary = nd_ws_summary,
                           .write_records = write_records, .relieve = nd_ws_relieve};
