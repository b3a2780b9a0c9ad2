// SPDX-License-Identifier: MIT
// metrics.h: NDMEM_METRICS, a Prometheus text-format file of the process's memory counters,
// replaced atomically at every trace flush for node_exporter's textfile collector (metrics.c).
#ifndef ND_METRICS_H
#define ND_METRICS_H
#include <stdint.h>
// At start-up, after the trace fixed the folder a relative path is taken from (`dir`, "" when
// the pattern is absolute). A child (fork or exec) writes a file only when the pattern has %p.
void nd_metrics_setup(const char *dir);
// Writes the file (the trace writer's lock held: one writer at a time). `growth_sites`: sites
// the growth detector has named so far; `anon`: the anonymous resident bytes the flush read, or
// NULL when it could not read them.
void nd_metrics_write(uint64_t growth_sites, const uint64_t *anon);
void nd_metrics_atfork_child(void);
#endif
