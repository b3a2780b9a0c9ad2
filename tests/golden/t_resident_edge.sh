#!/bin/sh
# SPDX-License-Identifier: MIT
# t_resident_edge: malformed RESIDENT records (versions 8 and 9), on traces gen_trace writes at
# test time: version 9's long form in a version 8 trace and the short form in a version 9 one, a
# RESIDENT record before version 8, an allocator out of range, a reading of an unknown allocator,
# more free bytes than the allocator holds, a top chunk larger than the free bytes, more trimmed
# bytes than free ones; an RSS record before version 18, one whose parts do not add up to its
# VmRSS, one whose peak reading is below its current one; a SITE_UNTOUCHED of an unknown kind.
# Each must give
# exit status 2 and exactly the expected error.
# usage: t_resident_edge.sh NDMEMREPORT GEN_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"

# after the header and a FLUSH, the RESIDENT record is at offset 424
bad bad-res-v8-long 424 'RESIDENT record size 64 impossible (24)'
bad bad-res-v9-short 424 'RESIDENT record size 24 impossible (64)'
bad bad-res-v7 424 'RESIDENT record in a version 7 trace (version 8 introduced it)'
bad bad-res-allocator 424 'RESIDENT record with an unknown allocator (3)'
bad bad-res-unknown-read 424 "RESIDENT record with an unknown allocator's reading"
bad bad-res-free 424 'RESIDENT record with more free bytes than the allocator holds'
bad bad-res-top 424 'RESIDENT record with a top chunk larger than the free bytes'
bad bad-res-trimmed 424 'RESIDENT record with more trimmed bytes than free bytes'
# version 18: RSS and SITE_UNTOUCHED records (after the header and a version 5 FLUSH: offset 456)
bad bad-rss-v17 456 'RSS record in a version 17 trace (version 18 introduced it)'
bad bad-rss-parts 456 'RSS record whose current parts do not add up to its VmRSS'
bad bad-rss-order 456 'RSS record whose peak reading is below its current one'
bad bad-rss-kind 456 'SITE_UNTOUCHED kind 20 out of range'
exit $fail
