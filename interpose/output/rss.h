// SPDX-License-Identifier: MIT
// rss.h: the kernel's account of the process's resident memory for the trace (RSS and
// SITE_UNTOUCHED records, version 18): its peak, VmRSS's parts, and what ndmem knows held them.
#ifndef ND_RSS_H
#define ND_RSS_H

#include "common/trace_write.h"

// Reads and writes this flush's RSS record, then a SITE_UNTOUCHED record for each mapping site
// whose untouched bytes changed (after the SITE records: their stacks are written). `final`: the
// last flush (ND_RSS_AT_END). Under the trace writer's lock.
void nd_rss_write(nd_tw_t *w, int final);
void nd_rss_atfork_child(void); // the parent's peak and sites are not the child's

#endif
