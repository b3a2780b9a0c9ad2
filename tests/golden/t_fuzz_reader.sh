#!/bin/sh
# SPDX-License-Identifier: MIT
# t_fuzz_reader: a short coverage-guided run of fuzz_reader (libFuzzer, fixed seed) in a fresh
# corpus folder of the build tree, seeded with the stored traces and gen_trace's small edge-case
# traces (a cut snapshot, every malformed record). Any crash, sanitizer report, leak, timeout or
# broken contract fails it and leaves the input in WORKDIR/fuzz-artifacts.
# usage: t_fuzz_reader.sh FUZZ_READER|'' WHY_NOT DICT WORKDIR RUNS GEN_TRACE SEED_TRACE...
set -u
fuzzer=$1 why=$2 dict=$3 work=$4 runs=$5 gen=$6
shift 6
if [ -z "$fuzzer" ]; then
  echo "skipped: fuzz_reader was not built: $why"
  exit 77
fi
corpus=$(mktemp -d "$work/fuzz-corpus.XXXXXX") || exit 1
artifacts=$work/fuzz-artifacts
mkdir -p "$artifacts" || exit 1
cp "$@" "$corpus/" || exit 1
for m in limits-cut bad-v1-workspace bad-v1-escape bad-ws-name bad-escape-name bad-ws-size \
  bad-v2-limits bad-limits-action bad-breach-limit bad-breach-fn bad-breach-size \
  bad-snap-reason bad-snap-site-alone bad-snap-too-few bad-snap-too-many bad-snap-stack \
  py-max py-v6-bit63 bad-py-v6 bad-py-code bad-py-late bad-py-dup bad-py-qualname \
  bad-py-filename bad-py-lengths bad-py-short bad-py-state bad-py-python-size job-r1 job-r1w1 \
  job-bad-value bad-job-from bad-job-rank; do
  "$gen" "$m" "$corpus/gen-$m.trace" || { echo "FAIL: gen_trace $m"; exit 1; }
done
UBSAN_OPTIONS=print_stacktrace=1 "$fuzzer" -runs="$runs" -max_total_time=120 -seed=1 \
  -dict="$dict" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$corpus"
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "FAIL: fuzz_reader exited $rc; the input is in $artifacts/ (reproduce:" \
    "$fuzzer FILE, or ndmemreport --no-symbols FILE)"
  exit 1
fi
rm -rf "$corpus"
echo "fuzz_reader: $runs runs, no finding"
