#!/bin/sh
# SPDX-License-Identifier: MIT
# t_ends_edge: malformed version 16 records, on traces gen_trace writes at test time: a REFUSAL in
# a version 15 trace, one of an unknown limit, one naming a stack never written; an EXEC shorter
# than the path it announces, one with an unknown reason. Each must give exit status 2 and
# exactly the expected error.
# usage: t_ends_edge.sh NDMEMREPORT GEN_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"

# after the header, 2 MODULE, 2 STACK and a SITE record, the record is at offset 682
bad bad-refusal-v15 682 'REFUSAL record in a version 15 trace (version 16 introduced it)'
bad bad-refusal-limit 682 'REFUSAL of an unknown limit (3)'
bad bad-refusal-stack 682 'REFUSAL names unknown stack 7'
bad bad-exec-size 682 'EXEC record of 33 bytes with a path of 100'
bad bad-exec-reason 682 'EXEC record with an unknown reason (9)'
exit $fail
