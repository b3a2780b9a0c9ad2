#!/bin/sh
# SPDX-License-Identifier: MIT
# t_dws_edge: malformed version 11 records (device workspaces, device memory from host) on traces
# gen_trace writes at test time from devices11 with one record broken (gen_trace.c,
# devices11_trace): each must give exit status 2 and exactly the expected error. A DEVICE_WS
# record in a version 10 trace, or a breach served from host memory there, is an error too.
# usage: t_dws_edge.sh NDMEMREPORT GEN_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"

bad bad-dws-counts 2588 'DEVICE_WS record whose counts contradict each other'
bad bad-dws-mode 2588 'DEVICE_WS record with a mode or policy out of range'
bad bad-dws-v10 2588 'DEVICE_WS record in a version 10 trace (version 11 introduced it)'
bad bad-spill-counts 2804 'DEVICE_SPILL record whose counts contradict each other'
bad bad-spill-stack 2876 'DEVICE_SPILL names unknown stack 43'
bad bad-breach-host-v10 1852 'BREACH action 3 out of range'
exit $fail
