#!/bin/sh
# SPDX-License-Identifier: MIT
# t_ws_effect_edge: what workspaces did to resident memory (version 10), in the cases the stored
# ws-effect trace does not show, on traces gen_trace writes at test time (gen_trace.c has their
# truth): workspaces that served, whose learning trims gave back at most 10 MiB at once (the
# effect said, no retention verdict); that served nothing while a trim gave back 100 MiB
# (glibc's retention, measured, not prevented); that served nothing and gave back 1 MiB (nothing
# said); that served beside resident growth glibc's free bytes explain (the growth's verdict
# stays, the prevented retention continues it). Then malformed WORKSPACE records: a largest fall
# above the sum, a fall without a trim, version 9's short form in a version 10 trace; each must
# give exit status 2 and exactly the expected error. Version 15: the workspace saving, and none.
# usage: t_ws_effect_edge.sh NDMEMREPORT GEN_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"

# report MODE: the text report of MODE's trace on one line (the text wraps), and its JSON's
# retention class and workspaces_effect object, one per line
report() {
  "$gen" "$1" "$1.trace" || { no "gen_trace $1"; return; }
  "$report" "$1.trace" | tr -s ' \n' '  ' >"$1.txt" || no "$1: text report"
  "$report" --format json "$1.trace" >"$1.json" || no "$1: JSON report"
  sed -n 's/^  "retention": {"class": \([^,]*\),.*/\1/p; s/^  "workspaces_effect": //p' \
    "$1.json" >"$1.effect"
}
has() { grep -qF -- "$2" "$1.txt" || no "$1: the report lacks '$2'"; }
lacks() { ! grep -qF -- "$2" "$1.txt" || no "$1: the report says '$2'"; }
effect() {
  printf '%s\n%s\n' "$2" "$3" >want
  diff -u want "$1.effect" || no "$1: JSON's retention class and workspaces_effect differ"
}

report ws-effect-small
has ws-effect-small "not the job's own: glibc malloc never held the 2500 allocations (9.47 GiB) that workspaces served from arenas of 166.00 MiB (the job without them: ndmem run --no-workspaces)"
lacks ws-effect-small "retention"
lacks ws-effect-small "prevented"
effect ws-effect-small null '{"served": true, "held": false, "allocations": 2500, "bytes": 10171187200, "arena_bytes": 174063616, "learning_trims": 3, "learning_trim_bytes": 31457280, "learning_trim_max_bytes": 10485760, "saving_bytes": null, "held_learning_bytes": null, "held_learning_reads": null, "held_serving_bytes": null, "without": "ndmem run --no-workspaces"},'

report ws-effect-unserved
has ws-effect-unserved "not the job's own: workspaces served nothing, but ndmem's malloc_trim gave back freed memory while they looked for a cycle (the job without them: ndmem run --no-workspaces)"
has ws-effect-unserved "retention glibc malloc held 100.00 MiB freed memory while workspaces looked for a cycle (resident memory fell by that much across ndmem's malloc_trim): allocator retention, not a leak (ndmem run --no-workspaces measures it)"
lacks ws-effect-unserved "prevented"
effect ws-effect-unserved null '{"served": false, "held": true, "allocations": 0, "bytes": 0, "arena_bytes": 0, "learning_trims": 1, "learning_trim_bytes": 104857600, "learning_trim_max_bytes": 104857600, "saving_bytes": null, "held_learning_bytes": null, "held_learning_reads": null, "held_serving_bytes": null, "without": "ndmem run --no-workspaces"},'

report ws-effect-none
lacks ws-effect-none "not the job's own"
lacks ws-effect-none "retention"
lacks ws-effect-none "malloc_trim"
effect ws-effect-none null '{"served": false, "held": false, "allocations": 0, "bytes": 0, "arena_bytes": 0, "learning_trims": 1, "learning_trim_bytes": 1048576, "learning_trim_max_bytes": 1048576, "saving_bytes": null, "held_learning_bytes": null, "held_learning_reads": null, "held_serving_bytes": null, "without": null},'

# version 15, the workspace saving (gen_trace.c has the truth): 61 MiB above the learning's peak;
# none where glibc holds more since they serve than at the learning cycles' ends, or where no trim
# gave it back just before the arenas were first used
report ws-effect-saving
has ws-effect-saving "saving workspaces kept ~61.00 MiB off the resident peak (estimated: glibc malloc held 300.00 MiB freed below its top at the end of the cycles they learned (3 read) and 19.00 MiB since they serve; the resident peak came while they learned: only what stands above it counts; fragmentation that grows after the learning is not counted)"
effect ws-effect-saving '"prevented"' '{"served": true, "held": true, "allocations": 2500, "bytes": 10171187200, "arena_bytes": 174063616, "learning_trims": 10, "learning_trim_bytes": 933232640, "learning_trim_max_bytes": 314572800, "saving_bytes": 63963136, "held_learning_bytes": 314572800, "held_learning_reads": 3, "held_serving_bytes": 19922944, "without": "ndmem run --no-workspaces"},'
report ws-effect-nosaving
has ws-effect-nosaving "saving none estimated (glibc malloc held 300.00 MiB freed below its top at the end of the cycles they learned (3 read) and 399.00 MiB since they serve)"
lacks ws-effect-nosaving "kept ~"
report ws-effect-notrim
has ws-effect-notrim "saving none estimated (glibc malloc held 300.00 MiB freed below its top at the end of the cycles they learned (3 read), none given back just before their arenas were first used)"
lacks ws-effect-small "saving"

report retention-ws
has retention-ws "not the job's own: glibc malloc never held the 100 allocations (100.00 MiB) that workspaces served from arenas of 20.00 MiB (the job without them: ndmem run --no-workspaces) retention resident grew 450.00 MiB while live host memory (heap, mappings, arenas) stayed at 61.00 MiB: glibc malloc holds 442.00 MiB freed memory (allocator retention/fragmentation, not a leak) and prevented by workspaces in what they served: while they learned, glibc malloc held up to 80.00 MiB freed memory at once (resident memory fell by that much across ndmem's malloc_trim; 120.00 MiB in 2 trims); without ndmem expect allocator retention (ndmem run --no-workspaces measures it)"
effect retention-ws '"allocator"' '{"served": true, "held": true, "allocations": 100, "bytes": 104857600, "arena_bytes": 20971520, "learning_trims": 2, "learning_trim_bytes": 125829120, "learning_trim_max_bytes": 83886080, "saving_bytes": null, "held_learning_bytes": null, "held_learning_reads": null, "held_serving_bytes": null, "without": "ndmem run --no-workspaces"},'

# after five flushes, the first WORKSPACE record is at offset 6354; after the header and the
# MODULE and STACK records, at 482
bad bad-ws-trim-max 6354 'WORKSPACE record whose trims gave back 891289600 B in 9 trims, at most 891289601 B at once'
bad bad-ws-trim-count 6354 'WORKSPACE record whose trims gave back 891289600 B in 0 trims, at most 314572800 B at once'
bad bad-ws-v10-short 482 'WORKSPACE record size 144 impossible (176)'
exit $fail
