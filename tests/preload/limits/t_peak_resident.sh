#!/bin/sh
# SPDX-License-Identifier: MIT
# t_peak_resident: one peak of resident memory in a report. A job under maxPhysicalBytes whose
# spikes fall between two flushes: the limit line's peak and the resident line's are the same
# bytes in text and JSON (they once said 'peak physical 228.74 MiB' beside 'resident ... peak
# 202.28 MiB'), and at least the spike. A job killed with SIGKILL after a flush: its trace is not
# called complete, but intact up to its last flush, with that flush's time (JSON: complete false,
# truncated false, a last flush).
# usage: t_peak_resident.sh LIBNDMEM T_PEAK_RESIDENT NDMEMREPORT PYTHON3
set -u
lib=$1 prog=$2 report=$3 py=$4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*" >&2; fail=1; }

# ---- spikes between flushes, under maxPhysicalBytes
env NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/spike.trace" NDMEM_MAX_PHYSICAL_BYTES=4g NDMEM_LIMIT_STEP=1m \
  NDMEM_LIMIT_POLL_MS=0 NDMEM_FLUSH_MS=10000 LD_PRELOAD="$lib" "$prog" spike || no "spike: exit $?"
"$report" --no-symbols "$tmp/spike.trace" >"$tmp/spike.txt" 2>&1 || no "spike: report exit $?"
"$report" --no-symbols --format json "$tmp/spike.trace" >"$tmp/spike.json" 2>&1 ||
  no "spike: JSON report exit $?"
# the limits view's peak and the resident line's, in bytes
lim=$(sed -n 's/^ *peak resident [0-9.]* [KMG]*i*B (\([0-9]*\) B).*/\1/p' "$tmp/spike.txt" | head -1)
res=$(tr '\n' ' ' <"$tmp/spike.txt" | sed -n 's/.*anonymous resident memory, read at each flush: highest *[0-9.]* [KMG]*i*B (\([0-9]*\) B).*/\1/p')
[ -n "$lim" ] && [ -n "$res" ] || no "spike: no peak resident in the limits view or the resident line"
[ "${lim:-x}" = "${res:-y}" ] || no "spike: text: limits' peak resident $lim B, resident line's $res B"
[ "${res:-0}" -ge $((64 << 20)) ] || no "spike: text: peak resident $res B below the 64 MiB spike"
grep -q "peak physical" "$tmp/spike.txt" && no "spike: text: a 'peak physical' beside 'peak resident'"
"$py" - "$tmp/spike.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
lim, res = d["limits"]["limits"], d["limits"]["totals"]
peak, resident = res["peak_resident"], d["resident"]["peak_bytes"]
ok = peak == resident and resident >= 64 << 20 and lim["max_physical_bytes"] == 4 << 30
if not ok:
    print("FAIL: spike: JSON: limits' peak_resident %s, resident peak_bytes %s" % (peak, resident))
sys.exit(0 if ok else 1)
PY

# ---- SIGKILL after a flush
env NDMEM_SUMMARY=0 NDMEM_OUTPUT="$tmp/killed.trace" NDMEM_FLUSH_MS=200 LD_PRELOAD="$lib" "$prog" hold \
  >"$tmp/hold.out" &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -q holding "$tmp/hold.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
sleep 1 # several flushes after the block was written
kill -9 $pid
wait $pid 2>/dev/null
"$report" --no-symbols "$tmp/killed.trace" >"$tmp/killed.txt" 2>&1 || no "killed: report exit $?"
tr '\n' ' ' <"$tmp/killed.txt" | tr -s ' ' >"$tmp/killed.flat"
grep -q "trace no END record: [0-9]* bytes, [0-9]* records[^;]*; intact up to its last flush (#[0-9]* at [0-9.]* s)" \
  "$tmp/killed.flat" || no "killed: the trace line does not say 'intact up to its last flush (#N at T)'"
grep -q "complete" "$tmp/killed.flat" && no "killed: a killed job's trace called complete"
grep -q "header only" "$tmp/killed.flat" && no "killed: 'header only' for a trace with records"
"$report" --no-symbols --format json "$tmp/killed.trace" >"$tmp/killed.json" 2>&1 ||
  no "killed: JSON report exit $?"
"$py" - "$tmp/killed.json" <<'PY' || fail=1
import json, sys
t = json.load(open(sys.argv[1]))["trace"]
ok = t["complete"] is False and t["truncated"] is False and t["last_flush"] is not None
if not ok:
    print("FAIL: killed: JSON trace %s" % t)
sys.exit(0 if ok else 1)
PY
[ $fail = 0 ] || { cat "$tmp/spike.txt" "$tmp/killed.txt" >&2; }
exit $fail
