#!/bin/sh
# SPDX-License-Identifier: MIT
# t_growth_unseen: the growth verdict of a clean job whose small blocks were sampled (gen_trace's
# unseen modes, written here). Nothing was found growing, but growth in blocks under
# NDMEM_TRACK_MIN shows only in what the sampler picked: --fail-on-growth and --fail-on-leak exit
# 3 with one stderr line giving the smallest growth per cycle (per flush window without cycles)
# at which each quarter of the run would have kept a sample in 99 runs of 100,
# ceil(NDMEM_SAMPLE x ln 400 / (cycles / 4)): 125651 B over 100 cycles at one sample per 512 KiB,
# 15707 B at one per 64 KiB, 628251 B per flush window over 20 windows (5 in each quarter), per
# flush over the 21 since the first of 5 cycles (fewer than 8: windows, not cycles); growth
# at any rate where none is sampled (NDMEM_SAMPLE=0) or where too few flush windows judged a
# sampled site's floor. As before where every block was tracked (NDMEM_TRACK_MIN 0 or 1), where
# the sampling shows what exact tracking names (one sample per 16 B), and where growth was found
# (1, no line). The report on stdout is the same as without the flag.
# usage: t_growth_unseen.sh NDMEMREPORT GEN_TRACE
set -u
. "$(dirname "$0")/edge_common.sh"

# verdict MODE FLAG STATUS [LINE]: ndmemreport FLAG MODE.trace exits STATUS with LINE (or nothing)
# on stderr and the report without the flag on stdout
verdict() {
  [ -f "$1.trace" ] || "$gen" "$1" "$1.trace" || { no "gen_trace $1"; return; }
  "$report" "$1.trace" >plain 2>/dev/null
  "$report" "$2" "$1.trace" >out 2>err
  rc=$?
  [ $rc = "$3" ] || no "$1 $2: exit status $rc, want $3: $(cat err)"
  cmp -s plain out || no "$1 $2: the report differs from the one without the flag"
  if [ $# -gt 3 ]; then printf '%s\n' "$4" >want; else : >want; fi
  diff -u want err || no "$1 $2: stderr differs"
}
head="ndmemreport: unseen.trace: --fail-on-growth: unchecked: no growth found, but blocks under 64.00 KiB (65536 B)"
check="check it with every block tracked: ndmem run --exact -- CMD (NDMEM_TRACK_MIN=0)"
verdict unseen --fail-on-growth 3 "$head are recorded only when sampled (about 1 per 512.00 KiB (524288 B) allocated), so growth in them under 122.71 KiB (125651 B) per cycle, over the 100 cycles of this run, may have gone unseen; $check"
verdict unseen --fail-on-leak 3 "$(echo "$head" | sed 's/--fail-on-growth/--fail-on-leak/') are recorded only when sampled (about 1 per 512.00 KiB (524288 B) allocated), so growth in them under 122.71 KiB (125651 B) per cycle, over the 100 cycles of this run, may have gone unseen; $check"
at() { echo "$head" | sed "s/unseen\.trace/$1.trace/"; }
verdict unseen-sample64k --fail-on-growth 3 "$(at unseen-sample64k) are recorded only when sampled (about 1 per 64.00 KiB (65536 B) allocated), so growth in them under 15.34 KiB (15707 B) per cycle, over the 100 cycles of this run, may have gone unseen; $check"
verdict unseen-nocycles --fail-on-growth 3 "$(at unseen-nocycles) are recorded only when sampled (about 1 per 512.00 KiB (524288 B) allocated), so growth in them under 613.53 KiB (628251 B) per flush window, over the 20 flush windows of this run, may have gone unseen; $check"
verdict unseen-cycles5 --fail-on-growth 3 "$(at unseen-cycles5) are recorded only when sampled (about 1 per 512.00 KiB (524288 B) allocated), so growth in them under 613.53 KiB (628251 B) per flush, over the 21 flushes since its first cycle, may have gone unseen; $check"
verdict unseen-nosample --fail-on-growth 3 "$(at unseen-nosample) had no record (NDMEM_SAMPLE=0: none is sampled), so growth in them could not be seen at any rate; $check"
verdict unseen-few --fail-on-growth 3 "$(at unseen-few) are recorded only when sampled (about 1 per 512.00 KiB (524288 B) allocated) and a sampled site grows only by its floor, which 2 flush windows of the steady state (3 needed) could not judge, so growth in them could not be seen at any rate; $check and NDMEM_FLUSH_MS=200"
verdict unseen-exact --fail-on-growth 0
verdict unseen-exact --fail-on-leak 0
verdict unseen-min1 --fail-on-growth 0
verdict unseen-dense --fail-on-growth 0
verdict unseen-grow --fail-on-growth 1
verdict unseen-grow --fail-on-leak 1
exit $fail
