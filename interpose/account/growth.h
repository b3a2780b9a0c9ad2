// SPDX-License-Identifier: MIT
// growth.h: sites found growing while the job runs (growth.c).
#ifndef ND_GROWTH_H
#define ND_GROWTH_H

#include "account/sites.h"
#include "common/trace_format.h"

#include <stdint.h>

// The sites' windows close at the cycle clock and time given: the close's number, for
// nd_growth_window (0 when no more can be kept). Once per close, before its sites.
uint32_t nd_growth_close(uint64_t cycle, uint64_t now_ns);
// A window of site s closed (close number win) with this floor (lowest live bytes), `count` live
// blocks, the cycle clock and the time; `every` is NDMEM_GROWTH_CYCLES (0: never). Returns 1 when
// s was just found growing: the line has been written to fd (-1: not said) and *out holds the
// GROWTH record.
int nd_growth_window(nd_site_t *s, uint32_t win, uint64_t floor, uint64_t count, uint64_t cycle,
                     uint64_t now_ns, uint64_t every, int fd, nd_rec_growth_t *out);

#endif
