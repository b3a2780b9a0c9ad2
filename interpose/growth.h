// SPDX-License-Identifier: MIT
// growth.h: sites found growing while the job runs (growth.c).
#ifndef ND_GROWTH_H
#define ND_GROWTH_H

#include "sites.h"
#include "trace_format.h"

#include <stdint.h>

// A window of site s closed with this floor (lowest live bytes), `count` live blocks, the cycle
// clock and the time; `every` is NDMEM_GROWTH_CYCLES (0: never). Returns 1 when s was just found
// growing: the line has been written to fd (-1: not said) and *out holds the GROWTH record.
int nd_growth_window(nd_site_t *s, uint64_t floor, uint64_t count, uint64_t cycle,
                     uint64_t now_ns, uint64_t every, int fd, nd_rec_growth_t *out);

#endif
